package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
)

// Core holds a worker's rules, with no network, clock or goroutine: the
// tasks of the coordinator and the parts that other workers pass come in,
// in any order, late, early or twice; the app's worker is called in the one
// order that makes the model a function of the job's settings alone; and
// what the worker sends comes out. The node (Run) is a loop that feeds it
// messages and sends what it returns; package local drives the same core
// with no network.
//
// For each task, in round order (a check before the task of its round),
// Step takes the parts the worker awaits of the rounds it pushed since
// its last task (schmp.Passer), stores its checkpoint piece if asked, applies
// the task's updates, reports if asked, pushes unless the task is a check
// or a stop, and splits off the part that the push passes to another
// worker.
type Core[P, R, U, S any] struct {
	w      schmp.Worker[P, R, U, S]
	passer schmp.Passer[R] // nil: the app passes nothing
	cfg    CoreConfig

	last  uint64                     // the round of the last task taken
	ran   [2]*protocol.Ledger        // the tasks taken: [0] rounds, [1] checks
	early map[taskKey]heldTask[P, U] // tasks that came before their turn
	due   *protocol.Task[P, U]       // the task to run next, once its parts are in
	// running is the task begun and not finished.
	running *protocol.Task[P, U]

	// Passing: the parts received and not taken, by round and sender; the
	// ledgers of the parts, by sender; the last round whose parts were
	// taken; the rounds pushed whose parts are not taken yet, and what the
	// first of them awaits once asked.
	parts   map[passKey]heldPass[R]
	ledgers map[int]*protocol.Ledger
	taken   uint64
	untaken []uint64
	awaits  *awaited
	// dropped are the parts dropped since the last output.
	dropped []protocol.Drop
}

// CoreConfig places a worker's core in its job.
type CoreConfig struct {
	// Shard is the worker's shard, of Shards.
	Shard, Shards int
	// Resume is the round the worker starts after: 0, or the checkpoint's
	// round of a resumed or rolled back job.
	Resume uint64
	// Checkpoints is set when the job takes checkpoints: a task that asks
	// for a piece in a job that takes none is dropped.
	Checkpoints bool
	// Cut, if set, is called with the task's round at the cut of every
	// task that begins: once the parts passed to the worker are taken,
	// before the task's updates are applied, where a checkpoint's piece
	// is taken. Package local checks the worker's contract from there
	// (local.Options.CheckContract).
	Cut func(round uint64)
}

// awaited is what a Passer awaits of a round: Awaits is asked once.
type awaited struct {
	from int
	ok   bool
}

// Output is what a task's run gives, in the order the node sends it: the
// checkpoint piece, the part passed, then the answer.
type Output[R, S any] struct {
	// Piece, if set, is the worker's piece of the checkpoint of round
	// Piece.Round.
	Piece *checkpoint.Taken
	// Pass, if set, is a part of the push for another worker.
	Pass *Handoff[R]
	// Answer, if set, goes to the coordinator: nil after a stop that asks
	// for no report.
	Answer *Answer[R, S]
	// Stop is set when the task was the job's last.
	Stop bool
	// Drops lists the messages dropped while running it: parts that no
	// task awaited, a checkpoint asked of a job that takes none.
	Drops []protocol.Drop
}

// Handoff is the part of worker From's push of Round that goes straight
// to worker To.
type Handoff[R any] struct {
	Round    uint64
	From, To int
	Part     R
}

// Answer is a worker's answer to the task of Round (its Check, its Final
// report), before it is a message: its partial, its report if asked, or
// the failure Err.
type Answer[R, S any] struct {
	Round        uint64
	Check, Final bool
	Partial      R
	Report       S
	HasReport    bool
	Err          error
}

// NewCore returns the core of worker w, placed by cfg.
func NewCore[P, R, U, S any](w schmp.Worker[P, R, U, S], cfg CoreConfig) *Core[P, R, U, S] {
	c := &Core[P, R, U, S]{
		w: w, cfg: cfg, last: cfg.Resume, taken: cfg.Resume,
		ran:   [2]*protocol.Ledger{protocol.NewLedger(), protocol.NewLedger()},
		early: map[taskKey]heldTask[P, U]{},
		parts: map[passKey]heldPass[R]{}, ledgers: map[int]*protocol.Ledger{},
	}
	c.passer, _ = w.(schmp.Passer[R])
	return c
}

// Worker returns the app's worker.
func (c *Core[P, R, U, S]) Worker() schmp.Worker[P, R, U, S] { return c.w }

