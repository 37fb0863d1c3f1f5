package logreg

import (
	"cmp"
	"fmt"
	"math"

	"github.com/strads-go/strads/apps/internal/colshard"
	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
)

// The backtracking line search over a merged direction: the step α starts
// at 1 and is halved until the objective has fallen by at least
// armijo·α·Δ, where Δ < 0 is the first-order change of F along the
// direction at α = 1 (d-GLMNET's rule), or until maxHalvings halvings.
const (
	armijo      = 0.01
	maxHalvings = 30
)

// ColCoordinator is the coordinator side of logistic regression in the
// column layout: it holds w, b and its own replica of the margins, merges
// the workers' changes so that no round raises the objective (Pull), and
// forwards the columns they share. With Config.Path it solves a
// regularization path in the runtime's stages (lasso.PathStages), as the
// Lasso's does.
type ColCoordinator struct {
	lasso.PathStages
	model
	workers int
	y       []float64 // ±1
	z       []float64 // the margins Xw + b
	r       []float64 // −y_i·σ(−y_i·z_i)
	pos     colshard.Positions
	shared  []bool // column → shared with every worker (several workers)

	// lastMoved is the last round whose update changed the model: a
	// partial computed before it is stale. taken[k] is the last round whose
	// update took worker shard k's change: a partial of shard k computed
	// before it holds values of shard k's columns that are no longer the
	// model's, and is dropped.
	lastMoved uint64
	taken     []uint64
	stats     ColStats
}

// ColStats tells what the merges of the column layout did.
type ColStats struct {
	// Rounds counts the rounds in which some worker changed the model, and
	// Merged those whose changes the coordinator weighed on the objective
	// (several workers', or one computed from older margins): every one of
	// these took its changes whole (Whole), the merged change at a step
	// longer than 1 (Stretched) or shorter (Shortened), one worker's change
	// alone (Single), or nothing, since nothing lowered F (Rejected).
	Rounds, Merged int
	// Whole counts the merged rounds that took every change whole, and
	// Stretched those that took the merged change at a step longer than 1.
	Whole, Stretched int
	// Shortened counts the merged rounds whose step along the merged
	// direction was shorter than 1, and MinAlpha is the shortest step taken.
	Shortened int
	MinAlpha  float64
	// Single counts the merged rounds that took one worker's change alone,
	// which lowered F more than the others, and Rejected those in which
	// nothing lowered F (the round changed nothing).
	Single, Rejected int
	// Dropped counts the workers' changes dropped because they were
	// computed before an earlier change of the same worker was applied
	// (only with rounds in flight).
	Dropped int
}

// NewColCoordinator returns the coordinator side for cfg in the column
// layout; it reads cfg.Test, if set.
func NewColCoordinator(cfg Config) (*ColCoordinator, error) {
	m, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	return &ColCoordinator{model: m, stats: ColStats{MinAlpha: 1}}, nil
}

// errData reports workers that read different data.
var errData = libsvm.ErrDifferentData

// Start implements schmp.Coordinator: it checks that the workers read the
// same data and hold together every column once, takes the labels from
// shard 0, sets λ and returns the initial intercept.
func (c *ColCoordinator) Start(shards []ColSummary) (ColUpdate, error) {
	err := colshard.CheckShards(c.cfg.Data, shards, func(s ColSummary) (columnar.OwnedShard, int) {
		return columnar.OwnedShard{Rows: s.Rows, Features: s.Features, First: s.First, Cols: s.Cols, Data: s.Data}, len(s.Y)
	})
	if err != nil {
		return ColUpdate{}, err
	}
	s0 := shards[0]
	lambdaMax := 0.0
	for k, s := range shards {
		if s.Pos != s0.Pos || s.Neg != s0.Neg || s.Zero != s0.Zero {
			return ColUpdate{}, fmt.Errorf("%w: worker shard %d has %d×%d, shard 0 %d×%d", errData, k, s.Rows, s.Features, s0.Rows, s0.Features)
		}
		lambdaMax = max(lambdaMax, s.LambdaMax)
	}
	if s0.Zero > 0 && s0.Neg > 0 {
		return ColUpdate{}, fmt.Errorf("%s: labels mix the 0/1 and -1/+1 conventions", c.cfg.Data)
	}
	if err := checkClasses(c.cfg.Data, s0.Pos, s0.Neg+s0.Zero); err != nil {
		return ColUpdate{}, err
	}
	c.setLabels(s0.Zero)
	if s0.Features == 0 {
		return ColUpdate{}, fmt.Errorf("%s: no features", c.cfg.Data)
	}
	pos := 0
	for _, y := range s0.Y {
		switch y {
		case 1:
			pos++
		case -1:
		default:
			return ColUpdate{}, fmt.Errorf("worker shard 0 sent label %v, want ±1", y)
		}
	}
	if pos != s0.Pos {
		return ColUpdate{}, fmt.Errorf("worker shard 0 sent %d positive labels and counted %d", pos, s0.Pos)
	}
	c.workers = len(shards)
	c.taken = make([]uint64, len(shards))
	c.n = float64(s0.Rows)
	c.y = s0.Y
	c.w = make([]float64, s0.Features)
	c.shared = make([]bool, s0.Features)
	c.pos = colshard.NewPositions(s0.Features)
	if c.cfg.Intercept {
		mean := float64(pos) / c.n
		c.b = math.Log(mean / (1 - mean))
	}
	c.z = make([]float64, s0.Rows)
	c.r = make([]float64, s0.Rows)
	for i := range c.z {
		c.setRow(i, c.b)
	}
	c.setLambda(lambdaMax)
	if !(c.lambda > 0) {
		return ColUpdate{}, fmt.Errorf("the penalty λ is %v: the column layout needs λ > 0 (λ_max is %v)", c.lambda, lambdaMax)
	}
	cols := []string{"train_accuracy"}
	if c.test != nil {
		cols = append(cols, "test_accuracy")
	}
	if err := c.StartPath(c.cfg.Path, cmp.Or(c.cfg.PathStart, lambdaMax), &c.lambda, cols, c.Model); err != nil {
		return ColUpdate{}, err
	}
	return ColUpdate{Init: true, Lambda: c.lambda, Bias: c.b}, nil
}

