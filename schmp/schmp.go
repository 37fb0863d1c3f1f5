package schmp

import (
	"context"
	"io"

	"github.com/strads-go/strads/codec"
)

// Feedback tells the scheduler how much the variables of a round moved:
// Delta[k] is the change of variable Vars[k] in round Round.
type Feedback struct {
	Round uint64         `msgpack:"r"`
	Vars  codec.Int32s   `msgpack:"v"`
	Delta codec.Float64s `msgpack:"d"`
	// Updates, where the workers choose the variables they update (the
	// plan's PlanInfo.Selected does not count them), is how many variable
	// updates the round made; the runtime counts it in place of Selected
	// (the result's and the metrics' updates).
	Updates int64 `msgpack:"u,omitempty"`
}

// Len returns the number of variables in f.
func (f Feedback) Len() int { return len(f.Vars) }

// PlanInfo describes a plan to the runtime.
type PlanInfo struct {
	// Vars lists the variables (or, for an app that schedules blocks of
	// them, the blocks) that the plan updates. The coordinator refuses a
	// plan that names one still in a round in flight.
	Vars codec.Int32s `msgpack:"v"`
	// Candidates is how many variables the scheduler examined.
	Candidates int `msgpack:"c"`
	// Selected is how many of them the plan updates.
	Selected int `msgpack:"s"`
	// Rejected is how many candidates a dependency check turned down, and
	// Deferred how many variables the scheduler drew and put off because
	// they, or a variable they depend on, are in a round still in flight
	// (scheduler.Selection). Capacity is the most variables the plan could
	// have held (a scheduler's block), 0 where there is no such bound.
	// The runtime reports them per round (the metrics' selected,
	// rejected and deferred, the progress line's plan fill) and warns
	// when plans run mostly empty.
	Rejected int `msgpack:"r"`
	Deferred int `msgpack:"d"`
	Capacity int `msgpack:"k"`
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
	// Metrics are the app's own measures of the state (accuracy, RMSE,
	// …): the runtime adds them, in order, as columns of the metrics CSV
	// and to the progress line. Every report of a job must name the same
	// metrics in the same order; a NaN value is an empty cell.
	Metrics []Metric
	// Stop, when not "", asks the runtime to stop the job, for this
	// reason: a short text, on one line, that the result and the progress
	// show (say "validation RMSE not lower in 2 evaluations"). The stop is
	// taken as the runtime's own report-based stops are (DESIGN "Pipelining"): it is
	// decided at the pull of the round whose report this is, lands after
	// a round that is a function of that round and the job's settings, and
	// holds only if the report of the state it lands on asks to stop too
	// (an app whose stop is final says so in every report after it);
	// otherwise the job goes on. A report that asks to stop is still
	// checked for divergence first, and never stops a diverged job.
	Stop string
}

// Metric is an app-defined measure in a Progress.
type Metric struct {
	// Name is the metrics CSV column, e.g. "test_accuracy".
	Name  string
	Value float64
}

// Scheduler makes plans. It runs on a scheduler node.
//
// The runtime keeps up to depth rounds in flight (DESIGN "Pipelining"): the plan of
// round t is asked for once round t−depth has been pulled, so the feedback
// it comes with is at most depth−1 rounds old. A scheduler must not plan a
// variable that one of its rounds still in flight updates: each of its
// rounds is fed back exactly once, in round order, and only then are that
// round's variables free again (scheduler.Dynamic keeps this bookkeeping).
// With depth 1 every round is fed back before the next is planned.
type Scheduler[P any] interface {
	// Schedule returns the plan of round (1, 2, …). fb holds the feedback
	// of this scheduler's rounds pulled since its last plan, in round order.
	Schedule(round uint64, fb []Feedback) (P, PlanInfo, error)
}

