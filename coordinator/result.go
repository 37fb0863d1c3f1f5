package coordinator

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/strads-go/strads/schmp"
)

// Result describes a finished run.
type Result struct {
	// Rounds is the number of rounds run.
	Rounds uint64
	// Updates is the number of variable updates made.
	Updates int64
	// Candidates is the number of candidates the scheduler examined.
	Candidates int64
	// Rejected, Deferred and Capacity sum the plans' PlanInfo fields of
	// the same names: the candidates the dependency check turned down,
	// those put off because they depended on a round in flight, and the
	// most the plans could have held.
	Rejected, Deferred, Capacity int64
	// Final is the progress at the end.
	Final schmp.Progress
	// Elapsed is the time from the first round to the end.
	Elapsed time.Duration
	// Reason says why the run stopped: schmp.StopTarget (Options.Target),
	// schmp.StopConverged (Options.Tol), schmp.StopApp (the app asked to:
	// schmp.Progress.Stop), schmp.StopMaxRounds or schmp.StopTimeLimit;
	// when a report meets several stops, the first of these. A run whose
	// model diverged has no Result: it fails with ErrDiverged.
	Reason schmp.Reason
	// AppReason, with schmp.StopApp, is the app's text of the report that
	// certified the stop (the check's: DESIGN "Pipelining"); "" otherwise.
	AppReason string
	// Period is the number of rounds of an iteration of a schmp.Iterated app
	// (its RoundsPerIteration), 0 for an app whose rounds do not come in
	// iterations. With it, Why says a MaxRounds stop in iterations: such
	// an app's command sets MaxRounds from its number of iterations.
	Period uint64
	// Trace holds every report, in order.
	Trace []schmp.Sample
	// RoundTimes holds the latency of every round: from sending it to the
	// workers to the end of its Pull.
	RoundTimes []time.Duration
	// Timing tells where the time went.
	Timing Timing
	// MaxInFlight is the most rounds that were in flight at once, and
	// MaxVarsInFlight the most variables; no variable was ever in two
	// rounds in flight (the coordinator refuses such a plan).
	MaxInFlight, MaxVarsInFlight int
	// Run is the run id that the coordinator issued, which every message
	// of the job carried (DESIGN "Roles, subjects and messages").
	Run string
	// App is the app's coordinator, the value that the program's
	// NewCoordinator returned, holding the model written: a command reads
	// what it prints after the run from it, by a type assertion to the
	// app's type or to an interface of its methods.
	App any
	// Dropped counts the messages that the coordinator dropped unused, by
	// reason (protocol.DropGarbage, DropForeign, DropDuplicate,
	// DropUnexpected, DropIncomplete; DESIGN "Hostile traffic").
	Dropped map[string]int
	// Reconnects counts the coordinator's reconnects to the NATS server
	// during the job; after each it sent again what was not answered
	// (DESIGN "NATS outages").
	Reconnects uint64
	// Checkpoints counts the checkpoints committed during the job, and
	// LastCheckpoint is the round of the last (Options.CheckpointEvery).
	Checkpoints    int
	LastCheckpoint uint64
	// Resumed is the round of the checkpoint the job resumed from
	// (Options.Resume); 0 for a job started afresh.
	Resumed uint64
	// Replaced counts the lost nodes whose place a spare took, the job
	// rolling back to a checkpoint (Options.Spares).
	Replaced int
}

// Timing tells where the time of a run went. The sums over rounds divided
// by the number of rounds give the per-round means of the summary.
type Timing struct {
	// Elapsed is the time from the first round to the end.
	Elapsed time.Duration
	// Plan is the schedulers' compute time, all parts together.
	Plan time.Duration
	// Dispatch is the coordinator's time to encode and publish tasks.
	Dispatch time.Duration
	// Push sums, over rounds, the compute time of the round's slowest
	// worker (applying updates, reporting, pushing).
	Push time.Duration
	// Wait sums, over rounds, the time from the round's first partial to its
	// last: how long the fastest worker's answer waited for the slowest.
	Wait time.Duration
	// Pull is the time spent in the app's Pull, and Objective in its
	// Objective.
	Pull, Objective time.Duration
	// Latency sums the round latencies (see Result.RoundTimes).
	Latency time.Duration
	// Coordinator is the coordinator's busy time: Elapsed less the time it
	// waited for messages.
	Coordinator time.Duration
	// Schedulers holds each scheduler part's compute time, and Workers
	// each worker shard's.
	Schedulers, Workers []time.Duration
	// Msgs and Bytes count the coordinator's messages in and out, which
	// are all the job's messages but the fan-out of each task to the
	// workers.
	Msgs, Bytes uint64
}

