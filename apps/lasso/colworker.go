package lasso

import (
	"context"
	"fmt"
	"math"

	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/sparse"
)

// ColWorker is the worker side of the Lasso in the column layout: its own
// columns with all their rows, the labels, and a replica of q = y − Xβ.
//
// With one worker it runs coordinate descent over its block and its
// non-zero coordinates (Push). With several, worker columnar.Leader does
// that over its own columns and every column handed to it, and the others
// scan theirs for violators of the optimality conditions and hand them to
// the leader (scan; DESIGN §5). A worker's local index l of a column is
// l < x.Cols for its own column first+l, and x.Cols+f for the leader's
// f-th handed column.
type ColWorker struct {
	cfg          Config
	shard        int
	x            *sparse.CSC // the worker's columns; column l is column first+l
	first, total int
	n            float64
	y            []float64
	meanY        float64 // 0 without an intercept
	colSum       []float64
	curv         []float64 // a_j = ‖x̃_j‖²/n; 0 for a column with nothing to fit
	data         libsvm.Fingerprint

	lambda float64
	q      []float64 // y − Xβ over all rows, as the updates so far make it
	beta   []float64 // β over the worker's columns

	scratch []float64 // q during a Push
	trial   []float64 // β over the worker's columns during a Push
	active  []int32
	relTol  float64              // the inner tolerance, relative to ‖r‖²/n (0: not set yet)
	work    *columnar.WorkingSet // a round's working set: its block and the non-zero coordinates

	// The leader's handed columns, copied as they arrived, with local
	// indices after its own, and its working set (columnar.Held). colSum,
	// curv, beta and trial extend over them.
	held columnar.Held

	// With several workers: which of its columns a worker handed to the
	// leader's working set (the leader: put in its own), and a scan's
	// candidates with their scores.
	handed []bool
	// grad[l] is |x̃_jᵀr| of own column l as the last Report computed it,
	// which the next scan uses if no update came in between (gradFresh):
	// the runtime asks for a report just before the push of a round.
	grad      []float64
	gradFresh bool
	cand      []int32
	score     []float64
}

// NewColWorker reads the columns of cfg.Data that worker shard of shards
// owns in the column layout, with all their rows.
func NewColWorker(cfg Config, shard, shards int) (*ColWorker, error) {
	fp, err := libsvm.FingerprintFile(cfg.Data)
	if err != nil {
		return nil, err
	}
	x, y, first, total, err := libsvm.ReadOwnedColumns(cfg.Data, shard, shards)
	if err != nil {
		return nil, err
	}
	if total < shards {
		return nil, fmt.Errorf("%s: %d features are too few for %d workers in the column layout", cfg.Data, total, shards)
	}
	w := &ColWorker{
		cfg: cfg, shard: shard, x: x, first: first, total: total, n: float64(len(y)), y: y, data: fp,
		held:   columnar.NewHeld(first, x.Cols, total),
		colSum: make([]float64, x.Cols), curv: make([]float64, x.Cols),
		q: append([]float64(nil), y...), beta: make([]float64, x.Cols),
		scratch: make([]float64, len(y)), trial: make([]float64, x.Cols),
		work: columnar.NewWorkingSet(shard, first, x.Cols),
	}
	if cfg.Intercept {
		for _, v := range y {
			w.meanY += v
		}
		w.meanY /= w.n
	}
	for l := range x.Cols {
		_, vals := x.Col(l)
		w.colSum[l], w.curv[l] = w.colStats(vals)
	}
	if shards > 1 {
		w.handed = make([]bool, x.Cols)
		w.grad = make([]float64, x.Cols)
	}
	return w, nil
}

// colStats returns a column's sum Σ_i x_ij and curvature a_j = ‖x̃_j‖²/n (0
// for a column with nothing to fit) from its non-zero values, as every node
// that holds the column computes them alike.
func (w *ColWorker) colStats(vals []float64) (sum, curv float64) {
	var sq float64
	for _, v := range vals {
		sum += v
		sq += v * v
	}
	a := sq / w.n
	if w.cfg.Intercept {
		m := sum / w.n
		a -= m * m
	}
	if a >= 1e-14*sq/w.n && a > 0 {
		curv = a
	}
	return sum, curv
}

// col returns the row indices and values of the column of local index l.
func (w *ColWorker) col(l int) ([]int32, []float64) {
	if l < w.x.Cols {
		return w.x.Col(l)
	}
	return w.held.Col(l - w.x.Cols)
}

// Describe implements schmp.Worker.
func (w *ColWorker) Describe() (ColSummary, error) {
	s := ColSummary{
		Rows: len(w.y), Features: w.total, First: w.first, Cols: w.x.Cols, Data: w.data, ColSum: w.colSum,
	}
	if w.shard == 0 {
		s.Y = w.y
	}
	for l := range w.x.Cols {
		if w.curv[l] == 0 {
			continue
		}
		dot := w.x.ColDot(l, w.y)
		s.LambdaMax = max(s.LambdaMax, math.Abs(dot-w.meanY*w.colSum[l])/w.n)
	}
	return s, nil
}

