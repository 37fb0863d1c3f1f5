package logreg

import "math"

// row returns, for a row with label y (±1) and margin z, s = 1 + e with
// e = exp(−|y·z|), so that the loss log(1 + exp(−y·z)) is
// log(s) + max(−y·z, 0); q = σ(−y·z), the probability of the wrong class;
// and the curvature σ(z)·σ(−z) = e/s². Nothing overflows or cancels.
func row(y, z float64) (s, q, curv float64) {
	m := y * z
	e := math.Exp(-math.Abs(m)) // in (0, 1]
	s = 1 + e
	t := 1 / s
	curv = e * t * t
	if m >= 0 {
		return s, e * t, curv
	}
	return s, t, curv
}

// rowLoss returns log(1 + exp(−y·z)) for a row whose row(y, z) is s.
func rowLoss(y, z, s float64) float64 {
	return math.Log(s) + max(-y*z, 0)
}

// logRatio sums log(a_k/b_k) over pairs with a_k, b_k in [1, 2] by
// multiplying them, with one logarithm at the end: the loss changes of an
// update cost no logarithm per row.
type logRatio struct {
	num, den float64
	exp, k   int
}

func newLogRatio() logRatio { return logRatio{num: 1, den: 1} }

func (l *logRatio) add(a, b float64) {
	l.num *= a
	l.den *= b
	if l.k++; l.k == 512 { // 2^512 stays far from overflow
		fn, en := math.Frexp(l.num)
		fd, ed := math.Frexp(l.den)
		l.num, l.den, l.exp, l.k = fn, fd, l.exp+en-ed, 0
	}
}

func (l *logRatio) value() float64 {
	return math.Log(l.num/l.den) + float64(l.exp)*math.Ln2
}

// entropy returns the binary entropy −q·log q − (1−q)·log(1−q) in nats.
func entropy(q float64) float64 {
	if q <= 0 || q >= 1 {
		return 0
	}
	return -q*math.Log(q) - (1-q)*math.Log1p(-q)
}

// proxStep returns the d that minimizes g·d + ½·m·d² + l·|w + d| (m > 0).
func proxStep(w, g, m, l float64) float64 {
	z := m*w - g // the soft-thresholding of z by l, over m, is w + d
	return math.Copysign(max(math.Abs(z)-l, 0), z)/m - w
}

// The search for the safe curvature stops after bisections halvings, or
// once the interval is short enough for the bound to be within a factor
// e^{bisectTol} of the best.
const (
	bisections = 12
	bisectTol  = 1e-3
)

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
		if c*(hi-lo) < bisectTol {
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