// Hash returns the hash of a message's bytes, for Task and Pass.
func (c *Core[P, R, U, S]) Hash(data []byte) uint64 { return c.ran[0].Hash(data) }

// Last returns the round of the last task taken (the resumed round before
// any).
func (c *Core[P, R, U, S]) Last() uint64 { return c.last }

// Task takes in a task of the coordinator; h hashes its bytes (Ledger.Hash),
// so that the same task sent again is told from a forged one. A task that
// no coordinator sends, or one taken already, is dropped: drop says why,
// and a drop for protocol.DropDuplicate asks the node to send its answer
// again. An error ends the worker: a task that is invalid, an abort
// (protocol.ErrAborted), a rollback (*protocol.RollbackError), or two
// different tasks of one round (protocol.ErrConflict).
func (c *Core[P, R, U, S]) Task(t protocol.Task[P, U], h uint64) (*protocol.Drop, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if t.Abort != "" {
		return nil, protocol.Aborted(fmt.Errorf("worker shard %d: job aborted: %s", c.cfg.Shard, t.Abort))
	}
	if t.Rollback != nil {
		return nil, &protocol.RollbackError{Rollback: *t.Rollback}
	}
	if t.Split && t.Shard != c.cfg.Shard {
		return &protocol.Drop{Reason: protocol.DropUnexpected, Err: fmt.Errorf("round %d: a task of worker shard %d", t.Round, t.Shard)}, nil
	}
	key := taskKey{t.Round, t.Check}
	taken, err := c.ran[key.kind()].Check(t.Round, h)
	if e, ok := c.early[key]; ok && !taken {
		taken = true
		if e.hash != h {
			err = fmt.Errorf("round %d: %w", t.Round, protocol.ErrConflict)
		}
	}
	switch {
	case err != nil:
		return nil, err
	case taken:
		// The coordinator sends a task again after a reconnect, the same
		// bytes: answer it again, never run it twice.
		return &protocol.Drop{Reason: protocol.DropDuplicate, Err: fmt.Errorf("round %d: a task taken already", t.Round)}, nil
	case t.Round <= c.last || t.Round > c.last+maxEarly:
		// No coordinator sends it: a task of a round run (its check, say)
		// or far ahead.
		return &protocol.Drop{Reason: protocol.DropUnexpected, Err: fmt.Errorf("round %d: after round %d", t.Round, c.last)}, nil
	}
	// Broadcast and own tasks travel on two subjects: they are put back
	// in round order.
	c.early[key] = heldTask[P, U]{t, h}
	return nil, nil
}

// Pass takes in a part that another worker passed this one; h hashes its
// bytes. A part that no worker sends, or one taken already, is dropped. An
// error ends the worker: a part that is invalid, or two different parts of
// one round from one sender (protocol.ErrConflict).
func (c *Core[P, R, U, S]) Pass(p protocol.Pass[R], h uint64) (*protocol.Drop, error) {
	if err := p.Validate(c.cfg.Shard, c.cfg.Shards); err != nil {
		return nil, err
	}
	key := passKey{p.Round, p.From}
	ledger := c.ledger(p.From)
	taken, err := ledger.Check(p.Round, h)
	if e, ok := c.parts[key]; ok && !taken {
		taken = true
		if e.hash != h {
			err = fmt.Errorf("round %d: %w", p.Round, protocol.ErrConflict)
		}
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("a pass from worker shard %d: %w", p.From, err)
	case taken:
		return &protocol.Drop{Reason: protocol.DropDuplicate, Err: fmt.Errorf("round %d: a pass from worker %d taken already", p.Round, p.From)}, nil
	case c.passer == nil || p.Round <= c.taken || p.Round > c.last+maxEarly || c.awaits != nil && len(c.untaken) > 0 && p.Round == c.untaken[0] && (!c.awaits.ok || p.From != c.awaits.from):
		// Nobody sends it: a part of a round taken, far ahead, or from
		// another worker than the one awaited.
		return &protocol.Drop{Reason: protocol.DropUnexpected, Err: fmt.Errorf("round %d: a pass from worker %d, after round %d", p.Round, p.From, c.taken)}, nil
	}
	c.parts[key] = heldPass[R]{p.Part, h}
	return nil, nil
}

// ledger returns the ledger of the parts of sender from.
func (c *Core[P, R, U, S]) ledger(from int) *protocol.Ledger {
	l := c.ledgers[from]
	if l == nil {
		l = protocol.NewLedger()
		c.ledgers[from] = l
	}
	return l
}

