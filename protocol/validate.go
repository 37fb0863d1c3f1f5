package protocol

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/wire"
)

// Why a node drops a message it received, never applying it (DESIGN "Hostile traffic"):
// the reason label of the monitor's strads_dropped_messages_total.
const (
	// DropGarbage: the message does not decode, or it is of another type
	// than its subject's.
	DropGarbage = "garbage"
	// DropForeign: the message carries another run id than the job's: a
	// replay from another run of the job's name, or a process that never
	// joined.
	DropForeign = "foreign"
	// DropDuplicate: the message has the same bytes as one taken before
	// (the same round from the same sender): a replay.
	DropDuplicate = "duplicate"
	// DropUnexpected: a message of the run that nobody awaits: a plan not
	// asked for, a partial of a round not in flight, a task far ahead, a
	// ready of a node already ready, a join once the job runs.
	DropUnexpected = "unexpected"
	// DropIncomplete: a message split into chunks that could not be put
	// together again (wire.ErrIncomplete).
	DropIncomplete = "incomplete"
	// DropUnauthenticated: a message without a MAC, received by a node
	// with the job's key (wire.ErrUnauthenticated): from a node without
	// the key.
	DropUnauthenticated = "unauthenticated"
	// DropForged: a message whose MAC does not verify under the job's key
	// (wire.ErrForged): forged, altered, or from a node with another key.
	DropForged = "forged"
)

// Drop is a message that a role's core dropped, and why: Reason is one of
// the Drop constants.
type Drop struct {
	Reason string
	Err    error
}

// The errors of Open, and of the messages' Validate methods.
var (
	// ErrGarbage: a message that does not decode, or of another type than
	// the subject's; it is dropped (DropGarbage).
	ErrGarbage = errors.New("not a message of its subject")
	// ErrForeign: a message of another run; it is dropped (DropForeign).
	ErrForeign = errors.New("a message of another run")
	// ErrInvalid: a message of the run that the runtime cannot use (a
	// shard out of range, a variable listed twice, feedback that is not
	// finite): it fails the job, with an error that names its sender and
	// its subject.
	ErrInvalid = errors.New("invalid message")
	// ErrConflict: two different messages where the job sends one (two
	// partials of one round from one worker, two plans of one round, two
	// tasks of one round): somebody forges the job's messages, and the
	// job fails rather than go on with one of them (DESIGN "Hostile traffic").
	ErrConflict = errors.New("two different messages where the job sends one")
)

// message is any message with a Header.
type message interface{ header() *Header }

// texter is a message with free text meant for people to read (an abort's
// reason, a node's error, a host name): Open makes it Printable.
type texter interface{ clean() }

// Open decodes data, a message received on a job's subject, into m, and
// checks its header: it must be a message of type typ, of the run run.
// Errors match ErrGarbage (it does not decode, or is of another type) or
// ErrForeign (another run): the message is to be dropped, and Reason names
// why. The free text of the message it opens is made Printable here, where
// it enters, so that no later print of it can forget to.
func Open(data []byte, m message, typ, run string) error {
	if err := codec.Unmarshal(data, m); err != nil {
		return fmt.Errorf("%w: %w", ErrGarbage, err)
	}
	switch h := m.header(); {
	case h.Type != typ:
		return fmt.Errorf("%w: a message of type %.32q, not %q", ErrGarbage, h.Type, typ)
	case h.Run != run:
		return fmt.Errorf("%w: run %.32q", ErrForeign, h.Run)
	}
	if t, ok := m.(texter); ok {
		t.clean()
	}
	return nil
}

// Reason returns the drop reason of err, an error of Open (DropGarbage or
// DropForeign), or of a wire receiver (DropIncomplete, DropUnauthenticated,
// DropForged), or "" for any
// other error.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrGarbage):
		return DropGarbage
	case errors.Is(err, ErrForeign):
		return DropForeign
	case errors.Is(err, wire.ErrIncomplete):
		return DropIncomplete
	case errors.Is(err, wire.ErrUnauthenticated):
		return DropUnauthenticated
	case errors.Is(err, wire.ErrForged):
		return DropForged
	}
	return ""
}

