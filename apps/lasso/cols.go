package lasso

import (
	"context"

	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// The column layout (DESIGN §5): worker k of P owns the columns
// columnar.OwnedRange(p, k, P) with all their rows, and a replica of
// q = y − Xβ over all n rows. A round gives each worker a block of its own
// columns (columnar.BlockScheduler); the worker runs sequential coordinate
// descent over the block on a scratch copy of q — exact Gauss–Seidel, so a
// round carries thousands of updates — and returns its change of Xβ. The
// coordinator merges the workers' changes by an exact line search along the
// merged direction (the objective is piecewise quadratic in the step), so
// that correlated blocks on different workers can slow a round but never
// raise the objective.

// ColPlan is the plan of a round in the column layout.
type ColPlan = columnar.BlockPlan

// ColPartial is a worker's share of a round in the column layout: Dir is
// the change of Xβ over all rows caused by its updates (nil if none), and
// Value[k] the new value of β_j for j = Vars[k], for the coordinates it
// changed. Work counts the non-zeros it visited.
type ColPartial struct {
	Dir   wire.Float64s `msgpack:"d"`
	Vars  wire.Int32s   `msgpack:"v"`
	Value wire.Float64s `msgpack:"x"`
	Work  int64         `msgpack:"w"`
}

// ColUpdate is the coordinator's merge of a round: with step Alpha along
// the merged direction, every node sets q ← q − Alpha·Dir and
// β_j ← β_j + Alpha·(Value[k] − β_j) for j = Vars[k] (β_j ← Value[k] when
// Alpha is 1). Lambda is the penalty the workers use from then on (0:
// unchanged): the first update of a job sets it, and on a regularization
// path the first update after a λ is solved carries the next.
type ColUpdate struct {
	Alpha  float64       `msgpack:"a"`
	Dir    wire.Float64s `msgpack:"d"`
	Vars   wire.Int32s   `msgpack:"v"`
	Value  wire.Float64s `msgpack:"x"`
	Lambda float64       `msgpack:"l"`
}

// ColSummary describes a worker's shard in the column layout when it joins
// (Rows … LambdaMax), and its state when it reports (SqResid … NNZ). Every
// worker holds the same rows and the same residual, so the residual's sums
// must agree between workers, bit for bit; the coordinator checks that they
// do.
type ColSummary struct {
	Rows     int                `msgpack:"n"`
	Features int                `msgpack:"m"` // all columns of the data
	First    int                `msgpack:"f"` // the worker's columns [First, First+Cols)
	Cols     int                `msgpack:"k"`
	Data     libsvm.Fingerprint `msgpack:"fp"`
	// Y is the labels, from shard 0 only: the coordinator keeps its own q.
	Y wire.Float64s `msgpack:"y"`
	// ColSum is Σ_i x_ij for the worker's columns, for the intercept.
	ColSum wire.Float64s `msgpack:"cs"`
	// LambdaMax is max |x̃_jᵀỹ|/n over the worker's columns.
	LambdaMax float64 `msgpack:"lm"`

	SqResid float64 `msgpack:"rr"` // Σ r_i², r = ỹ − X̃β
	YtR     float64 `msgpack:"yr"` // Σ (y_i − ȳ)·r_i
	MaxXtR  float64 `msgpack:"xr"` // max |x̃_jᵀr| over the worker's columns
	L1      float64 `msgpack:"l1"` // ‖β‖₁ over the worker's columns
	NNZ     int     `msgpack:"nz"` // non-zeros of β over the worker's columns
}

// ColumnProgram returns the Lasso program for cfg in the column layout,
// with workers workers.
func ColumnProgram(cfg Config, workers int) schmp.Program[ColPlan, ColPartial, ColUpdate, ColSummary] {
	return schmp.Program[ColPlan, ColPartial, ColUpdate, ColSummary]{
		Name: "lasso",
		NewScheduler: func(ctx context.Context, part, parts int) (schmp.Scheduler[ColPlan], error) {
			return columnar.NewBlockScheduler(cfg.Data, columnar.BlockConfig{Engine: cfg.Schedule, Work: cfg.RoundWork}, workers, part, parts)
		},
		NewWorker: func(ctx context.Context, shard, shards int) (schmp.Worker[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			return NewColWorker(cfg, shard, shards)
		},
		NewCoordinator: func(ctx context.Context) (schmp.Coordinator[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			return NewColCoordinator(cfg), nil
		},
	}
}
