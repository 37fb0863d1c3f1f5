package coordinator

import (
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
)

// Options configures a coordinator node.
type Options struct {
	// Workers is the number of workers the job waits for.
	Workers int
	// Schedulers is the number of scheduler parts the job waits for; they
	// plan rounds in turn (round t by part (t−1) mod Schedulers). 0 means 1.
	Schedulers int
	// Depth is the most rounds in flight at once (DESIGN "Pipelining"); 0 means 1,
	// strict rounds.
	Depth int
	// MaxRounds stops the job after that many rounds; 0 means no limit.
	//
	// With Depth D, a stop that a report decides at the pull of round t
	// (Tol, Target), and a TimeLimit noticed then, land after round
	// L = min(t+D−1, MaxRounds), the last round already asked for, or,
	// for an app whose rounds come in iterations (schmp.Iterated: the
	// rotation), after the end of that round's iteration. The
	// workers then report the state after L, which is the model written:
	// a Tol or Target stop holds only if that report passes a stop test
	// too, so that the model written is certified; otherwise the job goes
	// on from there (until a later stop, or MaxRounds). So the round a
	// job stops on depends on the reports and the options alone, not on
	// timing (TimeLimit aside; see package coordinator/pipeline).
	MaxRounds uint64
	// TimeLimit stops the job once that much time has passed since the
	// first round, at the first pull after it; 0 means no limit. Which
	// round that is depends on timing; where the job then stops does not.
	TimeLimit time.Duration
	// Tol stops the job once a report shows the objective F within Tol of
	// the optimum, relatively: Gap ≤ Tol·|F| where the app certifies a gap
	// (schmp.Progress.HasGap); otherwise when F's relative change between two
	// consecutive reports, |F_prev − F|/|F|, is below Tol. 0 turns it off.
	// A report whose objective or gap is not finite never stops the job
	// this way: it fails it, with ErrDiverged. The report of the state
	// written must pass the test too (see MaxRounds). For an app that runs
	// in stages (schmp.Staged), it ends a stage, and the job only with the final
	// one.
	Tol float64
	// RiseTol, when > 0, fails the job with ErrDiverged at a report whose
	// objective F exceeds the lowest objective L reported so far by more
	// than RiseTol·max(|L|, the smallest normal float64): for apps whose
	// steps never increase the objective by construction, where such a
	// rise means the model diverged. It assumes an objective that is
	// minimized. 0 turns it off.
	RiseTol float64
	// Target and HasTarget: when HasTarget, the job stops (Result.Reason
	// schmp.StopTarget) at the first report whose objective is at most
	// Target, checked as Tol is (see MaxRounds), say a peer's objective in
	// a benchmark. It assumes an objective that is minimized. For an app
	// that runs in stages (schmp.Staged), it counts only in the final
	// stage.
	Target    float64
	HasTarget bool
	// ReportEvery is the number of rounds between two objective reports.
	ReportEvery int
	// JoinTimeout bounds the wait for the workers and the scheduler.
	JoinTimeout time.Duration
	// Timeout bounds every other wait: a round's partials, a plan.
	Timeout time.Duration
	// Metrics, if set, is the path of the metrics CSV.
	Metrics string
	// Out, if set, is the path the model is written to (WriteModel), or
	// what the app's schmp.Outputter makes its files' paths of. The model's
	// files and the metrics CSV are created before the job starts and
	// committed together once it has stopped, all or none (DESIGN "Outputs and inputs").
	Out string
	// Progress, if set, receives a progress line every ProgressEvery.
	Progress      io.Writer
	ProgressEvery time.Duration
	// Logger receives the node's log; nil discards it.
	Logger *slog.Logger
	// Monitor, if set, receives the node's metrics.
	Monitor *monitor.Metrics
	// Manifest is the job's: the coordinator refuses a role whose manifest
	// differs from it (protocol.Manifest.Check; a data fingerprint that
	// differs from Data, or, without Data, from the first role's), with a
	// message that names the role and the field, and then fails the job
	// (ErrManifest), which would otherwise wait for that role. It sends
	// every role it accepts the Settings. A Version of 0 means
	// protocol.Version.
	Manifest protocol.Manifest
	// Claimed, if set, is called once the coordinator holds the job's
	// name, having found no other coordinator of it (DESIGN "Roles, subjects and messages"), and
	// answers joins: a caller that starts the job's nodes itself (job.Run)
	// starts them then, so that they cannot join another job of the name.
	Claimed func()
	// Private says that no other process can reach the NATS server: an
	// embedded one without a TCP listener (job.Run's default), whose only
	// clients are this process's nodes. The coordinator then knows, without
	// asking, that no other coordinator runs a job of its name, and skips
	// the presence probe (DESIGN "Roles, subjects and messages"), which waits at least 100 ms for
	// answers.
	Private bool
	// CheckpointEvery, when > 0, takes a checkpoint of every
	// CheckpointEvery-th round (DESIGN "Checkpoints"), at every depth: every role
	// stores its state (schmp.Snapshotter) at the checkpoint's cut in the
	// job's checkpoint store on the NATS server's JetStream (package
	// checkpoint), in the background, and the coordinator commits it once
	// every piece is in. The rounds do not wait for it, and the model is
	// the same with or without checkpoints. It needs JetStream on the
	// server and an app whose roles are all Snapshotters; a checkpoint
	// still being stored when the next is due makes the next one skipped.
	CheckpointEvery uint64
	// CheckpointInterval, when > 0, takes a checkpoint at the first round
	// decided at least that long after the last one began (or the job
	// started), with CheckpointEvery or instead of it; a checkpoint of
	// round C is decided when the plan of round C+1 is asked for. Which
	// rounds that is depends on timing; the model does not.
	CheckpointInterval time.Duration
	// CheckpointKeep is how many committed checkpoints are kept; 0 means
	// DefaultCheckpointKeep.
	CheckpointKeep int
	// Resume resumes the job from its last checkpoint committed, instead
	// of starting it: every role restores its state from its piece, and
	// the rounds go on after the checkpoint's, so that the job ends with
	// the model it would have ended with had it not been stopped, bit for
	// bit. The job's settings, data, app and numbers of workers and
	// scheduler parts must be the checkpoint's.
	Resume bool
	// Heartbeat is how often every node sends a heartbeat, and LostAfter
	// how long a node that sends none is waited for before it is taken
	// for lost (DESIGN "Checkpoints"): a worker or scheduler part then fails the job
	// at once, naming it, and a coordinator lost makes the others stop. 0
	// means protocol.DefaultHeartbeat and DefaultLostAfter; a negative
	// Heartbeat sends none (only the round deadlines, Timeout, then find
	// a lost node).
	Heartbeat, LostAfter time.Duration
	// Spares is how many spare workers, and how many spare scheduler
	// parts, the coordinator admits beyond the job's places (DESIGN "Spares and replacement"):
	// a spare joins, loads nothing and waits; when a node is lost
	// (Heartbeat), a spare of its role takes its place and the job goes
	// back to its last checkpoint (CheckpointEvery) and on, to the model
	// it would have ended with. Without a spare, or a checkpoint, a lost
	// node fails the job.
	Spares int
}

