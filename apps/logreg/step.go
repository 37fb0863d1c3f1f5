package logreg

import "math"

// rowLoss returns, for a row with label y (±1) and margin z, the loss
// log(1 + exp(−y·z)), q = σ(−y·z) (the probability of the wrong class) and
// the curvature σ(z)·σ(−z), all computed without overflow or cancellation.
func rowLoss(y, z float64) (loss, q, curv float64) {
	m := y * z
	e := math.Exp(-math.Abs(m)) // in (0, 1]
	curv = e / ((1 + e) * (1 + e))
	if m >= 0 {
		return math.Log1p(e), e / (1 + e), curv
	}
	return -m + math.Log1p(e), 1 / (1 + e), curv
}

// entropy returns the binary entropy −q·log q − (1−q)·log(1−q) in nats.
func entropy(q float64) float64 {
	if q <= 0 || q >= 1 {
		return 0
	}
	return -q*math.Log(q) - (1-q)*math.Log1p(-q)
}

// sigmoid returns 1/(1 + exp(−z)).
func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// proxStep returns the d that minimizes g·d + ½·m·d² + l·|w + d| (m > 0).
func proxStep(w, g, m, l float64) float64 {
	z := m*w - g // the soft-thresholding of z by l, over m, is w + d
	return math.Copysign(max(math.Abs(z)-l, 0), z)/m - w
}

// bisections bounds the search for the safe curvature; the bound it finds
// is within a factor e^{c·Δ/2^bisections} of the best.
const bisections = 12

// newtonStep returns the safeguarded Newton step d of a coordinate with
// value w, loss gradient g and curvature h, under the penalty l·|w|, where
// the loss's curvature along the coordinate never exceeds a and grows by at
// most a factor e^{c·|t|} over a step t (see the package documentation). It
// also returns the curvature m of the model g·d + ½·m·d² + l·(|w+d| − |w|)
// that d minimizes and that bounds the objective's change from above. It
// returns 0, 0 for a coordinate with a = 0 (an empty column).
func newtonStep(w, g, h, a, c, l float64) (d, m float64) {
	if !(a > 0) {
		return 0, 0
	}
	if !(h > 0) || h >= a || math.IsInf(c, 1) {
		return proxStep(w, g, a, l), a
	}
	bound := func(delta float64) float64 { return min(h*math.Exp(c*delta), a) }
	// The plain Newton step's length hi is safe: the bound at hi is at least
	// h, and a larger curvature gives a shorter step. Bisect down towards the
	// smallest safe length.
	hi := math.Abs(proxStep(w, g, h, l))
	if hi == 0 {
		return 0, h
	}
	lo := 0.0
	for range bisections {
		if c*(hi-lo) < 1e-6 {
			break
		}
		mid := (lo + hi) / 2
		if math.Abs(proxStep(w, g, bound(mid), l)) <= mid {
			hi = mid
		} else {
			lo = mid
		}
	}
	m = bound(hi)
	return proxStep(w, g, m, l), m
}
