package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/wire"
)

// Runtime is what a job that runs on its own runtime (NewRunJob) gets of
// the command: connections to the job's NATS server, embedded or --nats,
// and the runtime's flags as the coordinator's options.
type Runtime struct {
	// Dial returns a new connection to the job's server, under the job's
	// subjects and key; the command closes them all when the job ends.
	Dial func(name string) (*wire.Conn, error)
	// Options are the runtime's flags (Workers, MaxRounds, Tol, Target,
	// TimeLimit, ReportEvery, Metrics, Out, Progress, Timeout, …).
	Options coordinator.Options
	// Logger takes warnings, and with --verbose what the nodes do.
	Logger *slog.Logger
	// Stderr takes progress lines.
	Stderr io.Writer
}

// NewRunJob returns the job that run runs, on another runtime than the
// SchMP coordinator's (the parameter server of package ps/node, say). It
// runs as a whole job only: the role commands refuse it. The result it
// returns goes to the job's Print and Done as the coordinator's would.
func NewRunJob(run func(ctx context.Context, rt *Runtime) (*coordinator.Result, error)) *Job {
	return &Job{prog: funcRunner(run)}
}

// funcRunner is the runner of NewRunJob.
type funcRunner func(ctx context.Context, rt *Runtime) (*coordinator.Result, error)

func (f funcRunner) run(ctx context.Context, n *node) (*coordinator.Result, error) {
	if n.role != All {
		return nil, Usagef("this %s job runs as a whole job only, not as role %s", n.app.Name, n.role)
	}
	rf := n.rf
	key := rf.jobKey
	if key.IsZero() && rf.nats != "" {
		key = wire.NewKey()
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
	res, err := f(ctx, &Runtime{Dial: dial, Options: n.opts, Logger: n.log, Stderr: n.stderr})
	if err != nil {
		err = rf.connectError(err)
	}
	return res, err
}
