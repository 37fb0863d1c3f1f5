package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

// runRole runs one role of a job against a NATS server.
func runRole(ctx context.Context, role string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(role, flag.ContinueOnError)
	app := fs.String("app", "lasso", "the app whose role to run (lasso)")
	lf := addLassoFlags(fs)
	rf := addRunFlags(fs)
	if err := parse(fs, args, stdout, fmt.Sprintf("strads %s --nats URL --job NAME [--app lasso] [flags]", role)); err != nil {
		return err
	}
	if *app != "lasso" {
		return usagef("--app %q: the roles know the app lasso", *app)
	}
	if rf.nats == "" {
		return usagef("--nats URL is required: a role joins a job through a NATS server")
	}
	if err := wire.CheckJob(rf.job); err != nil {
		return usageError{err}
	}
	cfg, err := lf.config(rf.workers)
	if err != nil {
		return err
	}
	opts, err := rf.options(stderr)
	if err != nil {
		return err
	}
	if role != "coordinator" {
		if err := checkData(cfg.Data); err != nil {
			return err
		}
	}
	nc, err := wire.Connect(rf.nats, "strads-"+role, 10*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	c, err := wire.NewConn(nc, rf.job)
	if err != nil {
		return usageError{err}
	}
	log := rf.logger(stderr)
	mon, stop, err := rf.serve(stderr, log)
	if err != nil {
		return err
	}
	defer stop()
	if mon != nil {
		if err := mon.AddConn(role, nc); err != nil {
			return err
		}
	}
	prog := lasso.Program(cfg)
	switch role {
	case "scheduler":
		return scheduler.Run(ctx, c, prog.NewScheduler, scheduler.NodeOptions{JoinTimeout: rf.joinTimeout, Timeout: rf.timeout, Logger: log, Monitor: mon})
	case "worker":
		return worker.Run(ctx, c, prog.NewWorker, worker.Options{JoinTimeout: rf.joinTimeout, Timeout: rf.timeout, Logger: log, Monitor: mon})
	}
	opts.Logger, opts.Monitor = log, mon
	res, err := coordinator.Run(ctx, c, prog.NewCoordinator, opts)
	if err != nil {
		return err
	}
	printResult(stdout, res)
	return nil
}
