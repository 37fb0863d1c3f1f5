package lasso

import (
	"context"
	"fmt"
	"math"

	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/sparse"
)

// Worker is the worker side of the Lasso: a shard of rows, column-compressed,
// and its residual.
type Worker struct {
	x      *sparse.CSC
	y      []float64
	colSum []float64 // Σ_i x_ij over the shard's rows
	q      []float64 // y − Xβ over the shard's rows
	sumQ   float64   // Σ q_i
	meanY  float64
	meanX  []float64 // nil when no intercept
	s      float64   // x̄ᵀβ
	beta   []float64 // β, as the updates so far make it
	data   libsvm.Fingerprint
	lo     int // the first of its rows
	// features is the number of features of the job, which Start's update
	// (its Center) tells: it bounds every variable.
	features int
}

// NewWorker reads shard of shards (a contiguous range of rows) of cfg.Data.
func NewWorker(cfg Config, shard, shards int) (*Worker, error) {
	n, err := libsvm.CountRows(cfg.Data)
	if err != nil {
		return nil, err
	}
	lo, hi := libsvm.ShardRange(n, shard, shards)
	x, y, err := libsvm.ReadMatrix(cfg.Data, lo, hi, 0)
	if err != nil {
		return nil, err
	}
	fp, err := libsvm.FingerprintFile(cfg.Data)
	if err != nil {
		return nil, err
	}
	w := &Worker{data: fp, lo: lo, x: x, y: y, colSum: make([]float64, x.Cols), q: append([]float64(nil), y...)}
	for j := range x.Cols {
		_, v := x.Col(j)
		for _, a := range v {
			w.colSum[j] += a
		}
	}
	for _, v := range y {
		w.sumQ += v
	}
	return w, nil
}

// Describe implements schmp.Worker.
func (w *Worker) Describe() (Summary, error) {
	s := Summary{
		Data:     w.data,
		Rows:     w.x.Rows,
		Features: w.x.Cols,
		ColSum:   w.colSum,
		ColSq:    make([]float64, w.x.Cols),
		XtY:      make([]float64, w.x.Cols),
	}
	for _, v := range w.y {
		s.SumY += v
	}
	for j := range w.x.Cols {
		rows, vals := w.x.Col(j)
		for k, i := range rows {
			s.ColSq[j] += vals[k] * vals[k]
			s.XtY[j] += vals[k] * w.y[i]
		}
	}
	return s, nil
}

// Apply implements schmp.Worker. An update that names a variable out of
// range, or a change that is not finite, is an error: updates come over
// the network (DESIGN "How a job fails").
func (w *Worker) Apply(u Update) error {
	if c := u.Center; c != nil {
		if c.Features < 0 || len(c.MeanX) != 0 && len(c.MeanX) != c.Features || !finite(c.MeanY) || !allFinite(c.MeanX) {
			return fmt.Errorf("a centering over %d features with %d means", c.Features, len(c.MeanX))
		}
		w.meanY = c.MeanY
		w.meanX = c.MeanX
		w.features = c.Features
	}
	if len(u.Vars) != len(u.Delta) || len(u.Vars) != len(u.Value) {
		return fmt.Errorf("update with %d variables, %d deltas and %d values", len(u.Vars), len(u.Delta), len(u.Value))
	}
	for k, j := range u.Vars {
		if j < 0 || int(j) >= w.features || !finite(u.Delta[k]) || !finite(u.Value[k]) {
			return fmt.Errorf("update of variable %d of %d by %v to %v", j, w.features, u.Delta[k], u.Value[k])
		}
	}
	for k, j := range u.Vars {
		d := u.Delta[k]
		if int(j) >= len(w.beta) {
			w.beta = append(w.beta, make([]float64, int(j)+1-len(w.beta))...)
		}
		w.beta[j] = u.Value[k]
		if int(j) < len(w.meanX) {
			w.s += w.meanX[j] * d
		}
		if int(j) >= w.x.Cols {
			continue // no non-zero in this shard
		}
		rows, vals := w.x.Col(int(j))
		for t, i := range rows {
			w.q[i] -= vals[t] * d
		}
		w.sumQ -= w.colSum[j] * d
	}
	return nil
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// allFinite reports whether every element of xs is finite.
func allFinite(xs []float64) bool {
	for _, x := range xs {
		if !finite(x) {
			return false
		}
	}
	return true
}

// Push implements schmp.Worker: x_jᵀr over the shard's rows for every j in
// the plan, where r = q − ȳ + s.
func (w *Worker) Push(_ context.Context, _ uint64, p Plan) (Partial, error) {
	shift := w.s - w.meanY
	dot := make([]float64, len(p.Vars))
	for k, j := range p.Vars {
		if j < 0 || int(j) >= w.features {
			return Partial{}, fmt.Errorf("plan of variable %d of %d", j, w.features)
		}
		if int(j) >= w.x.Cols {
			continue
		}
		rows, vals := w.x.Col(int(j))
		var sum float64
		for t, i := range rows {
			sum += vals[t] * w.q[i]
		}
		dot[k] = sum + shift*w.colSum[j]
	}
	return Partial{Dot: dot, SumR: w.sumQ + float64(w.x.Rows)*shift}, nil
}

// Report implements schmp.Worker: the sums over the shard's rows that the
// objective and the duality gap need. It costs one pass over the shard.
func (w *Worker) Report() (Summary, error) {
	shift := w.s - w.meanY
	s := Summary{Rows: w.x.Rows, XtR: make([]float64, w.x.Cols)}
	for i, q := range w.q {
		r := q + shift
		s.SqResid += r * r
		s.SumResid += r
		s.YtR += (w.y[i] - w.meanY) * r
	}
	for j := range w.x.Cols {
		rows, vals := w.x.Col(j)
		var sum float64
		for t, i := range rows {
			sum += vals[t] * w.q[i]
		}
		s.XtR[j] = sum + shift*w.colSum[j]
	}
	for _, b := range w.beta {
		if b != 0 {
			s.L1 += math.Abs(b)
			s.NNZ++
		}
	}
	return s, nil
}
