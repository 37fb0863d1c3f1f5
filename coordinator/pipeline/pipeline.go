// Package pipeline holds the rules of the coordinator's round pipeline
// (DESIGN "Pipelining") as a deterministic state machine, in the manner of
// etcd-io/raft's Step and Ready: events go in (a plan arrived for round t
// from scheduler part p, a worker's partial arrived for round t, with its
// report if the round asked for one; the clock ticked), actions come out (ask
// part p for the plan of round t with its feedback, send task t, record a
// report, a round was pulled, the stop is decided, the job is done).
//
// A Core has no goroutines, no network and no clock of its own: time comes
// in with the events only, so a test can step it through any interleaving
// of messages in microseconds, and the coordinator node
// (github.com/strads-go/strads/coordinator) is the I/O loop around it:
// decode messages, step the core, perform its actions. The same core runs
// whole jobs in one goroutine in package github.com/strads-go/strads/local.
//
// The rules:
//
//   - Up to Config.Depth rounds are in flight. Rounds 1 … Depth are asked
//     for at the start; the plan of round t+Depth is asked for when round t
//     is pulled, with the feedback of the rounds of its scheduler part
//     pulled since that part was last asked. Round t is planned by part
//     (t−1) mod Config.Parts, so parts plan in turn.
//   - Plans may arrive in any order; rounds are sent in round order. A plan
//     that would update a variable of a round in flight is refused and
//     fails the job.
//   - The task of round t carries Start's update and the updates of the
//     rounds up to t−Depth not sent yet: what a worker computes in round t
//     does not depend on when the partials of earlier rounds arrived.
//   - Partials may arrive in any order; rounds are pulled in round order,
//     each once all workers answered. A report taken in round t shows the
//     state after round max(t−Depth, 0); the core evaluates it before the
//     round's pull, records it, fails the job if the model diverged, and
//     runs the stop tests on it.
//   - A stop decided at the pull of round t (the deciding round) lands
//     after round L = min(t+Depth−1, MaxRounds), the last round already
//     asked for, or, for an app whose rounds come in iterations of
//     Config.Period rounds (the rotation: schmp.Iterated), after the end of
//     the iteration of that round, min(⌈(t+Depth−1)/Period⌉·Period,
//     MaxRounds): the rounds up to L are sent and pulled, and no other.
//     L is a function of t and the configuration alone, so a stop lands on
//     the same round however the messages were timed.
//   - The check: once round L is pulled, a check task carries every
//     update left; the workers apply them, report, and push nothing. Its
//     report shows exactly the state after L, which the app's coordinator
//     holds and would write. A stop that a report decided (Target, Tol)
//     holds only if this report passes a stop test as well (Target first,
//     then Tol, the relative change taken from the report before, then
//     the app's own: schmp.Progress.Stop), and so does a stop that the
//     app asked for (schmp.StopApp):
//     the model written is then a certified one, even though the report
//     that decided the stop showed a state up to 2·Depth−1 rounds older.
//     Otherwise the stop is refuted (Resumed) and the job goes on from
//     the state after L, asking for rounds L+1 … L+Depth, which the
//     workers all push from that state (their reports show it too), and
//     later stops are decided as before; if MaxRounds rounds were run, or
//     TimeLimit has passed, the job stops for that reason instead. A
//     MaxRounds or TimeLimit stop is not certified: its check only
//     reports. Whether a check confirms a stop depends on the reports and
//     the configuration alone, so the job stops on the same round with
//     the same model at every delivery order.
//   - The stop task ends the job: it carries no update (the check carried
//     them all) and needs no answer, unless Config.Final asks for the
//     workers' final reports (schmp.FinalReporter): state that only the
//     written model needs, sent once, of exactly the state the check
//     reported; the job is then done once every worker's is in.
//   - Checkpoints (Config.Checkpoints, DESIGN "Checkpoints"), at every depth: the
//     checkpoint of round C is decided when the plan of round C+1 is
//     asked for; task C+1 and each scheduler part's first plan request of
//     a round after C carry it (Checkpoint), and right after the pull of C
//     the core hands over its snapshot (CheckpointTaken) with the plan
//     requests of the rounds after C asked for so far and the updates
//     their tasks carry, from which Resume goes on. A stop decided before
//     the cut is complete abandons it (CheckpointAbandoned).
package pipeline

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
)

// MaxDepth is the largest Config.Depth.
const MaxDepth = 64

