package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/member"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/wire"
)

// Runtime is what a job that runs on its own runtime (NewRunJob) gets of
// the command: connections to the job's NATS server, embedded or --nats,
// and the runtime's flags as the coordinator's options.
type Runtime struct {
	// Role is what this process runs: All (a whole job), Coordinator,
	// or Worker at Place, of Workers places.
	Role  Role
	Place int
	// Conn is the role's own connection, which it joined the job on
	// (nil for a whole job).
	Conn *wire.Conn
	// Dial returns a new connection to the job's server, under the job's
	// subjects and key; the command closes them all when the job ends.
	Dial func(name string) (*wire.Conn, error)
	// Options are the runtime's flags (Workers, MaxRounds, Tol, Target,
	// TimeLimit, ReportEvery, Metrics, Out, Progress, Timeout,
	// JoinTimeout, …).
	Options coordinator.Options
	// Monitor is the live page's and /metrics' (nil without --http).
	Monitor *monitor.Metrics
	// Logger takes warnings, and with --verbose what the nodes do.
	Logger *slog.Logger
	// Stderr takes progress lines.
	Stderr io.Writer
}

// NewRunJob returns the job that run runs, on another runtime than the
// SchMP coordinator's (the parameter server of package ps/node, say).
// Run sees the role it runs in Runtime.Role: a whole job, or, as the
// role commands start it, the coordinator (which admits the workers,
// answering their joins with the job's settings and their places) or a
// worker (admitted at Runtime.Place, with the coordinator's
// CheckpointEvery and Resume in its Options). It has no scheduler role. The
// result it returns goes to the job's Print and Done as the
// coordinator's would.
func NewRunJob(run func(ctx context.Context, rt *Runtime) (*coordinator.Result, error)) *Job {
	return &Job{prog: funcRunner(run)}
}

// funcRunner is the runner of NewRunJob.
type funcRunner func(ctx context.Context, rt *Runtime) (*coordinator.Result, error)

func (f funcRunner) run(ctx context.Context, n *node) (*coordinator.Result, error) {
	rf := n.rf
	key := rf.jobKey
	rt := &Runtime{Role: n.role, Conn: n.c, Options: n.opts, Monitor: n.mon, Logger: n.log, Stderr: n.stderr}
	switch n.role {
	case All:
		if key.IsZero() && rf.nats != "" {
			key = wire.NewKey()
		}
	case Worker:
		// Its place and the job's checkpoints are all it takes of the
		// admission: the job's heartbeats are its own (package ps/node).
		rep := n.entry.Reply
		rt.Place = rep.Shard
		rt.Options.CheckpointEvery, rt.Options.Resume = rep.CheckpointEvery, rep.ResumeLast
		n.entry.Close()
	case Coordinator:
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop, err := admit(n, cancel)
		if err != nil {
			return nil, err
		}
		defer stop()
	default:
		return nil, Usagef("this %s job has no %s role: start a coordinator and --workers workers", n.app.Name, n.role)
	}
	dial, closeAll, err := job.Dial(job.Options{
		Key: key, Job: rf.job, NATS: rf.nats, NATSOptions: rf.natsOptions(), Listen: rf.natsListen, Store: rf.store,
		Listening: func(url string) { fmt.Fprintf(n.stderr, "embedded nats-server listening on %s\n", url) },
		Logger:    n.log, Monitor: n.mon,
	})
	if err != nil {
		return nil, rf.connectError(err)
	}
	defer closeAll()
	rt.Dial = dial
	res, err := f(ctx, rt)
	if err != nil {
		err = rf.connectError(err)
	}
	return res, err
}

// admit answers the joins of the workers of a coordinator's job (n's
// manifest, Options.Workers places): each gets its place and the job's
// settings; a worker whose manifest differs is refused, and fails the job
// (fail), which would wait for it in vain; any scheduler is refused. It
// returns the function that stops it.
func admit(n *node, fail context.CancelCauseFunc) (stop func(), err error) {
	roster := member.NewRoster(n.opts.Manifest, n.opts.Workers, 0, 0)
	run := nuid.Next()
	// decide alone reads and writes the roster, on the one goroutine of
	// the joins' subscription.
	decide := func(req protocol.JoinRequest) (rep protocol.JoinReply, then func()) {
		role := cmp.Or(req.Role, protocol.RoleWorker)
		if role != protocol.RoleWorker {
			rep.Err = fmt.Sprintf("this %s job has no %s role: it runs a coordinator and %d workers", n.app.Name, role, n.opts.Workers)
			return rep, nil
		}
		a := roster.Join(req, run)
		switch a.Verdict {
		case member.Admitted:
			rep.Run, rep.Shard, rep.Shards, rep.Settings = run, a.Place, n.opts.Workers, n.opts.Manifest.Settings
			rep.Checkpoints, rep.CheckpointEvery, rep.ResumeLast = n.opts.CheckpointEvery > 0, n.opts.CheckpointEvery, n.opts.Resume
		case member.Mismatch:
			rep.Err, rep.Mismatch = a.Err.Error(), true
			then = func() { fail(protocol.Mismatch(fmt.Errorf("coordinator: refused %w", a.Err))) }
		default:
			rep.Err = fmt.Sprintf("the job already has its %d workers", n.opts.Workers)
		}
		return rep, then
	}
	drop := func(msg *nats.Msg, reason string, err error) {
		n.mon.Drop(string(Coordinator), reason)
		n.log.Debug("message dropped", "subject", msg.Subject, "reason", reason, "err", err)
	}
	sub, err := member.ServeJoins(n.c, decide, drop, n.log)
	if err != nil {
		return nil, err
	}
	return func() { sub.Unsubscribe() }, nil
}
