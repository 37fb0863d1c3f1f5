// Package lsq is the parameter server's walkthrough example: least-squares
// linear regression by data-parallel SGD (package ps). Every worker makes
// its own rows, as it would read its own shard of a file, and never sees
// the others'; they learn β together through one table, and report their
// losses through another.
package lsq

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/wire"
)

// Config is a problem and how to fit it.
type Config struct {
	// Rows, Cols and Seed make the data: see Example.
	Rows, Cols int
	Seed       uint64
	// Workers and Servers are the job's nodes.
	Workers, Servers int
	// Model and Staleness are β's consistency.
	Model     ps.Model
	Staleness int
	// Passes over the data, each ClockEvery clocks long (a worker's rows
	// in as many chunks): a clock is a short step, so that a worker
	// does not move β far from what the others last saw. Pass p steps
	// by Step/(1+p) on mini-batches of Batch rows.
	Passes, ClocksPerPass int
	Step                  float64
	Batch                 int
	// Every is how many clocks apart checkpoints are (0: none), with
	// node.Options.Checkpoints.
	Every int
}

// Clocks returns the job's number of clocks.
func (c Config) Clocks() int { return c.Passes * c.ClocksPerPass }

// The tables.
const (
	Beta = iota // one row of Cols values
	Loss        // row k: the squared error and rows at pass k's start
)

// PS returns the job's tables.
func (c Config) PS() ps.Config {
	return ps.Config{
		Servers: c.Servers,
		Workers: c.Workers,
		Every:   c.Every,
		Tables: []ps.Table{
			{Name: "beta", Rows: 1, Width: c.Cols, Model: c.Model, Staleness: c.Staleness},
			// BSP: pass p's losses are all in once every worker has
			// ended pass p.
			{Name: "loss", Rows: c.Passes, Width: 2, Model: ps.BSP},
		},
	}
}

// Example makes row i: x is drawn from N(0, 1) and y = Σ_j x_j·(j mod 3)
// plus noise from N(0, 0.1²).
func (c Config) Example(i int, x []float64) (y float64) {
	rng := rand.New(rand.NewPCG(c.Seed, uint64(i)))
	for j := range x {
		x[j] = rng.NormFloat64()
		y += x[j] * float64(j%3)
	}
	return y + 0.1*rng.NormFloat64()
}

// Tables is what a worker uses of its *node.Client.
type Tables interface {
	Get(ctx context.Context, t, row int) ([]float64, error)
	Inc(t, row int, delta []float64) error
	Clock(ctx context.Context) error
	Clocks() int
	Checkpoint(ctx context.Context, state func() ([]byte, error)) error
}

// Work is worker w's program: its rows are those i with i mod Workers = w.
func (c Config) Work(ctx context.Context, w int, cl Tables) error {
	var xs [][]float64
	var ys []float64
	for i := w; i < c.Rows; i += c.Workers {
		x := make([]float64, c.Cols)
		ys = append(ys, c.Example(i, x))
		xs = append(xs, x)
	}
	g := make([]float64, c.Cols)
	// A job resumed from a checkpoint starts at its clock; the worker has
	// no state of its own beyond its rows, which it makes again.
	for k := cl.Clocks(); k < c.Clocks(); k++ {
		if err := cl.Checkpoint(ctx, func() ([]byte, error) { return nil, nil }); err != nil {
			return err
		}
		pass, chunk := k/c.ClocksPerPass, k%c.ClocksPerPass
		if chunk == 0 {
			beta, err := cl.Get(ctx, Beta, 0)
			if err != nil {
				return err
			}
			sse := 0.0
			for i, x := range xs {
				r := floats.Dot(x, beta) - ys[i]
				sse += r * r
			}
			if err := cl.Inc(Loss, pass, []float64{sse, float64(len(xs))}); err != nil {
				return err
			}
		}
		eta := c.Step / (1 + float64(pass))
		end := (chunk + 1) * len(xs) / c.ClocksPerPass
		for lo := chunk * len(xs) / c.ClocksPerPass; lo < end; lo += c.Batch {
			hi := min(lo+c.Batch, end)
			beta, err := cl.Get(ctx, Beta, 0)
			if err != nil {
				return err
			}
			clear(g)
			for i := lo; i < hi; i++ {
				r := floats.Dot(xs[i], beta) - ys[i]
				for j, v := range xs[i] {
					g[j] -= eta / float64(hi-lo) * r * v
				}
			}
			if err := cl.Inc(Beta, 0, g); err != nil {
				return err
			}
		}
		if err := cl.Clock(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Result is a fit: β, and the mean squared error at the start of every
// pass.
type Result struct {
	Beta []float64
	MSE  []float64
}

// Collect reads the result of a job whose workers have ended every pass.
func (c Config) Collect(ctx context.Context, conn *wire.Conn, opts node.Options) (*Result, error) {
	cfg := c.PS()
	beta, err := node.Read(ctx, conn, cfg, Beta, c.Clocks(), opts)
	if err != nil {
		return nil, err
	}
	loss, err := node.Read(ctx, conn, cfg, Loss, c.Clocks(), opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Beta: beta}
	for p := range c.Passes {
		mse := loss[2*p] / loss[2*p+1]
		if math.IsNaN(mse) || math.IsInf(mse, 0) {
			return nil, fmt.Errorf("lsq: pass %d: mean squared error %v", p, mse)
		}
		res.MSE = append(res.MSE, mse)
	}
	return res, nil
}

// Fit runs a whole job, each node on its own connection from dial.
func Fit(ctx context.Context, dial func(name string) (*wire.Conn, error), c Config, opts node.Options) (*Result, error) {
	var res *Result
	work := func(ctx context.Context, w int, cl *node.Client) error { return c.Work(ctx, w, cl) }
	err := node.Run(ctx, dial, c.PS(), opts, work, func(ctx context.Context, conn *wire.Conn) (err error) {
		res, err = c.Collect(ctx, conn, opts)
		return err
	})
	return res, err
}
