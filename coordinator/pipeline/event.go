package pipeline

import (
	"time"

	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
)

// EventKind says what an Event is.
type EventKind int

// The events.
const (
	// PlanArrived: scheduler part From sent the plan of Round: Plan and
	// Info.
	PlanArrived EventKind = iota + 1
	// PartialArrived: worker shard From answered the task of Round with
	// Partial and, if HasReport, the report Report. The answer to the stop
	// task carries a report only.
	PartialArrived
	// Tick: the time is Time. A tick past Core.Deadline fails the job.
	Tick
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case PlanArrived:
		return "plan"
	case PartialArrived:
		return "partial"
	case Tick:
		return "tick"
	}
	return "event?"
}

// Event is what happens to the coordinator: a message arrived, or time
// passed. Time is when; the core has no other clock.
type Event[P, R, S any] struct {
	Kind EventKind
	Time time.Time
	// Round is the round of the plan or partial.
	Round uint64
	// From is the scheduler part of a plan, the worker shard of a partial.
	From int
	// Plan and Info are a plan's.
	Plan P
	Info schmp.PlanInfo
	// Partial, Report and HasReport are a worker's answer.
	Partial   R
	Report    S
	HasReport bool
	// Final marks a worker's answer to the final request (Config.Final):
	// Report is its final report.
	Final bool
}

// ActionKind says what an Action asks for.
type ActionKind int

// The actions.
const (
	// AskPlan: send scheduler part Part the plan request Request (the
	// round to plan, and the feedback of that part's rounds pulled since it
	// was last asked; with Request.Checkpoint, the part stores its piece of
	// that checkpoint before it plans).
	AskPlan ActionKind = iota + 1
	// SendTask: send Task to the workers: the plan of Task.Round; with
	// Task.Check, the check of a stop (apply the updates, report, push
	// nothing, wait for the next task, which has the same Round); with
	// Task.Stop, the end of the job, which needs no answer. Once they
	// apply Task.Updates, the workers hold the state after round Through
	// (0: after Start's update). An update that is a schmp.Splitter goes
	// to each worker as its own part (ForShard). A stop task with
	// Task.Final (Config.Final) asks every worker for its final report,
	// which comes back as a PartialArrived event with Final set. With
	// Task.Checkpoint, the workers store their pieces of that checkpoint
	// before they apply Task.Updates.
	SendTask
	// RecordReport: Sample is a report (a row of the metrics CSV), of the
	// state after Sample.Round; Final marks the report of a check task, of
	// exactly the state after the last round pulled: the state the job
	// ends with, unless the check refutes the stop (Resumed).
	RecordReport
	// RoundPulled: round Round, whose plan Info describes, was pulled.
	RoundPulled
	// StopDecided: the pull of round Round decided the stop Reason; the
	// job ends after round Last, if the check confirms a Target or Tol
	// stop. (After a refuted check with no round left, MaxRounds or
	// TimeLimit is decided at the last round pulled.)
	StopDecided
	// JobDone: the job is over, for Reason: the coordinator's model is
	// the state that the last report (the check's) showed; with
	// Config.Final, Core.Finals holds the workers' final reports of that
	// state.
	JobDone
	// Resumed: the check of the stop Reason, of the state after round
	// Round, did not pass its test: the stop is refuted, and the rounds
	// after Round follow.
	Resumed
	// CheckpointTaken: round Round, a checkpoint's (Config.Checkpoints),
	// was just pulled: Snapshot is the core's state at the cut and App
	// the app's (Checkpointer.Save), the coordinator's piece. Snapshot
	// shares data with the core: encode it before the core is stepped
	// again. The roles' pieces are asked for by the plan requests and the
	// task that carry Checkpoint = Round, some of which may come after.
	CheckpointTaken
	// CheckpointAbandoned: the checkpoint of round Round, decided, will
	// not be complete: a stop was decided before all its pieces were
	// asked for. Pieces that roles stored of it are of no use.
	CheckpointAbandoned
)

// String returns the kind's name.
func (k ActionKind) String() string {
	switch k {
	case AskPlan:
		return "ask"
	case SendTask:
		return "send"
	case RecordReport:
		return "record"
	case RoundPulled:
		return "pulled"
	case StopDecided:
		return "stop"
	case JobDone:
		return "done"
	case Resumed:
		return "resumed"
	case CheckpointTaken:
		return "checkpoint"
	case CheckpointAbandoned:
		return "abandoned"
	}
	return "action?"
}

// Action is what the core asks its host to do, in order.
type Action[P, U any] struct {
	Kind ActionKind
	// Round is the round the action is about: the round asked for, sent,
	// pulled, or whose pull decided the stop.
	Round uint64
	// Part and Request are AskPlan's.
	Part    int
	Request Ask
	// Task and Through are SendTask's.
	Task    Task[P, U]
	Through uint64
	// Sample and Final are RecordReport's.
	Sample schmp.Sample
	Final  bool
	// Info is RoundPulled's.
	Info schmp.PlanInfo
	// Reason is StopDecided's, JobDone's and Resumed's, Last
	// StopDecided's.
	Reason schmp.Reason
	Last   uint64
	// Snapshot and App are CheckpointTaken's.
	Snapshot *Snapshot[U]
	App      []byte
}

// Ask is a plan request: the round to plan, the feedback of the part's
// rounds pulled since it was last asked, and, when not 0, the checkpoint
// whose piece the part stores before it plans (DESIGN "Checkpoints").
type Ask struct {
	Round      uint64
	Feedback   []schmp.Feedback
	Checkpoint uint64
}

// Message returns the plan request of the run run, as a node sends it.
func (a Ask) Message(run string) protocol.PlanRequest {
	return protocol.PlanRequest{Header: protocol.Header{Type: protocol.TypePlanRequest, Run: run},
		Round: a.Round, Feedback: a.Feedback, Checkpoint: a.Checkpoint}
}

// Task is a task for the workers (see SendTask): the updates to apply,
// then, but for a check or a stop, the plan of Round to push; Report asks
// for a report, Final (with Stop) for the final one, Checkpoint for the
// pieces of that checkpoint, stored before the updates are applied.
type Task[P, U any] struct {
	Round                      uint64
	Updates                    []U
	Plan                       P
	Report, Check, Stop, Final bool
	Checkpoint                 uint64
}

// Message returns the task of the run run, as a node sends it to every
// worker (a split task, whose updates differ by worker, is made per
// worker from it).
func (t Task[P, U]) Message(run string) protocol.Task[P, U] {
	return protocol.Task[P, U]{Header: protocol.Header{Type: protocol.TypeTask, Run: run},
		Round: t.Round, Updates: t.Updates, Plan: t.Plan, Report: t.Report, Check: t.Check,
		Stop: t.Stop, Final: t.Final, Checkpoint: t.Checkpoint}
}

// ForShard returns the updates that worker shard k applies of us: each
// update that is a schmp.Splitter as its part for k, the others whole. It
// returns us itself when no update is a Splitter.
func ForShard[U any](us []U, k int) []U {
	if !Split(us) {
		return us
	}
	own := make([]U, len(us))
	for i, u := range us {
		own[i] = u
		if s, ok := any(u).(schmp.Splitter[U]); ok {
			own[i] = s.ForShard(k)
		}
	}
	return own
}

// Split reports whether one of us is a schmp.Splitter, so that each worker
// gets its own task.
func Split[U any](us []U) bool {
	for _, u := range us {
		if _, ok := any(u).(schmp.Splitter[U]); ok {
			return true
		}
	}
	return false
}