// Config holds the rules' parameters.
type Config struct {
	// Workers is the number of worker shards; every round waits for a
	// partial from each.
	Workers int
	// Parts is the number of scheduler parts, which plan rounds in turn;
	// 0 means 1.
	Parts int
	// Depth is the most rounds in flight; 0 means 1 (strict rounds).
	Depth int
	// ReportEvery asks for a report in rounds 1, 1+ReportEvery, …; 0
	// means 1.
	ReportEvery int
	// MaxRounds, when > 0, stops the job after that many rounds.
	MaxRounds uint64
	// TimeLimit, when > 0, stops the job at the first pull that comes at
	// least TimeLimit after Start. Which round that is depends on timing,
	// as a time limit must; but given that deciding round, where the job
	// stops and the model it writes do not (see the package doc).
	TimeLimit time.Duration
	// Tol, when > 0, stops the job once a report's gap is at most
	// Tol·|objective| (schmp.Progress.HasGap), or, without a gap, once the
	// objective's relative change between two consecutive reports is below
	// Tol, provided that the check of the state the stop lands on passes
	// too (see the package doc). In a stage that is not the final one
	// (schmp.Staged) it ends the stage, unchecked.
	Tol float64
	// RiseTol, when > 0, fails the job (ErrDiverged) at a report whose
	// objective exceeds the lowest reported so far by more than
	// RiseTol·max(|lowest|, the smallest normal float64).
	RiseTol float64
	// Target and HasTarget: when HasTarget, the job stops at the first
	// report whose objective is at most Target (in the final stage only),
	// provided that the check passes too (see the package doc).
	Target    float64
	HasTarget bool
	// Timeout, when > 0, bounds the wait for a plan from when it was asked
	// for, and for a round's partials from when it was sent: a Tick past
	// the deadline fails the job (ErrTimeout).
	Timeout time.Duration
	// Period, when > 1, is the number of rounds of an iteration (the
	// rotation's, in which every worker visits every block once): a stop
	// lands at the end of an iteration, the first round at or after the
	// one it would land on otherwise that is a multiple of Period (no
	// later than MaxRounds). 0 takes the app's schmp.Iterated's
	// RoundsPerIteration, or 1.
	Period uint64
	// Final asks the workers, once the stop is confirmed, for their final
	// reports (schmp.FinalReporter) of the state the check reported: the
	// stop task asks for an answer (Task.Final), and the job is done once
	// every worker's is in (Core.Finals).
	Final bool
	// Name, if set, names place (a worker shard, a scheduler part) of role
	// (protocol.RoleWorker, protocol.RoleScheduler) in errors, e.g. with
	// the host and pid it runs on; nil names it "worker shard 1",
	// "scheduler 0". It must be a function of its arguments.
	Name func(role string, place int) string
	// Checkpoints, if set, takes the job's checkpoints (DESIGN "Checkpoints"): the
	// core asks it which to take, marks the requests and the task that
	// ask the roles for their pieces, and hands over its own piece in a
	// CheckpointTaken action. nil takes none.
	Checkpoints Checkpointer
}

// check fills in the defaults and reports the first bad field.
func (c *Config) check() error {
	c.Parts = max(c.Parts, 1)
	c.Depth = max(c.Depth, 1)
	c.ReportEvery = max(c.ReportEvery, 1)
	switch {
	case c.Workers < 1:
		return fmt.Errorf("pipeline: Workers must be at least 1, got %d", c.Workers)
	case c.Depth > MaxDepth:
		return fmt.Errorf("pipeline: Depth must be at most %d, got %d", MaxDepth, c.Depth)
	case c.Tol < 0 || math.IsNaN(c.Tol):
		return fmt.Errorf("pipeline: Tol must be >= 0, got %v", c.Tol)
	case c.RiseTol < 0 || math.IsNaN(c.RiseTol) || math.IsInf(c.RiseTol, 0):
		return fmt.Errorf("pipeline: RiseTol must be finite and >= 0, got %v", c.RiseTol)
	case c.HasTarget && (math.IsNaN(c.Target) || math.IsInf(c.Target, 0)):
		return fmt.Errorf("pipeline: Target must be finite, got %v", c.Target)
	case c.TimeLimit < 0 || c.Timeout < 0:
		return fmt.Errorf("pipeline: TimeLimit and Timeout must be >= 0, got %v and %v", c.TimeLimit, c.Timeout)
	}
	return nil
}

// Part returns the scheduler part that plans round (1, 2, …) among parts.
func Part(round uint64, parts int) int {
	return int((round - 1) % uint64(max(parts, 1)))
}

// ErrDiverged is wrapped in the error of a job whose model diverged: a
// report's objective, or its gap (schmp.Progress.HasGap), was not finite,
// or the objective rose by more than Config.RiseTol allows. The error
// names the round whose state the report shows, and the cause. It is
// schmp.ErrDiverged, which apps wrap too.
var ErrDiverged = schmp.ErrDiverged

// ErrTimeout is matched (errors.Is) by the error of a Tick at or past
// Core.Deadline: a plan or a round's partials did not come within
// Config.Timeout. It is protocol.ErrTimeout.
var ErrTimeout = protocol.ErrTimeout

// ErrRefused is wrapped in the error that Step returns for an event it
// ignores, leaving the core as it was: a plan that was not asked for or
// comes from the wrong part, a partial for a round not in flight, from a
// shard that does not exist or that already answered. Such a message is
// harmless (a late duplicate, say) and the job can go on.
var ErrRefused = errors.New("refused")

// smallestNormal is the smallest positive normal float64, the floor of the
// scale of Config.RiseTol.
const smallestNormal = 0x1p-1022