// Checkpointing reports whether the job takes checkpoints
// (CheckpointEvery or CheckpointInterval).
func (o *Options) Checkpointing() bool { return o.CheckpointEvery > 0 || o.CheckpointInterval > 0 }

// DefaultCheckpointKeep is how many checkpoints are kept by default.
const DefaultCheckpointKeep = 2

// Validate reports the first bad option, as a *schmp.FieldError.
func (o *Options) Validate() error {
	switch {
	case o.Workers < 1:
		return schmp.Fieldf("Workers", "must be at least 1, got %d", o.Workers)
	case o.Schedulers < 0:
		return schmp.Fieldf("Schedulers", "must be at least 1, got %d", o.Schedulers)
	case o.Depth < 0 || o.Depth > MaxDepth:
		return schmp.Fieldf("Depth", "must be in [1, %d], got %d", MaxDepth, o.Depth)
	case o.Tol < 0 || math.IsNaN(o.Tol):
		return schmp.Fieldf("Tol", "must be >= 0, got %v", o.Tol)
	case o.RiseTol < 0 || math.IsNaN(o.RiseTol) || math.IsInf(o.RiseTol, 0):
		return schmp.Fieldf("RiseTol", "must be finite and >= 0, got %v", o.RiseTol)
	case o.HasTarget && (math.IsNaN(o.Target) || math.IsInf(o.Target, 0)):
		return schmp.Fieldf("Target", "must be finite, got %v", o.Target)
	case o.TimeLimit < 0:
		return schmp.Fieldf("TimeLimit", "must be >= 0, got %v", o.TimeLimit)
	case o.ReportEvery < 1:
		return schmp.Fieldf("ReportEvery", "must be at least 1, got %d", o.ReportEvery)
	case o.Spares < 0:
		return schmp.Fieldf("Spares", "must be >= 0, got %d", o.Spares)
	case o.CheckpointKeep < 0:
		return schmp.Fieldf("CheckpointKeep", "must be >= 0, got %d", o.CheckpointKeep)
	case o.CheckpointInterval < 0:
		return schmp.Fieldf("CheckpointInterval", "must be >= 0, got %v", o.CheckpointInterval)
	}
	return nil
}

// MaxDepth is the largest Depth.
const MaxDepth = pipeline.MaxDepth

// pipeline returns the rules' part of the options, filled.
func (o *Options) pipeline() pipeline.Config {
	return pipeline.Config{
		Workers: o.Workers, Parts: o.Schedulers, Depth: o.Depth, ReportEvery: o.ReportEvery,
		MaxRounds: o.MaxRounds, TimeLimit: o.TimeLimit, Tol: o.Tol, RiseTol: o.RiseTol,
		Target: o.Target, HasTarget: o.HasTarget, Timeout: o.Timeout,
	}
}

func (o *Options) fill() {
	o.Schedulers = max(o.Schedulers, 1)
	if o.Manifest.Version == 0 {
		o.Manifest.Version = protocol.Version
	}
	o.Depth = max(o.Depth, 1)
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CheckpointKeep == 0 {
		o.CheckpointKeep = DefaultCheckpointKeep
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = protocol.DefaultHeartbeat
	}
	if o.LostAfter <= 0 {
		o.LostAfter = max(protocol.DefaultLostAfter, 3*o.Heartbeat)
	}
}
