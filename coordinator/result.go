package coordinator

import (
	"slices"
	"time"

	"github.com/strads-go/strads/schmp"
)

// Sample is one report of a run: a row of the metrics CSV.
type Sample struct {
	// Time is the time since the first round.
	Time time.Duration
	// Round is the number of rounds whose updates the report reflects.
	Round uint64
	schmp.Progress
	// Updates is the number of variable updates made up to Round.
	Updates int64
}

// Result describes a finished run.
type Result struct {
	// Rounds is the number of rounds run.
	Rounds uint64
	// Updates is the number of variable updates made.
	Updates int64
	// Candidates is the number of candidates the scheduler examined.
	Candidates int64
	// Final is the progress at the end.
	Final schmp.Progress
	// Elapsed is the time from the first round to the end.
	Elapsed time.Duration
	// Reason says why the run stopped: "converged", "max-rounds" or
	// "time-limit".
	Reason string
	// Trace holds every report, in order.
	Trace []Sample
	// RoundTimes holds the latency of every round: from asking for the plan
	// to the end of Pull.
	RoundTimes []time.Duration
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
