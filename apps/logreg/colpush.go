package logreg

import (
	"context"
	"math"
)

// Push implements schmp.Worker: coordinate descent on a scratch copy of the
// rows over the round's working set — the worker's block and its non-zero
// coordinates, which are in every round's working set as in glmnet's active
// set strategy — with the safeguarded Newton step of each coordinate, and
// for worker shard 0 with an intercept a Newton step of the intercept after
// every sweep of the whole set. It sweeps the whole working set, then its
// non-zero coordinates until they settle, then the whole set again, until a
// sweep changes nothing by more than the inner tolerance or the work budget
// is spent.
func (w *ColWorker) Push(ctx context.Context, _ uint64, p ColPlan) (ColPartial, error) {
	block, err := w.work.Build(p, w.w)
	if err != nil {
		return ColPartial{}, err
	}
	copy(w.scratch, w.rows)
	copy(w.trial, w.w)
	b := w.b
	// A sweep has settled when no step lowers the objective by more than
	// about tol·F: a step d whose model has curvature m lowers it by about
	// m·d²/2. F is estimated by the loss and the worker's part of ‖w‖₁.
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
	sweep := func(cols []int32) float64 {
		var most float64
		for _, j := range cols {
			l := int(j) - w.first
			rows, vals := w.x.Col(l)
			work += int64(len(rows)) + 1
			a := w.curvMax[l]
			if a == 0 {
				continue
			}
			var g, h float64
			for t, i := range rows {
				v, st := vals[t], &w.scratch[i]
				g += v * st.r
				h += v * v * st.d
			}
			old := w.trial[l]
			d, m := newtonStep(old, g/w.n, h/w.n, a, w.colMax[l], w.lambda)
			if d == 0 {
				continue
			}
			w.trial[l] = old + d // exactly 0 where the step thresholds to 0
			for t, i := range rows {
				w.scratch[i] = at(w.y[i], w.scratch[i].z+vals[t]*d)
			}
			work += int64(len(rows))
			most = max(most, m*d*d)
		}
		return most
	}
	// biasStep takes the intercept's step, unpenalized: its column is all
	// ones, so its curvature is at most 1/4 and grows by at most e^{|d|}.
	biasStep := func() float64 {
		if !w.bias {
			return 0
		}
		var g, h float64
		for _, st := range w.scratch {
			g += st.r
			h += st.d
		}
		d, m := newtonStep(b, g/w.n, h/w.n, 0.25, 1, 0)
		work += int64(len(w.scratch))
		if d == 0 {
			return 0
		}
		b += d
		for i, st := range w.scratch {
			w.scratch[i] = at(w.y[i], st.z+d)
		}
		work += int64(len(w.scratch))
		return m * d * d
	}
	for first := true; work < budget; first = false {
		if err := ctx.Err(); err != nil {
			return ColPartial{}, err
		}
		if max(sweep(block), biasStep()) <= tol {
			if !first || w.relTol <= minInnerTol {
				break
			}
			// The first sweep found the working set settled: the rounds
			// have reached the tolerance, so tighten it for this round and
			// the next ones (as the Lasso's workers do).
			w.relTol *= 1e-2
			tol *= 1e-2
			continue
		}
		for work < budget {
			w.active = w.active[:0]
			for _, j := range block {
				if w.trial[int(j)-w.first] != 0 {
					w.active = append(w.active, j)
				}
			}
			if len(w.active) == len(block) || sweep(w.active) <= tol {
				break
			}
		}
	}
	part := ColPartial{Bias: b, AsOf: w.asOf, Work: work}
	for _, j := range block {
		l := int(j) - w.first
		if w.trial[l] != w.w[l] {
			part.Vars = append(part.Vars, j)
			part.Value = append(part.Value, w.trial[l])
		}
	}
	if len(part.Vars) > 0 || b != w.b {
		// The change of z is computed afresh from the changes of w and b,
		// not as the scratch margins' difference, whose rounding (of the
		// margins' size) would swamp the small changes near the optimum.
		part.Dir = make([]float64, len(w.rows))
		if db := b - w.b; db != 0 {
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

// minInnerTol is the tightest relative inner tolerance: about rounding.
const minInnerTol = 1e-15
