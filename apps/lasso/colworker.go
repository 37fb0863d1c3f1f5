package lasso

import (
	"context"
	"fmt"
	"math"

	"github.com/strads-go/strads/apps/internal/colshard"
	"github.com/strads-go/strads/scheduler/columnar"
)

// ColWorker is the worker side of the Lasso in the column layout: its own
// columns with all their rows, the labels, and a replica of q = y − Xβ.
// Each round it runs coordinate descent over its working set
// (columnar.Screen), which its scan keeps, and returns its change of Xβ
// (Push; DESIGN "The column layout").
type ColWorker struct {
	sh     colshard.Shard // colSum, curv, beta and trial extend over its held columns
	cfg    Config
	y      []float64
	meanY  float64 // 0 without an intercept
	colSum []float64
	curv   []float64 // a_j = ‖x̃_j‖²/n; 0 for a column with nothing to fit

	q    []float64 // y − Xβ over all rows, as the updates so far make it
	beta []float64 // β over the worker's columns

	scratch []float64 // q during a Push
	trial   []float64 // β over the worker's columns during a Push
	shift   float64   // c of r = q + c for the screen's dot products
	work    int64     // the non-zeros that the screen's dot products visited
}

// NewColWorker reads the columns of cfg.Data that worker shard of shards
// owns in the column layout, with all their rows.
func NewColWorker(cfg Config, shard, shards int) (*ColWorker, error) {
	sh, y, err := colshard.Read(cfg.Data, shard, shards)
	if err != nil {
		return nil, err
	}
	x := sh.X
	w := &ColWorker{
		sh: sh, cfg: cfg, y: y,
		colSum: make([]float64, x.Cols), curv: make([]float64, x.Cols),
		q: append([]float64(nil), y...), beta: make([]float64, x.Cols),
		scratch: make([]float64, len(y)), trial: make([]float64, x.Cols),
	}
	if cfg.Intercept {
		for _, v := range y {
			w.meanY += v
		}
		w.meanY /= w.sh.N
	}
	norm := make([]float64, x.Cols)
	for l := range x.Cols {
		_, vals := x.Col(l)
		w.colSum[l], w.curv[l] = w.colStats(vals)
		norm[l] = math.Sqrt(w.curv[l] * w.sh.N)
	}
	w.sh.Screen = columnar.NewScreen(sh.First, norm, cfg.Schedule.Policy, cfg.Schedule.Seed)
	return w, nil
}

// colStats returns a column's sum Σ_i x_ij and curvature a_j = ‖x̃_j‖²/n (0
// for a column with nothing to fit) from its non-zero values.
func (w *ColWorker) colStats(vals []float64) (sum, curv float64) {
	var sq float64
	for _, v := range vals {
		sum += v
		sq += v * v
	}
	a := sq / w.sh.N
	if w.cfg.Intercept {
		m := sum / w.sh.N
		a -= m * m
	}
	if a >= 1e-14*sq/w.sh.N && a > 0 {
		curv = a
	}
	return sum, curv
}

// Describe implements schmp.Worker.
func (w *ColWorker) Describe() (ColSummary, error) {
	s := ColSummary{
		Rows: len(w.y), Features: w.sh.Total, First: w.sh.First, Cols: w.sh.X.Cols, Data: w.sh.Data, ColSum: w.colSum,
	}
	if w.sh.Index == 0 {
		s.Y = w.y
	}
	for l := range w.sh.X.Cols {
		if w.curv[l] == 0 {
			continue
		}
		dot := w.sh.X.ColDot(l, w.y)
		s.LambdaMax = max(s.LambdaMax, math.Abs(dot-w.meanY*w.colSum[l])/w.sh.N)
	}
	return s, nil
}

// Apply implements schmp.Worker: it moves q and the worker's β (of its own
// columns and those it holds) as the update says, switches to the update's
// λ, if it carries a new one, and keeps the columns the other workers
// shared.
func (w *ColWorker) Apply(u ColUpdate) error {
	w.sh.Joint = u.Joint
	w.sh.NewLambda(u.Lambda) // the first, or the next of a path
	if len(u.Vars) != len(u.Value) || len(u.ColValue) != u.Cols.Len() {
		return fmt.Errorf("update with %d variables and %d values, %d columns shared and %d values", len(u.Vars), len(u.Value), u.Cols.Len(), len(u.ColValue))
	}
	// Checked before any is applied: updates come over the network.
	if !finite(u.Lambda) || !allFinite(u.Value) || !allFinite(u.Dir) || !allFinite(u.ColValue) {
		return fmt.Errorf("update with λ %v, and values or a direction that are not finite", u.Lambda)
	}
	if u.Dir != nil {
		if len(u.Dir) != len(w.q) {
			return fmt.Errorf("update with a direction over %d rows, want %d", len(u.Dir), len(w.q))
		}
		applyDir(w.q, u.Dir)
		w.sh.Screen.Moved(centeredNorm(u.Dir, w.cfg.Intercept))
	}
	err := w.sh.Take(&u.Cols, u.ColValue, false, &w.beta, func(vals []float64) {
		sum, a := w.colStats(vals)
		w.colSum = append(w.colSum, sum)
		w.curv = append(w.curv, a)
		w.trial = append(w.trial, 0)
	})
	if err != nil {
		return err
	}
	for k, j := range u.Vars {
		if l := w.sh.Held.Local(j); l >= 0 {
			w.beta[l] = u.Value[k]
		}
	}
	return nil
}

