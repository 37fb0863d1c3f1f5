package logreg

import (
	"fmt"
	"math"

	"github.com/strads-go/strads/apps/internal/colshard"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
)

// ColWorker is the worker side of logistic regression in the column layout:
// its own columns with all their rows, the labels, and a replica of the
// margins z = Xw + b over all rows. Each round it takes proximal Newton
// steps over its working set (columnar.Screen), which its scan keeps, and
// returns its change of z (Push; DESIGN "The column layout").
type ColWorker struct {
	sh       colshard.Shard // w and trial extend over its held columns
	cfg      Config
	y        []float64 // ±1
	pos, neg int       // labels as written: +1 or 1, −1
	zero     int       // labels 0

	rows []colRow  // at the margins as the updates so far make them
	loss []float64 // log(1 + exp(−y_i·z_i)) at rows[i].z
	w    []float64 // w over the worker's columns, then those it holds
	b    float64
	asOf uint64

	scratch []colRow      // the rows during a Push
	trial   []float64     // w over the worker's columns during a Push
	rp      []float64     // scratch for Report
	nt      newtonScratch // scratch for Push's Newton steps
	// bias is whether a Push's Newton steps move the intercept: always on
	// worker shard 0 with Config.Intercept (which reports it), and on
	// every worker in a joint round.
	bias     bool
	scanWork int64 // the non-zeros that the screen's dot products visited
	steps    int64 // the coordinate steps of this round on the worker's own columns
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
	sh, labels, err := colshard.Read(cfg.Data, shard, shards)
	if err != nil {
		return nil, err
	}
	x, n := sh.X, len(labels)
	w := &ColWorker{
		sh: sh, cfg: cfg, y: make([]float64, n),
		rows: make([]colRow, n), loss: make([]float64, n), w: make([]float64, x.Cols),
		scratch: make([]colRow, n), trial: make([]float64, x.Cols),
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
	norm := make([]float64, x.Cols)
	for l := range x.Cols {
		_, vals := x.Col(l)
		var sq float64
		for _, v := range vals {
			sq += v * v
		}
		norm[l] = math.Sqrt(sq)
	}
	w.sh.Screen = columnar.NewScreen(sh.First, norm, cfg.Schedule.Policy, cfg.Schedule.Seed)
	w.setMargins(0)
	return w, nil
}

// corr returns |Σ_i x_ij·r_i| of own column l at the current margins, the
// screen's correlation (its threshold is nλ), counting its work.
func (w *ColWorker) corr(l int) float64 {
	rows, vals := w.sh.X.Col(l)
	w.scanWork += int64(len(rows)) + 1
	var dot float64
	for t, i := range rows {
		dot += vals[t] * w.rows[i].r
	}
	return math.Abs(dot)
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
		Rows: len(w.y), Features: w.sh.Total, First: w.sh.First, Cols: w.sh.X.Cols, Data: w.sh.Data,
		Pos: w.pos, Neg: w.neg, Zero: w.zero,
	}
	if w.sh.Index == 0 {
		s.Y = w.y
	}
	center := 0.5
	if w.cfg.Intercept {
		center = float64(w.pos) / w.sh.N
	}
	for l := range w.sh.X.Cols {
		rows, vals := w.sh.X.Col(l)
		var sum, pos float64
		for t, i := range rows {
			sum += vals[t]
			if w.y[i] > 0 {
				pos += vals[t]
			}
		}
		s.LambdaMax = max(s.LambdaMax, math.Abs(pos-center*sum)/w.sh.N)
	}
	return s, nil
}

// Apply implements schmp.Worker: it moves the margins, the worker's w (of
// its own columns and those it holds) and b as the update says, switches
// to the update's λ, if it carries a new one, and keeps the columns the
// other workers shared.
func (w *ColWorker) Apply(u ColUpdate) error {
	if u.Init {
		if math.IsNaN(u.Bias) || math.IsInf(u.Bias, 0) {
			return fmt.Errorf("initial intercept %v", u.Bias)
		}
		w.sh.Lambda = u.Lambda
		w.setMargins(u.Bias)
		w.sh.Screen.Forget()
		w.asOf, w.sh.Joint = u.Round, false
		return nil
	}
	if len(u.Vars) != len(u.Value) || len(u.ColValue) != u.Cols.Len() {
		return fmt.Errorf("update with %d variables and %d values, and %d columns with %d values",
			len(u.Vars), len(u.Value), u.Cols.Len(), len(u.ColValue))
	}
	// Checked before any is applied: updates come over the network.
	if !(u.Alpha >= 0 && u.Alpha <= MaxStep) || !allFinite([]float64{u.Lambda, u.Bias}) || !allFinite(u.Value) || !allFinite(u.Dir) || !allFinite(u.ColValue) {
		return fmt.Errorf("update with a step %v, λ %v, intercept %v, and values or a direction that are not finite", u.Alpha, u.Lambda, u.Bias)
	}
	if u.Dir != nil && len(u.Dir) != len(w.rows) {
		return fmt.Errorf("update with a direction over %d rows, want %d", len(u.Dir), len(w.rows))
	}
	w.sh.NewLambda(u.Lambda) // the next of a path
	var moved float64        // ‖Δz‖²
	for i, d := range u.Dir {
		if d == 0 {
			continue
		}
		y, old := w.y[i], w.rows[i].z
		z := moveMargin(old, u.Alpha, d)
		w.rows[i] = at(y, z)
		w.loss[i] = lossAt(y, z)
		moved += (z - old) * (z - old)
	}
	// The derivative of a row's loss is ¼-Lipschitz in its margin:
	// ‖Δr‖ ≤ ‖Δz‖/4.
	w.sh.Screen.Moved(math.Sqrt(moved) / 4)
	for k, j := range u.Vars {
		if l := w.sh.Held.Local(j); l >= 0 {
			w.w[l] = moveTo(w.w[l], u.Value[k], u.Alpha)
		}
	}
	// The columns shared in the round, taken after the values are moved:
	// a new one starts at its value after the update.
	if err := w.sh.Take(&u.Cols, u.ColValue, true, &w.w, func([]float64) { w.trial = append(w.trial, 0) }); err != nil {
		return err
	}
	w.b = moveBias(w.b, u.Bias, u.Alpha)
	w.asOf, w.sh.Joint = u.Round, u.Joint
	return nil
}

// Report implements schmp.Worker: the sums over all rows, which every
// worker computes alike, and over the worker's own columns the largest
// correlation of the dual point and ‖w‖₁. Without an intercept the dual
// point is −r, whose correlations are the screen's: the largest is exact
// wherever it exceeds nλ (the screen computes every column that may), and
// the duality gap, which uses it only above nλ, is exact. With one, the
// classes' scales make it another point, and every column is computed.
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
	if w.cfg.Intercept {
		sPos, sNeg := classScales(true, s.QPos, s.QNeg)
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
		for l := range w.sh.X.Cols {
			rows, vals := w.sh.X.Col(l)
			var dot float64
			for t, i := range rows {
				dot += vals[t] * w.rp[i]
			}
			s.Dual = max(s.Dual, math.Abs(dot))
		}
	} else {
		s.Dual = w.sh.Screen.MaxCorr(w.sh.N*w.sh.Lambda, w.corr)
	}
	s.L1, s.NNZ = w.sh.L1(w.w)
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
