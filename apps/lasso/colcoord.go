package lasso

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/strads-go/strads/apps/internal/colshard"
	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
)

// ColCoordinator is the coordinator side of the Lasso in the column layout:
// it holds β and its own replica of q = y − Xβ, merges the workers' changes
// (stepWeights), and certifies the objective with the duality gap. With
// Config.Path it solves a regularization path in the runtime's stages
// (PathStages).
type ColCoordinator struct {
	PathStages
	cfg       Config
	workers   int
	n         float64
	lambda    float64
	lambdaMax float64
	y         []float64
	meanY     float64
	colSum    []float64
	q         []float64
	beta      []float64
	pos       colshard.Positions
	shared    []bool // column → shared with every worker (several workers)
	test      *testSet

	// Rounds that took a worker's change at a weight below 1, and the
	// least weight.
	Shortened int
	MinAlpha  float64
}

// NewColCoordinator returns the coordinator side for cfg in the column
// layout.
func NewColCoordinator(cfg Config) *ColCoordinator {
	return &ColCoordinator{cfg: cfg, MinAlpha: 1}
}

// Start implements schmp.Coordinator: it checks that the workers hold the
// same rows and together every column once, sets λ (the path's first, λ_max,
// with Config.Path) and reads Config.Test.
func (c *ColCoordinator) Start(shards []ColSummary) (ColUpdate, error) {
	err := colshard.CheckShards(c.cfg.Data, shards, func(s ColSummary) (columnar.OwnedShard, int) {
		return columnar.OwnedShard{Rows: s.Rows, Features: s.Features, First: s.First, Cols: s.Cols, Data: s.Data}, len(s.Y)
	})
	if err != nil {
		return ColUpdate{}, err
	}
	s0 := shards[0]
	c.workers = len(shards)
	c.n = float64(s0.Rows)
	c.colSum = make([]float64, s0.Features)
	lambdaMax := 0.0
	for k, s := range shards {
		if len(s.ColSum) != s.Cols {
			return ColUpdate{}, fmt.Errorf("worker shard %d sent %d column sums for %d columns", k, len(s.ColSum), s.Cols)
		}
		copy(c.colSum[s.First:s.First+s.Cols], s.ColSum)
		lambdaMax = max(lambdaMax, s.LambdaMax)
	}
	c.y = s0.Y
	if c.cfg.Intercept {
		for _, v := range c.y {
			c.meanY += v
		}
		c.meanY /= c.n
	}
	c.q = slices.Clone(c.y)
	c.beta = make([]float64, s0.Features)
	c.shared = make([]bool, s0.Features)
	c.pos = colshard.NewPositions(s0.Features)
	c.lambda, c.lambdaMax = c.cfg.Lambda, lambdaMax
	if c.cfg.LambdaRatio > 0 {
		c.lambda = c.cfg.LambdaRatio * lambdaMax
	}
	if !(c.lambda > 0) {
		return ColUpdate{}, fmt.Errorf("the penalty λ is %v: the column layout needs λ > 0 (λ_max is %v)", c.lambda, lambdaMax)
	}
	if c.cfg.Test != "" {
		if c.test, err = readTestSet(c.cfg.Test); err != nil {
			return ColUpdate{}, err
		}
	}
	var cols []string
	if c.test != nil {
		cols = []string{testMetric}
	}
	if err := c.StartPath(c.cfg.Path, cmp.Or(c.cfg.PathStart, lambdaMax), &c.lambda, cols, c.Model); err != nil {
		return ColUpdate{}, err
	}
	return ColUpdate{Lambda: c.lambda}, nil
}

// Lambda returns the penalty in use (known after Start).
func (c *ColCoordinator) Lambda() float64 { return c.lambda }

// LambdaMax returns λ_max = ‖X̃ᵀỹ‖∞/n, the smallest λ whose solution is
// β = 0 (known after Start).
func (c *ColCoordinator) LambdaMax() float64 { return c.lambdaMax }

