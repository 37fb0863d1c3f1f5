package local

import (
	"bytes"
	"context"
	"fmt"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/worker"
)

// The check of the worker's contract (Options.CheckContract). Around the
// calls that a worker's core makes for a task (worker.Core.Finish: its
// Report, its Push), the driver makes calls of its own on the same worker
// and compares what they give, encoded, numbers bit for bit, up to
// Options.Ignore.

// probe is what the check saw of a worker before the core's calls of a
// task that asks for a report: its snapshot (nil for a worker that is no
// schmp.Snapshotter) and its report, encoded; empty at other tasks.
type probe struct {
	snap, report []byte
}

// cutSnap is a worker's snapshot at the cut of a task
// (worker.CoreConfig.Cut): once the parts passed to it are taken, before
// the task's updates are applied, where the runtime takes a checkpoint's
// piece. snap is nil for a worker that the check cannot restore in place:
// one that is no schmp.Snapshotter, or a schmp.Rebuilder.
type cutSnap struct {
	round uint64
	snap  []byte
	err   error
}

// takeCut returns the snapshot of worker w at the cut of the task of
// round; none at round 1's, which comes before Start's update, where no
// checkpoint is taken.
func takeCut(w any, round uint64) cutSnap {
	if round == 1 || schmp.RebuildsOnRollback(w) {
		return cutSnap{round: round}
	}
	b, err := snapshot(w)
	return cutSnap{round: round, snap: b, err: err}
}

// violation is the error of a worker that breaks its contract.
func violation(format string, args ...any) error {
	return fmt.Errorf("the contract of schmp.Worker: "+format, args...)
}

// asksReport reports whether worker w's core answers task t with a Report
// (not a FinalReport).
func asksReport[P, R, U, S any](w schmp.Worker[P, R, U, S], t *protocol.Task[P, U]) bool {
	_, final := w.(schmp.FinalReporter[S])
	return t.Report && !(t.Final && final)
}

// report returns w's report, encoded.
func report[P, R, U, S any](w schmp.Worker[P, R, U, S]) ([]byte, error) {
	var s S
	if err := protocol.Guard("Report", func() (err error) { s, err = w.Report(); return err }); err != nil {
		return nil, err
	}
	return codec.Marshal(s)
}

// before probes worker w before the core's calls of task t: if t asks for
// a report, w's snapshot and its report, which must leave the snapshot as
// it was.
func (j *Job[P, R, U, S]) before(w schmp.Worker[P, R, U, S], t *protocol.Task[P, U]) (probe, error) {
	var pr probe
	if !asksReport(w, t) {
		return pr, nil
	}
	var err error
	if pr.snap, err = snapshot(w); err != nil {
		return pr, err
	}
	if pr.report, err = report(w); err != nil {
		return pr, err
	}
	after, err := snapshot(w)
	if err != nil {
		return pr, err
	}
	if path, ok := j.sameSnapshot(pr.snap, after); !ok {
		return pr, violation("Report changed the worker's state: its snapshot differs at %s", path)
	}
	return pr, nil
}