// setRow sets the margin of row i to z.
func (c *ColCoordinator) setRow(i int, z float64) {
	y := c.y[i]
	_, q, _ := row(y, z)
	c.z[i], c.r[i] = z, -y*q
}

// Stats returns what the merges did so far.
func (c *ColCoordinator) Stats() ColStats { return c.stats }

// change is a change of the model: the margins move by alpha·dir, w_j to
// vals[k] for j = vars[k] and b to bias, scaled by alpha. It is made of
// the changes of the worker shards in from.
type change struct {
	dir   []float64
	vars  []int32
	vals  []float64
	bias  float64
	alpha float64
	from  []int
}

// single returns worker shard k's change alone, at step 1.
func (c *ColCoordinator) single(k int, part ColPartial) change {
	ch := change{dir: part.Dir, vars: part.Vars, vals: part.Value, bias: c.b, alpha: 1, from: []int{k}}
	if k == 0 && c.cfg.Intercept {
		ch.bias = part.Bias
	}
	return ch
}

// Pull implements schmp.Coordinator: it merges the workers' changes, all
// over columns of their own, and forwards the columns they share to all of
// them. With one worker whose change was computed from the current
// margins, the change is its own sequential descent, which never raises
// the objective, and is taken whole. Otherwise (several workers, or a
// change computed from older margins) it weighs the changes on the exact
// objective (merge): every change whole, if that lowers F by at least
// nearWhole of what the best of the others does; else whichever lowers F
// most of the merged change at the step of a line search (stretched up to
// MaxStep where the changes complement each other) and each worker's
// change alone, at step 1; or nothing if none lowers it.
//
// The next round is joint when no working set grew in this one (the rest
// is to solve the active set exactly), or when the round did not take
// every change whole (the workers' columns explain the same part of the
// margins, or complement each other, and block Jacobi is slow there);
// never after a round that took nothing, which a joint round can do (a
// worker's part of a solution that counted on columns not yet shared), and
// the same round again would too.
//
// With rounds in flight, a worker's change computed before the model took
// one of its earlier changes is dropped: its values of the worker's columns
// and its change of the margins start from a model that is gone.
func (c *ColCoordinator) Pull(round uint64, p ColPlan, partials []ColPartial) (ColUpdate, schmp.Feedback, error) {
	if len(partials) != c.workers {
		return ColUpdate{}, schmp.Feedback{}, fmt.Errorf("round with %d partials for %d workers", len(partials), c.workers)
	}
	if err := p.Check(c.workers, len(c.w)); err != nil {
		return ColUpdate{}, schmp.Feedback{}, err
	}
	fb := p.Feedback()
	u := ColUpdate{Round: round, Alpha: 1, Bias: c.b, Lambda: c.lambda, Joint: c.workers > 1}
	var cols, nnz int
	for _, part := range partials {
		cols += part.Cols.Len()
		nnz += len(part.Cols.Rows)
	}
	u.Cols.Grow(cols, nnz)
	var moved []int // workers with a change
	fresh := true
	for k, part := range partials {
		if part.Added != 0 {
			u.Joint = false
		}
		fb.Updates += part.Updates
		m, err := columnar.CheckChange(k, c.workers, len(c.w), len(c.z), part.Vars, part.Value, len(part.Dir))
		if err != nil {
			return ColUpdate{}, schmp.Feedback{}, err
		}
		if err := columnar.CheckShared(k, c.workers, len(c.z), &part.Cols, c.shared); err != nil {
			return ColUpdate{}, schmp.Feedback{}, err
		}
		u.Cols.AddAll(&part.Cols)
		if math.IsNaN(part.Bias) || math.IsInf(part.Bias, 0) {
			return ColUpdate{}, schmp.Feedback{}, fmt.Errorf("worker shard %d set the intercept to %v", k, part.Bias)
		}
		if !m {
			continue
		}
		if part.AsOf < c.taken[k] {
			c.stats.Dropped++
			continue
		}
		moved = append(moved, k)
		fresh = fresh && part.AsOf >= c.lastMoved
	}
	if len(moved) > 0 {
		c.stats.Rounds++
		var ch change
		if c.workers == 1 && fresh {
			ch = c.single(moved[0], partials[moved[0]])
		} else {
			ch = c.merge(partials, moved)
		}
		switch {
		case ch.alpha == 0:
			u.Joint = false
		case ch.alpha != 1 || len(ch.from) != len(moved):
			u.Joint = c.workers > 1
		}
		if ch.alpha != 0 {
			c.take(round, ch, &u, &fb)
		}
	}
	u.ColValue = u.Cols.Values(c.w)
	return u, fb, nil
}

