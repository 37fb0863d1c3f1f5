package lasso

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/schmp"
)

// Coordinator is the coordinator side of the Lasso: it holds β.
type Coordinator struct {
	cfg       Config
	n         float64
	lambda    float64
	lambdaMax float64
	beta      []float64
	curv      []float64 // a_j = ‖x̃_j‖²/n
	meanX     []float64 // nil when no intercept
	meanY     float64
	test      *testSet
}

// NewCoordinator returns the coordinator side for cfg.
func NewCoordinator(cfg Config) *Coordinator { return &Coordinator{cfg: cfg} }

// Start implements schmp.Coordinator: it sums the shard summaries into the
// column norms and λ, reads Config.Test, and returns the centering for the
// workers. A regularization path (Config.Path) is an error: it runs in the
// column layout only.
func (c *Coordinator) Start(shards []Summary) (Update, error) {
	if c.cfg.Path > 0 {
		return Update{}, errors.New("a regularization path (Config.Path) runs in the column layout only")
	}
	if c.cfg.Test != "" {
		var err error
		if c.test, err = readTestSet(c.cfg.Test); err != nil {
			return Update{}, err
		}
	}
	m := 0
	rows := 0
	var sumY float64
	for k, s := range shards {
		if s.Data != shards[0].Data {
			return Update{}, fmt.Errorf("%w: worker shard %d read %v, shard 0 read %v", libsvm.ErrDifferentData, k, s.Data, shards[0].Data)
		}
		// The summaries come over the network (DESIGN "Hostile traffic").
		if s.Rows < 0 || s.Features < 0 || len(s.ColSum) != s.Features || len(s.ColSq) != s.Features || len(s.XtY) != s.Features ||
			!finite(s.SumY) || !allFinite(s.ColSum) || !allFinite(s.ColSq) || !allFinite(s.XtY) {
			return Update{}, fmt.Errorf("worker shard %d described %d rows and %d features with %d, %d and %d column sums, or sums that are not finite",
				k, s.Rows, s.Features, len(s.ColSum), len(s.ColSq), len(s.XtY))
		}
		m = max(m, s.Features)
		rows += s.Rows
		sumY += s.SumY
	}
	if rows == 0 {
		return Update{}, fmt.Errorf("%s: no samples", c.cfg.Data)
	}
	if m == 0 {
		return Update{}, fmt.Errorf("%s: no features", c.cfg.Data)
	}
	c.n = float64(rows)
	colSum := make([]float64, m)
	colSq := make([]float64, m)
	xty := make([]float64, m)
	for _, s := range shards {
		for j := range s.Features {
			colSum[j] += s.ColSum[j]
			colSq[j] += s.ColSq[j]
			xty[j] += s.XtY[j]
		}
	}
	if c.cfg.Intercept {
		c.meanY = sumY / c.n
		c.meanX = make([]float64, m)
		for j := range m {
			c.meanX[j] = colSum[j] / c.n
		}
	}
	c.beta = make([]float64, m)
	c.curv = make([]float64, m)
	lambdaMax := 0.0
	for j := range m {
		c.curv[j] = colSq[j] / c.n
		g := xty[j] / c.n
		if c.meanX != nil {
			c.curv[j] -= c.meanX[j] * c.meanX[j]
			g -= c.meanX[j] * c.meanY
		}
		if c.curv[j] < 1e-14*colSq[j]/c.n {
			c.curv[j] = 0 // a constant column: nothing to fit
		}
		lambdaMax = max(lambdaMax, math.Abs(g))
	}
	c.lambda, c.lambdaMax = c.cfg.Lambda, lambdaMax
	if c.cfg.LambdaRatio > 0 {
		c.lambda = c.cfg.LambdaRatio * lambdaMax
	}
	return Update{Center: &Center{MeanY: c.meanY, MeanX: c.meanX, Features: m}}, nil
}

// Lambda returns the penalty in use (known after Start).
func (c *Coordinator) Lambda() float64 { return c.lambda }

// LambdaMax returns λ_max = ‖X̃ᵀỹ‖∞/n, the smallest λ whose solution is
// β = 0 (known after Start).
func (c *Coordinator) LambdaMax() float64 { return c.lambdaMax }

