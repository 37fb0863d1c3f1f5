package coordinator

import (
	"fmt"

	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/protocol"
)

// Gate admits the plans and partials that come to a coordinator, with no
// network or clock: each message is valid, a plan or partial taken once
// (the same bytes again are a replay, dropped; other bytes for the same
// round a conflict, which fails the job), and a partial answers a task
// that awaits it (DESIGN "Hostile traffic"). It turns what it admits into
// the pipeline core's events; the node (and a simulated network in tests)
// feeds it messages and tells it which tasks it sent and which rounds
// were pulled.
type Gate[P, R, U, S any] struct {
	schedulers, workers int
	// plans and partials remember the plans and partials taken, by round
	// (partials by shard, then by taskKind).
	plans    *protocol.Ledger
	partials [][3]*protocol.Ledger
	// awaited holds the tasks whose partials are awaited, and whether they
	// asked for a report; checkRound is the round of the last check task.
	awaited    map[taskKey]bool
	checkRound uint64
}

// NewGate returns the gate of a job of schedulers scheduler parts and
// workers workers.
func NewGate[P, R, U, S any](schedulers, workers int) *Gate[P, R, U, S] {
	g := &Gate[P, R, U, S]{schedulers: schedulers, workers: workers, plans: protocol.NewLedger(), awaited: map[taskKey]bool{}}
	for range workers {
		g.partials = append(g.partials, [3]*protocol.Ledger{protocol.NewLedger(), protocol.NewLedger(), protocol.NewLedger()})
	}
	return g
}

// Failed is the error of a message that says that its sender failed: the
// node at Place of Role, in Round (0: outside a round), with Cause.
type Failed struct {
	Role  string
	Place int
	Round uint64
	Cause string
}

func (f *Failed) Error() string {
	return fmt.Sprintf("%s %d failed in round %d: %s", f.Role, f.Place, f.Round, f.Cause)
}

// Hash returns the hash of a message's bytes, for Plan and Partial.
func (g *Gate[P, R, U, S]) Hash(data []byte) uint64 { return g.plans.Hash(data) }

// Sent notes a task sent: its partials are awaited unless it is a stop
// that asks for no report.
func (g *Gate[P, R, U, S]) Sent(task protocol.Task[P, U]) {
	if !task.Stop || task.Report {
		g.awaited[taskKey{task.Round, kindOf(task.Check, task.Final)}] = task.Report
	}
	if task.Check {
		g.checkRound = task.Round
	}
}

// Done notes the core's action a: a round pulled, or the final record
// of a check, awaits no more partials.
func (g *Gate[P, R, U, S]) Done(a pipeline.Action[P, U]) {
	switch {
	case a.Kind == pipeline.RoundPulled:
		delete(g.awaited, taskKey{a.Round, roundTask})
	case a.Kind == pipeline.RecordReport && a.Final:
		delete(g.awaited, taskKey{g.checkRound, checkTask})
	}
}

// Admission is a message that the gate admitted: the core's Event for
// it, or Drop, why it was dropped.
type Admission[P, R, S any] struct {
	Event pipeline.Event[P, R, S]
	Drop  *protocol.Drop
	// The ledger that records the message, its round and its hash.
	ledger *protocol.Ledger
	round  uint64
	h      uint64
}

// Take records the message as taken, once the core took its Event in: the
// same bytes again are a replay, other bytes a conflict.
func (a Admission[P, R, S]) Take() {
	if a.ledger != nil {
		a.ledger.Take(a.round, a.h)
	}
}

// Plan admits rep, a plan reply whose bytes hash to h (Hash). An error is
// the job's failure: an invalid or conflicting plan (matching
// protocol.ErrInvalid or protocol.ErrConflict), or a scheduler's own
// (*Failed).
func (g *Gate[P, R, U, S]) Plan(rep protocol.PlanReply[P], h uint64) (Admission[P, R, S], error) {
	var a Admission[P, R, S]
	if err := rep.Validate(g.schedulers); err != nil {
		return a, err
	}
	switch taken, err := g.plans.Check(rep.Round, h); {
	case err != nil:
		return a, err
	case taken:
		a.Drop = &protocol.Drop{Reason: protocol.DropDuplicate, Err: fmt.Errorf("round %d: a plan taken already", rep.Round)}
		return a, nil
	}
	if rep.Err != "" {
		return a, &Failed{Role: protocol.RoleScheduler, Place: rep.Part, Round: rep.Round, Cause: rep.Err}
	}
	a.Event = pipeline.Event[P, R, S]{Kind: pipeline.PlanArrived, Round: rep.Round, From: rep.Part, Plan: rep.Plan, Info: rep.Info}
	a.ledger, a.round, a.h = g.plans, rep.Round, h
	return a, nil
}

// Partial admits p, a worker's partial whose bytes hash to h, as Plan
// admits a plan; a partial that no task awaits is dropped, one without
// the report its task asked for is invalid.
func (g *Gate[P, R, U, S]) Partial(p protocol.Partial[R, S], h uint64) (Admission[P, R, S], error) {
	var a Admission[P, R, S]
	if err := p.Validate(g.workers); err != nil {
		return a, err
	}
	kind := kindOf(p.Check, p.Final)
	ledger := g.partials[p.Shard][kind]
	switch taken, err := ledger.Check(p.Round, h); {
	case err != nil:
		return a, err
	case taken:
		a.Drop = &protocol.Drop{Reason: protocol.DropDuplicate, Err: fmt.Errorf("round %d: a partial taken already", p.Round)}
		return a, nil
	}
	if p.Err != "" {
		return a, &Failed{Role: protocol.RoleWorker, Place: p.Shard, Round: p.Round, Cause: p.Err}
	}
	report, awaited := g.awaited[taskKey{p.Round, kind}]
	switch {
	case !awaited:
		a.Drop = &protocol.Drop{Reason: protocol.DropUnexpected, Err: fmt.Errorf("round %d (check %t, final %t): no such task awaits its partials", p.Round, p.Check, p.Final)}
		return a, nil
	case report && !p.HasReport:
		return a, fmt.Errorf("round %d: %w: no report, which the task asked for", p.Round, protocol.ErrInvalid)
	}
	a.Event = pipeline.Event[P, R, S]{Kind: pipeline.PartialArrived, Round: p.Round, From: p.Shard,
		Partial: p.Partial, Report: p.Report, HasReport: p.HasReport, Final: p.Final}
	a.ledger, a.round, a.h = ledger, p.Round, h
	return a, nil
}
