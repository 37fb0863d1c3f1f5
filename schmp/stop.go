package schmp

import "time"

// Reason says why a job stopped.
type Reason string

// The stops, in the order of precedence in which a report that meets
// several of them names one (DESIGN "Pipelining"). The job's settings named are the
// runtime's (coordinator.Options, pipeline.Config).
const (
	// StopTarget: a report's objective reached the job's Target.
	StopTarget Reason = "target"
	// StopConverged: a report met the job's Tol.
	StopConverged Reason = "converged"
	// StopApp: a report of the app asked to stop (Progress.Stop, whose
	// text the job's result holds: coordinator.Result.AppReason).
	StopApp Reason = "app"
	// StopMaxRounds: the job's MaxRounds rounds were pulled.
	StopMaxRounds Reason = "max-rounds"
	// StopTimeLimit: a pull came the job's TimeLimit or more after its
	// first round.
	StopTimeLimit Reason = "time-limit"
)

// Sample is one report of a run: a row of the metrics CSV.
type Sample struct {
	// Time is when the state it reports was reached: the time from the
	// first round to the end of round Round's Pull (0 for Round 0).
	Time time.Duration
	// Round is the number of rounds whose updates the report reflects.
	Round uint64
	Progress
	// Updates is the number of variable updates made up to Round.
	Updates int64
}

// Iterated is implemented by an app's coordinator whose rounds come in
// iterations of a fixed number of rounds: the static rotation (DESIGN "Scheduling engines"),
// whose P rounds make every worker visit every block once. A stop then
// lands at the end of an iteration (the runtime's Period), a function of
// the round that decided it and the job's settings, so that every worker
// has seen every block equally often in the model written.
type Iterated interface {
	// RoundsPerIteration returns the number of rounds of an iteration, at
	// least 1; it is a constant of the job.
	RoundsPerIteration() uint64
	// LastRound tells the app that round last will be the job's last, as
	// soon as the stop is decided and before the runtime pulls the round
	// that decided it (which may be the last): its Pull of that round can
	// then send the workers what the check's report needs. If the check
	// refutes the stop, the job goes on, and the next stop calls LastRound
	// again. An error fails the job.
	LastRound(last uint64) error
}

// Staged is implemented by an app's coordinator (a Coordinator) whose job
// solves a sequence of problems, its stages, one after another, each from
// where the previous one stopped: a regularization path, say, whose stages
// are decreasing penalties, each warm-started from the solution of the one
// before.
//
// The stop test (the job's Tol) then ends a stage rather than the job,
// until the final stage, whose converged report stops the job as always.
// The job's Target counts only in the final stage. The other stops (an
// app's own, Progress.Stop; MaxRounds, TimeLimit) end the whole job,
// whatever the stage. At a stage's end the runtime forgets the objectives
// reported so far: the relative-change test and the job's RiseTol start
// afresh with the next stage's reports, since the objectives of two stages
// are of different problems.
//
// An app coordinator that implements Staged but has a single stage
// (FinalStage always true, EndStage only recording) runs as any other.
type Staged interface {
	// Stage describes the stage running, for the progress line (e.g.
	// "λ 3/20 0.0123"); "" adds nothing.
	Stage() string
	// FinalStage reports whether the stage running is the last.
	FinalStage() bool
	// EndStage ends the stage running. The runtime calls it when report s
	// of a stage that is not the final one meets the stop test, with stop
	// "converged" (StopConverged), before it pulls the round whose
	// partials came with the report, unless the job's stop is already
	// decided: the app records the stage and moves to the next one, which
	// the update that Pull returns must carry to the workers. With depth
	// 1, the app's model is then the one s describes; with more rounds in
	// flight, it is up to depth−1 rounds newer. The runtime calls it once
	// more when the job stops (on success only), with the check's report,
	// which describes the model written, and stop set to the job's Reason.
	EndStage(s Sample, stop string) error
}
