package logreg

import (
	"context"
	"fmt"
	"math"

	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/sparse"
)

// Worker is the worker side of logistic regression: a shard of rows,
// column-compressed, with their labels and margins.
type Worker struct {
	x         *sparse.CSC
	y         []float64 // ±1
	intercept bool
	pos, neg  int // labels as written: +1 or 1, −1
	zero      int // labels 0

	// Per row: the margin z = x·w + b, and at it the loss, r = −y·q and
	// d = σ(z)·σ(−z), where q = σ(−y·z).
	z, loss, r, d []float64
	sumR, sumD    float64 // Σ r_i, Σ d_i, kept up to date by Apply

	w []float64 // w, as the updates so far make it
	b float64

	// Rows whose margin an update changed, for recomputing them once.
	dirty   []bool
	touched []int32

	// Updates applied since the last Push: their rounds and loss changes.
	asOf   uint64
	rounds []uint64
	change []float64
}

// NewWorker reads shard of shards (a contiguous range of rows) of cfg.Data.
// A label that is not a class is an error naming its line.
func NewWorker(cfg Config, shard, shards int) (*Worker, error) {
	n, err := libsvm.CountRows(cfg.Data)
	if err != nil {
		return nil, err
	}
	lo, hi := libsvm.ShardRange(n, shard, shards)
	x, labels, err := libsvm.ReadMatrix(cfg.Data, lo, hi, 0)
	if err != nil {
		return nil, err
	}
	rows := x.Rows
	w := &Worker{
		x: x, y: make([]float64, rows), intercept: cfg.Intercept,
		z: make([]float64, rows), loss: make([]float64, rows), r: make([]float64, rows), d: make([]float64, rows),
		dirty: make([]bool, rows),
	}
	for i, v := range labels {
		y, ok := label(v)
		if !ok {
			return nil, &libsvm.ParseError{File: cfg.Data, Line: lo + i + 1, Msg: badLabel(v)}
		}
		w.y[i] = y
		switch v {
		case 1:
			w.pos++
		case -1:
			w.neg++
		default:
			w.zero++
		}
	}
	w.recomputeAll()
	return w, nil
}

// Describe implements schmp.Worker.
func (w *Worker) Describe() (Summary, error) {
	m := w.x.Cols
	s := Summary{
		Rows: w.x.Rows, Features: m, Pos: w.pos, Neg: w.neg, Zero: w.zero,
		ColSq: make([]float64, m), ColMax: make([]float64, m), ColSum: make([]float64, m),
		ColPos: make([]float64, m), ColNNZ: make([]int32, m),
	}
	for j := range m {
		rows, vals := w.x.Col(j)
		s.ColNNZ[j] = int32(len(rows))
		for k, i := range rows {
			v := vals[k]
			s.ColSq[j] += v * v
			s.ColMax[j] = max(s.ColMax[j], math.Abs(v))
			s.ColSum[j] += v
			if w.y[i] > 0 {
				s.ColPos[j] += v
			}
		}
	}
	return s, nil
}

// set recomputes the cached values of row i from its margin, and returns
// the change of its loss.
func (w *Worker) set(i int) float64 {
	loss, q, d := rowLoss(w.y[i], w.z[i])
	r := -w.y[i] * q
	change := loss - w.loss[i]
	w.sumR += r - w.r[i]
	w.sumD += d - w.d[i]
	w.loss[i], w.r[i], w.d[i] = loss, r, d
	return change
}

// recomputeAll recomputes every row, and the sums afresh. It returns the
// change of the loss.
func (w *Worker) recomputeAll() float64 {
	var change float64
	for i := range w.z {
		change += w.set(i)
	}
	w.sumR, w.sumD = 0, 0
	for i := range w.z {
		w.sumR += w.r[i]
		w.sumD += w.d[i]
	}
	return change
}

