package protocol

import (
	"errors"
	"fmt"
)

// The kinds of failure that a role's error can be matched against with
// errors.Is, whatever its text (DESIGN "How a job fails"). Packages coordinator, worker and
// scheduler export the same values.
var (
	// ErrTimeout: a role waited in vain: the coordinator for a plan, for a
	// round's partials, or for the roles to join and load; a worker or a
	// scheduler for the coordinator.
	ErrTimeout = errors.New("no answer in time")
	// ErrAborted: the job was ended by another role: a worker or a
	// scheduler was told by the coordinator that the job failed (the
	// error carries the coordinator's cause as text).
	ErrAborted = errors.New("the job was aborted")
	// ErrManifest: a role's manifest differs from the job's, and the
	// coordinator refused it at join (the role's error, and the
	// coordinator's, which fails the job).
	ErrManifest = errors.New("the role's manifest differs from the job's")
	// ErrNameTaken: a coordinator found another coordinator running a job
	// of its name, and refused to start (DESIGN "Roles, subjects and messages").
	ErrNameTaken = errors.New("the job's name is taken")
)

// Timeout returns err marked as a timeout: its text is err's, and
// errors.Is(…, ErrTimeout) holds, as do errors.Is and errors.As for
// whatever err wraps.
func Timeout(err error) error { return marked{err, ErrTimeout} }

// Aborted returns err marked as an abort (ErrAborted), as Timeout does.
func Aborted(err error) error { return marked{err, ErrAborted} }

// Mismatch returns err marked as a manifest refusal (ErrManifest), as
// Timeout does.
func Mismatch(err error) error { return marked{err, ErrManifest} }

// marked is an error of some kind, with the text of the error it wraps.
type marked struct {
	err  error
	kind error
}

func (m marked) Error() string        { return m.err.Error() }
func (m marked) Unwrap() error        { return m.err }
func (m marked) Is(target error) bool { return target == m.kind }

// Node names a node of a job in messages: its role, its place there (the
// worker's shard, the scheduler's part; −1 before it has one) and the host
// and process it runs on, as its JoinRequest said.
type Node struct {
	Role  string
	Place int
	Host  string
	PID   int
}

// String returns e.g. "worker shard 1 (host h, pid 123)", "scheduler 0
// (host h, pid 7)", or "worker (host h, pid 9)" before the node has a
// place; the parenthesis is left out when host and pid are unknown.
func (n Node) String() string {
	s := n.Role
	if s == "" {
		s = RoleWorker
	}
	if n.Place >= 0 {
		if s == RoleWorker {
			s += " shard"
		}
		s = fmt.Sprintf("%s %d", s, n.Place)
	}
	switch {
	case n.Host != "" && n.PID != 0:
		s += fmt.Sprintf(" (host %s, pid %d)", n.Host, n.PID)
	case n.Host != "":
		s += fmt.Sprintf(" (host %s)", n.Host)
	case n.PID != 0:
		s += fmt.Sprintf(" (pid %d)", n.PID)
	}
	return s
}

// NodeError is the failure of one node of a job: a worker's failed load,
// Configure, Apply or Push, a scheduler's failed plan. The node returns
// it, and the coordinator, which receives the cause as text, fails the job
// with a NodeError of the same text, e.g.
//
//	worker shard 1 (host h, pid 123): round 7: <cause>
type NodeError struct {
	Node
	// Round is the round the node failed in; 0 when it failed outside a
	// round (at join or load).
	Round uint64
	// Err is the cause: the node's own error, or, as the coordinator
	// relays it, the cause's text.
	Err error
}

func (e *NodeError) Error() string {
	if e.Round > 0 {
		return fmt.Sprintf("%s: round %d: %v", e.Node, e.Round, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Node, e.Err)
}

// Unwrap returns the cause.
func (e *NodeError) Unwrap() error { return e.Err }

// RollbackError is the error with which a worker or scheduler node's
// serving of its place ends when the coordinator takes the job back to a
// checkpoint (a Task's or PlanRequest's Rollback): member.ServePlace then serves
// the place again, restored from that checkpoint.
type RollbackError struct{ Rollback }

func (r *RollbackError) Error() string {
	return fmt.Sprintf("rollback to the checkpoint of round %d", r.Round)
}
