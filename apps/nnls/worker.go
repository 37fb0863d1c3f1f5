package nnls

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
)

// Worker is the worker side: its own rows of X, by column, and the
// residual r = y − Xβ over them.
type Worker struct {
	x  [][]float64 // x[j] is column j over the worker's rows
	r  []float64
	lo int // the first of its rows
}

// NewWorker generates the rows of worker shard of shards, a contiguous
// range of them (libsvm.ShardRange), and nothing else.
func NewWorker(cfg Config, shard, shards int) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lo, hi := libsvm.ShardRange(cfg.Rows, shard, shards)
	w := &Worker{x: make([][]float64, cfg.Cols), r: make([]float64, hi-lo), lo: lo}
	for j := range w.x {
		w.x[j] = make([]float64, hi-lo)
	}
	row := make([]float64, cfg.Cols)
	for i := lo; i < hi; i++ {
		w.r[i-lo] = cfg.Row(i, row) // β = 0 at the start, so r = y
		for j, v := range row {
			w.x[j][i-lo] = v
		}
	}
	return w, nil
}

// Describe implements schmp.Worker: the number of rows and the squared
// column norms over them.
func (w *Worker) Describe() (Summary, error) {
	s := Summary{Rows: len(w.r), ColSq: make(codec.Float64s, len(w.x))}
	for j, x := range w.x {
		s.ColSq[j] = floats.Dot(x, x)
	}
	return s, nil
}

// Apply implements schmp.Worker: r ← r − Δβ_j·x_j for every change.
func (w *Worker) Apply(u Update) error {
	if len(u.Vars) != len(u.Delta) {
		return fmt.Errorf("nnls: update with %d variables and %d deltas", len(u.Vars), len(u.Delta))
	}
	// Checked before any is applied: updates come over the network.
	for k, j := range u.Vars {
		if d := u.Delta[k]; j < 0 || int(j) >= len(w.x) || math.IsNaN(d) || math.IsInf(d, 0) {
			return fmt.Errorf("nnls: update of variable %d out of %d by %v", j, len(w.x), d)
		}
	}
	for k, j := range u.Vars {
		floats.AddScaled(w.r, -u.Delta[k], w.x[j])
	}
	return nil
}

// Push implements schmp.Worker: x_jᵀr over the worker's rows for every j
// of the plan.
func (w *Worker) Push(_ context.Context, _ uint64, p Plan) (Partial, error) {
	dot := make(codec.Float64s, len(p.Vars))
	for k, j := range p.Vars {
		if j < 0 || int(j) >= len(w.x) {
			return Partial{}, fmt.Errorf("nnls: plan of variable %d out of %d", j, len(w.x))
		}
		dot[k] = floats.Dot(w.x[j], w.r)
	}
	return Partial{Dot: dot}, nil
}

// Report implements schmp.Worker: Σr² over the worker's rows.
func (w *Worker) Report() (Summary, error) {
	return Summary{SqResid: floats.Dot(w.r, w.r)}, nil
}
