package logreg

import (
	"errors"
	"fmt"
	"math"

	"github.com/strads-go/strads/schmp"
)

// riseTol is the rise of the objective in a round, relative to F at w = 0,
// above which the round counts as having raised it: well above the rounding
// of the loss changes that workers sum.
const riseTol = 1e-12

// The joint-step factor θ is divided by thetaDown after a round that raised
// the objective, and multiplied by thetaUp (up to 1) after a round that
// achieved at least thetaGood of the decrease its model predicted. It grows
// slowly so that it settles where rounds rarely overshoot: doubling it after
// every good round made it oscillate on blocks of correlated columns.
const (
	thetaDown = 2
	thetaUp   = 1.1
	thetaGood = 0.9
)

// Coordinator is the coordinator side of logistic regression: it holds w
// and b and decides the steps.
type Coordinator struct {
	model
	curvMax []float64 // a_j = ‖x_j‖²/(4n), the most curvature along j
	colMax  []float64 // c_j = max_i |x_ij|
	colNNZ  []int64
	f0      float64 // F at w = 0 (and the initial b)

	// The joint-step safeguard.
	theta    float64
	minTheta float64
	pending  map[uint64]pending
	guard    Safeguard

	// The intercept is updated once the rows its update touches (n) have
	// been matched by the work of the rounds since its last update, and only
	// from partials that saw that update.
	biasRound uint64
	work      int64
}

// pending is what the coordinator predicted for a round whose realized
// change it does not know yet.
type pending struct {
	penalty   float64 // the change of λ‖w‖₁
	predicted float64 // an upper bound on the change of F if the steps were independent
}

// Safeguard tells what the joint-step safeguard saw.
type Safeguard struct {
	// Rounds is the number of rounds whose realized change of F is known.
	Rounds int
	// Rose counts the rounds that raised F by more than 1e-12·F(0), and
	// MaxRise is the largest rise of a round, relative to F(0).
	Rose    int
	MaxRise float64
	// MinTheta is the smallest joint-step factor θ applied to a round.
	MinTheta float64
}

// NewCoordinator returns the coordinator side for cfg; it reads cfg.Test, if
// set.
func NewCoordinator(cfg Config) (*Coordinator, error) {
	m, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	return &Coordinator{model: m, theta: 1, minTheta: 1, pending: map[uint64]pending{}}, nil
}

// Start implements schmp.Coordinator: it sums the shard summaries into the
// column statistics and λ, and returns the initial intercept.
func (c *Coordinator) Start(shards []Summary) (Update, error) {
	rows, m, pos, neg, zero := 0, 0, 0, 0, 0
	for w, s := range shards {
		// The summaries come over the network (DESIGN "Hostile traffic").
		if s.Rows < 0 || s.Pos < 0 || s.Neg < 0 || s.Zero < 0 || s.Features < 0 || s.Features > len(s.ColSq) {
			return Update{}, fmt.Errorf("worker shard %d described %d rows (%d, %d, %d by label) and %d features with %d column sums",
				w, s.Rows, s.Pos, s.Neg, s.Zero, s.Features, len(s.ColSq))
		}
		rows += s.Rows
		m = max(m, s.Features, len(s.ColSq))
		pos += s.Pos
		neg += s.Neg
		zero += s.Zero
	}
	if rows == 0 {
		return Update{}, fmt.Errorf("%s: no samples", c.cfg.Data)
	}
	if zero > 0 && neg > 0 {
		return Update{}, fmt.Errorf("%s: labels mix the 0/1 and -1/+1 conventions", c.cfg.Data)
	}
	if err := checkClasses(c.cfg.Data, pos, neg+zero); err != nil {
		return Update{}, err
	}
	c.setLabels(zero)
	if m == 0 {
		return Update{}, fmt.Errorf("%s: no features", c.cfg.Data)
	}
	c.n = float64(rows)
	c.w = make([]float64, m)
	c.curvMax = make([]float64, m)
	c.colMax = make([]float64, m)
	c.colNNZ = make([]int64, m)
	colSum := make([]float64, m)
	colPos := make([]float64, m)
	for w, s := range shards {
		k := len(s.ColSq)
		if len(s.ColMax) != k || len(s.ColSum) != k || len(s.ColPos) != k || len(s.ColNNZ) != k {
			return Update{}, fmt.Errorf("worker shard %d described its columns inconsistently", w)
		}
		for j := range k {
			c.curvMax[j] += s.ColSq[j] / (4 * c.n)
			c.colMax[j] = max(c.colMax[j], s.ColMax[j])
			c.colNNZ[j] += int64(s.ColNNZ[j])
			colSum[j] += s.ColSum[j]
			colPos[j] += s.ColPos[j]
		}
	}
	mean := float64(pos) / c.n
	center := 0.5
	c.f0 = math.Ln2
	if c.cfg.Intercept {
		center = mean
		c.b = math.Log(mean / (1 - mean))
		c.f0 = entropy(mean)
	}
	lambdaMax := 0.0
	for j := range m {
		lambdaMax = max(lambdaMax, math.Abs(colPos[j]-center*colSum[j])/c.n)
	}
	c.setLambda(lambdaMax)
	return Update{Bias: c.b, Features: m}, nil
}

