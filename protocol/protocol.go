// Package protocol defines the messages that the scheduler, coordinator and
// worker nodes of a job exchange, and the subjects they travel on (each under
// the job's prefix strads.<job>.).
//
//	worker, scheduler → coordinator  join       request: JoinRequest → JoinReply
//	worker, scheduler → coordinator  ready      request: Ready[S]    → Ack
//	coordinator → scheduler part p   plan.<p>   publish: PlanRequest, answered on planned
//	scheduler   → coordinator        planned    publish: PlanReply[P]
//	coordinator → workers            task       publish: Task[P, U]  (one message, all workers)
//	coordinator → worker shard k     task.<k>   publish: Task[P, U]  (updates that differ by worker)
//	worker      → coordinator        partial    publish: Partial[R, S]
//	worker      → worker shard k     pass.<k>   publish: Pass[R]     (schmp.Passer: a part for k)
//
// A worker reads only tasks (its own and the broadcast ones, which it puts
// in round order) and the parts passed to it, a scheduler only its plan requests; the coordinator
// reads joins, readies, plans and partials.
// The end of the job travels on the same subjects: a Task or PlanRequest
// with Stop set, and Abort set when the job failed.
//
// Up to depth rounds are in flight (DESIGN "Pipelining"): the task of round t carries
// the updates pulled since the previous task, which are those of round
// t−depth once the pipeline is full, and workers apply them in order before
// they push round t.
//
// Every message but the join reply opens with a Header: its Type, and the
// run id that the coordinator issued at its start and handed out in the
// join replies (a join request, sent before the node knows it, has none).
// A node opens a message with Open, which drops a message of another type
// or run; Validate methods check what the runtime can know of a message
// before it is used (DESIGN "Roles, subjects and messages" and "Failures and durability").
package protocol

import (
	"strconv"
	"time"

	"github.com/strads-go/strads/schmp"
)

// Subjects, relative to the job prefix.
const (
	SubjectJoin    = "join"
	SubjectReady   = "ready"
	SubjectPlanned = "planned"
	SubjectTask    = "task"
	SubjectPartial = "partial"
	// SubjectCoordinator is where a coordinator answers Presence probes,
	// so that a second coordinator of the job's name finds the first and
	// refuses to start (DESIGN "Roles, subjects and messages").
	SubjectCoordinator = "coordinator"
	// SubjectStored is where a worker or scheduler tells the coordinator
	// that it stored its piece of a checkpoint (Stored).
	SubjectStored = "stored"
)

// The message types (Header.Type).
const (
	TypeJoin        = "join"
	TypeReady       = "ready"
	TypePlanRequest = "plan-request"
	TypePlanReply   = "plan"
	TypeTask        = "task"
	TypePartial     = "partial"
	TypePresence    = "presence"
	TypePass        = "pass"
	TypeStored      = "stored"
	TypeAssign      = "assign"
)

// Header opens every message of a job but the join reply (DESIGN "Roles, subjects and messages").
type Header struct {
	// Type is the message's type (TypeTask, …): a message of another type
	// than its subject's is dropped, however well it decodes.
	Type string `msgpack:"type"`
	// Run is the run id of the job: a random id (a nuid) that the
	// coordinator picks at its start and gives every node in its join
	// reply. A message of another run is dropped. Join requests and
	// presence probes, sent before the node knows it, have none.
	Run string `msgpack:"run,omitempty"`
}

// header returns h, so that Open can check the header of any message.
func (h *Header) header() *Header { return h }

// SubjectTaskShard returns the subject of the tasks of worker shard k
// alone: a round whose updates implement schmp.Splitter goes to each
// worker on its own subject.
func SubjectTaskShard(k int) string { return "task." + strconv.Itoa(k) }

// SubjectPass returns the subject on which worker shard k receives the
// parts that other workers pass it (schmp.Passer).
func SubjectPass(k int) string { return "pass." + strconv.Itoa(k) }

// SubjectPlan returns the subject on which scheduler part reads its plan
// requests.
func SubjectPlan(part int) string { return "plan." + strconv.Itoa(part) }

// Roles a node joins as.
const (
	RoleWorker    = "worker"
	RoleScheduler = "scheduler"
)

// JoinRequest asks the coordinator for a place in the job.
type JoinRequest struct {
	Header
	// ID identifies the process; asking again with the same ID returns the
	// same place.
	ID string `msgpack:"id"`
	// Role is RoleWorker or RoleScheduler; empty means RoleWorker.
	Role string `msgpack:"role,omitempty"`
	// Manifest is what the role believes about the job.
	Manifest Manifest `msgpack:"manifest"`
	// Host and PID say where the role runs (os.Hostname, os.Getpid), so
	// that the coordinator's errors can name it (Node).
	Host string `msgpack:"host,omitempty"`
	PID  int    `msgpack:"pid,omitempty"`
	// Ticket, in a job with a key, is the coordinator's challenge
	// (JoinReply.Challenge), which the node's join must carry: a join
	// recorded in another run of the job, under the same key, carries
	// another and takes no place (DESIGN "Hostile traffic").
	Ticket string `msgpack:"ticket,omitempty"`
}

