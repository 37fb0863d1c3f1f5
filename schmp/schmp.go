package schmp

import (
	"context"
	"io"

	"github.com/strads-go/strads/wire"
)

// Feedback tells the scheduler how much variables moved: Delta[k] is the
// latest change of variable Vars[k].
type Feedback struct {
	Vars  wire.Int32s   `msgpack:"v"`
	Delta wire.Float64s `msgpack:"d"`
}

// Len returns the number of variables in f.
func (f Feedback) Len() int { return len(f.Vars) }

// PlanInfo describes how a plan was made, for the metrics.
type PlanInfo struct {
	// Candidates is how many variables the scheduler examined.
	Candidates int `msgpack:"c"`
	// Selected is how many of them the plan updates.
	Selected int `msgpack:"s"`
}

// Progress is the state of the optimization after a round, computed by the
// coordinator from the workers' reports.
type Progress struct {
	// Objective is the value the program minimizes (or, for a program that
	// maximizes, the value it maximizes).
	Objective float64
	// NNZ is the number of non-zero model variables, where that means
	// something; otherwise 0.
	NNZ int
	// Gap, when HasGap, is a certified bound on the distance of Objective
	// from the optimum (a duality gap, say). The runtime's --tol then means
	// Gap ≤ tol·|Objective|.
	Gap    float64
	HasGap bool
}

// Scheduler makes plans. It runs on the scheduler node.
type Scheduler[P any] interface {
	// Schedule returns the plan of the given round (1, 2, …). fb holds the
	// changes of the variables updated by the previous round.
	Schedule(round uint64, fb Feedback) (P, PlanInfo, error)
}

// Worker computes partial updates from its own data shard. It runs on a
// worker node; each worker holds its own.
type Worker[P, R, U, S any] interface {
	// Describe summarizes the shard when the worker joins; the
	// coordinator's Start receives every worker's summary.
	Describe() (S, error)
	// Apply applies an update from the coordinator to the worker's local
	// state. Updates arrive in round order, each exactly once.
	Apply(u U) error
	// Push computes this worker's partial update for the plan.
	Push(ctx context.Context, round uint64, plan P) (R, error)
	// Report summarizes the worker's state for the objective; the
	// coordinator's Objective receives every worker's report.
	Report() (S, error)
}

// Coordinator holds the model and combines partial updates. It runs on the
// coordinator node.
type Coordinator[P, R, U, S any] interface {
	// Start sets the job up from the workers' shard summaries (indexed by
	// worker) and returns the first update, which every worker applies
	// before the first round.
	Start(shards []S) (U, error)
	// Pull combines the partials of a round (indexed by worker) into new
	// variable values. It returns the update that workers apply and the
	// feedback for the scheduler.
	Pull(round uint64, plan P, partials []R) (U, Feedback, error)
	// Objective computes the progress of the model from the workers'
	// reports (indexed by worker).
	Objective(reports []S) (Progress, error)
	// WriteModel writes the model in the app's output format.
	WriteModel(w io.Writer) error
}

// Program bundles the constructors of an app's three roles. Each
// constructor is called on the node that runs the role, so it loads only
// what that role needs (a worker, only its own shard).
type Program[P, R, U, S any] struct {
	// Name names the app, e.g. "lasso".
	Name string
	// NewScheduler builds the scheduler side.
	NewScheduler func(ctx context.Context) (Scheduler[P], error)
	// NewWorker builds worker shard of shards (0 ≤ shard < shards).
	NewWorker func(ctx context.Context, shard, shards int) (Worker[P, R, U, S], error)
	// NewCoordinator builds the coordinator side.
	NewCoordinator func(ctx context.Context) (Coordinator[P, R, U, S], error)
}
