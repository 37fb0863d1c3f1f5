package lasso

import (
	"math"
	"math/rand/v2"
	"testing"
)

// mergeObjective returns the Lasso objective (1/2n)‖r − Σ α_k D_k‖² +
// λ‖β'‖₁ after taking the changes with weights alpha, computed directly.
func mergeObjective(r []float64, changes []blockChange, beta []float64, lambda float64, alpha []float64) float64 {
	res := append([]float64(nil), r...)
	b := append([]float64(nil), beta...)
	for k, ch := range changes {
		for i, d := range ch.dir {
			res[i] -= alpha[k] * d
		}
		for t, j := range ch.vars {
			b[j] = step(beta[j], ch.vals[t], alpha[k])
		}
	}
	var f float64
	for _, v := range res {
		f += v * v
	}
	f /= 2 * float64(len(r))
	for _, v := range b {
		f += lambda * math.Abs(v)
	}
	return f
}

// TestStepWeights checks the merge's weights on random changes of two and
// three workers, some redundant (the same direction twice), some
// complementary, some that raise the objective: the weights are no worse
// than any point of a grid over [0, MaxStep]^K, and the whole changes are
// taken only when they achieve nearStep of the best decrease.
func TestStepWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, p = 12, 9
	for trial := range 300 {
		m := 2 + trial%2
		r := make([]float64, n)
		for i := range r {
			r[i] = rng.NormFloat64()
		}
		beta := make([]float64, p)
		for j := range beta {
			if rng.IntN(2) == 0 {
				beta[j] = rng.NormFloat64()
			}
		}
		lambda := 0.05 + 0.2*rng.Float64()
		changes := make([]blockChange, m)
		for k := range changes {
			ch := blockChange{dir: make([]float64, n)}
			for j := k; j < p; j += m { // worker k's columns
				if rng.IntN(2) == 0 {
					continue
				}
				v := beta[j] + rng.NormFloat64()
				if rng.IntN(4) == 0 {
					v = 0
				}
				ch.vars = append(ch.vars, int32(j))
				ch.vals = append(ch.vals, v)
				for i := range ch.dir {
					ch.dir[i] += rng.NormFloat64() * (v - beta[j]) * 0.3
				}
			}
			changes[k] = ch
		}
		switch trial % 3 {
		case 0: // the same change of Xβ twice
			copy(changes[1].dir, changes[0].dir)
		case 1: // along the residual: the changes help
			for k := range changes {
				for i := range changes[k].dir {
					changes[k].dir[i] = 0.5 * r[i] / float64(m)
				}
			}
		}
		alpha := stepWeights(r, changes, beta, lambda, false)
		f0 := mergeObjective(r, changes, beta, lambda, make([]float64, m))
		f := mergeObjective(r, changes, beta, lambda, alpha)
		if f > f0*(1+1e-12) {
			t.Fatalf("trial %d: weights %v raise the objective from %v to %v", trial, alpha, f0, f)
		}
		best := f
		grid := make([]float64, m)
		var walk func(k int)
		walk = func(k int) {
			if k == m {
				best = min(best, mergeObjective(r, changes, beta, lambda, grid))
				return
			}
			for g := 0; g <= 16; g++ {
				grid[k] = MaxStep * float64(g) / 16
				walk(k + 1)
			}
		}
		walk(0)
		whole := true
		for _, a := range alpha {
			whole = whole && a == 1
		}
		switch {
		case whole && f0-f < nearStep*(f0-best)-1e-12:
			t.Fatalf("trial %d: the whole changes decrease the objective by %v, the best grid point by %v", trial, f0-f, f0-best)
		case !whole && f > best+1e-9*(1+math.Abs(best)):
			t.Fatalf("trial %d: weights %v give %v, a grid point %v", trial, alpha, f, best)
		}
	}
}
