package nnls

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// Coordinator is the coordinator side: it holds β.
type Coordinator struct {
	n    float64   // number of rows
	beta []float64 // β
	a    []float64 // a_j = ‖x_j‖²/n
}

// NewCoordinator returns the coordinator side for cfg, with β = 0.
func NewCoordinator(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Coordinator{beta: make([]float64, cfg.Cols), a: make([]float64, cfg.Cols)}, nil
}

// Start implements schmp.Coordinator: it sums the workers' column norms
// into a_j. Workers start from β = 0, so the first update is empty.
func (c *Coordinator) Start(shards []Summary) (Update, error) {
	for w, s := range shards {
		if len(s.ColSq) != len(c.a) {
			return Update{}, fmt.Errorf("nnls: worker shard %d has %d columns, want %d", w, len(s.ColSq), len(c.a))
		}
		// The summaries come over the network.
		if s.Rows < 0 || !nonNegative(s.ColSq) {
			return Update{}, fmt.Errorf("nnls: worker shard %d describes %d rows, or column norms that are not finite and ≥ 0", w, s.Rows)
		}
		c.n += float64(s.Rows)
		for j, v := range s.ColSq {
			c.a[j] += v
		}
	}
	if c.n == 0 {
		return Update{}, fmt.Errorf("nnls: no rows")
	}
	for j := range c.a {
		c.a[j] /= c.n
	}
	return Update{}, nil
}

// Pull implements schmp.Coordinator: β_j ← max(0, β_j + g_j/a_j) with
// g_j = x_jᵀr/n summed from the partials, for every j of the plan. Both the
// update and the feedback carry the changes Δβ_j.
func (c *Coordinator) Pull(_ uint64, p Plan, partials []Partial) (Update, schmp.Feedback, error) {
	for w, part := range partials {
		if len(part.Dot) != len(p.Vars) {
			return Update{}, schmp.Feedback{}, fmt.Errorf("nnls: worker shard %d sent %d sums for %d variables", w, len(part.Dot), len(p.Vars))
		}
		for _, v := range part.Dot {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return Update{}, schmp.Feedback{}, fmt.Errorf("nnls: worker shard %d sent a sum of %v", w, v)
			}
		}
	}
	u := Update{Vars: p.Vars, Delta: make(codec.Float64s, len(p.Vars))}
	for k, j := range p.Vars {
		if j < 0 || int(j) >= len(c.beta) {
			return Update{}, schmp.Feedback{}, fmt.Errorf("nnls: plan of variable %d out of %d", j, len(c.beta))
		}
		var g float64
		for _, part := range partials {
			g += part.Dot[k]
		}
		if c.a[j] == 0 {
			continue // an all-zero column: β_j stays 0
		}
		old := c.beta[j]
		c.beta[j] = max(0, old+g/c.n/c.a[j])
		u.Delta[k] = c.beta[j] - old
	}
	return u, schmp.Feedback{Vars: u.Vars, Delta: u.Delta}, nil
}

// Objective implements schmp.Coordinator: (1/2n)Σr² and the number of
// positive β_j. It certifies no gap, so the runtime's --tol stops on the
// relative change of the objective between reports.
func (c *Coordinator) Objective(reports []Summary) (schmp.Progress, error) {
	var rr float64
	for _, r := range reports {
		rr += r.SqResid
	}
	nnz := 0
	for _, b := range c.beta {
		if b > 0 {
			nnz++
		}
	}
	return schmp.Progress{Objective: rr / (2 * c.n), NNZ: nnz}, nil
}

// WriteModel implements schmp.Coordinator: a CSV "index,value" of the
// positive β_j, with 1-based indices.
func (c *Coordinator) WriteModel(w io.Writer) error {
	buf := []byte("index,value\n")
	for j, b := range c.beta {
		if b > 0 {
			buf = strconv.AppendInt(buf, int64(j+1), 10)
			buf = append(buf, ',')
			buf = strconv.AppendFloat(buf, b, 'g', -1, 64)
			buf = append(buf, '\n')
		}
	}
	_, err := w.Write(buf)
	return err
}

// nonNegative reports whether every element of xs is finite and ≥ 0.
func nonNegative(xs []float64) bool {
	for _, x := range xs {
		if !(x >= 0) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