// Safeguard returns what the joint-step safeguard saw so far.
func (c *Coordinator) Safeguard() Safeguard {
	g := c.guard
	g.MinTheta = c.minTheta
	return g
}

// Pull implements schmp.Coordinator: it learns the realized change of the rounds
// whose updates the workers applied since their last partials, adapts θ,
// and takes a safeguarded Newton step, scaled by θ, for every coordinate of
// the plan and, when due, the intercept.
func (c *Coordinator) Pull(round uint64, p Plan, partials []Partial) (Update, schmp.Feedback, error) {
	if len(partials) == 0 {
		return Update{}, schmp.Feedback{}, errors.New("no partials")
	}
	first := partials[0]
	for w, part := range partials {
		switch {
		case len(part.Grad) != len(p.Vars) || len(part.Curv) != len(p.Vars):
			return Update{}, schmp.Feedback{}, fmt.Errorf("worker shard %d sent %d gradients and %d curvatures for %d variables", w, len(part.Grad), len(part.Curv), len(p.Vars))
		case len(part.Rounds) != len(first.Rounds) || len(part.LossChange) != len(first.Rounds) || part.AsOf != first.AsOf:
			return Update{}, schmp.Feedback{}, fmt.Errorf("worker shard %d applied other updates than shard 0", w)
		case !allFinite(part.Grad) || !allFinite(part.Curv) || !allFinite(part.LossChange) || !allFinite([]float64{part.SumR, part.SumD}):
			return Update{}, schmp.Feedback{}, fmt.Errorf("worker shard %d sent sums that are not finite", w)
		}
	}
	for _, j := range p.Vars {
		if j < 0 || int(j) >= len(c.w) {
			return Update{}, schmp.Feedback{}, fmt.Errorf("plan of variable %d of %d", j, len(c.w))
		}
	}
	for k, s := range first.Rounds {
		var dl float64
		for _, part := range partials {
			dl += part.LossChange[k]
		}
		c.realized(s, dl/c.n)
	}

	count := len(p.Vars)
	var work int64
	for _, j := range p.Vars {
		if j >= 0 && int(j) < len(c.w) {
			work += c.colNNZ[j]
		}
	}
	c.work += work
	bias := c.cfg.Intercept && c.work >= int64(c.n) && c.biasRound <= first.AsOf
	if bias {
		count++
	}
	theta := c.theta
	if c.cfg.fixedTheta > 0 {
		theta = c.cfg.fixedTheta
	} else if count > 0 {
		theta = max(theta, 1/float64(count))
	}
	c.minTheta = min(c.minTheta, theta)

	fb := schmp.Feedback{Vars: p.Vars, Delta: make([]float64, len(p.Vars))}
	u := Update{Round: round}
	var penalty, predicted float64
	for k, j := range p.Vars {
		if j < 0 || int(j) >= len(c.w) {
			continue
		}
		var g, h float64
		for _, part := range partials {
			g += part.Grad[k]
			h += part.Curv[k]
		}
		g, h = g/c.n, h/c.n
		old := c.w[j]
		d, m := newtonStep(old, g, h, c.curvMax[j], c.colMax[j], c.lambda)
		if d == 0 {
			continue
		}
		predicted += g*d + 0.5*m*d*d + c.lambda*(math.Abs(old+d)-math.Abs(old))
		step := theta * d
		c.w[j] += step
		penalty += c.lambda * (math.Abs(c.w[j]) - math.Abs(old))
		fb.Delta[k] = step
		u.Vars = append(u.Vars, j)
		u.Delta = append(u.Delta, step)
	}
	if bias {
		var g, h float64
		for _, part := range partials {
			g += part.SumR
			h += part.SumD
		}
		g, h = g/c.n, h/c.n
		d, m := newtonStep(c.b, g, h, 0.25, 1, 0)
		predicted += g*d + 0.5*m*d*d
		u.Bias = theta * d
		c.b += u.Bias
		c.biasRound, c.work = round, 0
	}
	if len(u.Vars) > 0 || u.Bias != 0 {
		c.pending[round] = pending{penalty: penalty, predicted: theta * predicted}
	}
	return u, fb, nil
}