// Awaiting returns the part that the next task waits for: its round and
// sender; ok is false when no task waits for a part.
func (c *Core[P, R, U, S]) Awaiting() (round uint64, from int, ok bool) {
	if c.due == nil || c.awaits == nil || len(c.untaken) == 0 || !c.awaits.ok {
		return 0, 0, false
	}
	return c.untaken[0], c.awaits.from, true
}

// Fail ends the task that waits for a part (Awaiting) with err, and
// returns its answer, which carries it.
func (c *Core[P, R, U, S]) Fail(err error) *Answer[R, S] {
	if c.due == nil {
		return nil
	}
	t := c.due
	c.due = nil
	return &Answer[R, S]{Round: t.Round, Check: t.Check, Final: t.Final, Err: err}
}

// Step runs the next task, if its turn has come and the parts it waits for
// are in: Begin, then Finish. ran is false when none can run. err is the
// app's failure (or a part that it awaits from no worker of the job): the
// answer, which carries it, is still to be sent, and the worker ends.
func (c *Core[P, R, U, S]) Step(ctx context.Context) (out Output[R, S], ran bool, err error) {
	out, ran, err = c.Begin()
	if !ran || err != nil {
		return out, ran, err
	}
	fin, err := c.Finish(ctx)
	fin.Piece, fin.Drops = out.Piece, out.Drops
	return fin, true, err
}

// Begin starts the next task, if its turn has come and the parts it waits
// for are in: it takes the parts, the checkpoint piece if asked, and
// applies the task's updates; Finish does the rest. ran is false when no
// task can start; an error (with the Answer that carries it) ends the task
// there.
func (c *Core[P, R, U, S]) Begin() (out Output[R, S], ran bool, err error) {
	if c.running != nil {
		return out, false, errors.New("worker: Begin before the task begun is finished")
	}
	if c.due == nil {
		// A check comes before the task of its round.
		for _, check := range []bool{true, false} {
			key := taskKey{c.last + 1, check}
			if e, ok := c.early[key]; ok {
				delete(c.early, key)
				c.ran[key.kind()].Take(e.task.Round, e.hash)
				if !check {
					c.last = e.task.Round
				}
				c.due = &e.task
				break
			}
		}
		if c.due == nil {
			return out, false, nil
		}
	}
	t := c.due
	// The parts passed to this worker come before its next task's updates;
	// a stop that asks for nothing needs none.
	if c.passer != nil && (!t.Stop || t.Report) {
		in, err := c.takeParts()
		if err != nil {
			c.due = nil
			out.Drops, c.dropped = c.dropped, nil
			out.Answer = &Answer[R, S]{Round: t.Round, Check: t.Check, Final: t.Final, Err: err}
			return out, true, err
		}
		if !in {
			return out, false, nil
		}
	}
	c.due = nil
	out.Drops, c.dropped = c.dropped, nil
	if c.cfg.Cut != nil {
		c.cfg.Cut(t.Round)
	}
	if t.Checkpoint != 0 {
		// The state after the checkpoint's round: its parts taken, this
		// task's updates not applied.
		if c.cfg.Checkpoints {
			snap, _ := c.w.(schmp.Snapshotter)
			out.Piece = checkpoint.Take(t.Checkpoint, snap)
		} else {
			out.Drops = append(out.Drops, protocol.Drop{Reason: protocol.DropUnexpected, Err: fmt.Errorf("round %d: a checkpoint asked of a job that takes none", t.Round)})
		}
	}
	// The app's methods are called through protocol.Guard: a panic fails
	// the worker, and the job, as an error does.
	for _, u := range t.Updates {
		if err = protocol.Guard("Apply", func() error { return c.w.Apply(u) }); err != nil {
			out.Answer = &Answer[R, S]{Round: t.Round, Check: t.Check, Final: t.Final, Err: err}
			return out, true, err
		}
	}
	c.running = t
	return out, true, nil
}

