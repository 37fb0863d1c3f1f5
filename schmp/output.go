package schmp

import (
	"errors"
	"io"
)

// Output is one file of a model: where it goes and what writes it.
type Output struct {
	// Path is the file's path.
	Path string
	// Write writes the file's content to w. The runtime calls it once the
	// job has stopped, and after the coordinator's Finish (Finisher), so
	// that it writes the state that the job's last report certified
	// (DESIGN "Pipelining").
	Write func(w io.Writer) error
}

// Outputter is implemented by a Coordinator whose model is several files,
// or files that it names itself (a prefix and suffixes, say), instead of
// the one file that WriteModel writes at the runtime's output path.
//
// The runtime calls Outputs once, before the job starts (after the
// coordinator is built, before Start), with out, its output path (the
// --out flag; "" when none), and creates every file listed then, so that a
// bad path fails the job before any round runs. After the stop it calls
// each Output's Write in order and commits the files all together or none
// of them (DESIGN "Outputs and inputs"); a failed job leaves none. WriteModel is then never
// called. An empty list writes nothing.
type Outputter interface {
	Outputs(out string) ([]Output, error)
}

// FinalReporter is implemented by a Worker that holds state which only the
// written model needs, too big to travel in every report: the users'
// factors of matrix factorization, say, or LDA's document-topic counts.
// Once the job has stopped, the runtime asks every worker once for its
// final report, of exactly the state that the job's last report certified
// (DESIGN "Pipelining"), and hands them all to the coordinator's Finish. It does so
// only for a coordinator that is a Finisher.
type FinalReporter[S any] interface {
	FinalReport() (S, error)
}

// Finisher is implemented by a Coordinator that takes the workers' final
// reports (FinalReporter) once the job has stopped, before its model is
// written: reports[k] is worker shard k's (its Report, for a worker that is
// not a FinalReporter). It is called once, on success only.
type Finisher[S any] interface {
	Finish(reports []S) error
}

// Kept is implemented by a Coordinator whose written model may be the
// state of an earlier report than the job's last: matrix factorization
// keeps its best validation evaluation. KeptRound returns that report's
// round, and the runtime marks that row of the metrics CSV as the one
// written; with ok false, or for a Coordinator that is not Kept, it marks
// the last row. It is called once the job has stopped, after Finish.
type Kept interface {
	KeptRound() (round uint64, ok bool)
}

// ModelOutputs returns the files of c's model given out, the runtime's
// output path: c's Outputs if c is an Outputter, otherwise the file out
// that WriteModel writes, or none if out is "".
func ModelOutputs[P, R, U, S any](c Coordinator[P, R, U, S], out string) ([]Output, error) {
	if c == nil {
		return nil, errors.New("schmp: no coordinator")
	}
	if o, ok := c.(Outputter); ok {
		return o.Outputs(out)
	}
	if out == "" {
		return nil, nil
	}
	return []Output{{Path: out, Write: c.WriteModel}}, nil
}