// realized takes in the change dl of the loss (divided by n) that the
// update of round caused, and adapts θ.
func (c *Coordinator) realized(round uint64, dl float64) {
	p, ok := c.pending[round]
	if !ok {
		return
	}
	delete(c.pending, round)
	df := dl + p.penalty
	c.guard.Rounds++
	switch {
	case df > riseTol*c.f0:
		c.guard.Rose++
		c.guard.MaxRise = max(c.guard.MaxRise, df/c.f0)
		c.theta /= thetaDown
		if floor := 1 / float64(c.cfg.Schedule.WithDefaults().Block+1); c.theta < floor {
			c.theta = floor
		}
	case df <= thetaGood*p.predicted:
		c.theta = min(1, thetaUp*c.theta)
	}
}

// Objective implements schmp.Coordinator: F at the workers' state, and the
// duality gap of the package documentation. It also records the training
// accuracy and, with a test set, the test accuracy at the coordinator's w,
// and reports both as the metrics train_accuracy and test_accuracy.
func (c *Coordinator) Objective(reports []Summary) (schmp.Progress, error) {
	m := len(c.w)
	v := make([]float64, m)
	var pp []float64
	if c.cfg.Intercept {
		pp = make([]float64, m)
	}
	var loss, hPos, hNeg, qPos, qNeg float64
	correct := 0
	for w, r := range reports {
		if len(r.V) > m || len(r.P) > m || (pp != nil && len(r.P) != len(r.V)) {
			return schmp.Progress{}, fmt.Errorf("worker shard %d reported %d columns, want at most %d", w, len(r.V), m)
		}
		loss += r.Loss
		correct += r.Correct
		hPos += r.HPos
		hNeg += r.HNeg
		qPos += r.QPos
		qNeg += r.QNeg
		for j, x := range r.V {
			v[j] += x
		}
		for j, x := range r.P {
			pp[j] += x
		}
	}
	// Every worker has applied the same updates: w is theirs, which may be
	// older than c.w.
	l1, nnz := reports[0].L1, reports[0].NNZ
	f := loss/c.n + c.lambda*l1
	// The dual point α_i = s_c·y_i·q_i/n, with one scale per class s_c
	// (equal without an intercept).
	sPos, sNeg := 1.0, 1.0
	if c.cfg.Intercept {
		// Σα_i = 0: (s₊·Q₊ − s₋·Q₋)/n = 0.
		if qPos > qNeg {
			sPos = qNeg / qPos
		} else if qNeg > qPos {
			sNeg = qPos / qNeg
		}
	}
	norm := 0.0 // ‖Xᵀα‖∞·n/(common scale)
	for j, x := range v {
		if pp != nil {
			x = sPos*pp[j] - sNeg*(pp[j]-x) // s₊·P − s₋·N, N = P − V
		}
		norm = max(norm, math.Abs(x))
	}
	t := 1.0
	if nl := c.n * c.lambda; norm > nl {
		t = nl / norm
	}
	dual := t * (sPos*hPos + sNeg*hNeg) / c.n
	metrics := c.record(float64(correct) / c.n)
	return schmp.Progress{Objective: f, NNZ: nnz, Gap: max(f-dual, 0), HasGap: true, Metrics: metrics}, nil
}

// allFinite reports whether no element of xs is NaN or infinite.
func allFinite(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
