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
	added := w.screen.Update(w.n*w.lambda, w.w[:w.x.Cols], w.corr)
	w.block = w.held.Block(w.block, w.screen.Set(), w.w, w.joint)
	block := w.block
	w.bias = w.cfg.Intercept && (w.shard == 0 || w.joint)
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
	f /= w.n
	for _, v := range w.w {
		f += w.lambda * math.Abs(v)
	}
	if w.relTol == 0 {
		w.relTol = w.cfg.innerTol()
	}
	tol := w.relTol * f
	budget := w.cfg.roundWork() * innerWorkFactor
	var work int64 // the non-zeros visited so far
	for first := true; work < budget; first = false {
		if err := ctx.Err(); err != nil {
			return ColPartial{}, err
		}
		moved, ok := w.proxNewton(block, &b, tol, budget, &work)
		if moved <= tol {
			if !first || w.relTol <= minInnerTol {
				break
			}
			// The first step found the working set settled: the rounds
			// have reached the tolerance, so tighten it for this round and
			// the next ones (as the Lasso's workers do).
			w.relTol *= 1e-2
			tol *= 1e-2
			continue
		}
		if !ok {
			break // no step along the direction lowers F: rounding
		}
	}
	// The worker reports the changes of its own coefficients only, and of
	// the intercept only on shard 0: those of the other workers' columns
	// made its own fit the whole active set, and their owners report
	// theirs. It shares its columns that come into the active set a second
	// time: the first rounds make and drop many non-zeros, each a column's
	// data to copy.
	part := ColPartial{Bias: w.b, AsOf: w.asOf, Work: work + w.scanWork, Updates: w.steps, Added: added}
	if w.shard == 0 {
		part.Bias = b
	}
	share, nnz := w.share[:0], 0
	for _, j := range block {
		l := w.held.Local(j)
		if l >= w.x.Cols {
			continue
		}
		if w.trial[l] != w.w[l] {
			part.Vars = append(part.Vars, j)
			part.Value = append(part.Value, w.trial[l])
		}
		if w.seen != nil && w.trial[l] != 0 && w.seen[l] < shared {
			if w.seen[l]++; w.seen[l] == shared {
				share = append(share, j)
				nnz += w.x.NNZ(l)
			}
		}
	}
	w.share = share
	growColumns(&part.Cols, len(share), nnz)
	part.Cols.AddOwned(w.x, w.first, share)
	if len(part.Vars) > 0 || part.Bias != w.b {
		// The change of z is computed afresh from the changes of w and b,
		// not as the scratch margins' difference, whose rounding (of the
		// margins' size) would swamp the small changes near the optimum.
		part.Dir = make([]float64, len(w.rows))
		if db := part.Bias - w.b; db != 0 {
			for i := range part.Dir {
				part.Dir[i] = db
			}
		}
		for k, j := range part.Vars {
			l := int(j) - w.first
			d := part.Value[k] - w.w[l]
			rows, vals := w.x.Col(l)
			for t, i := range rows {
				part.Dir[i] += vals[t] * d
			}
		}
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
		l := w.held.Local(j)
		nt.next[l] = w.trial[l]
	}
	nb := *b
	// sweep minimizes the model along each column of cols in turn; with
	// fresh set it computes the columns' curvatures, which the model keeps
	// until the next step.
	sweep := func(cols []int32, fresh bool) float64 {
		var most float64
		for _, j := range cols {
			l := w.held.Local(j)
			rows, vals := w.col(l)
			if l < w.x.Cols {
				w.steps++
			}
			var g, h float64
			if fresh {
				for t, i := range rows {
					v := vals[t]
					g += v * nt.s[i]
					h += v * v * w.scratch[i].d
				}
				h /= w.n
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
			d := proxStep(cur, g/w.n, h, w.lambda)
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
		if hb < minHessDiag*w.n {
			return 0
		}
		d := -g / hb
		nb += d
		for i, st := range w.scratch {
			nt.s[i] += st.d * d
		}
		return hb / w.n * d * d
	}
	moved = max(sweep(block, true), biasStep())
	itol := max(tol, innerRatio*moved)
	for moved > tol && *work < budget {
		w.active = w.active[:0]
		for _, j := range block {
			if nt.next[w.held.Local(j)] != 0 {
				w.active = append(w.active, j)
			}
		}
		if max(sweep(w.active, false), biasStep()) <= itol {
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
	w.active = w.active[:0]
	for _, j := range block {
		l := w.held.Local(j)
		d := nt.next[l] - w.trial[l]
		if d == 0 {
			continue
		}
		w.active = append(w.active, j)
		rows, vals := w.col(l)
		for t, i := range rows {
			nt.u[i] += vals[t] * d
		}
		*work += int64(len(rows))
		slope += w.lambda * (math.Abs(nt.next[l]) - math.Abs(w.trial[l]))
	}
	var ls float64
	for i, st := range w.scratch {
		ls += st.r * nt.u[i]
	}
	slope += ls / w.n
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
		df := dl / w.n
		for _, j := range w.active {
			l := w.held.Local(j)
			df += w.lambda * (math.Abs(moveTo(w.trial[l], nt.next[l], alpha)) - math.Abs(w.trial[l]))
		}
		*work += int64(len(w.scratch))
		if df <= armijo*alpha*slope {
			break
		}
		alpha /= 2
	}
	for _, j := range w.active {
		l := w.held.Local(j)
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