// take applies the change ch of round round to the coordinator's model and
// margins, and sets the update u and the feedback fb from it.
func (c *ColCoordinator) take(round uint64, ch change, u *ColUpdate, fb *schmp.Feedback) {
	u.Alpha, u.Dir, u.Vars, u.Value, u.Bias = ch.alpha, ch.dir, ch.vars, ch.vals, ch.bias
	for i, d := range u.Dir {
		if d != 0 {
			c.setRow(i, moveMargin(c.z[i], u.Alpha, d))
		}
	}
	c.b = moveBias(c.b, u.Bias, u.Alpha)
	c.pos.Set(fb, c.w, u.Vars, u.Value, func(old, v float64) float64 { return moveTo(old, v, u.Alpha) })
	c.lastMoved = round
	for _, k := range ch.from {
		c.taken[k] = round
	}
}

// nearWhole is how much of the best decrease of the other candidates the
// workers' changes taken whole must achieve for merge to take them: near
// the optimum they do, and whole changes keep the zeros that the workers
// set exactly.
const nearWhole = 0.9

// merge returns the change of the workers in moved that it takes: every
// change whole if that lowers the objective by at least nearWhole of what
// the best of the others lowers it; otherwise whichever lowers it most of
// the merged change at the step that lineSearch finds and each worker's
// change alone, at step 1; a change with alpha 0 if none lowers it. Every
// candidate's change of F is computed exactly (objectiveChange).
func (c *ColCoordinator) merge(partials []ColPartial, moved []int) change {
	c.stats.Merged++
	whole := change{bias: c.b, alpha: 1, from: moved}
	if len(moved) == 1 {
		whole.dir = partials[moved[0]].Dir
	} else {
		whole.dir = make([]float64, len(c.z))
	}
	for _, k := range moved {
		part := partials[k]
		if len(moved) > 1 {
			for i, d := range part.Dir {
				whole.dir[i] += d
			}
		}
		whole.vars = append(whole.vars, part.Vars...)
		whole.vals = append(whole.vals, part.Value...)
		if k == 0 && c.cfg.Intercept {
			whole.bias = part.Bias
		}
	}
	wholeDF := c.objectiveChange(whole)
	var best change // alpha 0: nothing
	bestDF := 0.0
	// The first-order change of F along the merged change, with the
	// penalty's change at step 1 (which bounds it at any step in [0, 1],
	// by convexity). Each worker's change lowers F, so each one's share is
	// negative, and so is the sum, unless the workers' changes were
	// computed in a joint round, or from older margins.
	if slope := c.slope(whole); slope < 0 {
		best, bestDF = c.lineSearch(whole, wholeDF, slope)
	}
	single := false
	if len(moved) > 1 {
		for _, k := range moved {
			ch := c.single(k, partials[k])
			if df := c.objectiveChange(ch); df < bestDF {
				best, bestDF, single = ch, df, true
			}
		}
	}
	switch {
	case wholeDF < 0 && wholeDF <= nearWhole*bestDF:
		c.stats.Whole++
		return whole
	case best.alpha == 0:
		c.stats.Rejected++
	case single:
		c.stats.Single++
	case best.alpha > 1:
		c.stats.Stretched++
	default:
		c.stats.Shortened++
		c.stats.MinAlpha = min(c.stats.MinAlpha, best.alpha)
	}
	return best
}

