package logreg

import (
	"context"
	"math"
)

// newtonScratch is the scratch of a column worker's Newton steps, reused
// from one Push to the next.
type newtonScratch struct {
	s    []float64 // by row: the gradient of the quadratic model, r_i + d_i·(Xδ)_i
	u    []float64 // by row: (Xδ)_i, the step's change of the margin
	next []float64 // by column of the worker: the model's minimizer so far, w + δ
	hess []float64 // by column of the worker: h_j = Σ_i x_ij²·d_i / n
}

// Newton steps minimize the model innerRatio times more finely than the
// step's first sweep moved it, and skip a column whose curvature is below
// minHessDiag. Their line search is the coordinator's (armijo, maxHalvings).
const (
	innerRatio  = 1e-2
	minHessDiag = 1e-12
)

// Push implements schmp.Worker. The worker's scan first updates its
// working set (columnar.Screen.Update: the violators of the optimality
// conditions join it, worst first, and coordinates that have settled at
// zero leave); in a joint round the other workers' active columns that it
// holds join the round's set too, all in column order. Then it takes
// proximal Newton steps over the set on a scratch copy of the rows, as
// liblinear's newGLMNET takes them (Yuan, Ho and Lin, 2012). Each step
// minimizes the quadratic model of the loss at the current margins plus
// the L1 penalty by coordinate descent, which costs no exponential, then
// moves along the minimizer's direction by a backtracking line search on
// the exact objective (Armijo), which costs a few per row. The model's
// minimization sweeps the whole set once, then its non-zero coordinates
// until they settle, innerRatio times more finely than the first sweep
// moved the model; the next step's first sweep looks at the whole set
// again. The intercept, where the worker moves it (ColWorker.bias), is one
// more coordinate of the model, unpenalized. Steps follow each other until
// the first sweep of one changes nothing by more than the inner tolerance
// or the work budget is spent. The plan is empty: the workers choose their
// columns themselves.
func (w *ColWorker) Push(ctx context.Context, _ uint64, _ ColPlan) (ColPartial, error) {
	if err := ctx.Err(); err != nil {
		return ColPartial{}, err
	}
	w.scanWork, w.steps = 0, 0
	added := w.sh.Screen.Update(w.sh.N*w.sh.Lambda, w.w[:w.sh.X.Cols], w.corr)
	w.sh.Block = w.sh.Held.Block(w.sh.Block, w.sh.Screen.Set(), w.w, w.sh.Joint)
	block := w.sh.Block
	w.bias = w.cfg.Intercept && (w.sh.Index == 0 || w.sh.Joint)
	w.nt.grow(len(w.rows), len(w.w))
	copy(w.scratch, w.rows)
	copy(w.trial, w.w)
	b := w.b
	// A step has settled when no coordinate's move lowers the model by more
	// than about tol·F: a move d along a coordinate of curvature h lowers it
	// by about h·d²/2. F is estimated by the loss and the worker's part of
	// ‖w‖₁.
	var f float64
	for _, l := range w.loss {
		f += l
	}
	f /= w.sh.N
	for _, v := range w.w {
		f += w.sh.Lambda * math.Abs(v)
	}
	if w.sh.RelTol == 0 {
		w.sh.RelTol = w.cfg.innerTol()
	}
	tol := w.sh.RelTol * f
	budget := w.cfg.roundWork() * innerWorkFactor
	var work int64 // the non-zeros visited so far
	for first := true; work < budget; first = false {
		if err := ctx.Err(); err != nil {
			return ColPartial{}, err
		}
		moved, ok := w.proxNewton(block, &b, tol, budget, &work)
		if moved <= tol {
			if !first || w.sh.RelTol <= minInnerTol {
				break
			}
			// The first step found the working set settled: the rounds
			// have reached the tolerance, so tighten it for this round and
			// the next ones (as the Lasso's workers do).
			w.sh.RelTol *= 1e-2
			tol *= 1e-2
			continue
		}
		if !ok {
			break // no step along the direction lowers F: rounding
		}
	}
	// The worker reports the changes of its own coefficients only
	// (colshard.Shard.Changes), and of the intercept only on shard 0.
	part := ColPartial{Bias: w.b, AsOf: w.asOf, Work: work + w.scanWork, Updates: w.steps, Added: added}
	if w.sh.Index == 0 {
		part.Bias = b
	}
	part.Vars, part.Value, part.Cols = w.sh.Changes(w.trial, w.w)
	if len(part.Vars) > 0 || part.Bias != w.b {
		part.Dir = w.sh.Dir(part.Vars, part.Value, w.w, part.Bias-w.b)
	}
	return part, nil
}

// grow sizes the scratch for rows rows and cols columns.
func (s *newtonScratch) grow(rows, cols int) {
	if len(s.s) != rows {
		s.s, s.u = make([]float64, rows), make([]float64, rows)
	}
	if len(s.next) != cols {
		s.next, s.hess = make([]float64, cols), make([]float64, cols)
	}
}

