package logreg

import (
	"fmt"
	"math"

	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/sparse"
)

// ColWorker is the worker side of logistic regression in the column layout:
// its own columns with all their rows, the labels, and a replica of the
// margins z = Xw + b over all rows. With several workers, worker
// columnar.Leader takes the Newton steps over its working set and the
// others scan, as the Lasso's column workers do; a worker's local index l
// of a column is l < x.Cols for its own column first+l, and x.Cols+f for
// the leader's f-th handed column.
type ColWorker struct {
	cfg          Config
	shard        int
	x            *sparse.CSC // the worker's columns; column l is column first+l
	first, total int
	n            float64
	y            []float64 // ±1
	pos, neg     int       // labels as written: +1 or 1, −1
	zero         int       // labels 0
	data         libsvm.Fingerprint
	bias         bool // the worker updates the intercept (shard 0, with Config.Intercept)

	lambda float64
	rows   []colRow  // at the margins as the updates so far make them
	loss   []float64 // log(1 + exp(−y_i·z_i)) at rows[i].z
	w      []float64 // w over the worker's columns
	b      float64
	asOf   uint64

	scratch []colRow  // the rows during a Push
	trial   []float64 // w over the worker's columns during a Push
	active  []int32
	relTol  float64              // the inner tolerance, relative to F (0: not set yet)
	work    *columnar.WorkingSet // a round's working set: its block and the non-zero coordinates
	rp      []float64            // scratch for Report
	nt      newtonScratch        // scratch for Push's Newton steps

	// The leader's handed columns, copied as they arrived, with local
	// indices after its own, and its working set (columnar.Held). w and
	// trial extend over them.
	held columnar.Held

	// With several workers: which of its columns a worker handed to the
	// leader's working set (the leader: put in its own), and a scan's
	// candidates with their scores.
	handed []bool
	cand   []int32
	score  []float64
	// grad[l] is |Σ_i x_ij·r_i| of own column l as the last Report
	// computed it (without an intercept, where the dual point is −r), which
	// the next scan uses if no update came in between (gradFresh).
	grad      []float64
	gradFresh bool
}

// colRow is what a worker keeps of a row in the column layout: the margin
// z, and at it r = −y·σ(−y·z), the derivative of the row's loss, and
// d = σ(z)·σ(−z), its curvature.
type colRow struct {
	z, r, d float64
}

// at returns the row with margin z and label y.
func at(y, z float64) colRow {
	_, q, d := row(y, z)
	return colRow{z: z, r: -y * q, d: d}
}