// Apply implements schmp.Worker: it moves the margins and records the
// change of the loss that the update caused.
func (w *Worker) Apply(u Update) error {
	if len(u.Vars) != len(u.Delta) {
		return fmt.Errorf("update with %d variables and %d deltas", len(u.Vars), len(u.Delta))
	}
	for k, j := range u.Vars {
		d := u.Delta[k]
		if j < 0 || math.IsNaN(d) || math.IsInf(d, 0) {
			return fmt.Errorf("update of variable %d by %v", j, d)
		}
		if int(j) >= len(w.w) {
			w.w = append(w.w, make([]float64, int(j)+1-len(w.w))...)
		}
		w.w[j] += d
		if int(j) >= w.x.Cols {
			continue // no non-zero in this shard
		}
		rows, vals := w.x.Col(int(j))
		for t, i := range rows {
			w.z[i] += vals[t] * d
			if !w.dirty[i] {
				w.dirty[i] = true
				w.touched = append(w.touched, i)
			}
		}
	}
	var change float64
	if u.Bias != 0 {
		if math.IsNaN(u.Bias) || math.IsInf(u.Bias, 0) {
			return fmt.Errorf("update of the intercept by %v", u.Bias)
		}
		w.b += u.Bias
		for i := range w.z {
			w.z[i] += u.Bias
		}
		for _, i := range w.touched {
			w.dirty[i] = false
		}
		change = w.recomputeAll()
	} else {
		for _, i := range w.touched {
			w.dirty[i] = false
			change += w.set(int(i))
		}
	}
	w.touched = w.touched[:0]
	w.asOf = u.Round
	w.rounds = append(w.rounds, u.Round)
	w.change = append(w.change, change)
	return nil
}

// Push implements schmp.Worker: Σ x_ij·r_i and Σ x_ij²·d_i over the
// shard's rows for every j of the plan, and the loss changes of the updates
// applied since the last push.
func (w *Worker) Push(_ context.Context, _ uint64, p Plan) (Partial, error) {
	part := Partial{
		Grad: make([]float64, len(p.Vars)), Curv: make([]float64, len(p.Vars)),
		SumR: w.sumR, SumD: w.sumD, AsOf: w.asOf, Rounds: w.rounds, LossChange: w.change,
	}
	w.rounds, w.change = nil, nil
	for k, j := range p.Vars {
		if j < 0 || int(j) >= w.x.Cols {
			continue
		}
		rows, vals := w.x.Col(int(j))
		var g, h float64
		for t, i := range rows {
			v := vals[t]
			g += v * w.r[i]
			h += v * v * w.d[i]
		}
		part.Grad[k], part.Curv[k] = g, h
	}
	return part, nil
}

// Report implements schmp.Worker: the sums over the shard's rows that the
// objective, the duality gap and the accuracy need. It costs one pass over
// the shard.
func (w *Worker) Report() (Summary, error) {
	s := Summary{Rows: w.x.Rows, V: make([]float64, w.x.Cols)}
	if w.intercept {
		s.P = make([]float64, w.x.Cols)
	}
	w.sumR, w.sumD = 0, 0
	for i, z := range w.z {
		s.Loss += w.loss[i]
		w.sumR += w.r[i]
		w.sumD += w.d[i]
		if (z >= 0) == (w.y[i] > 0) {
			s.Correct++
		}
		q := -w.y[i] * w.r[i]
		if w.y[i] > 0 {
			s.HPos += entropy(q)
			s.QPos += q
		} else {
			s.HNeg += entropy(q)
			s.QNeg += q
		}
	}
	for j := range w.x.Cols {
		rows, vals := w.x.Col(j)
		var v, p float64
		for t, i := range rows {
			v -= vals[t] * w.r[i] // y·q = −r
			if w.y[i] > 0 {
				p -= vals[t] * w.r[i]
			}
		}
		s.V[j] = v
		if s.P != nil {
			s.P[j] = p
		}
	}
	for _, b := range w.w {
		if b != 0 {
			s.L1 += math.Abs(b)
			s.NNZ++
		}
	}
	return s, nil
}