// lineSearch returns the merged change ch, given at step 1, at the step it
// finds along it, and F's change there, from F's change df at step 1 and
// F's first-order change slope < 0 along ch. It guesses the step that
// minimizes the parabola through F's change at 0, with that slope, and at
// 1. If step 1 satisfies the Armijo condition, it returns the guess where
// that is longer (up to MaxStep) and lowers F more, and step 1 otherwise;
// if not, it backtracks from the guess by halving until the Armijo
// condition holds (alpha 0 if it never does).
func (c *ColCoordinator) lineSearch(ch change, df, slope float64) (change, float64) {
	// F is convex along ch, so df ≥ slope: the parabola's curvature
	// df − slope is positive unless F is linear along ch.
	guess := float64(MaxStep)
	if curv := df - slope; curv > 0 {
		guess = min(-slope/(2*curv), MaxStep)
	}
	if df <= armijo*slope {
		if guess > 1 {
			// The changes complement each other: stretched, they lower F
			// more.
			long := ch
			long.alpha = guess
			if dl := c.objectiveChange(long); dl < df {
				return long, dl
			}
		}
		return ch, df
	}
	// Here df > armijo·slope, so guess < 1/(2(1 − armijo)) < 1.
	ch.alpha = max(guess, math.Ldexp(1, -maxHalvings))
	for range maxHalvings + 1 {
		if d := c.objectiveChange(ch); d <= armijo*ch.alpha*slope {
			return ch, d
		}
		ch.alpha /= 2
	}
	return change{}, 0
}

// MaxStep is the longest step the coordinator takes along the workers'
// merged change: more than 1 where their changes complement each other.
const MaxStep = 4

// slope returns the change of F to first order along ch at step 1:
// ∇L·Δ + λ·(‖w + Δw‖₁ − ‖w‖₁).
func (c *ColCoordinator) slope(ch change) float64 {
	var s float64
	for i, d := range ch.dir {
		s += c.r[i] * d
	}
	s /= c.n
	for k, j := range ch.vars {
		s += c.lambda * (math.Abs(ch.vals[k]) - math.Abs(c.w[j]))
	}
	return s
}

// objectiveChange returns F after the change ch minus F now, computed
// exactly (up to rounding) as the change of the loss of every row that
// ch moves, and of the penalty. Each row's change is computed to its own
// relative precision, not to that of the loss, so that the small changes
// near the optimum are told from rounding.
func (c *ColCoordinator) objectiveChange(ch change) float64 {
	var dl float64
	for i, d := range ch.dir {
		if d == 0 {
			continue
		}
		z := c.z[i]
		dl += lossChange(c.y[i], z, c.r[i], moveMargin(z, ch.alpha, d)-z)
	}
	df := dl / c.n
	for k, j := range ch.vars {
		df += c.lambda * (math.Abs(moveTo(c.w[j], ch.vals[k], ch.alpha)) - math.Abs(c.w[j]))
	}
	return df
}

// lossChange returns log(1 + exp(−y·(z+δ))) − log(1 + exp(−y·z)) for a
// row whose loss derivative at z is r = −y·σ(−y·z): log1p(q·expm1(−y·δ))
// with q = σ(−y·z), accurate to its own relative precision, or for a long
// step the plain difference.
func lossChange(y, z, r, delta float64) float64 {
	if math.Abs(delta) < 30 {
		return math.Log1p(-y * r * math.Expm1(-y*delta))
	}
	return lossAt(y, z+delta) - lossAt(y, z)
}

// Objective implements schmp.Coordinator: F at the workers' state and its
// duality gap, as for the row layout (see the package documentation), and
// the accuracies, with on a path the λ being solved (the metric lambda).
// Every worker must report the same sums over the rows.
func (c *ColCoordinator) Objective(reports []ColSummary) (schmp.Progress, error) {
	r0 := reports[0]
	var dual, l1 float64
	nnz := 0
	for k, r := range reports {
		if r.Loss != r0.Loss || r.Correct != r0.Correct || r.HPos != r0.HPos || r.HNeg != r0.HNeg || r.QPos != r0.QPos || r.QNeg != r0.QNeg {
			return schmp.Progress{}, fmt.Errorf("%w: worker shard %d has a loss of %v, shard 0 %v", errData, k, r.Loss, r0.Loss)
		}
		dual = max(dual, r.Dual)
		l1 += r.L1
		nnz += r.NNZ
	}
	f := r0.Loss/c.n + c.lambda*l1
	sPos, sNeg := classScales(c.cfg.Intercept, r0.QPos, r0.QNeg)
	t := 1.0
	if nl := c.n * c.lambda; dual > nl {
		t = nl / dual
	}
	d := t * (sPos*r0.HPos + sNeg*r0.HNeg) / c.n
	metrics := c.record(float64(r0.Correct) / c.n)
	metrics = c.PathMetrics(metrics)
	return schmp.Progress{Objective: f, NNZ: nnz, Gap: max(f-d, 0), HasGap: true, Metrics: metrics}, nil
}