// JoinReply gives a node its place: worker shard Shard of Shards, or
// scheduler part Shard of Shards.
type JoinReply struct {
	Shard  int `msgpack:"shard"`
	Shards int `msgpack:"shards"`
	// Settings are the job's settings (the coordinator's
	// Manifest.Settings): a role applies those it was not given.
	Settings map[string]string `msgpack:"settings,omitempty"`
	// Run is the job's run id, which every later message carries.
	Run string `msgpack:"run,omitempty"`
	// Err says why the join was refused; "" when it was not.
	Err string `msgpack:"err,omitempty"`
	// Mismatch is set, with Err, when the role was refused because its
	// manifest differs from the job's (ErrManifest).
	Mismatch bool `msgpack:"mismatch,omitempty"`
	// Unread is set, with Err, when the coordinator could not read the
	// join it answers: a node of another protocol version's, or a
	// corrupted copy of a node's own join that someone sent with its
	// reply subject (DESIGN "Hostile traffic"); the node asks again, and
	// is refused only if the answer stays the same.
	Unread bool `msgpack:"unread,omitempty"`
	// Checkpoints is set when the job takes checkpoints: the role then
	// opens the job's checkpoint store (package checkpoint) to store its
	// pieces.
	Checkpoints bool `msgpack:"ckpts,omitempty"`
	// Resume, when not 0, is the round of the checkpoint that the job
	// resumes from: the role restores its state from its piece, whose
	// SHA-256 digest is Digest, before it reports ready, and its first
	// task (or plan request) is of round Resume+1.
	Resume uint64 `msgpack:"resume,omitempty"`
	Digest string `msgpack:"digest,omitempty"`
	// CheckpointEvery and ResumeLast, in a job of the parameter server
	// (package ps/node), are the job's checkpoint interval, in clocks,
	// which its tables' shape holds, and whether it resumes from its last
	// checkpoint: every role finds its own piece there.
	CheckpointEvery uint64 `msgpack:"ckpt_every,omitempty"`
	ResumeLast      bool   `msgpack:"resume_last,omitempty"`
	// Heartbeat is how often the role sends its heartbeat, and LostAfter
	// how long a silent coordinator is waited for (DESIGN "How a job fails"); 0: no
	// heartbeats.
	Heartbeat time.Duration `msgpack:"beat,omitempty"`
	LostAfter time.Duration `msgpack:"lost,omitempty"`
	// Spare is set when the role is admitted as a spare (DESIGN "Spares and replacement"): it
	// holds no place (Shard is meaningless), loads nothing, and waits on
	// SubjectSpare(its ID) for an Assign that gives it the place of a
	// lost node, or tells it the job is over.
	Spare bool `msgpack:"spare,omitempty"`
	// Challenge, from a coordinator with a job key, answers a join
	// without its ticket: the node asks again with Ticket set to it.
	Challenge string `msgpack:"challenge,omitempty"`
}

// SubjectSpare returns the subject on which the spare of ID id awaits its
// Assign.
func SubjectSpare(id string) string { return "spare." + id }

// Rollback tells a node that the job goes back to the checkpoint of Round
// (DESIGN "Spares and replacement"): the node restores its app in place (or, a
// schmp.Rebuilder, builds it anew) from its piece of that checkpoint (named
// in the checkpoint's manifest), reports ready again under the run id Run,
// and takes the rounds after Round again. Round 0 is the job's start: the
// node builds its app anew, as when it joined.
type Rollback struct {
	Round uint64 `msgpack:"round"`
	Run   string `msgpack:"run"`
}

// Assign gives a spare the place of a lost node: Shard of Shards, from
// the checkpoint that Rollback names; or, with Stop, ends its wait (Abort
// says why the job failed, "" when it succeeded).
type Assign struct {
	Header
	Shard    int       `msgpack:"shard"`
	Shards   int       `msgpack:"shards"`
	Rollback *Rollback `msgpack:"rollback,omitempty"`
	Stop     bool      `msgpack:"stop,omitempty"`
	Abort    string    `msgpack:"abort,omitempty"`
}

// Stored tells the coordinator that a worker or a scheduler part stored
// its piece of the checkpoint of Round, whose SHA-256 digest is Digest, or
// why it could not (Err). The coordinator commits the checkpoint once every
// piece is in (DESIGN "Checkpoints").
type Stored struct {
	Header
	Role   string `msgpack:"role"`
	Place  int    `msgpack:"place"`
	Round  uint64 `msgpack:"round"`
	Digest string `msgpack:"digest,omitempty"`
	Bytes  int64  `msgpack:"bytes"`
	Err    string `msgpack:"err,omitempty"`
}