// Worker computes partial updates from its own data shard. It runs on a
// worker node; each worker holds its own.
//
// Its contract. A worker's state is what its later calls depend on beyond
// what its constructor builds from the job's settings and its shard: what
// a Snapshotter saves. At each task the runtime takes the parts passed to
// the worker (Passer.Take), applies the task's updates (Apply), asks for a
// Report if the task does, then pushes (DESIGN "Pipelining"). For the
// model to depend on the job's settings and data alone, these calls keep
// three rules:
//
//   - Each is a function of the state and its arguments: the same call
//     from the same state gives the same result and leaves the same state,
//     bit for bit; no clock, no random source outside the state, no map
//     order. Measures of the worker's own work (times, counts that a cache
//     changes), which the model never reads, are the exception.
//   - Report changes nothing that a later call reads: a Report right after
//     another gives the same summary, and a snapshot taken after it is the
//     one taken before (a cache may fill, if the values it gives do not
//     change).
//   - Push computes the round's partial from the state, the round and the
//     plan. With rounds in flight (depth > 1) it changes nothing that
//     Report shows, which changes only through Apply and Take: every round
//     in flight then starts from the state of the updates applied, as the
//     scheduler's dependency checks assume, and a report of round t shows
//     the state after round t−depth. It may still hand on, once, what Apply
//     recorded for the next partial (logreg's loss changes of the updates)
//     and fill caches. At depth 1 it may also update what the worker owns,
//     which no other role holds or changes in that round: its own
//     variables (LDA's topic assignments, mf's user factors), a block it
//     holds and hands on (the rotation, DESIGN "Scheduling engines"), the
//     state of its own search (the column layouts' working sets and
//     tolerances, a random generator). The next round starts from it, and
//     Snapshot saves it.
//
// An app's tests check these rules with local.Options.CheckContract.
type Worker[P, R, U, S any] interface {
	// Describe summarizes the shard when the worker joins; the
	// coordinator's Start receives every worker's summary.
	Describe() (S, error)
	// Apply applies an update from the coordinator to the worker's local
	// state. Updates arrive in round order, each exactly once.
	Apply(u U) error
	// Push computes this worker's partial update for the plan, from its
	// state (see the contract above for what it may change). The partial
	// may share memory with the state: the runtime encodes it before the
	// worker's next call.
	Push(ctx context.Context, round uint64, plan P) (R, error)
	// Report summarizes the worker's state for the objective; the
	// coordinator's Objective receives every worker's report. With depth
	// rounds in flight, a report taken in round t describes the state after
	// the updates of rounds up to t−depth, while the coordinator's own
	// variables may be up to depth−1 rounds newer: a report that the
	// objective needs must describe that state by itself. The summary must
	// share no memory with the worker's state: the runtime may encode it
	// after the next Push has changed that state. Report changes nothing
	// that a later call reads (see the contract above).
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
	// feedback for the scheduler, which must name every variable (or
	// block) of the plan's PlanInfo.Vars, in any order, each once and no
	// other, with a Delta for each (empty for a plan without variables):
	// otherwise the runtime fails the job, naming the round and the
	// variable, since a variable left out would stay busy in a scheduler
	// that waits for its feedback (DESIGN "Pipelining"). The runtime sets its Round.
	// Rounds are pulled in order; with
	// depth rounds in flight, the workers computed round t's partials
	// having applied the updates of rounds up to t−depth only.
	Pull(round uint64, plan P, partials []R) (U, Feedback, error)
	// Objective computes the progress of the model from the workers'
	// reports (indexed by worker), which may be older than the
	// coordinator's variables (see Worker.Report).
	Objective(reports []S) (Progress, error)
	// WriteModel writes the model in the app's output format.
	WriteModel(w io.Writer) error
}

// Splitter is implemented by an update whose parts differ by worker, as in
// the static rotation engine (DESIGN "Scheduling engines"), where each worker receives the
// block of the model that it owns next. The runtime then sends worker shard
// k, instead of the whole update, u.ForShard(k), on a subject of its own.
type Splitter[U any] interface {
	ForShard(shard int) U
}

// Program bundles the constructors of an app's three roles. Each
// constructor is called on the node that runs the role, so it loads only
// what that role needs (a worker, only its own shard).
type Program[P, R, U, S any] struct {
	// Name names the app, e.g. "lasso".
	Name string
	// NewScheduler builds scheduler part of parts (0 ≤ part < parts). With
	// several parts, each owns a contiguous range of the variables and
	// plans only those; the coordinator asks them for plans in turn.
	NewScheduler func(ctx context.Context, part, parts int) (Scheduler[P], error)
	// NewWorker builds worker shard of shards (0 ≤ shard < shards).
	NewWorker func(ctx context.Context, shard, shards int) (Worker[P, R, U, S], error)
	// NewCoordinator builds the coordinator side.
	NewCoordinator func(ctx context.Context) (Coordinator[P, R, U, S], error)
}