// Pull implements schmp.Coordinator: one coordinate-descent step for every
// variable of the plan, from the summed partials.
func (c *Coordinator) Pull(_ uint64, p Plan, partials []Partial) (Update, schmp.Feedback, error) {
	var sumR float64
	for w, part := range partials {
		if len(part.Dot) != len(p.Vars) {
			return Update{}, schmp.Feedback{}, fmt.Errorf("worker shard %d sent %d sums for %d variables", w, len(part.Dot), len(p.Vars))
		}
		if !finite(part.SumR) || !allFinite(part.Dot) {
			return Update{}, schmp.Feedback{}, fmt.Errorf("worker shard %d sent sums that are not finite", w)
		}
		sumR += part.SumR
	}
	for _, j := range p.Vars {
		if j < 0 || int(j) >= len(c.beta) {
			return Update{}, schmp.Feedback{}, fmt.Errorf("plan of variable %d of %d", j, len(c.beta))
		}
	}
	fb := schmp.Feedback{Vars: p.Vars, Delta: make([]float64, len(p.Vars))}
	var u Update
	for k, j := range p.Vars {
		if c.curv[j] == 0 {
			continue
		}
		var g float64
		for _, part := range partials {
			g += part.Dot[k]
		}
		if c.meanX != nil {
			g -= c.meanX[j] * sumR
		}
		old := c.beta[j]
		z := g/c.n + c.curv[j]*old
		nw := softThreshold(z, c.lambda) / c.curv[j]
		if d := nw - old; d != 0 {
			c.beta[j] = nw
			fb.Delta[k] = d
			u.Vars = append(u.Vars, j)
			u.Delta = append(u.Delta, d)
			u.Value = append(u.Value, nw)
		}
	}
	return u, fb, nil
}

func softThreshold(z, l float64) float64 {
	switch {
	case z > l:
		return z - l
	case z < -l:
		return z + l
	}
	return 0
}

// Objective implements schmp.Coordinator: the objective
// P(β) = (1/2n)‖r‖² + λ‖β‖₁ and its duality gap. With the dual point
// ν = s·r, s = min(1, nλ/‖X̃ᵀr‖∞), which is feasible, the gap is
//
//	P(β) − D(ν) = (1/n)·(½‖r‖² + nλ‖β‖₁ − s·ỹᵀr + ½s²‖r‖²) ≥ P(β) − P(β*),
//
// so it certifies how far the objective is from the optimum. With
// Config.Test, the metric test_mse is the test error of the coordinator's
// model.
func (c *Coordinator) Objective(reports []Summary) (schmp.Progress, error) {
	var rr, yr, sumR float64
	xtr := make([]float64, len(c.beta))
	for w, r := range reports {
		if len(r.XtR) > len(xtr) {
			return schmp.Progress{}, fmt.Errorf("worker shard %d reported %d columns, want at most %d", w, len(r.XtR), len(xtr))
		}
		rr += r.SqResid
		yr += r.YtR
		sumR += r.SumResid
		for j, v := range r.XtR {
			xtr[j] += v
		}
	}
	dual := 0.0 // ‖X̃ᵀr‖∞
	for j, v := range xtr {
		if c.meanX != nil {
			v -= c.meanX[j] * sumR
		}
		if c.curv[j] != 0 {
			dual = max(dual, math.Abs(v))
		}
	}
	// Every worker has applied the same updates: β is theirs, which may be
	// older than c.beta.
	l1, nnz := reports[0].L1, reports[0].NNZ
	s := 1.0
	if nl := c.n * c.lambda; dual > nl {
		s = nl / dual
	}
	gap := (0.5*rr + c.n*c.lambda*l1 - s*yr + 0.5*s*s*rr) / c.n
	p := schmp.Progress{Objective: rr/(2*c.n) + c.lambda*l1, NNZ: nnz, Gap: max(gap, 0), HasGap: true}
	if c.test != nil {
		// The coordinator's β, which with rounds in flight may be newer
		// than the reports'.
		p.Metrics = []schmp.Metric{{Name: testMetric, Value: c.test.mse(c.Intercept(), c.beta)}}
	}
	return p, nil
}

// Beta returns the coefficients (owned by c).
func (c *Coordinator) Beta() []float64 { return c.beta }

// Intercept returns ȳ − x̄ᵀβ (0 without an intercept).
func (c *Coordinator) Intercept() float64 {
	if c.meanX == nil {
		return 0
	}
	b0 := c.meanY
	for j, b := range c.beta {
		b0 -= c.meanX[j] * b
	}
	return b0
}

// WriteModel implements schmp.Coordinator: the model file of package
// apps/linear, the non-zero coefficients with 1-based indices as in LIBSVM
// and the intercept as index 0 when the job fits one.
func (c *Coordinator) WriteModel(w io.Writer) error {
	return c.Model().Write(w)
}

// Model returns the coordinator's model.
func (c *Coordinator) Model() *linear.Model {
	return linear.New(linear.Lasso, c.lambda, c.cfg.Intercept, c.Intercept(), c.beta)
}
