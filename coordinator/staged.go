package coordinator

// Staged is implemented by an app's coordinator (a schmp.Coordinator) whose
// job solves a sequence of problems, its stages, one after another, each
// from where the previous one stopped: a regularization path, say, whose
// stages are decreasing penalties, each warm-started from the solution of
// the one before.
//
// The runtime's stop test (Options.Tol) then ends a stage rather than the
// job, until the final stage, whose converged report stops the job as
// always. Options.Target counts only in the final stage. The other stops
// (MaxRounds, TimeLimit) end the whole job, whatever the stage. At a
// stage's end the runtime forgets the objectives reported so far: the
// relative-change test and Options.RiseTol start afresh with the next
// stage's reports, since the objectives of two stages are of different
// problems.
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
	// "converged", before it pulls the round whose partials came with the
	// report: the app records the stage and moves to the next one, which
	// the update that Pull returns must carry to the workers. With depth 1,
	// the app's model is then the one s describes; with more rounds in
	// flight, it is up to depth−1 rounds newer. The runtime calls it once
	// more when the job stops (on success only), with the final report,
	// which describes the model written, and stop set to Result.Reason.
	EndStage(s Sample, stop string) error
}
