package mf

import (
	"fmt"
	"io"
	"slices"

	"github.com/strads-go/strads/schmp"
)

// Outputs implements schmp.Outputter: the files of the model that the
// runtime writes once the job is done, committed together (DESIGN "Outputs and inputs").
// With out, PREFIX.W.txt and PREFIX.H.txt (Model.WriteW, WriteH) and, with
// biases, PREFIX.bias.txt (WriteBiases), and the side file PREFIX.json
// that describes them (Meta); with Config.PredictOut, the
// predictions of Config.Predict's pairs (Model.Predict), whose pairs with
// an unseen id are counted on Config.Warn.
func (b *base) Outputs(out string) ([]schmp.Output, error) {
	m := b.m
	var outs []schmp.Output
	if out != "" {
		outs = append(outs, schmp.Output{Path: out + ".W.txt", Write: m.WriteW}, schmp.Output{Path: out + ".H.txt", Write: m.WriteH})
		if b.cfg.biased() {
			outs = append(outs, schmp.Output{Path: out + ".bias.txt", Write: m.WriteBiases})
		}
		outs = append(outs, schmp.Output{Path: MetaFile(out), Write: func(w io.Writer) error { return m.writeMeta(w, b.cfg) }})
	}
	switch pairs, path := b.cfg.Predict, b.cfg.PredictOut; {
	case (pairs == "") != (path == ""):
		return nil, fmt.Errorf("mf: Predict (%q) and PredictOut (%q) go together", pairs, path)
	case path != "":
		outs = append(outs, schmp.Output{Path: path, Write: func(w io.Writer) error {
			unseen, err := m.Predict(pairs, w)
			if unseen > 0 && b.cfg.Warn != nil {
				fmt.Fprintf(b.cfg.Warn, "mf: %d pairs of %s have a user or item not in --train: predicted by μ = %.6g plus the bias of the id that is known\n", unseen, pairs, m.Mean)
			}
			return err
		}})
	}
	if len(outs) > 0 {
		m.Factors = true
	}
	return outs, nil
}

// reportFactors reports whether the evaluations carry the users' factors:
// with validation only, whose model keeps the factors of the best
// evaluation, and only if they are wanted (Model.Factors). Otherwise the
// workers send them once, in their final reports.
func (b *base) reportFactors() bool { return b.m.Factors && b.cfg.Holdout > 0 }

// RoundsPerIteration implements schmp.Iterated: the rounds of an
// iteration (RoundsPerIter), at whose end the runtime stops a job.
func (b *base) RoundsPerIteration() uint64 { return uint64(b.cfg.RoundsPerIter()) }

// LastRound implements schmp.Iterated: the rotation sends every
// worker all of H with the update of the last round, so that the check's
// report evaluates the state written.
func (b *base) LastRound(last uint64) error {
	if b.cfg.Algo == SGD && b.cfg.Schedule == Rotation && !b.cfg.gathers(last) {
		return fmt.Errorf("mf's rotation on the ring stops at the end of an iteration (%d rounds), not after round %d: set MaxRounds to whole iterations, or use the star (Config.Star)", b.cfg.RoundsPerIter(), last)
	}
	b.lastRound = last
	return nil
}

// finish takes the workers' final reports, their users' factors and
// biases, and H and the item biases (row by row) from hc: the model
// written is the state the job ended with. With validation the model
// keeps the factors of the best evaluation instead (Model.Factors).
func (b *base) finish(reports []Summary, hc func() (h, c []float64)) error {
	m := b.m
	if b.cfg.Holdout > 0 {
		return nil
	}
	if len(reports) != len(m.Users) {
		return fmt.Errorf("%d final reports for %d workers", len(reports), len(m.Users))
	}
	w := make([][]float64, len(reports))
	var bu [][]float64
	if m.Biased {
		bu = make([][]float64, len(reports))
	}
	for p, r := range reports {
		if len(r.W) != len(m.Users[p])*m.Rank {
			return fmt.Errorf("worker %d sent %d factor values for %d users of rank %d", p, len(r.W), len(m.Users[p]), m.Rank)
		}
		w[p] = r.W
		if m.Biased {
			if len(r.B) != len(m.Users[p]) {
				return fmt.Errorf("worker %d sent %d biases for %d users", p, len(r.B), len(m.Users[p]))
			}
			bu[p] = r.B
		}
	}
	h, c := hc()
	m.W, m.H, m.B, m.C = w, slices.Clone(h), bu, nil
	if m.Biased {
		m.C = slices.Clone(c)
	}
	return nil
}

// finalReport is a worker's final report: its users' factors w (row by
// row) and biases b, of the state after round.
func finalReport(round uint64, w, b []float64) (Summary, error) {
	return Summary{Round: round, W: w, B: b}, nil
}

// FinalReport implements schmp.FinalReporter: the users' factors and
// biases, which never travel otherwise (but with validation).
func (w *rotationWorker) FinalReport() (Summary, error) { return finalReport(w.round, w.w, w.bs.b) }

// FinalReport implements schmp.FinalReporter.
func (w *unscheduledWorker) FinalReport() (Summary, error) { return finalReport(w.round, w.w, w.bs.b) }

// FinalReport implements schmp.FinalReporter.
func (w *ccdWorker) FinalReport() (Summary, error) { return finalReport(w.round, rows(w.w), w.bs.b) }

// FinalReport implements schmp.FinalReporter.
func (w *alsWorker) FinalReport() (Summary, error) { return finalReport(w.round, w.w, w.bs.b) }

// Finish implements schmp.Finisher.
func (c *rotationCoordinator) Finish(reports []Summary) error {
	return c.finish(reports, func() ([]float64, []float64) { return c.h, c.c })
}

// Finish implements schmp.Finisher.
func (c *unscheduledCoordinator) Finish(reports []Summary) error {
	return c.finish(reports, func() ([]float64, []float64) { return c.h, c.c })
}

// Finish implements schmp.Finisher.
func (c *ccdCoordinator) Finish(reports []Summary) error {
	return c.finish(reports, func() ([]float64, []float64) { return rows(c.h), c.c })
}

// Finish implements schmp.Finisher.
func (c *alsCoordinator) Finish(reports []Summary) error {
	return c.finish(reports, func() ([]float64, []float64) { return c.h, c.c })
}