// NewColWorker reads the columns of cfg.Data that worker shard of shards
// owns in the column layout, with all their rows and the labels. A label
// that is not a class is an error naming its line.
func NewColWorker(cfg Config, shard, shards int) (*ColWorker, error) {
	x, labels, first, total, fp, err := libsvm.ReadOwnedColumns(cfg.Data, shard, shards)
	if err != nil {
		return nil, err
	}
	if total < shards {
		return nil, fmt.Errorf("%s: %d features are too few for %d workers in the column layout", cfg.Data, total, shards)
	}
	n := len(labels)
	w := &ColWorker{
		cfg: cfg, shard: shard, x: x, first: first, total: total, n: float64(n), y: make([]float64, n), data: fp,
		held: columnar.NewHeld(first, x.Cols, total),
		bias: shard == 0 && cfg.Intercept,
		rows: make([]colRow, n), loss: make([]float64, n), w: make([]float64, x.Cols),
		scratch: make([]colRow, n), trial: make([]float64, x.Cols),
		work: columnar.NewWorkingSet(shard, first, x.Cols),
	}
	for i, v := range labels {
		y, ok := label(v)
		if !ok {
			return nil, &libsvm.ParseError{File: cfg.Data, Line: i + 1, Msg: badLabel(v)}
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
	if shards > 1 {
		w.handed = make([]bool, x.Cols)
		w.grad = make([]float64, x.Cols)
	}
	w.setMargins(0)
	return w, nil
}

// col returns the row indices and values of the column of local index l.
func (w *ColWorker) col(l int) ([]int32, []float64) {
	if l < w.x.Cols {
		return w.x.Col(l)
	}
	return w.held.Col(l - w.x.Cols)
}

// take adds the columns handed to the leader, copied, with w_j = 0: only
// the leader changes w, and a worker hands only columns whose w_j is 0.
func (w *ColWorker) take(cols *columnar.Columns) error {
	return w.held.Take(cols, len(w.rows), false, func([]float64) {
		w.w = append(w.w, 0)
		w.trial = append(w.trial, 0)
	})
}

// scan is a worker's pass, with several workers, over its columns not yet
// in the leader's working set (their w_j is 0) at the current margins: it
// finds the violators of the optimality conditions, |Σ_i x_ij·r_i|/n > λ
// (r_i the derivative of row i's loss), and returns the worst of them, at
// most columnar.HandLimit of its non-zero coefficients, which it marks as
// handed, and the work it did.
func (w *ColWorker) scan() (picked []int32, work int64) {
	w.cand, w.score = w.cand[:0], w.score[:0]
	for l := range w.x.Cols {
		if w.handed[l] {
			continue
		}
		var g float64
		if w.gradFresh {
			g = w.grad[l]
		} else {
			rows, vals := w.x.Col(l)
			work += int64(len(rows)) + 1
			var dot float64
			for t, i := range rows {
				dot += vals[t] * w.rows[i].r
			}
			g = math.Abs(dot)
		}
		if g /= w.n; g > w.lambda {
			w.cand = append(w.cand, int32(w.first+l))
			w.score = append(w.score, g)
		}
	}
	return columnar.Pick(w.cand, w.score, w.w[:w.x.Cols], w.handed, w.first), work
}

// setMargins sets every margin to b.
func (w *ColWorker) setMargins(b float64) {
	w.b = b
	for i, y := range w.y {
		w.rows[i] = at(y, b)
		w.loss[i] = lossAt(y, b)
	}
}

// lossAt returns log(1 + exp(−y·z)).
func lossAt(y, z float64) float64 {
	s, _, _ := row(y, z)
	return rowLoss(y, z, s)
}

// Describe implements schmp.Worker.
func (w *ColWorker) Describe() (ColSummary, error) {
	s := ColSummary{
		Rows: len(w.y), Features: w.total, First: w.first, Cols: w.x.Cols, Data: w.data,
		Pos: w.pos, Neg: w.neg, Zero: w.zero,
	}
	if w.shard == 0 {
		s.Y = w.y
	}
	center := 0.5
	if w.cfg.Intercept {
		center = float64(w.pos) / w.n
	}
	for l := range w.x.Cols {
		rows, vals := w.x.Col(l)
		var sum, pos float64
		for t, i := range rows {
			sum += vals[t]
			if w.y[i] > 0 {
				pos += vals[t]
			}
		}
		s.LambdaMax = max(s.LambdaMax, math.Abs(pos-center*sum)/w.n)
	}
	return s, nil
}

// Apply implements schmp.Worker: it moves the margins and the worker's w
// (of its own columns, and the leader's of its handed columns too) and b as
// the update says, switches to the update's λ, if it carries a new one,
// and, on the leader, takes the columns handed to it.
func (w *ColWorker) Apply(u ColUpdate) error {
	w.gradFresh = false
	if u.Init {
		if math.IsNaN(u.Bias) || math.IsInf(u.Bias, 0) {
			return fmt.Errorf("initial intercept %v", u.Bias)
		}
		w.lambda = u.Lambda
		w.setMargins(u.Bias)
		w.asOf = u.Round
		return nil
	}
	if len(u.Vars) != len(u.Value) {
		return fmt.Errorf("update with %d variables and %d values", len(u.Vars), len(u.Value))
	}
	// Checked before any is applied: updates come over the network.
	if !(u.Alpha >= 0 && u.Alpha <= 1) || !allFinite([]float64{u.Lambda, u.Bias}) || !allFinite(u.Value) || !allFinite(u.Dir) {
		return fmt.Errorf("update with a step %v, λ %v, intercept %v, and values or a direction that are not finite", u.Alpha, u.Lambda, u.Bias)
	}
	if u.Lambda != 0 && u.Lambda != w.lambda {
		// The next λ of a path: the inner tolerance starts afresh, since
		// its tightening was the previous λ's.
		w.lambda = u.Lambda
		w.relTol = 0
	}
	if u.Dir != nil {
		if len(u.Dir) != len(w.rows) {
			return fmt.Errorf("update with a direction over %d rows, want %d", len(u.Dir), len(w.rows))
		}
		for i, d := range u.Dir {
			if d == 0 {
				continue
			}
			y := w.y[i]
			z := moveMargin(w.rows[i].z, u.Alpha, d)
			w.rows[i] = at(y, z)
			w.loss[i] = lossAt(y, z)
		}
	}
	if u.Cols.Len() > 0 && w.shard == columnar.Leader {
		if err := w.take(&u.Cols); err != nil {
			return err
		}
	}
	for k, j := range u.Vars {
		l := w.held.Local(j)
		if l < 0 {
			continue // another worker's column
		}
		w.w[l] = moveTo(w.w[l], u.Value[k], u.Alpha)
	}
	w.b = moveBias(w.b, u.Bias, u.Alpha)
	w.asOf = u.Round
	return nil
}

// Report implements schmp.Worker: the sums over all rows, which every
// worker computes alike, and over the worker's own columns the largest
// correlation of the dual point and ‖w‖₁.
func (w *ColWorker) Report() (ColSummary, error) {
	s := ColSummary{Rows: len(w.y)}
	for i, st := range w.rows {
		y := w.y[i]
		s.Loss += w.loss[i]
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
	sPos, sNeg := classScales(w.cfg.Intercept, s.QPos, s.QNeg)
	// Row i's entry of the dual point, times n over the common scale:
	// s_c·y_i·q_i = −s_c·r_i.
	w.rp = w.rp[:0]
	for i, st := range w.rows {
		sc := sNeg
		if w.y[i] > 0 {
			sc = sPos
		}
		w.rp = append(w.rp, -sc*st.r)
	}
	for l := range w.x.Cols {
		rows, vals := w.x.Col(l)
		var dot float64
		for t, i := range rows {
			dot += vals[t] * w.rp[i]
		}
		s.Dual = max(s.Dual, math.Abs(dot))
		if w.handed != nil {
			w.grad[l] = math.Abs(dot)
		}
	}
	// Without an intercept the dual point is −r, and the next Push scans
	// the same margins, unless an update comes first.
	w.gradFresh = w.handed != nil && !w.cfg.Intercept
	for _, v := range w.w[:w.x.Cols] {
		if v != 0 {
			s.L1 += math.Abs(v)
			s.NNZ++
		}
	}
	return s, nil
}

// classScales returns the scales s₊ and s₋ of the positive and negative
// rows' entries of the dual point, from the sums of q over each class: 1
// and 1 without an intercept, and with one the largest that make
// s₊·Q₊ = s₋·Q₋ (Σα_i = 0).
func classScales(intercept bool, qPos, qNeg float64) (sPos, sNeg float64) {
	sPos, sNeg = 1, 1
	if intercept {
		if qPos > qNeg {
			sPos = qNeg / qPos
		} else if qNeg > qPos {
			sNeg = qPos / qNeg
		}
	}
	return sPos, sNeg
}