// Pull implements schmp.Coordinator: it takes each worker's change, all
// over columns of its own, with the weight stepWeights finds (the exact
// minimum of the objective over the weights, or all the changes whole
// where they come close to it), so that no round raises the objective,
// and forwards the columns the workers share to all of them.
func (c *ColCoordinator) Pull(_ uint64, p ColPlan, partials []ColPartial) (ColUpdate, schmp.Feedback, error) {
	if len(partials) != c.workers {
		return ColUpdate{}, schmp.Feedback{}, fmt.Errorf("round with %d partials for %d workers", len(partials), c.workers)
	}
	if err := p.Check(c.workers, len(c.beta)); err != nil {
		return ColUpdate{}, schmp.Feedback{}, err
	}
	fb := p.Feedback()
	// The next round is joint when no working set grew in this one (the
	// rest is to solve the active set exactly), or below when the workers'
	// changes did not add up.
	// Shotgun (scheduler.Shotgun) takes every change whole and never
	// makes a round joint: parallel updates from the same residual, summed.
	shotgun := c.cfg.Schedule.Policy == scheduler.Shotgun
	u := ColUpdate{Lambda: c.lambda, Joint: c.workers > 1 && !shotgun}
	var changes []blockChange
	for k, part := range partials {
		if part.Added != 0 {
			u.Joint = false
		}
		fb.Updates += part.Updates
		m, err := columnar.CheckChange(k, c.workers, len(c.beta), len(c.q), part.Vars, part.Value, len(part.Dir))
		if err != nil {
			return ColUpdate{}, schmp.Feedback{}, err
		}
		if m {
			changes = append(changes, blockChange{dir: part.Dir, vars: part.Vars, vals: part.Value})
		}
		if err := columnar.CheckShared(k, c.workers, len(c.q), &part.Cols, c.shared); err != nil {
			return ColUpdate{}, schmp.Feedback{}, err
		}
		u.Cols.AddAll(&part.Cols)
	}
	if len(changes) == 0 {
		u.ColValue = u.Cols.Values(c.beta)
		return u, fb, nil
	}
	var alpha []float64
	if shotgun {
		alpha = slices.Repeat([]float64{1}, len(changes))
	} else {
		alpha = stepWeights(c.residual(), changes, c.beta, c.lambda, c.cfg.Intercept)
	}
	switch {
	case slices.Max(alpha) == 0:
		// No change helped: a joint round can stall so (a worker's part
		// of a solution that counted on columns not yet shared), and the
		// same round again would too. Each worker's own descent, alone,
		// lowers the objective unless the model is optimal.
		u.Joint = false
	case slices.Min(alpha) != 1 || slices.Max(alpha) != 1:
		// The changes did not add up: the workers' columns explain the
		// same part of the residual, and block Jacobi is slow there.
		u.Joint = c.workers > 1
	}
	if least := slices.Min(alpha); least < 1 {
		c.Shortened++
		c.MinAlpha = min(c.MinAlpha, least)
	}
	for k, ch := range changes {
		a := alpha[k]
		if a == 0 {
			continue
		}
		if u.Dir == nil {
			u.Dir = make([]float64, len(c.q))
		}
		for i, d := range ch.dir {
			u.Dir[i] += a * d
		}
		for t, j := range ch.vars {
			u.Vars = append(u.Vars, j)
			u.Value = append(u.Value, step(c.beta[j], ch.vals[t], a))
		}
	}
	applyDir(c.q, u.Dir)
	c.pos.Set(&fb, c.beta, u.Vars, u.Value, func(_, v float64) float64 { return v })
	u.ColValue = u.Cols.Values(c.beta)
	return u, fb, nil
}

// residual returns r = ỹ − X̃β from the coordinator's q.
func (c *ColCoordinator) residual() []float64 {
	r := slices.Clone(c.q)
	if c.cfg.Intercept {
		var sum float64
		for _, v := range r {
			sum += v
		}
		m := sum / c.n
		for i := range r {
			r[i] -= m
		}
	}
	return r
}

// Objective implements schmp.Coordinator: P(β) = (1/2n)‖r‖² + λ‖β‖₁ and
// its duality gap, as for the row layout, and as metrics the test error
// test_mse of the coordinator's model with Config.Test, and the λ being
// solved on a path. Every worker must report the same residual.
func (c *ColCoordinator) Objective(reports []ColSummary) (schmp.Progress, error) {
	rr, yr := reports[0].SqResid, reports[0].YtR
	var dual, l1 float64
	nnz := 0
	for k, r := range reports {
		if r.SqResid != rr || r.YtR != yr {
			return schmp.Progress{}, fmt.Errorf("%w: worker shard %d has Σr² = %v, shard 0 %v", libsvm.ErrDifferentData, k, r.SqResid, rr)
		}
		dual = max(dual, r.MaxXtR)
		l1 += r.L1
		nnz += r.NNZ
	}
	s := 1.0
	if nl := c.n * c.lambda; dual > nl {
		s = nl / dual
	}
	gap := (0.5*rr + c.n*c.lambda*l1 - s*yr + 0.5*s*s*rr) / c.n
	p := schmp.Progress{Objective: rr/(2*c.n) + c.lambda*l1, NNZ: nnz, Gap: max(gap, 0), HasGap: true}
	if c.test != nil {
		p.Metrics = append(p.Metrics, schmp.Metric{Name: testMetric, Value: c.test.mse(c.Intercept(), c.beta)})
	}
	p.Metrics = c.PathMetrics(p.Metrics)
	return p, nil
}

// Beta returns the coefficients (owned by c).
func (c *ColCoordinator) Beta() []float64 { return c.beta }

// Intercept returns ȳ − x̄ᵀβ (0 without an intercept).
func (c *ColCoordinator) Intercept() float64 {
	if !c.cfg.Intercept {
		return 0
	}
	b0 := c.meanY
	for j, b := range c.beta {
		b0 -= c.colSum[j] / c.n * b
	}
	return b0
}

// WriteModel implements schmp.Coordinator, as for the row layout.
func (c *ColCoordinator) WriteModel(w io.Writer) error {
	return c.Model().Write(w)
}

// Model returns the coordinator's model.
func (c *ColCoordinator) Model() *linear.Model {
	return linear.New(linear.Lasso, c.lambda, c.cfg.Intercept, c.Intercept(), c.beta)
}
