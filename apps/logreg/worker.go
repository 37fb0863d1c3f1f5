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
	lo        int       // the first of its rows
	y         []float64 // ±1
	intercept bool
	pos, neg  int // labels as written: +1 or 1, −1
	zero      int // labels 0

	rows       []rowState
	sumR, sumD float64 // Σ r_i, Σ d_i, kept up to date by Apply

	w []float64 // w, as the updates so far make it
	b float64
	// features is the number of features of the job, which Start's update
	// tells: it bounds every variable (DESIGN "Failures and durability").
	features int

	// Rows whose margin an update changed, for recomputing them once, and
	// their margins before it.
	dirty   []bool
	touched []int32
	zOld    []float64
	rp      []float64 // scratch for Report

	// Updates applied since the last Push: their rounds and loss changes.
	asOf   uint64
	rounds []uint64
	change []float64
}

// rowState is what a worker keeps of a row: the margin z = x·w + b, and at
// it r = −y·q and d = σ(z)·σ(−z), where q = σ(−y·z), and the s of row (the
// loss is log(s) + max(−y·z, 0)). Keeping them together costs one cache
// line per row that an update or a push touches.
type rowState struct {
	z, r, d, s float64
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
		x: x, lo: lo, y: make([]float64, rows), intercept: cfg.Intercept,
		rows:  make([]rowState, rows),
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
	w.init()
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

// set recomputes the cached values of row i from its margin, which was
// zOld, and adds the change of its loss to ratio and hinge.
func (w *Worker) set(i int, zOld float64, ratio *logRatio, hinge *float64) {
	y, st := w.y[i], &w.rows[i]
	s, q, d := row(y, st.z)
	r := -y * q
	ratio.add(s, st.s)
	*hinge += max(-y*st.z, 0) - max(-y*zOld, 0)
	w.sumR += r - st.r
	w.sumD += d - st.d
	st.s, st.r, st.d = s, r, d
}

// init computes the cached values of every row at margin 0, and their
// sums.
func (w *Worker) init() {
	w.sumR, w.sumD = 0, 0
	for i, y := range w.y {
		s, q, d := row(y, 0)
		w.rows[i] = rowState{r: -y * q, d: d, s: s}
		w.sumR += -y * q
		w.sumD += d
	}
}

// Apply implements schmp.Worker: it moves the margins and records the
// change of the loss that the update caused.
func (w *Worker) Apply(u Update) error {
	if len(u.Vars) != len(u.Delta) {
		return fmt.Errorf("update with %d variables and %d deltas", len(u.Vars), len(u.Delta))
	}
	if math.IsNaN(u.Bias) || math.IsInf(u.Bias, 0) {
		return fmt.Errorf("update of the intercept by %v", u.Bias)
	}
	if u.Features < 0 {
		return fmt.Errorf("update of %d features", u.Features)
	}
	if u.Features > 0 {
		w.features = u.Features
	}
	// Checked before any is applied: updates come over the network.
	for k, j := range u.Vars {
		if d := u.Delta[k]; j < 0 || int(j) >= w.features || math.IsNaN(d) || math.IsInf(d, 0) {
			return fmt.Errorf("update of variable %d of %d by %v", j, w.features, d)
		}
	}
	all := u.Bias != 0 // every row moves
	if all {
		for _, st := range w.rows {
			w.zOld = append(w.zOld, st.z)
		}
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
			st := &w.rows[i]
			if !all && !w.dirty[i] {
				w.dirty[i] = true
				w.touched = append(w.touched, i)
				w.zOld = append(w.zOld, st.z)
			}
			st.z += vals[t] * d
		}
	}
	ratio, hinge := newLogRatio(), 0.0
	if all {
		w.b += u.Bias
		for i := range w.rows {
			w.rows[i].z += u.Bias
			w.set(i, w.zOld[i], &ratio, &hinge)
		}
		// Re-sum afresh, now that every row changed.
		w.sumR, w.sumD = 0, 0
		for _, st := range w.rows {
			w.sumR += st.r
			w.sumD += st.d
		}
	} else {
		for k, i := range w.touched {
			w.dirty[i] = false
			w.set(int(i), w.zOld[k], &ratio, &hinge)
		}
	}
	w.touched, w.zOld = w.touched[:0], w.zOld[:0]
	w.asOf = u.Round
	w.rounds = append(w.rounds, u.Round)
	w.change = append(w.change, ratio.value()+hinge)
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
		if j < 0 || int(j) >= w.features {
			return Partial{}, fmt.Errorf("plan of variable %d of %d", j, w.features)
		}
		if int(j) >= w.x.Cols {
			continue
		}
		rows, vals := w.x.Col(int(j))
		var g, h float64
		for t, i := range rows {
			v, st := vals[t], &w.rows[i]
			g += v * st.r
			h += v * v * st.d
		}
		part.Grad[k], part.Curv[k] = g, h
	}
	return part, nil
}

// Report implements schmp.Worker: the sums over the shard's rows that the
// objective, the duality gap and the accuracy need. It costs one pass over
// the shard.
func (w *Worker) Report() (Summary, error) {
	s := Summary{Rows: w.x.Rows}
	// Σr and Σd are not summed afresh here: the next partial carries
	// them, and the model must not depend on how often the job reports
	// (schmp.Worker's contract).
	for i, st := range w.rows {
		y := w.y[i]
		s.Loss += rowLoss(y, st.z, st.s)
		if (st.z >= 0) == (y > 0) {
			s.Correct++
		}
		q := -y * st.r
		if y > 0 {
			s.HPos += entropy(q)
			s.QPos += q
		} else {
			s.HNeg += entropy(q)
			s.QNeg += q
		}
	}
	// V_j = Σ x_ij·y_i·q_i = −Σ x_ij·r_i, and with an intercept P_j, the
	// same over the positive rows.
	w.rp = w.rp[:0]
	for _, st := range w.rows {
		w.rp = append(w.rp, st.r)
	}
	s.V = w.columnSums(w.rp)
	if w.intercept {
		for i, y := range w.y {
			if y < 0 {
				w.rp[i] = 0
			}
		}
		s.P = w.columnSums(w.rp)
	}
	for _, b := range w.w {
		if b != 0 {
			s.L1 += math.Abs(b)
			s.NNZ++
		}
	}
	return s, nil
}

// columnSums returns −Σ_i x_ij·v_i for every column j of the shard.
func (w *Worker) columnSums(v []float64) []float64 {
	sums := make([]float64, w.x.Cols)
	for j := range sums {
		rows, vals := w.x.Col(j)
		var sum float64
		for t, i := range rows {
			sum -= vals[t] * v[i]
		}
		sums[j] = sum
	}
	return sums
}