// Why returns why the run stopped, as text: the app's reason with
// schmp.StopApp, "max-iterations" for a MaxRounds stop of an app whose
// rounds come in iterations (Period), otherwise the Reason.
func (r *Result) Why() string {
	switch {
	case r.Reason == schmp.StopApp && r.AppReason != "":
		return r.AppReason
	case r.Reason == schmp.StopMaxRounds && r.Period > 0:
		return "max-iterations"
	}
	return string(r.Reason)
}

// WriteSummary writes where the time of the run went: per-round latency
// quantiles and means, traffic, and each role's busy fraction.
func (r *Result) WriteSummary(w io.Writer) {
	t := r.Timing
	rounds := max(float64(r.Rounds), 1)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 / rounds }
	busy := func(d time.Duration) float64 {
		if t.Elapsed <= 0 {
			return 0
		}
		return 100 * float64(d) / float64(t.Elapsed)
	}
	fmt.Fprintf(w, "round latency p50 %.3f ms  p99 %.3f ms; in flight at most %d rounds, %d variables\n",
		float64(r.RoundQuantile(0.5))/1e6, float64(r.RoundQuantile(0.99))/1e6, r.MaxInFlight, r.MaxVarsInFlight)
	fmt.Fprintf(w, "per round: plan %.3f ms  dispatch %.3f ms  push %.3f ms (slowest worker)  wait %.3f ms  pull %.3f ms  objective %.3f ms;  %.1f msgs  %.0f bytes\n",
		ms(t.Plan), ms(t.Dispatch), ms(t.Push), ms(t.Wait), ms(t.Pull), ms(t.Objective), float64(t.Msgs)/rounds, float64(t.Bytes)/rounds)
	fmt.Fprintf(w, "busy: coordinator %.0f%%", busy(t.Coordinator))
	for p, d := range t.Schedulers {
		fmt.Fprintf(w, "  scheduler %d %.0f%%", p, busy(d))
	}
	for s, d := range t.Workers {
		fmt.Fprintf(w, "  worker %d %.0f%%", s, busy(d))
	}
	fmt.Fprintln(w)
	if r.Capacity > 0 {
		fmt.Fprintf(w, "plans: %.3g of %.3g variables a round (%.0f%%); %.3g put off (in flight), %.3g rejected (dependency check)\n",
			float64(r.Updates)/rounds, float64(r.Capacity)/rounds, 100*float64(r.Updates)/float64(r.Capacity),
			float64(r.Deferred)/rounds, float64(r.Rejected)/rounds)
		if r.Updates < r.Capacity/2 {
			fmt.Fprintln(w, "warning: the plans ran mostly empty: "+emptyPlans)
		}
	}
	if r.Reconnects > 0 {
		fmt.Fprintf(w, "NATS: %d reconnects; what was in flight was sent again, %d copies dropped\n", r.Reconnects, r.Dropped["duplicate"])
	}
}

// MedianRound returns the median round latency.
func (r *Result) MedianRound() time.Duration {
	return r.RoundQuantile(0.5)
}

// RoundQuantile returns the q-quantile (0 ≤ q ≤ 1) of the round latency.
func (r *Result) RoundQuantile(q float64) time.Duration {
	if len(r.RoundTimes) == 0 {
		return 0
	}
	d := slices.Clone(r.RoundTimes)
	slices.Sort(d)
	return d[int(q*float64(len(d)-1)+0.5)]
}

// emptyPlans explains plans that run mostly empty, in the words of the
// warnings.
const emptyPlans = "candidates that depend on variables in rounds still in flight are put off (fewer rounds in flight: --depth), " +
	"and those the dependency check finds coupled are rejected (a larger --rho); a smaller --block asks for fewer"