// invalid returns an error matching ErrInvalid with the text of
// fmt.Sprintf(format, args...).
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// PlanPart returns the scheduler part, of parts, that plans round: round t
// comes from part (t−1) mod parts, in strict turn (DESIGN "Pipelining"). It is the
// rule of the coordinator's pipeline (pipeline.Part).
func PlanPart(round uint64, parts int) int {
	return int((round - 1) % uint64(max(parts, 1)))
}

// maxID bounds the length of a node's ID.
const maxID = 256

// Validate checks a join request: an ID of 1 to 256 bytes, and a known
// Role.
func (r *JoinRequest) Validate() error {
	switch {
	case r.ID == "" || len(r.ID) > maxID:
		return invalid("a join request with an ID of %d bytes (want 1 to %d)", len(r.ID), maxID)
	case r.Role != "" && r.Role != RoleWorker && r.Role != RoleScheduler:
		return invalid("a join request for role %.32q", r.Role)
	}
	return nil
}

// Validate checks a ready of a job of places places of its role: a known
// role, a place in range, an ID.
func (r *Ready[S]) Validate(places int) error {
	switch {
	case r.Role != "" && r.Role != RoleWorker && r.Role != RoleScheduler:
		return invalid("a ready of role %.32q", r.Role)
	case r.Shard < 0 || r.Shard >= places:
		return invalid("a ready of %s %d in a job of %d", cmp.Or(r.Role, RoleWorker), r.Shard, places)
	case r.ID == "" || len(r.ID) > maxID:
		return invalid("a ready with an ID of %d bytes", len(r.ID))
	}
	return nil
}

// Validate checks a plan request that scheduler part of parts received: a
// Stop is valid as it is; otherwise the round is one of the part's (PlanPart),
// and the feedback is of earlier rounds of the part, in increasing order,
// each naming as many variables as changes, none negative or twice, and
// every change finite (NaN would poison a scheduler's priorities).
func (r *PlanRequest) Validate(part, parts int) error {
	if r.Stop {
		return nil
	}
	if r.Rollback != nil {
		return r.Rollback.validate()
	}
	if r.Round == 0 || PlanPart(r.Round, parts) != part {
		return invalid("a plan request of round %d, which scheduler %d of %d does not plan", r.Round, part, parts)
	}
	if r.Checkpoint >= r.Round {
		return invalid("a plan request of round %d asks for the checkpoint of round %d", r.Round, r.Checkpoint)
	}
	var prev uint64
	for _, fb := range r.Feedback {
		switch {
		case fb.Round <= prev || fb.Round >= r.Round || PlanPart(fb.Round, parts) != part:
			return invalid("round %d: feedback of round %d (after round %d), which is not an earlier round of scheduler %d", r.Round, fb.Round, prev, part)
		case len(fb.Vars) != len(fb.Delta):
			return invalid("round %d: feedback of round %d names %d variables and %d changes", r.Round, fb.Round, len(fb.Vars), len(fb.Delta))
		}
		if err := checkVars(fb.Vars); err != nil {
			return invalid("round %d: feedback of round %d: %v", r.Round, fb.Round, err)
		}
		for k, d := range fb.Delta {
			if math.IsNaN(d) || math.IsInf(d, 0) {
				return invalid("round %d: feedback of round %d: variable %d moved by %v", r.Round, fb.Round, fb.Vars[k], d)
			}
		}
		prev = fb.Round
	}
	return nil
}

// Validate checks a plan of a job of parts scheduler parts: a part in
// range, a round, a time, and a PlanInfo whose variables are not negative
// and listed once, with counts not negative. Whether the plan was asked
// for is the pipeline's to say.
func (r *PlanReply[P]) Validate(parts int) error {
	switch {
	case r.Part < 0 || r.Part >= parts:
		return invalid("a plan from scheduler %d in a job of %d", r.Part, parts)
	case r.Round == 0:
		return invalid("a plan of round 0")
	case r.Nanos < 0 || r.Info.Candidates < 0 || r.Info.Selected < 0:
		return invalid("round %d: a plan with negative counts (%d ns, %d candidates, %d selected)", r.Round, r.Nanos, r.Info.Candidates, r.Info.Selected)
	}
	if err := checkVars(r.Info.Vars); err != nil {
		return invalid("round %d: the plan's variables: %v", r.Round, err)
	}
	return nil
}