// Ready tells the coordinator that a node has loaded its data: a worker its
// shard (described by Summary), a scheduler its part of the variables.
type Ready[S any] struct {
	Header
	ID      string `msgpack:"id"`
	Role    string `msgpack:"role,omitempty"`
	Shard   int    `msgpack:"shard"`
	Summary S      `msgpack:"summary,omitempty"`
	Err     string `msgpack:"err,omitempty"`
}

// Ack acknowledges a request; Err is set when it was refused.
type Ack struct {
	Err string `msgpack:"err,omitempty"`
}

// PlanRequest asks a scheduler for the plan of a round, with the feedback of
// its rounds pulled since it was last asked. With Stop set it ends the
// scheduler instead: cleanly, or with the error in Abort.
type PlanRequest struct {
	Header
	Round    uint64           `msgpack:"round"`
	Feedback []schmp.Feedback `msgpack:"fb"`
	Stop     bool             `msgpack:"stop,omitempty"`
	Abort    string           `msgpack:"abort,omitempty"`
	// Checkpoint, when not 0, asks the scheduler part to store its state
	// (schmp.Snapshotter) as its piece of the checkpoint of that round,
	// before it plans this round: it has planned all its rounds up to
	// Checkpoint and none after (DESIGN "Checkpoints").
	Checkpoint uint64 `msgpack:"ckpt,omitempty"`
	// Rollback, when set, takes the job back to a checkpoint: the rest of
	// the request means nothing.
	Rollback *Rollback `msgpack:"rollback,omitempty"`
}

// PlanReply carries the plan of a round.
type PlanReply[P any] struct {
	Header
	Round uint64         `msgpack:"round"`
	Part  int            `msgpack:"part"`
	Plan  P              `msgpack:"plan"`
	Info  schmp.PlanInfo `msgpack:"info"`
	// Nanos is the time the scheduler spent on the plan, feedback included.
	Nanos int64  `msgpack:"ns"`
	Err   string `msgpack:"err,omitempty"`
}

// Task is one round for the workers: first apply Updates in order, then,
// if Report, report the state, then Push the plan, and answer with a
// Partial. A Check task has no plan: workers apply the updates, report,
// answer, and wait for the next task, which has the same Round (DESIGN "Pipelining":
// the check of a stop). A Stop task ends the job: workers apply its
// updates, report and answer if Report, and leave; with Final too, the
// report is the worker's final report (schmp.FinalReporter), which the
// coordinator asks for once, after the stop (DESIGN "Pipelining"). A Task with Abort
// set ends the worker with that error.
type Task[P, U any] struct {
	Header
	Round   uint64 `msgpack:"round"`
	Updates []U    `msgpack:"updates"`
	Plan    P      `msgpack:"plan"`
	Report  bool   `msgpack:"report,omitempty"`
	Check   bool   `msgpack:"check,omitempty"`
	// Split is set on a task sent to one worker alone (on task.<k>), and
	// Shard is that worker's shard: a worker drops a split task for
	// another (a replay on the wrong subject).
	Split bool   `msgpack:"split,omitempty"`
	Shard int    `msgpack:"shard,omitempty"`
	Stop  bool   `msgpack:"stop,omitempty"`
	Final bool   `msgpack:"final,omitempty"`
	Abort string `msgpack:"abort,omitempty"`
	// Checkpoint, when not 0, asks the worker to store its state
	// (schmp.Snapshotter) as its piece of the checkpoint of that round,
	// the round before this task's: once it took the parts passed to it,
	// before it applies the task's updates (DESIGN "Checkpoints").
	Checkpoint uint64 `msgpack:"ckpt,omitempty"`
	// Rollback, when set, takes the job back to a checkpoint: the rest of
	// the task means nothing.
	Rollback *Rollback `msgpack:"rollback,omitempty"`
}

// Partial is a worker's answer to a Task.
type Partial[R, S any] struct {
	Header
	Round uint64 `msgpack:"round"`
	// Check is set in the answer to a check task, which has the Round of
	// the task that follows it (DESIGN "Pipelining").
	Check bool `msgpack:"check,omitempty"`
	// Final is set in the answer to a stop task with Final: its Report is
	// the worker's final report.
	Final     bool `msgpack:"final,omitempty"`
	Shard     int  `msgpack:"shard"`
	Partial   R    `msgpack:"partial"`
	Report    S    `msgpack:"report"`
	HasReport bool `msgpack:"has_report,omitempty"`
	// Nanos is the time the worker spent computing: applying the updates,
	// reporting and pushing.
	Nanos int64  `msgpack:"ns"`
	Err   string `msgpack:"err,omitempty"`
}

// Pass is a part of a worker's result of a round that it hands straight to
// another worker (schmp.Passer): the rotation's block that worker From
// finished in Round, for its next owner To.
type Pass[R any] struct {
	Header
	Round uint64 `msgpack:"round"`
	From  int    `msgpack:"from"`
	To    int    `msgpack:"to"`
	Part  R      `msgpack:"part"`
}
