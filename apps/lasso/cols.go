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
// columns (columnar.BlockScheduler).
//
// With one worker, the worker runs sequential coordinate descent over the
// block and its non-zero coordinates on a scratch copy of q — exact
// Gauss–Seidel, so a round carries thousands of updates — and returns its
// change of Xβ, which the coordinator applies whole.
//
// With several, what is parallel is split from what is sequential, as in
// glmnet's structure. The sequential part is coordinate descent over the
// active set, which is small on p ≫ n data (some 1,000 of 50,000 columns)
// and where all the coupling between columns is: worker columnar.Leader
// runs it as one worker does, over its own block and non-zeros and every
// column handed to it. The parallel part is the pass over all columns that
// finds the violators of the optimality conditions (β_j = 0 and
// |x̃_jᵀr|/n > λ): each other worker scans its own columns every round and
// hands the worst violators, with their data, to the leader
// (ColPartial.Cols → the coordinator → ColUpdate.Cols, which only the
// leader receives: ColUpdate is a schmp.Splitter). A column travels once;
// the leader keeps it for the rest of the job, and it is in every round's
// working set of the leader from then on, whether its β_j is zero or not
// (the owner no longer scans it), as glmnet keeps its ever-active set.
//
// So only the leader changes β: a round's change is one sequential
// coordinate descent from the state every node holds, which never raises
// the objective, as with one worker; the coordinator still checks it
// along the line (an exact line search if the whole step would raise the
// objective, which only rounding can cause). Every update carries the new
// values of the β_j it changes, so the owner of a handed column knows its
// β_j exactly and its reports — max|x̃_jᵀr|, ‖β‖₁, nnz over its own
// columns — stay exact: the duality gap certifies the whole model. A
// violator found in round t is solved from round t+1, so a job takes a few
// more rounds than one worker's, while the scans run P-way parallel.

// ColPlan is the plan of a round in the column layout.
type ColPlan = columnar.BlockPlan

// ColPartial is a worker's share of a round in the column layout: Dir is
// the change of Xβ over all rows caused by its updates (nil if none), and
// Value[k] the new value of β_j for j = Vars[k], for the coordinates it
// changed. Work counts the non-zeros it visited. With several workers,
// only the leader's partial changes β, and the others' hand it columns
// (Cols; the leader's is empty).
type ColPartial struct {
	Dir   wire.Float64s    `msgpack:"d"`
	Vars  wire.Int32s      `msgpack:"v"`
	Value wire.Float64s    `msgpack:"x"`
	Work  int64            `msgpack:"w"`
	Cols  columnar.Columns `msgpack:"c"`
}

// ColUpdate is the coordinator's merge of a round: with step Alpha along
// the merged direction, every node sets q ← q − Alpha·Dir and
// β_j ← β_j + Alpha·(Value[k] − β_j) for j = Vars[k] (β_j ← Value[k] when
// Alpha is 1). Lambda is the penalty the workers use from then on (0:
// unchanged): the first update of a job sets it, and on a regularization
// path the first update after a λ is solved carries the next. Cols are
// the columns handed to the leader in the round, which only the leader
// receives (ForShard).
type ColUpdate struct {
	Alpha  float64          `msgpack:"a"`
	Dir    wire.Float64s    `msgpack:"d"`
	Vars   wire.Int32s      `msgpack:"v"`
	Value  wire.Float64s    `msgpack:"x"`
	Lambda float64          `msgpack:"l"`
	Cols   columnar.Columns `msgpack:"c"`
}

// ForShard implements schmp.Splitter: the handed columns go to the leader
// alone.
func (u ColUpdate) ForShard(shard int) ColUpdate {
	if shard != columnar.Leader {
		u.Cols = columnar.Columns{}
	}
	return u
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
			// With several workers, the workers choose their columns
			// themselves: the plans are empty.
			return columnar.NewBlockScheduler(cfg.Data, columnar.BlockConfig{Engine: cfg.Schedule, Work: cfg.RoundWork, NoBlocks: workers > 1}, workers, part, parts)
		},
		NewWorker: func(ctx context.Context, shard, shards int) (schmp.Worker[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			return NewColWorker(cfg, shard, shards)
		},
		NewCoordinator: func(ctx context.Context) (schmp.Coordinator[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			return NewColCoordinator(cfg), nil
		},
	}
}