// Validate checks a task: an abort is valid as it is; otherwise it has a
// round, is not both a check and a stop, and asks for a final report only
// with a stop that asks for a report.
func (t *Task[P, U]) Validate() error {
	switch {
	case t.Abort != "":
		return nil
	case t.Rollback != nil:
		return t.Rollback.validate()
	case t.Round == 0:
		return invalid("a task of round 0")
	case t.Check && t.Stop:
		return invalid("round %d: a task that is both a check and a stop", t.Round)
	case t.Final && !(t.Stop && t.Report):
		return invalid("round %d: a final task that is not a stop asking for a report", t.Round)
	case t.Checkpoint != 0 && (t.Checkpoint+1 != t.Round || t.Check || t.Stop):
		return invalid("round %d: a task asking for the checkpoint of round %d", t.Round, t.Checkpoint)
	}
	return nil
}

// validate checks a rollback: a run id (any round: 0 is the job's start).
func (r *Rollback) validate() error {
	if r.Run == "" {
		return invalid("a rollback to round %d under run %q", r.Round, r.Run)
	}
	return nil
}

// Validate checks an Assign: a stop is valid as it is; otherwise a place
// within its job, and a rollback.
func (a *Assign) Validate() error {
	switch {
	case a.Stop:
		return nil
	case a.Shards < 1 || a.Shard < 0 || a.Shard >= a.Shards:
		return invalid("an assignment to place %d of %d", a.Shard, a.Shards)
	case a.Rollback == nil:
		return invalid("an assignment to place %d without a checkpoint", a.Shard)
	}
	return a.Rollback.validate()
}

// Validate checks a Stored of a job of workers worker shards and parts
// scheduler parts: a role and place of the job, a round, a size not
// negative, and a digest unless it says why it has none.
func (s *Stored) Validate(workers, parts int) error {
	places := map[string]int{RoleWorker: workers, RoleScheduler: parts}[s.Role]
	switch {
	case s.Place < 0 || s.Place >= places:
		return invalid("a checkpoint piece of %s %d in a job of %d workers and %d schedulers", cmp.Or(Printable(s.Role), "no role"), s.Place, workers, parts)
	case s.Round == 0:
		return invalid("a checkpoint piece of round 0")
	case s.Bytes < 0:
		return invalid("round %d: a checkpoint piece of %d bytes", s.Round, s.Bytes)
	case s.Err == "" && len(s.Digest) != 64:
		return invalid("round %d: a checkpoint piece with a digest of %d characters", s.Round, len(s.Digest))
	}
	return nil
}

// Validate checks a partial of a job of shards workers: a shard in range,
// a round, a time.
func (p *Partial[R, S]) Validate(shards int) error {
	switch {
	case p.Shard < 0 || p.Shard >= shards:
		return invalid("a partial from worker shard %d in a job of %d", p.Shard, shards)
	case p.Round == 0:
		return invalid("a partial of round 0")
	case p.Nanos < 0:
		return invalid("round %d: a partial with a time of %d ns", p.Round, p.Nanos)
	case p.Check && p.Final:
		return invalid("round %d: a partial that answers both a check and a final task", p.Round)
	}
	return nil
}

// checkVars returns an error if vars holds a negative index or one twice.
func checkVars(vars []int32) error {
	for _, j := range vars {
		if j < 0 {
			return fmt.Errorf("variable %d", j)
		}
	}
	if len(vars) < 2 {
		return nil
	}
	s := slices.Clone(vars)
	slices.Sort(s)
	for k := 1; k < len(s); k++ {
		if s[k] == s[k-1] {
			return fmt.Errorf("variable %d listed twice", s[k])
		}
	}
	return nil
}

// Validate checks a pass that worker shard to of a job of shards workers
// received: a round, a sender in range other than itself, and itself as
// the addressee (a replay on the wrong subject is invalid too).
func (p *Pass[R]) Validate(to, shards int) error {
	switch {
	case p.Round == 0:
		return invalid("a pass of round 0")
	case p.From < 0 || p.From >= shards || p.From == to:
		return invalid("round %d: a pass from worker %d to worker %d in a job of %d", p.Round, p.From, to, shards)
	case p.To != to:
		return invalid("round %d: a pass from worker %d for worker %d, received by worker %d", p.Round, p.From, p.To, to)
	}
	return nil
}
