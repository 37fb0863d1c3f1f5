package node

import (
	"fmt"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
)

// Core holds a scheduler part's rules, with no network, clock or
// goroutine: the coordinator's plan requests come in, late, early, twice
// or forged; the app's scheduler plans the part's rounds in turn, each
// once; and the replies come out. The node (Run) is a loop that feeds it
// requests and sends what it returns; package local drives the same core
// with no network.
type Core[P any] struct {
	s           schmp.Scheduler[P]
	part, parts int
	checkpoints bool
	next        uint64           // the round to plan next
	ledger      *protocol.Ledger // the requests planned, by round
}

// CoreConfig places a scheduler part's core in its job.
type CoreConfig struct {
	// Part is the scheduler's part, of Parts.
	Part, Parts int
	// Resume is the round the part starts after: 0, or the checkpoint's
	// round of a resumed or rolled back job.
	Resume uint64
	// Checkpoints is set when the job takes checkpoints: a request that
	// asks for a piece in a job that takes none has it dropped.
	Checkpoints bool
}

// Output is what a plan request gives, in the order the node sends it:
// the checkpoint piece, then the reply.
type Output[P any] struct {
	// Piece, if set, is the part's piece of a checkpoint.
	Piece *checkpoint.Taken
	// Reply, if set, goes to the coordinator.
	Reply *Reply[P]
	// Stop is set when the coordinator stopped the job.
	Stop bool
	// Drops lists what was dropped besides: a checkpoint asked of a job
	// that takes none.
	Drops []protocol.Drop
}

// Reply is the plan of Round and its PlanInfo, or the failure Err.
type Reply[P any] struct {
	Round uint64
	Plan  P
	Info  schmp.PlanInfo
	Err   error
}

// NewCore returns the core of scheduler s, placed by cfg.
func NewCore[P any](s schmp.Scheduler[P], cfg CoreConfig) *Core[P] {
	return &Core[P]{
		s: s, part: cfg.Part, parts: cfg.Parts, checkpoints: cfg.Checkpoints,
		next: firstRound(cfg.Part, cfg.Parts, cfg.Resume), ledger: protocol.NewLedger(),
	}
}

// Hash returns the hash of a request's bytes, for Request.
func (c *Core[P]) Hash(data []byte) uint64 { return c.ledger.Hash(data) }

// Next returns the round the part plans next.
func (c *Core[P]) Next() uint64 { return c.next }

// Request takes in a plan request; h hashes its bytes (Hash), and
// coordinator says whether its answer is due where the coordinator awaits
// plans. It plans the part's next round, once; a request that no
// coordinator sends, or one planned already, is dropped (a drop for
// protocol.DropDuplicate asks the node to send its reply again). An error
// ends the part: a request that is invalid, an abort (protocol.ErrAborted),
// a rollback (*protocol.RollbackError), or two different requests of one
// round (protocol.ErrConflict, whose reply the output carries). A failed
// plan is in the reply, and ends the part too.
func (c *Core[P]) Request(req protocol.PlanRequest, h uint64, coordinator bool) (Output[P], *protocol.Drop, error) {
	var out Output[P]
	if req.Rollback != nil {
		if err := req.Validate(c.part, c.parts); err != nil {
			return out, &protocol.Drop{Reason: protocol.DropUnexpected, Err: err}, nil
		}
		return out, nil, &protocol.RollbackError{Rollback: *req.Rollback}
	}
	if req.Stop {
		if req.Abort != "" {
			return out, nil, protocol.Aborted(fmt.Errorf("scheduler %d: job aborted: %s", c.part, req.Abort))
		}
		out.Stop = true
		return out, nil, nil
	}
	taken, err := c.ledger.Check(req.Round, h)
	switch {
	case err != nil:
		// The coordinator learns of it from the reply, unless the forged
		// request came second.
		out.Reply = &Reply[P]{Round: req.Round, Err: err}
		return out, nil, err
	case taken:
		// The coordinator asks again after a reconnect, with the same
		// bytes: answer again, never plan twice.
		return out, &protocol.Drop{Reason: protocol.DropDuplicate, Err: fmt.Errorf("round %d: a request planned already", req.Round)}, nil
	case req.Round != c.next || !coordinator:
		// Not the coordinator's (a replay of another part's, say): it asks
		// for the part's rounds in turn, with its answers due where it
		// awaits them.
		return out, &protocol.Drop{Reason: protocol.DropUnexpected, Err: fmt.Errorf("round %d: the next round is %d", req.Round, c.next)}, nil
	}
	if err := req.Validate(c.part, c.parts); err != nil {
		return out, nil, err
	}
	c.ledger.Take(req.Round, h)
	c.next += uint64(c.parts)
	if req.Checkpoint != 0 {
		// The state after the part's rounds up to the checkpoint's.
		if c.checkpoints {
			snap, _ := c.s.(schmp.Snapshotter)
			out.Piece = checkpoint.Take(req.Checkpoint, snap)
		} else {
			out.Drops = append(out.Drops, protocol.Drop{Reason: protocol.DropUnexpected, Err: fmt.Errorf("round %d: a checkpoint asked of a job that takes none", req.Round)})
		}
	}
	r := &Reply[P]{Round: req.Round}
	// Through protocol.Guard: a panic fails the node as an error does.
	r.Err = protocol.Guard("Schedule", func() (err error) {
		r.Plan, r.Info, err = c.s.Schedule(req.Round, req.Feedback)
		return err
	})
	out.Reply = r
	return out, nil, r.Err
}

// firstRound returns the first round that part of parts plans after round
// after: part+1 when the job starts (after 0), the first of its rounds past
// the checkpoint that a resumed job goes on from.
func firstRound(part, parts int, after uint64) uint64 {
	r, n := uint64(part+1), uint64(max(parts, 1))
	if r <= after {
		r += (after - r + n) / n * n
	}
	return r
}
