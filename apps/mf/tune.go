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

// RankGrid is the grid of a rank search by default: doublings around the
// default rank 10, up to Netflix's usual 40.
var RankGrid = []int{5, 10, 20, 40}

// Grid is what a search fits: every λ of Lambdas with every rank of Ranks
// (the configuration's own where one is empty).
type Grid struct {
	Lambdas []float64
	Ranks   []int
}

// GridPoint is the outcome of one fit of a search.
type GridPoint struct {
	// Lambda and Rank are the fit's.
	Lambda float64
	Rank   int
	// Best is the evaluation with the lowest validation RMSE; Stopped says
	// that the validation stop ended the fit (else its iterations ran out).
	Best    Eval
	Stopped bool
}

// Fit runs the job of a configuration to the end and returns its model
// (ModelOf its coordinator); Tune calls it once per point of the grid.
// The validation stop ends the job (see Config.Holdout).
type Fit func(ctx context.Context, cfg Config) (*Model, error)

// Tune fits cfg at every point of grid (for each rank, every λ), holding
// out cfg.Holdout of the training ratings (DefaultHoldout if 0) with the
// validation stop, and returns every fit's outcome and the index of the
// one with the lowest validation RMSE (the first of equals: with the grid
// in ascending order, the smaller rank and λ).
func Tune(ctx context.Context, cfg Config, grid Grid, fit Fit) ([]GridPoint, int, error) {
	lambdas, ranks := grid.Lambdas, grid.Ranks
	if len(lambdas) == 0 {
		lambdas = []float64{cfg.Lambda}
	}
	if len(ranks) == 0 {
		ranks = []int{cfg.Rank}
	}
	if cfg.Holdout <= 0 {
		cfg.Holdout = DefaultHoldout
	}
	if cfg.Patience < 1 {
		cfg.Patience = DefaultPatience
	}
	points := make([]GridPoint, 0, len(lambdas)*len(ranks))
	best := -1
	for _, rank := range ranks {
		for _, lambda := range lambdas {
			c := cfg
			c.Lambda, c.Rank = lambda, rank
			c.Warn = nil
			if err := c.Validate(); err != nil {
				return points, best, fmt.Errorf("λ %g, rank %d: %w", lambda, rank, err)
			}
			m, err := fit(ctx, c)
			if err != nil {
				return points, best, fmt.Errorf("fit with λ %g, rank %d: %w", lambda, rank, err)
			}
			p := GridPoint{Lambda: lambda, Rank: rank, Best: m.Best(), Stopped: m.Stopped}
			points = append(points, p)
			if best < 0 || p.Best.ValRMSE < points[best].Best.ValRMSE {
				best = len(points) - 1
			}
		}
	}
	return points, best, nil
}

// Refit returns the configuration that refits cfg on all the training
// ratings with the λ and rank of point p of a search: no holdout, and as many
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
	if p.Rank > 0 {
		c.Rank = p.Rank
	}
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
