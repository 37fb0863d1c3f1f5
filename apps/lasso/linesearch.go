package lasso

import (
	"math"
	"sort"
)

// linePath is the Lasso objective along a change of the model, relative to
// its value now:
//
//	φ(α) = −b·α + ½a·α² + λ·Σ_k (|b0_k + α·d_k| − |b0_k|),
//
// where a = ‖X̃Δ‖²/n and b = rᵀX̃Δ/n for the change Δ of β (whose
// coordinates move from b0_k by d_k), so that φ(α) is F(β + αΔ) − F(β). It
// is convex and piecewise quadratic, with kinks where a coordinate crosses
// zero.
type linePath struct {
	a, b, lambda float64
	b0, d        []float64
}

// at returns φ(alpha).
func (p linePath) at(alpha float64) float64 {
	f := -p.b*alpha + 0.5*p.a*alpha*alpha
	for k, b := range p.b0 {
		f += p.lambda * (math.Abs(step(b, b+p.d[k], alpha)) - math.Abs(b))
	}
	return f
}

// minimize returns the α in [0, limit] that minimizes φ, exactly: it walks the
// kinks in order, with the slope of the penalty term on each piece, and
// stops on the piece (or at the kink) where φ′ changes sign.
func (p linePath) minimize(limit float64) float64 {
	type kink struct{ at, jump float64 }
	var kinks []kink
	slope := 0.0 // of the penalty term just right of α = 0
	for k, b := range p.b0 {
		d := p.d[k]
		if d == 0 {
			continue
		}
		s := math.Copysign(1, b)
		if b == 0 {
			s = math.Copysign(1, d)
		}
		slope += p.lambda * s * d
		if b != 0 && (b > 0) != (d > 0) {
			if t := -b / d; t < limit {
				kinks = append(kinks, kink{t, 2 * p.lambda * math.Abs(d)})
			}
		}
	}
	sort.Slice(kinks, func(i, j int) bool { return kinks[i].at < kinks[j].at })
	lo := 0.0
	for i := 0; ; {
		hi := limit
		if i < len(kinks) {
			hi = kinks[i].at
		}
		// φ′(α) = −b + a·α + slope on (lo, hi).
		if -p.b+p.a*lo+slope >= 0 {
			return lo
		}
		if p.a > 0 {
			if t := (p.b - slope) / p.a; t < hi {
				return max(t, lo)
			}
		}
		if i == len(kinks) {
			return limit
		}
		for ; i < len(kinks) && kinks[i].at == hi; i++ {
			slope += kinks[i].jump
		}
		lo = hi
	}
}
