// Package protocol defines the messages that the scheduler, coordinator and
// worker nodes of a job exchange, and the subjects they travel on (each under
// the job's prefix strads.<job>.).
//
//	worker      → coordinator  join     request: JoinRequest → JoinReply
//	worker      → coordinator  ready    request: Ready[S]    → Ack
//	coordinator → scheduler    plan     request: PlanRequest → PlanReply[P]
//	coordinator → workers      task     publish: Task[P, U]  (one message, all workers)
//	worker      → coordinator  partial  publish: Partial[R, S]
//
// Each node reads one subject: a worker only tasks, the scheduler only plan
// requests, the coordinator only joins, readies and partials. The end of the
// job travels on the same subjects: a Task or PlanRequest with Stop set, and
// Abort set when the job failed.
package protocol

import "github.com/strads-go/strads/schmp"

// Subjects, relative to the job prefix.
const (
	SubjectJoin    = "join"
	SubjectReady   = "ready"
	SubjectPlan    = "plan"
	SubjectTask    = "task"
	SubjectPartial = "partial"
)

// JoinRequest asks the coordinator for a place in the job.
type JoinRequest struct {
	// ID identifies the worker process; asking again with the same ID
	// returns the same place.
	ID string `msgpack:"id"`
}

// JoinReply gives a worker its shard.
type JoinReply struct {
	Shard  int    `msgpack:"shard"`
	Shards int    `msgpack:"shards"`
	Err    string `msgpack:"err,omitempty"`
}

// Ready tells the coordinator that a worker has loaded its shard.
type Ready[S any] struct {
	ID      string `msgpack:"id"`
	Shard   int    `msgpack:"shard"`
	Summary S      `msgpack:"summary"`
	Err     string `msgpack:"err,omitempty"`
}

// Ack acknowledges a request; Err is set when it was refused.
type Ack struct {
	Err string `msgpack:"err,omitempty"`
}

// PlanRequest asks the scheduler for the plan of a round. With Stop set it
// ends the scheduler instead: cleanly, or with the error in Abort.
type PlanRequest struct {
	Round    uint64         `msgpack:"round"`
	Feedback schmp.Feedback `msgpack:"fb"`
	Stop     bool           `msgpack:"stop,omitempty"`
	Abort    string         `msgpack:"abort,omitempty"`
}

// PlanReply carries a plan.
type PlanReply[P any] struct {
	Plan P              `msgpack:"plan"`
	Info schmp.PlanInfo `msgpack:"info"`
	Err  string         `msgpack:"err,omitempty"`
}

// Task is one round for the workers: first apply Update (the coordinator's
// previous update), then, if Report, send a report of the state, then Push
// the plan. A Stop task carries the last update and no plan: workers apply it,
// report, and leave. A Task with Abort set ends the worker with that error.
type Task[P, U any] struct {
	Round  uint64 `msgpack:"round"`
	Update U      `msgpack:"update"`
	Plan   P      `msgpack:"plan"`
	Report bool   `msgpack:"report,omitempty"`
	Stop   bool   `msgpack:"stop,omitempty"`
	Abort  string `msgpack:"abort,omitempty"`
}

// Partial is a worker's answer to a Task.
type Partial[R, S any] struct {
	Round     uint64 `msgpack:"round"`
	Shard     int    `msgpack:"shard"`
	Partial   R      `msgpack:"partial"`
	Report    S      `msgpack:"report"`
	HasReport bool   `msgpack:"has_report,omitempty"`
	Err       string `msgpack:"err,omitempty"`
}