// centeredNorm returns ‖d − d̄‖ with an intercept (the change of the
// centered residual that a change d of q makes), ‖d‖ without.
func centeredNorm(d []float64, intercept bool) float64 {
	var mean, ss float64
	if intercept {
		for _, v := range d {
			mean += v
		}
		mean /= float64(len(d))
	}
	for _, v := range d {
		ss += (v - mean) * (v - mean)
	}
	return math.Sqrt(ss)
}

// applyDir sets q ← q − dir, as every node of the job does it.
func applyDir(q, dir []float64) {
	for i, d := range dir {
		q[i] -= d
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
	return -sumQ / w.sh.N
}

// corr returns |x̃_lᵀr| of own column l for the residual r = q + w.shift,
// counting its work.
func (w *ColWorker) corr(l int) float64 {
	w.work += int64(w.sh.X.NNZ(l)) + 1
	return math.Abs(w.sh.X.ColDot(l, w.q) + w.shift*w.colSum[l])
}

// setShift sets w.shift for the residual q holds now.
func (w *ColWorker) setShift() {
	var sumQ float64
	for _, v := range w.q {
		sumQ += v
	}
	w.shift = w.residualShift(sumQ)
}

// Push implements schmp.Worker. The worker's scan first updates its
// working set (columnar.Screen.Update: the violators of the optimality
// conditions join it, worst first, and coordinates that have settled at
// zero leave). Then it runs coordinate descent over the set on a scratch
// copy of q: it sweeps the whole set, then its non-zero coordinates until
// they settle, then the whole set again, until a sweep changes nothing by
// more than the inner tolerance or the work budget is spent. The plan is
// empty: the workers choose their columns themselves.
func (w *ColWorker) Push(ctx context.Context, _ uint64, _ ColPlan) (ColPartial, error) {
	if err := ctx.Err(); err != nil {
		return ColPartial{}, err
	}
	w.work = 0
	w.setShift()
	added := w.sh.Screen.Update(w.sh.N*w.sh.Lambda, w.beta[:w.sh.X.Cols], w.corr)
	w.sh.Block = w.sh.Held.Block(w.sh.Block, w.sh.Screen.Set(), w.beta, w.sh.Joint)
	block := w.sh.Block
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
	if w.sh.RelTol == 0 {
		w.sh.RelTol = w.cfg.innerTol()
	}
	tol := w.sh.RelTol * rr / w.sh.N
	budget := w.cfg.roundWork() * innerWorkFactor
	var work, steps int64
	sweep := func(cols []int32) float64 {
		var most float64
		for _, j := range cols {
			l := w.sh.Held.Local(j)
			rows, vals := w.sh.Col(l)
			work += int64(len(rows)) + 1
			if l < w.sh.X.Cols {
				steps++
			}
			a := w.curv[l]
			if a == 0 {
				continue
			}
			var dot float64
			for t, i := range rows {
				dot += vals[t] * w.scratch[i]
			}
			old := w.trial[l]
			z := (dot+c*w.colSum[l])/w.sh.N + a*old
			nw := softThreshold(z, w.sh.Lambda) / a
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
				c = -sumQ / w.sh.N
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
			if work > int64(len(block))+w.blockNNZ(block) || w.sh.RelTol <= minInnerTol {
				break
			}
			// The first sweep found the working set settled: the rounds
			// have reached the tolerance, so tighten it for this round and
			// the next ones.
			w.sh.RelTol *= 1e-2
			tol *= 1e-2
			continue
		}
		for work < budget {
			w.sh.Active = w.sh.Active[:0]
			for _, j := range block {
				if w.trial[w.sh.Held.Local(j)] != 0 {
					w.sh.Active = append(w.sh.Active, j)
				}
			}
			if len(w.sh.Active) == len(block) || sweep(w.sh.Active) <= tol {
				break
			}
		}
	}
	part := ColPartial{Work: work + w.work, Updates: steps, Added: added}
	part.Vars, part.Value, part.Cols = w.sh.Changes(w.trial, w.beta)
	if len(part.Vars) > 0 {
		part.Dir = w.sh.Dir(part.Vars, part.Value, w.beta, 0)
	}
	return part, nil
}

// Report implements schmp.Worker: the residual's sums, which every worker
// computes alike, and the largest correlation and ‖β‖₁ of its own
// columns. The largest correlation is exact wherever it exceeds nλ (the
// screen computes every column that may): the duality gap, which uses it
// only above nλ, is exact.
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
	w.shift = c
	s.MaxXtR = w.sh.Screen.MaxCorr(w.sh.N*w.sh.Lambda, w.corr)
	s.L1, s.NNZ = w.sh.L1(w.beta)
	return s, nil
}

// minInnerTol is the tightest relative inner tolerance: about rounding.
const minInnerTol = 1e-15

// blockNNZ returns the non-zeros of the worker's columns in block.
func (w *ColWorker) blockNNZ(block []int32) int64 {
	var n int64
	for _, j := range block {
		rows, _ := w.sh.Col(w.sh.Held.Local(j))
		n += int64(len(rows))
	}
	return n
}
