package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

// addAppFlag adds --app to the flags of a role command, where the app's
// own flags are; the command dispatches on it before parsing (appFlag).
func addAppFlag(fs *flag.FlagSet) {
	fs.String("app", "lasso", "the app whose role to run")
}

// checkRole checks the flags that every role needs.
func checkRole(rf *runFlags) error {
	if rf.nats == "" {
		return usagef("--nats URL is required: a role joins a job through a NATS server")
	}
	if err := wire.CheckJob(rf.job); err != nil {
		return usageError{err}
	}
	return nil
}

// runNode runs one role of prog's job against the NATS server of rf. The
// coordinator prints the result with printResult.
func runNode[P, R, U, S any](ctx context.Context, role string, prog schmp.Program[P, R, U, S], rf *runFlags, opts coordinator.Options, stdout, stderr io.Writer, printResult func(io.Writer, *coordinator.Result)) error {
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
	switch role {
	case "scheduler":
		return scheduler.Run(ctx, c, prog.NewScheduler, scheduler.NodeOptions{JoinTimeout: rf.joinTimeout, Timeout: rf.timeout, Logger: log, Monitor: mon})
	case "worker":
		return worker.Run(ctx, c, prog.NewWorker, worker.Options{JoinTimeout: rf.joinTimeout, Timeout: rf.timeout, Logger: log, Monitor: mon})
	case "coordinator":
		opts.Logger, opts.Monitor = log, mon
		res, err := coordinator.Run(ctx, c, prog.NewCoordinator, opts)
		if err != nil {
			return err
		}
		printResult(stdout, res)
		return nil
	}
	return fmt.Errorf("no role %q", role)
}

// runAll runs a whole job of prog in this process, as rf says, and prints
// its result with printResult.
func runAll[P, R, U, S any](ctx context.Context, prog schmp.Program[P, R, U, S], rf *runFlags, opts coordinator.Options, stdout, stderr io.Writer, printResult func(io.Writer, *coordinator.Result)) error {
	if err := wire.CheckJob(rf.job); err != nil {
		return usageError{err}
	}
	log := rf.logger(stderr)
	mon, stop, err := rf.serve(stderr, log)
	if err != nil {
		return err
	}
	defer stop()
	res, err := job.Run(ctx, prog, job.Options{
		Job:         rf.job,
		NATS:        rf.nats,
		Coordinator: opts,
		Timeout:     rf.timeout,
		Logger:      log,
		Monitor:     mon,
	})
	if err != nil {
		return err
	}
	printResult(stdout, res)
	return nil
}

// runProgram runs prog as a whole job on this machine (role "", as runAll)
// or one role of it (as runNode).
func runProgram[P, R, U, S any](ctx context.Context, role string, prog schmp.Program[P, R, U, S], rf *runFlags, opts coordinator.Options, stdout, stderr io.Writer, printResult func(io.Writer, *coordinator.Result)) error {
	if role == "" {
		return runAll(ctx, prog, rf, opts, stdout, stderr, printResult)
	}
	return runNode(ctx, role, prog, rf, opts, stdout, stderr, printResult)
}