// after checks worker w, shard k, once its core's calls of task t are
// done, with out, what the core gave, and pr, the probe taken before: the
// core's report is the probe's; at depth > 1 the Push left what Report
// shows as it was; and the worker restored in place from its snapshot at
// the task's cut, given the task's updates and plan again, pushes the same
// partial (and a schmp.Passer the same part) and leaves the same
// snapshot.
func (j *Job[P, R, U, S]) after(ctx context.Context, k int, w schmp.Worker[P, R, U, S], t *protocol.Task[P, U], pr probe, out worker.Output[R, S]) error {
	a := out.Answer
	var rep []byte
	var err error
	if a != nil && a.HasReport && pr.report != nil {
		if rep, err = codec.Marshal(a.Report); err != nil {
			return err
		}
		if path, ok := j.sameMsg(pr.report, rep); !ok {
			return violation("two Reports in a row differ at %s", path)
		}
	}
	if a == nil || t.Stop || t.Check {
		return nil // no Push
	}
	// Encoded before any other call: a partial may share memory with the
	// worker's state.
	partial, err := codec.Marshal([]any{a.Partial, out.Pass})
	if err != nil {
		return err
	}
	if rep != nil && j.opts.Depth > 1 {
		b, err := report(w)
		if err != nil {
			return fmt.Errorf("a Report after the Push: %w", err)
		}
		if path, ok := j.sameMsg(rep, b); !ok {
			return violation("at depth %d, Push changed what Report shows, at %s", j.opts.Depth, path)
		}
	}
	c := j.cuts[k]
	switch {
	case c.round != t.Round:
		return fmt.Errorf("local: no cut of round %d, the last of round %d", t.Round, c.round)
	case c.err != nil:
		return c.err
	case c.snap == nil:
		return nil // no state to go back to
	}
	pushed, err := snapshot(w)
	if err != nil {
		return err
	}
	// Back to the cut, and the task again: its updates, its Push.
	if err := w.(schmp.Snapshotter).Restore(c.snap); err != nil {
		return fmt.Errorf("a Restore in place of its snapshot at the cut: %w", err)
	}
	us, err := roundTrip(pipeline.ForShard(t.Updates, k))
	if err != nil {
		return err
	}
	for _, u := range us {
		if err := protocol.Guard("Apply", func() error { return w.Apply(u) }); err != nil {
			return fmt.Errorf("restored in place from its snapshot at the cut, the task's updates applied again: %w", err)
		}
	}
	plan, err := roundTrip(t.Plan)
	if err != nil {
		return err
	}
	var again R
	if err := protocol.Guard("Push", func() (err error) { again, err = w.Push(ctx, t.Round, plan); return err }); err != nil {
		return fmt.Errorf("restored in place from its snapshot at the cut, the same plan pushed again: %w", err)
	}
	var pass *worker.Handoff[R]
	if p, ok := w.(schmp.Passer[R]); ok {
		var part R
		var to int
		if again, part, to, ok = p.Pass(t.Round, again); ok {
			pass = &worker.Handoff[R]{Round: t.Round, From: k, To: to, Part: part}
		}
	}
	b, err := codec.Marshal([]any{again, pass})
	if err != nil {
		return err
	}
	const replay = "restored in place from its snapshot at the cut and given the task's updates and plan again"
	if path, ok := j.sameMsg(partial, b); !ok {
		return violation("%s, the worker pushes a partial that differs at %s", replay, path)
	}
	snap, err := snapshot(w)
	if err != nil {
		return err
	}
	if path, ok := j.sameSnapshot(pushed, snap); !ok {
		return violation("%s, the worker's snapshot after its Push differs at %s", replay, path)
	}
	return nil
}

// snapshot returns w's snapshot, nil if it is no schmp.Snapshotter.
func snapshot(w any) ([]byte, error) {
	s, ok := w.(schmp.Snapshotter)
	if !ok {
		return nil, nil
	}
	b, err := s.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// sameMsg reports whether a and b, two messages encoded, are the same,
// numbers bit for bit, up to Options.Ignore; if not, it returns where
// they differ.
func (j *Job[P, R, U, S]) sameMsg(a, b []byte) (string, bool) {
	if bytes.Equal(a, b) {
		return "", true
	}
	var ga, gb any
	if codec.Unmarshal(a, &ga) != nil || codec.Unmarshal(b, &gb) != nil {
		return "(bytes that do not decode)", false
	}
	path, ok := alike(ga, gb, j.opts.Ignore, "")
	if !ok && path == "" {
		path = "(the whole)"
	}
	return path, ok
}

// sameSnapshot is sameMsg for two snapshots, comparing the msgpack bodies
// of those sealed by schmp.Seal.
func (j *Job[P, R, U, S]) sameSnapshot(a, b []byte) (string, bool) {
	if bytes.Equal(a, b) {
		return "", true
	}
	return j.sameMsg(body(a), body(b))
}

// body returns the msgpack body of b, a snapshot sealed by schmp.Seal
// (its kind, version and body, then a CRC-32C), or b itself.
func body(b []byte) []byte {
	var env struct {
		Kind    string `msgpack:"kind"`
		Version int    `msgpack:"version"`
		Body    []byte `msgpack:"body"`
	}
	if len(b) < 4 || codec.Unmarshal(b[:len(b)-4], &env) != nil || env.Kind == "" {
		return b
	}
	return env.Body
}
