package lasso

import (
	"context"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
)

// The column layout (DESIGN "The column layout"): worker k of P owns the columns
// columnar.OwnedRange(p, k, P) with all their rows, and a replica of
// q = y − Xβ over all n rows.
//
// Every worker works. Each round, each worker updates its working set
// (columnar.Screen: the violators of the optimality conditions, β_j = 0
// and |x̃_jᵀr|/n > λ, join it worst first, and coordinates settled at zero
// leave) and runs sequential coordinate descent over it on a scratch copy
// of q — exact Gauss–Seidel within the worker, thousands of updates a
// round — and returns its change of Xβ and its new coefficients. The
// coordinator takes each worker's change with the weight that, together
// with the others', minimizes the objective (stepWeights: exact, since the
// objective is piecewise quadratic in the weights): block Jacobi between
// the workers, made safe by the weights, so columns on different workers
// that explain the same part of the residual can slow a round but never
// make the objective rise. With one worker the weight keeps its
// Gauss–Seidel change (or stretches it). The scheduler's plans
// are empty: the workers choose their columns from their own scans.
//
// Every update carries the new values of the β_j it changes, so each
// worker's reports over its own columns — max|x̃_jᵀr|, ‖β‖₁, nnz — stay
// exact, and the duality gap certifies the whole model.

// ColPlan is the plan of a round in the column layout.
type ColPlan = columnar.BlockPlan

// ColPartial is a worker's share of a round in the column layout: Dir is
// the change of Xβ over all rows caused by its updates (nil if none), and
// Value[k] the new value of β_j for j = Vars[k], for the coordinates it
// changed, all its own. Work counts the non-zeros it visited.
type ColPartial struct {
	Dir   codec.Float64s `msgpack:"d"`
	Vars  codec.Int32s   `msgpack:"v"`
	Value codec.Float64s `msgpack:"x"`
	Work  int64          `msgpack:"w"`
	// Updates is how many coordinate steps the worker took on its own
	// columns.
	Updates int64 `msgpack:"u"`
	// Added is how many columns joined the worker's working set.
	Added int `msgpack:"n"`
	// Cols are the worker's columns that stay in the active set, shared
	// once (with several workers), with their data, for the other workers.
	Cols columnar.Columns `msgpack:"c"`
}

// ColUpdate is the coordinator's merge of a round: every node sets
// q ← q − Dir and β_j ← Value[k] for j = Vars[k] (a worker, for the
// columns it owns or holds). Lambda is the penalty
// the workers use from then on (0: unchanged): the first update of a job
// sets it, and on a regularization path the first update after a λ is
// solved carries the next.
type ColUpdate struct {
	Dir    codec.Float64s `msgpack:"d"`
	Vars   codec.Int32s   `msgpack:"v"`
	Value  codec.Float64s `msgpack:"x"`
	Lambda float64        `msgpack:"l"`
	// Cols are the columns the workers shared in the round: each worker
	// keeps the others' (ColPartial.Cols), and ColValue[k] is β_j of
	// column Cols.IDs[k] after the update (a column shared in a round that
	// did not change it is not in Vars).
	Cols     columnar.Columns `msgpack:"c"`
	ColValue codec.Float64s   `msgpack:"cv"`
	// Joint makes the next round joint: every worker's coordinate descent
	// sweeps the other workers' active columns too (reporting only its
	// own), so that they solve the same problem alike.
	Joint bool `msgpack:"j"`
}

// MaxStep is the largest weight the coordinator gives a worker's change:
// more than 1 where the workers' changes complement each other.
const MaxStep = 4

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
	Y codec.Float64s `msgpack:"y"`
	// ColSum is Σ_i x_ij for the worker's columns, for the intercept.
	ColSum codec.Float64s `msgpack:"cs"`
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
			// The workers choose their columns themselves: the plans are
			// empty.
			return columnar.NewBlockScheduler(workers, part, parts)
		},
		NewWorker: func(ctx context.Context, shard, shards int) (schmp.Worker[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			return NewColWorker(cfg, shard, shards)
		},
		NewCoordinator: func(ctx context.Context) (schmp.Coordinator[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			return NewColCoordinator(cfg), nil
		},
	}
}