// Apply implements schmp.Worker: it moves q and the worker's β as the
// update says (β of its own columns, and the leader's of its handed
// columns too), switches to the update's λ, if it carries a new one, and,
// on the leader, takes the columns handed to it.
func (w *ColWorker) Apply(u ColUpdate) error {
	w.gradFresh = false
	if u.Lambda != 0 && u.Lambda != w.lambda {
		// A new λ (the first, or the next of a path): the inner tolerance
		// starts afresh, since its tightening was the previous λ's.
		w.lambda = u.Lambda
		w.relTol = 0
	}
	if len(u.Vars) != len(u.Value) {
		return fmt.Errorf("update with %d variables and %d values", len(u.Vars), len(u.Value))
	}
	// Checked before any is applied: updates come over the network.
	if !(u.Alpha >= 0 && u.Alpha <= 1) || !finite(u.Lambda) || !allFinite(u.Value) || !allFinite(u.Dir) {
		return fmt.Errorf("update with a step %v, λ %v, and values or a direction that are not finite", u.Alpha, u.Lambda)
	}
	if u.Dir != nil {
		if len(u.Dir) != len(w.q) {
			return fmt.Errorf("update with a direction over %d rows, want %d", len(u.Dir), len(w.q))
		}
		applyDir(w.q, u.Dir, u.Alpha)
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
		w.beta[l] = step(w.beta[l], u.Value[k], u.Alpha)
	}
	return nil
}

// take adds the columns handed to the leader, copied, with β_j = 0: only
// the leader changes β, and a worker hands only columns whose β_j is 0.
func (w *ColWorker) take(cols *columnar.Columns) error {
	return w.held.Take(cols, len(w.q), func(vals []float64) {
		sum, a := w.colStats(vals)
		w.colSum = append(w.colSum, sum)
		w.curv = append(w.curv, a)
		w.beta = append(w.beta, 0)
		w.trial = append(w.trial, 0)
	})
}

// applyDir sets q ← q − alpha·dir, as every node of the job does it.
func applyDir(q, dir []float64, alpha float64) {
	for i, d := range dir {
		q[i] -= alpha * d
	}
}

// step returns β_j moved by alpha from b towards v: v itself when alpha is
// 1, and exactly 0 where the move crosses zero at alpha (up to rounding).
func step(b, v, alpha float64) float64 {
	if alpha == 1 {
		return v
	}
	x := b + alpha*(v-b)
	if math.Abs(x) <= 1e-12*math.Abs(b) {
		return 0
	}
	return x
}

// residualShift returns c such that r = q + c is the residual of the
// centered problem (0 without an intercept), from sumQ = Σ q_i.
func (w *ColWorker) residualShift(sumQ float64) float64 {
	if !w.cfg.Intercept {
		return 0
	}
	return -sumQ / w.n
}

