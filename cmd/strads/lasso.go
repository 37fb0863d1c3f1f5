package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/wire"
)

// runLasso runs a whole Lasso job in this process.
func runLasso(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lasso", flag.ContinueOnError)
	lf := addLassoFlags(fs)
	rf := addRunFlags(fs)
	if err := parse(fs, args, stdout, "strads lasso --data FILE [--lambda L | --lambda-ratio R] [flags]"); err != nil {
		return err
	}
	cfg, err := lf.config(rf.workers)
	if err != nil {
		return err
	}
	opts, err := rf.options(stderr)
	if err != nil {
		return err
	}
	if err := wire.CheckJob(rf.job); err != nil {
		return usageError{err}
	}
	if err := checkData(cfg.Data); err != nil {
		return err
	}
	log := rf.logger(stderr)
	mon, stop, err := rf.serve(stderr, log)
	if err != nil {
		return err
	}
	defer stop()
	res, err := job.Run(ctx, lasso.Program(cfg), job.Options{
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

// checkData reads the whole data file once, so that bad input is reported
// with its file and line before any role starts.
func checkData(path string) error {
	err := libsvm.Read(path, func(int, libsvm.Row) error { return nil })
	var pe *libsvm.ParseError
	if errors.As(err, &pe) {
		return usageError{pe}
	}
	if err != nil {
		return usageError{err}
	}
	return nil
}

// printResult prints the line that ends a successful job.
func printResult(w io.Writer, res *coordinator.Result) {
	fmt.Fprintf(w, "objective %.12g  gap %.3g  nnz %d  rounds %d  updates %d  time %.3fs  (%s)\n",
		res.Final.Objective, res.Final.Gap, res.Final.NNZ, res.Rounds, res.Updates, res.Elapsed.Seconds(), res.Reason)
	res.WriteSummary(w)
}
