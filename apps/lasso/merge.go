package lasso

import "math"

// The merge of a round in the column layout: each worker k proposes a
// change of its own coefficients (β_j → Value, over Vars) and the change
// D_k of Xβ that it makes. The coordinator takes the step α_k ∈ [0,
// MaxStep] of each that together minimize the objective,
//
//	φ(α) = −Σ_k g_k·α_k + ½·Σ_kl G_kl·α_k·α_l + Σ_k pen_k(α_k),
//
// where G_kl = D̃_kᵀD̃_l/n and g_k = rᵀD̃_k/n (D̃: centered with an
// intercept) and pen_k is the change of λ‖β‖₁ over worker k's
// coordinates. φ is convex, and its penalty is separable by worker, so
// exact minimization over one α_k at a time (a linePath each) converges to
// the best weights. One step for the sum of the changes would not do: when
// the workers' columns span the same space (p ≫ n), each worker's change
// fits the same part of the residual, and the best common step is about
// 1/K, where weights take one change whole and little of the others.

// blockChange is one worker's proposed change in a merge.
type blockChange struct {
	dir  []float64 // the change of Xβ over all rows
	vars []int32
	vals []float64 // the new values of β_j, j = vars[k]
}

// mergeSweeps bounds the passes of the exact minimization over the
// weights; mergeTol ends it when no weight moved by more.
const (
	mergeSweeps = 50
	mergeTol    = 1e-9
)

// stepWeights returns the weight α_k of each change, for the residual r
// (centered with an intercept), the coefficients beta and the penalty λ
// of a problem of n rows: all ones if the whole changes achieve at least
// nearStep of the best weights' decrease (near the optimum they do, and
// the whole changes keep the zeros that the workers set exactly), and the
// best weights otherwise.
func stepWeights(r []float64, changes []blockChange, beta []float64, lambda float64, intercept bool) []float64 {
	n := float64(len(r))
	m := len(changes)
	mean := make([]float64, m)
	if intercept {
		for k, ch := range changes {
			for _, v := range ch.dir {
				mean[k] += v
			}
			mean[k] /= n
		}
	}
	g := make([]float64, m)
	G := make([][]float64, m)
	for k, ch := range changes {
		G[k] = make([]float64, m)
		for i, v := range ch.dir {
			g[k] += r[i] * (v - mean[k])
		}
		g[k] /= n
	}
	for k := range changes {
		for l := k; l < m; l++ {
			var s float64
			dk, dl := changes[k].dir, changes[l].dir
			for i := range dk {
				s += (dk[i] - mean[k]) * (dl[i] - mean[l])
			}
			G[k][l], G[l][k] = s/n, s/n
		}
	}
	pen := make([]linePath, m)
	for k, ch := range changes {
		p := linePath{lambda: lambda, b0: make([]float64, len(ch.vars)), d: make([]float64, len(ch.vars))}
		for t, j := range ch.vars {
			p.b0[t] = beta[j]
			p.d[t] = ch.vals[t] - beta[j]
		}
		pen[k] = p
	}
	phi := func(alpha []float64) float64 {
		var f float64
		for k, a := range alpha {
			f += -g[k]*a + pen[k].at(a)
			for l, b := range alpha {
				f += 0.5 * G[k][l] * a * b
			}
		}
		return f
	}
	alpha := make([]float64, m)
	for range mergeSweeps {
		var moved float64
		for k := range alpha {
			b := g[k]
			for l, a := range alpha {
				if l != k {
					b -= G[k][l] * a
				}
			}
			p := pen[k]
			p.a, p.b = G[k][k], b
			a := p.minimize(MaxStep)
			moved = max(moved, math.Abs(a-alpha[k]))
			alpha[k] = a
		}
		if moved <= mergeTol {
			break
		}
	}
	ones := make([]float64, m)
	for k := range ones {
		ones[k] = 1
	}
	if whole := phi(ones); whole < 0 && whole <= nearStep*phi(alpha) {
		return ones
	}
	return alpha
}

// nearStep is how much of the best weights' decrease the whole changes
// must achieve for stepWeights to take them.
const nearStep = 0.9