// Push implements schmp.Worker: coordinate descent on a scratch copy of q
// over the round's working set — the worker's block and its non-zero
// coordinates, which are in every round's working set as in glmnet's active
// set strategy. It sweeps the whole working set, then its non-zero
// coordinates until they settle, then the whole set again, until a sweep
// changes nothing by more than the inner tolerance or the work budget is
// spent.
//
// With several workers every worker first scans its columns not yet in the
// leader's working set for violators (scan). The others hand theirs, with
// their data, to the leader and stop there: their partial changes nothing.
// The leader adds its own to its working set and runs the coordinate
// descent above over its working set — the columns it picked from its own
// so far and every column handed to it — instead of the plan's block, which
// it only checks.
func (w *ColWorker) Push(ctx context.Context, _ uint64, p ColPlan) (ColPartial, error) {
	block, err := w.work.Build(p, w.beta[:w.x.Cols])
	if err != nil {
		return ColPartial{}, err
	}
	var scanWork int64
	if w.handed != nil {
		if err := ctx.Err(); err != nil {
			return ColPartial{}, err
		}
		picked, work := w.scan()
		if w.shard != columnar.Leader {
			part := ColPartial{Work: work}
			part.Cols.AddOwned(w.x, w.first, picked)
			return part, nil
		}
		// The leader's working set: the columns it picked from its own
		// (this round's too) and those handed to it, not the plan's block.
		scanWork = work
		block = w.held.WorkingSet(picked)
	}
	copy(w.scratch, w.q)
	copy(w.trial, w.beta)
	var sumQ, rr float64
	for _, v := range w.scratch {
		sumQ += v
	}
	c := w.residualShift(sumQ)
	for _, v := range w.scratch {
		rr += (v + c) * (v + c)
	}
	// A sweep has settled when no coordinate's step would lower the
	// objective by more than about tol·‖r‖²/2n (a step δ_j lowers it by
	// about a_j·δ_j²/2).
	if w.relTol == 0 {
		w.relTol = w.cfg.innerTol()
	}
	tol := w.relTol * rr / w.n
	budget := w.cfg.roundWork() * innerWorkFactor
	var work int64
	sweep := func(cols []int32) float64 {
		var most float64
		for _, j := range cols {
			l := w.held.Local(j)
			rows, vals := w.col(l)
			work += int64(len(rows)) + 1
			a := w.curv[l]
			if a == 0 {
				continue
			}
			var dot float64
			for t, i := range rows {
				dot += vals[t] * w.scratch[i]
			}
			old := w.trial[l]
			z := (dot+c*w.colSum[l])/w.n + a*old
			nw := softThreshold(z, w.lambda) / a
			d := nw - old
			if d == 0 {
				continue
			}
			for t, i := range rows {
				w.scratch[i] -= vals[t] * d
			}
			w.trial[l] = nw
			if w.cfg.Intercept {
				sumQ -= w.colSum[l] * d
				c = -sumQ / w.n
			}
			most = max(most, a*d*d)
		}
		return most
	}
	for work < budget {
		if err := ctx.Err(); err != nil {
			return ColPartial{}, err
		}
		if sweep(block) <= tol {
			if work > int64(len(block))+w.blockNNZ(block) || w.relTol <= minInnerTol {
				break
			}
			// The first sweep found the working set settled: the rounds
			// have reached the tolerance, so tighten it for this round and
			// the next ones.
			w.relTol *= 1e-2
			tol *= 1e-2
			continue
		}
		for work < budget {
			w.active = w.active[:0]
			for _, j := range block {
				if w.trial[w.held.Local(j)] != 0 {
					w.active = append(w.active, j)
				}
			}
			if len(w.active) == len(block) || sweep(w.active) <= tol {
				break
			}
		}
	}
	var part ColPartial
	part.Work = work + scanWork
	for _, j := range block {
		l := w.held.Local(j)
		if w.trial[l] != w.beta[l] {
			part.Vars = append(part.Vars, j)
			part.Value = append(part.Value, w.trial[l])
		}
	}
	if len(part.Vars) > 0 {
		// The change of Xβ is computed afresh from the changes of β, not as
		// the difference of q and its scratch copy, whose rounding (of q's
		// size) would swamp the small changes near the optimum, and with
		// them the coordinator's line search.
		part.Dir = make([]float64, len(w.q))
		for k, j := range part.Vars {
			l := w.held.Local(j)
			d := part.Value[k] - w.beta[l]
			rows, vals := w.col(l)
			for t, i := range rows {
				part.Dir[i] += vals[t] * d
			}
		}
	}
	return part, nil
}

// Report implements schmp.Worker: the residual's sums, which every worker
// computes alike, and the correlations and ‖β‖₁ of its own columns.
func (w *ColWorker) Report() (ColSummary, error) {
	s := ColSummary{Rows: len(w.y)}
	var sumQ float64
	for _, v := range w.q {
		sumQ += v
	}
	c := w.residualShift(sumQ)
	for i, v := range w.q {
		r := v + c
		s.SqResid += r * r
		s.YtR += (w.y[i] - w.meanY) * r
	}
	for l := range w.x.Cols {
		if w.curv[l] == 0 {
			continue
		}
		g := math.Abs(w.x.ColDot(l, w.q) + c*w.colSum[l])
		s.MaxXtR = max(s.MaxXtR, g)
		if w.handed != nil {
			w.grad[l] = g
		}
	}
	// The next Push scans the same q, unless an update comes first.
	w.gradFresh = w.handed != nil
	for _, b := range w.beta[:w.x.Cols] {
		if b != 0 {
			s.L1 += math.Abs(b)
			s.NNZ++
		}
	}
	return s, nil
}

// minInnerTol is the tightest relative inner tolerance: about rounding.
const minInnerTol = 1e-15

// blockNNZ returns the non-zeros of the worker's columns in block.
func (w *ColWorker) blockNNZ(block []int32) int64 {
	var n int64
	for _, j := range block {
		rows, _ := w.col(w.held.Local(j))
		n += int64(len(rows))
	}
	return n
}

// scan is a worker's pass, with several workers, over its columns not yet
// in the leader's working set (their β_j is 0) against the residual
// r = q + c: it finds the violators of the optimality conditions,
// |x̃_jᵀr|/n > λ, and returns the worst of them, at most
// columnar.HandLimit of its non-zero coefficients, which it marks as
// handed, and the work it did.
func (w *ColWorker) scan() (picked []int32, work int64) {
	var sumQ float64
	for _, v := range w.q {
		sumQ += v
	}
	c := w.residualShift(sumQ)
	w.cand, w.score = w.cand[:0], w.score[:0]
	for l := range w.x.Cols {
		if w.handed[l] || w.curv[l] == 0 {
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
				dot += vals[t] * w.q[i]
			}
			g = math.Abs(dot + c*w.colSum[l])
		}
		if g /= w.n; g > w.lambda {
			w.cand = append(w.cand, int32(w.first+l))
			w.score = append(w.score, g)
		}
	}
	return columnar.Pick(w.cand, w.score, w.beta[:w.x.Cols], w.handed, w.first), work
}