// proxNewton takes one proximal Newton step over block from the scratch
// rows, the coefficients w.trial and the intercept *b, adding the non-zeros
// it visits to *work. It returns by how much the first sweep of the model's
// minimization moved the model (the largest h·d² of a coordinate), and
// whether the line search found a step that lowers F. When the first sweep
// moved the model by at most tol, the step is that sweep's.
func (w *ColWorker) proxNewton(block []int32, b *float64, tol float64, budget int64, work *int64) (moved float64, ok bool) {
	nt := &w.nt
	for i, st := range w.scratch {
		nt.s[i] = st.r
	}
	for _, j := range block {
		l := w.sh.Held.Local(j)
		nt.next[l] = w.trial[l]
	}
	nb := *b
	// sweep minimizes the model along each column of cols in turn; with
	// fresh set it computes the columns' curvatures, which the model keeps
	// until the next step.
	sweep := func(cols []int32, fresh bool) float64 {
		var most float64
		for _, j := range cols {
			l := w.sh.Held.Local(j)
			rows, vals := w.sh.Col(l)
			if l < w.sh.X.Cols {
				w.steps++
			}
			var g, h float64
			if fresh {
				for t, i := range rows {
					v := vals[t]
					g += v * nt.s[i]
					h += v * v * w.scratch[i].d
				}
				h /= w.sh.N
				nt.hess[l] = h
			} else {
				for t, i := range rows {
					g += vals[t] * nt.s[i]
				}
				h = nt.hess[l]
			}
			*work += int64(len(rows)) + 1
			if h < minHessDiag {
				continue // an empty column, or every row of it saturated
			}
			cur := nt.next[l]
			d := proxStep(cur, g/w.sh.N, h, w.sh.Lambda)
			if d == 0 {
				continue
			}
			nt.next[l] = cur + d // exactly 0 where the step thresholds to 0
			for t, i := range rows {
				nt.s[i] += w.scratch[i].d * vals[t] * d
			}
			*work += int64(len(rows))
			most = max(most, h*d*d)
		}
		return most
	}
	// biasStep minimizes the model along the intercept, unpenalized. Its
	// curvature Σ d_i, like the columns', is the step's.
	var hb float64
	if w.bias {
		for _, st := range w.scratch {
			hb += st.d
		}
		*work += int64(len(w.scratch))
	}
	biasStep := func() float64 {
		if !w.bias {
			return 0
		}
		var g float64
		for i := range w.scratch {
			g += nt.s[i]
		}
		*work += int64(len(w.scratch))
		if hb < minHessDiag*w.sh.N {
			return 0
		}
		d := -g / hb
		nb += d
		for i, st := range w.scratch {
			nt.s[i] += st.d * d
		}
		return hb / w.sh.N * d * d
	}
	moved = max(sweep(block, true), biasStep())
	itol := max(tol, innerRatio*moved)
	for moved > tol && *work < budget {
		w.sh.Active = w.sh.Active[:0]
		for _, j := range block {
			if nt.next[w.sh.Held.Local(j)] != 0 {
				w.sh.Active = append(w.sh.Active, j)
			}
		}
		if max(sweep(w.sh.Active, false), biasStep()) <= itol {
			break
		}
	}

	// The direction: δ = next − trial over the block, and its change of
	// the margins u = Xδ; F's change to first order along it, Δ.
	db := nb - *b
	for i := range nt.u {
		nt.u[i] = db
	}
	var slope float64
	w.sh.Active = w.sh.Active[:0]
	for _, j := range block {
		l := w.sh.Held.Local(j)
		d := nt.next[l] - w.trial[l]
		if d == 0 {
			continue
		}
		w.sh.Active = append(w.sh.Active, j)
		rows, vals := w.sh.Col(l)
		for t, i := range rows {
			nt.u[i] += vals[t] * d
		}
		*work += int64(len(rows))
		slope += w.sh.Lambda * (math.Abs(nt.next[l]) - math.Abs(w.trial[l]))
	}
	var ls float64
	for i, st := range w.scratch {
		ls += st.r * nt.u[i]
	}
	slope += ls / w.sh.N
	if !(slope < 0) {
		return moved, false
	}
	// Backtrack from the full step until F falls by at least a fraction
	// armijo of its first-order change.
	alpha := 1.0
	for k := 0; ; k++ {
		if k == maxHalvings {
			return moved, false
		}
		var dl float64
		for i, st := range w.scratch {
			if u := nt.u[i]; u != 0 {
				dl += lossChange(w.y[i], st.z, st.r, alpha*u)
			}
		}
		df := dl / w.sh.N
		for _, j := range w.sh.Active {
			l := w.sh.Held.Local(j)
			df += w.sh.Lambda * (math.Abs(moveTo(w.trial[l], nt.next[l], alpha)) - math.Abs(w.trial[l]))
		}
		*work += int64(len(w.scratch))
		if df <= armijo*alpha*slope {
			break
		}
		alpha /= 2
	}
	for _, j := range w.sh.Active {
		l := w.sh.Held.Local(j)
		w.trial[l] = moveTo(w.trial[l], nt.next[l], alpha)
	}
	*b = moveBias(*b, nb, alpha)
	for i, st := range w.scratch {
		if u := nt.u[i]; u != 0 {
			w.scratch[i] = at(w.y[i], st.z+alpha*u)
		}
	}
	*work += int64(len(w.scratch))
	return moved, true
}

// minInnerTol is the tightest relative inner tolerance: about rounding.
const minInnerTol = 1e-15