// Finish ends the task that Begin started: it reports if asked, pushes
// unless the task is a check or a stop, and splits off the part passed to
// another worker.
func (c *Core[P, R, U, S]) Finish(ctx context.Context) (out Output[R, S], err error) {
	t := c.running
	if t == nil {
		return out, errors.New("worker: Finish with no task begun")
	}
	c.running = nil
	a := Answer[R, S]{Round: t.Round, Check: t.Check, Final: t.Final}
	if t.Report {
		// The final request asks for the state that only the written model
		// needs; a worker without any sends its report.
		if f, ok := c.w.(schmp.FinalReporter[S]); ok && t.Final {
			err = protocol.Guard("FinalReport", func() (err error) { a.Report, err = f.FinalReport(); return err })
		} else {
			err = protocol.Guard("Report", func() (err error) { a.Report, err = c.w.Report(); return err })
		}
		a.HasReport = err == nil
	}
	if err == nil && !t.Stop && !t.Check {
		err = protocol.Guard("Push", func() (err error) { a.Partial, err = c.w.Push(ctx, t.Round, t.Plan); return err })
		if err == nil && c.passer != nil {
			a.Partial, out.Pass, err = c.pass(t.Round, a.Partial)
		}
	}
	a.Err = err
	out.Stop = t.Stop
	// A stop without a report needs no answer.
	if !t.Stop || t.Report || err != nil {
		out.Answer = &a
	}
	return out, err
}

// takeParts gives the worker the parts it awaits of the rounds it pushed
// since it last took any; in is false while one of them is still to come.
func (c *Core[P, R, U, S]) takeParts() (in bool, err error) {
	for len(c.untaken) > 0 {
		round := c.untaken[0]
		if c.awaits == nil {
			a := awaited{}
			if err := protocol.Guard("Awaits", func() error { a.from, a.ok = c.passer.Awaits(round); return nil }); err != nil {
				return false, err
			}
			if a.ok && (a.from < 0 || a.from >= c.cfg.Shards || a.from == c.cfg.Shard) {
				return false, fmt.Errorf("round %d: awaits a part from worker %d in a job of %d", round, a.from, c.cfg.Shards)
			}
			c.awaits = &a
			c.forget(round)
		}
		if c.awaits.ok {
			key := passKey{round, c.awaits.from}
			h, ok := c.parts[key]
			if !ok {
				return false, nil
			}
			delete(c.parts, key)
			c.ledger(key.from).Take(round, h.hash)
			if err := protocol.Guard("Take", func() error { return c.passer.Take(round, key.from, h.part) }); err != nil {
				return false, err
			}
		}
		c.taken, c.untaken, c.awaits = round, c.untaken[1:], nil
	}
	return true, nil
}

// forget drops the parts held of rounds up to round that nobody awaited,
// and those of round from another sender than the one awaited.
func (c *Core[P, R, U, S]) forget(round uint64) {
	for k := range c.parts {
		if k.round < round || k.round == round && (!c.awaits.ok || k.from != c.awaits.from) {
			c.dropped = append(c.dropped, protocol.Drop{Reason: protocol.DropUnexpected, Err: fmt.Errorf("round %d: a pass from worker %d that nobody awaited", k.round, k.from)})
			delete(c.parts, k)
		}
	}
}

// pass splits r, the partial of round, into what goes to the coordinator
// and the part, if any, for another worker.
func (c *Core[P, R, U, S]) pass(round uint64, r R) (R, *Handoff[R], error) {
	c.untaken = append(c.untaken, round)
	var (
		coord, part R
		to          int
		ok          bool
	)
	if err := protocol.Guard("Pass", func() error { coord, part, to, ok = c.passer.Pass(round, r); return nil }); err != nil {
		return r, nil, err
	}
	if !ok {
		return coord, nil, nil
	}
	if to < 0 || to >= c.cfg.Shards || to == c.cfg.Shard {
		return coord, nil, fmt.Errorf("round %d: a part passed to worker %d in a job of %d", round, to, c.cfg.Shards)
	}
	return coord, &Handoff[R]{Round: round, From: c.cfg.Shard, To: to, Part: part}, nil
}

// maxEarly bounds how far ahead a task (or a part) that a worker holds
// back until its turn may be: more rounds than the coordinator ever has in
// flight (pipeline.MaxDepth, a check besides each). One further ahead is
// dropped.
const maxEarly = 2 * pipeline.MaxDepth

// taskKey names a task: its round, and whether it is the check of that
// round.
type taskKey struct {
	round uint64
	check bool
}

// kind returns the index of the key's ledger: 0 for a round, 1 for a
// check.
func (k taskKey) kind() int {
	if k.check {
		return 1
	}
	return 0
}

// heldTask is a task that came before its turn, and the hash of its bytes.
type heldTask[P, U any] struct {
	task protocol.Task[P, U]
	hash uint64
}

// passKey names a part: its round and sender.
type passKey struct {
	round uint64
	from  int
}

// heldPass is a part that came before it was awaited, and the hash of its
// message.
type heldPass[R any] struct {
	part R
	hash uint64
}
