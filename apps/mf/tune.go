package mf

import (
	"context"
	"fmt"
	"math"
)

// DefaultHoldout is the validation fraction of a λ search when none is
// given, and DefaultPatience the evaluations without improvement after
// which a validated job stops.
const (
	DefaultHoldout  = 0.1
	DefaultPatience = 2
)

// LambdaGrid is the grid of a λ search by default: 10^(k/2 − 2) for k = 0,
// …, 4, that is 0.01, 0.0316, 0.1, 0.316 and 1, in the count-weighted
// convention (bench/RESULTS.md found the best λ at 0.03 on a generated set
// and at 0.3 or more on a real one).
var LambdaGrid = []float64{0.01, math.Sqrt(10) / 100, 0.1, math.Sqrt(10) / 10, 1}

// GridPoint is the outcome of one fit of a λ search.
type GridPoint struct {
	// Lambda is the fit's λ.
	Lambda float64
	// Best is the evaluation with the lowest validation RMSE; Stopped says
	// that the validation stop ended the fit (else its iterations ran out).
	Best    Eval
	Stopped bool
}

// Fit runs the job of a configuration to the end and returns its model
// (ModelOf its coordinator); Tune calls it once per λ of the grid. The
// validation stop ends the job (see Config.Holdout).
type Fit func(ctx context.Context, cfg Config) (*Model, error)

// Tune fits cfg at every λ of grid, holding out cfg.Holdout of the
// training ratings (DefaultHoldout if 0) with the validation stop, and
// returns every fit's outcome and the index of the one with the lowest
// validation RMSE (the smaller λ of equals: the grid in ascending order,
// the first).
func Tune(ctx context.Context, cfg Config, grid []float64, fit Fit) ([]GridPoint, int, error) {
	if len(grid) == 0 {
		return nil, -1, fmt.Errorf("mf: an empty λ grid")
	}
	if cfg.Holdout <= 0 {
		cfg.Holdout = DefaultHoldout
	}
	if cfg.Patience < 1 {
		cfg.Patience = DefaultPatience
	}
	points := make([]GridPoint, 0, len(grid))
	best := -1
	for _, lambda := range grid {
		c := cfg
		c.Lambda = lambda
		c.Warn = nil
		if err := c.Validate(); err != nil {
			return points, best, fmt.Errorf("λ %g: %w", lambda, err)
		}
		m, err := fit(ctx, c)
		if err != nil {
			return points, best, fmt.Errorf("fit with λ %g: %w", lambda, err)
		}
		p := GridPoint{Lambda: lambda, Best: m.Best(), Stopped: m.Stopped}
		points = append(points, p)
		if best < 0 || p.Best.ValRMSE < points[best].Best.ValRMSE {
			best = len(points) - 1
		}
	}
	return points, best, nil
}

// Refit returns the configuration that refits cfg on all the training
// ratings with the λ of point p of a search: no holdout, and as many
// iterations as p's best evaluation had had (at least one; cfg.Iters stays
// the cap if set). Where that is iteration 0 of SGD's warm start, the
// bias-only model, the refit keeps the holdout and the validation stop
// instead: it is then the same job as p's fit, and writes iteration 0's
// model, which is the bias-only fit of all the training ratings, held-out
// ones included (Config.ColdStart); a refit without the holdout would run
// an iteration of SGD that the search found to do worse.
func Refit(cfg Config, p GridPoint) Config {
	c := cfg
	c.Lambda = p.Lambda
	if p.Best.Iter == 0 && c.Holdout > 0 && c.folds() {
		if c.Patience < 1 {
			c.Patience = DefaultPatience
		}
		return c
	}
	c.Holdout = 0
	iters := max(int(math.Ceil(p.Best.Iter)), 1)
	if c.Iters == 0 || iters < c.Iters {
		c.Iters = iters
	}
	return c
}
