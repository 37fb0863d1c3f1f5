// Package nnls is non-negative least squares,
//
//	minimize (1/2n)‖y − Xβ‖²  subject to β ≥ 0,
//
// solved by coordinate descent. It is the smallest complete strads app, and
// shows how a model is written as the three functions of package schmp:
//
//   - Schedule (on the scheduler node) picks the coordinates of a round:
//     Config.Block consecutive coordinates, cycling through all of them.
//   - Push (on every worker node) computes x_jᵀr over the worker's own rows
//     for every picked j, where r = y − Xβ is the residual that the worker
//     keeps for its rows.
//   - Pull (on the coordinator node, which holds β) sums the workers' partials
//     into g_j = x_jᵀr/n and takes the projected Newton step
//     β_j ← max(0, β_j + g_j/a_j), a_j = ‖x_j‖²/n. It sends the changes Δβ_j
//     back, and every worker updates its residual r ← r − Δβ_j·x_j (Apply).
//
// In addition, each worker describes its rows when it joins (the column norms
// ‖x_j‖² that Start sums into a_j) and reports Σr² for the objective.
//
// With Block = 1 this is plain cyclic coordinate descent, which always
// converges. With Block > 1 the coordinates of a block are updated
// Jacobi-style, all from the same residual, which may overshoot and diverge
// unless the columns of a block are nearly orthogonal: keep Block small (the
// generated columns are independent, so small blocks are safe for them).
//
// The data are a dense Gaussian matrix generated from Config.Seed with its
// own random stream per row, so that every worker generates only its rows,
// and y_i = x_iᵀβ* + ε_i with β*_j = j mod 3 (j counted from 0) and
// ε_i ~ N(0, 0.1²).
package nnls

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// Config configures a job. Every role gets the same Config.
type Config struct {
	// Rows and Cols are the size n×p of X.
	Rows, Cols int
	// Seed seeds the generated data.
	Seed uint64
	// Block is the number of coordinates updated per round; 0 means 1.
	Block int
}

// Validate reports the first field of c out of range.
func (c Config) Validate() error {
	switch {
	case c.Rows < 1:
		return fmt.Errorf("nnls: Rows must be at least 1, got %d", c.Rows)
	case c.Cols < 1 || c.Cols > math.MaxInt32:
		return fmt.Errorf("nnls: Cols must be in [1, %d], got %d", math.MaxInt32, c.Cols)
	case c.Block < 0:
		return fmt.Errorf("nnls: Block must be at least 0, got %d", c.Block)
	}
	return nil
}

// Row generates row i of X into x (of length Cols) and returns y_i: the
// data of the problem, which every worker generates for its own rows.
func (c Config) Row(i int, x []float64) (y float64) {
	rng := rand.New(rand.NewPCG(c.Seed, uint64(i)))
	for j := range x {
		x[j] = rng.NormFloat64()
		y += float64(j%3) * x[j]
	}
	return y + 0.1*rng.NormFloat64()
}

// Plan, the P of the program, lists the coordinates updated in a round.
type Plan struct {
	Vars codec.Int32s `msgpack:"v"`
}

// Partial, the R of the program, is a worker's share of a round:
// Dot[k] = x_jᵀr over its rows for j = Plan.Vars[k].
type Partial struct {
	Dot codec.Float64s `msgpack:"d"`
}

// Update, the U of the program, tells workers how β changed:
// β_j += Delta[k] for j = Vars[k].
type Update struct {
	Vars  codec.Int32s   `msgpack:"v"`
	Delta codec.Float64s `msgpack:"d"`
}

// Summary, the S of the program, describes a worker's rows when it joins
// (Rows and ColSq[j] = ‖x_j‖² over them) and its residual when it reports
// (SqResid = Σr² over them).
type Summary struct {
	Rows    int            `msgpack:"n"`
	ColSq   codec.Float64s `msgpack:"c"`
	SqResid float64        `msgpack:"r"`
}

// Program returns the NNLS program for cfg.
func Program(cfg Config) schmp.Program[Plan, Partial, Update, Summary] {
	return schmp.Program[Plan, Partial, Update, Summary]{
		Name: "nnls",
		NewScheduler: func(_ context.Context, part, parts int) (schmp.Scheduler[Plan], error) {
			return NewScheduler(cfg, part, parts)
		},
		NewWorker: func(_ context.Context, shard, shards int) (schmp.Worker[Plan, Partial, Update, Summary], error) {
			return NewWorker(cfg, shard, shards)
		},
		NewCoordinator: func(context.Context) (schmp.Coordinator[Plan, Partial, Update, Summary], error) {
			return NewCoordinator(cfg)
		},
	}
}

// Scheduler is the scheduler side: cyclic blocks of coordinates.
type Scheduler struct {
	first, cols, block int // the part's coordinates are [first, first+cols)
	plans              int // plans made so far
}

// NewScheduler returns scheduler part of parts for cfg: it owns a
// contiguous range of the coordinates.
func NewScheduler(cfg Config, part, parts int) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if parts > cfg.Cols {
		return nil, fmt.Errorf("nnls: %d schedulers for %d coordinates", parts, cfg.Cols)
	}
	lo, hi := part*cfg.Cols/parts, (part+1)*cfg.Cols/parts
	return &Scheduler{first: lo, cols: hi - lo, block: min(max(cfg.Block, 1), hi-lo)}, nil
}

// Schedule implements schmp.Scheduler: the k-th plan (from 0) updates the
// Block coordinates of the part from k·Block on, cycling through the part.
// It needs no feedback. With rounds in flight (depth > 1), the blocks of
// the part's rounds in flight must not overlap: the coordinator refuses a
// plan that would update a coordinate twice at once.
func (s *Scheduler) Schedule(uint64, []schmp.Feedback) (Plan, schmp.PlanInfo, error) {
	start := s.plans * s.block % s.cols
	s.plans++
	p := Plan{Vars: make(codec.Int32s, s.block)}
	for k := range p.Vars {
		p.Vars[k] = int32(s.first + (start+k)%s.cols)
	}
	return p, schmp.PlanInfo{Vars: p.Vars, Candidates: s.block, Selected: s.block}, nil
}