// Passer is implemented by a worker that hands part of its result of a
// round straight to another worker, rather than through the coordinator:
// the rotation's block that a worker finished goes to the block's next
// owner (DESIGN "Roles, subjects and messages" and "Pipelining"). The runtime publishes the part on the addressee's
// own subject, and the addressee takes it before it applies the updates of
// its next task (a round, a check or a stop that asks for reports), so
// that a worker's computation still depends only on the flags, never on
// timing: a run gives the same model with or without passing.
//
// Both sides decide from the job's settings alone: Pass of round t on
// worker p names worker q if and only if Awaits(t) on worker q names p.
// A part that no worker awaits is dropped; a part awaited that does not
// come in the worker's task timeout fails the job, naming its sender.
type Passer[R any] interface {
	// Pass splits r, the partial that Push returned for round, into what
	// goes to the coordinator and a part for worker to; ok is false when
	// the round passes nothing (then coord is r).
	Pass(round uint64, r R) (coord, part R, to int, ok bool)
	// Awaits returns the worker whose part of round this worker takes
	// before its next task; ok is false when it awaits none.
	Awaits(round uint64) (from int, ok bool)
	// Take gives the worker the part that worker from passed in round.
	Take(round uint64, from int, part R) error
}

// Snapshotter is implemented by the app's side of a role (a Coordinator, a
// Scheduler or a Worker) whose state can be saved in a checkpoint and
// restored from it (DESIGN "Checkpoints"). A job takes checkpoints (--checkpoint-every)
// and resumes from them (--resume) only if every role's app is one.
//
// The runtime takes a role's snapshot at a round boundary, between two of
// its calls: the coordinator's after it pulled round C; a worker's after it
// finished round C (its Push, and a Passer's Take of what it awaits from
// round C), before it applies the updates of its next task; a scheduler
// part's after its last plan of a round up to C. With rounds in flight
// (depth D > 1) the workers then hold the updates of rounds up to C−D only,
// and the rounds after C that were already planned or pushed are planned
// and pushed again after a restore. Between Snapshot and the
// role's next call the state does not change, so Snapshot may return
// bytes that share nothing with it, or encode it at once.
type Snapshotter interface {
	// Snapshot returns the role's state, encoded: everything that its
	// later calls depend on and that its constructor (and, for the
	// coordinator, Start) does not rebuild from the job's settings and its
	// own data shard: the model, residuals, priorities, the state of a
	// random number generator, topic assignments. What the data and the
	// settings give again need not be saved.
	Snapshot() ([]byte, error)
	// Restore sets the role's state from b, a Snapshot of the same role
	// (the same worker shard, the same scheduler part) of a job with the
	// same settings and data. The runtime calls it on a role just built
	// by its constructor: on the coordinator after Start (whose update is
	// then not sent), on a worker after Describe (it applies no Start
	// update), on a scheduler before its first plan. A rollback to a
	// checkpoint (DESIGN "Spares and replacement") also calls it on a live worker or scheduler
	// part, which has gone on past the snapshot's round (its updates
	// applied, its pushes and plans made, parts passed to it not taken)
	// but is between two calls: Restore must then reset every piece of
	// state that those calls changed (caches, buffers carried from round
	// to round, counters, what it holds of others), so that the role is
	// as one just built and restored from b. A role that cannot is a
	// Rebuilder. In both cases the role's later calls must give, bit for
	// bit, what they would have given in the run the snapshot was taken
	// from.
	Restore(b []byte) error
}

// Rebuilder is implemented by a worker or scheduler whose Restore needs a
// role just built (Snapshotter): RebuildOnRollback returns true, and
// a rollback to a checkpoint then builds the role anew (a worker reloads
// its shard) before it restores it, instead of restoring the live role in
// place (DESIGN "Spares and replacement"). Every app of this module restores in place.
type Rebuilder interface {
	RebuildOnRollback() bool
}

// RebuildsOnRollback reports whether a rollback builds role, a worker or
// scheduler, anew before restoring it (Rebuilder) rather than restoring it
// in place.
func RebuildsOnRollback(role any) bool {
	r, ok := role.(Rebuilder)
	return ok && r.RebuildOnRollback()
}
