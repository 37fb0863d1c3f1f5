package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/libsvm"
)

func init() {
	register("lasso", appCommand{
		summary: "L1-regularized least squares",
		job:     runLasso,
		role:    runLassoRole,
		gen:     genLasso,
	})
}

// lassoSetup parses the flags of a Lasso command and checks the data.
func lassoSetup(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, synopsis string) (lasso.Config, *runFlags, coordinator.Options, error) {
	lf := addLassoFlags(fs)
	rf := addRunFlags(fs)
	if err := parse(fs, args, stdout, synopsis); err != nil {
		return lasso.Config{}, nil, coordinator.Options{}, err
	}
	cfg, err := lf.config(rf.workers)
	if err != nil {
		return cfg, nil, coordinator.Options{}, err
	}
	opts, err := rf.options(stderr)
	if err != nil {
		return cfg, nil, opts, err
	}
	return cfg, rf, opts, nil
}

// runLasso runs a whole Lasso job in this process.
func runLasso(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lasso", flag.ContinueOnError)
	cfg, rf, opts, err := lassoSetup(fs, args, stdout, stderr, "strads lasso --data FILE [--lambda L | --lambda-ratio R] [flags]")
	if err != nil {
		return err
	}
	if err := checkData(cfg.Data); err != nil {
		return err
	}
	return runAll(ctx, lasso.Program(cfg), rf, opts, stdout, stderr, printResult)
}

// runLassoRole runs one role of a Lasso job.
func runLassoRole(ctx context.Context, role string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(role, flag.ContinueOnError)
	addAppFlag(fs)
	cfg, rf, opts, err := lassoSetup(fs, args, stdout, stderr, fmt.Sprintf("strads %s --app lasso --nats URL --job NAME [flags]", role))
	if err != nil {
		return err
	}
	if err := checkRole(rf); err != nil {
		return err
	}
	if role != "coordinator" {
		if err := checkData(cfg.Data); err != nil {
			return err
		}
	}
	return runNode(ctx, role, lasso.Program(cfg), rf, opts, stdout, stderr, printResult)
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

// printResult prints the end of a run: the objective line, then where the
// time went.
func printResult(w io.Writer, res *coordinator.Result) {
	fmt.Fprintf(w, "objective %.12g  gap %.3g  nnz %d  rounds %d  updates %d  time %.3fs  (%s)\n",
		res.Final.Objective, res.Final.Gap, res.Final.NNZ, res.Rounds, res.Updates, res.Elapsed.Seconds(), res.Reason)
	res.WriteSummary(w)
}

// genLasso writes a synthetic Lasso data set.
func genLasso(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen lasso", flag.ContinueOnError)
	c := defaultGenConfig()
	addGenFlags(fs, &c, "standard deviation of the noise added to y")
	out := fs.String("o", "", "output `file` (LIBSVM format)")
	if err := parse(fs, args, stdout, "strads gen lasso [flags] -o FILE"); err != nil {
		return err
	}
	if *out == "" {
		return usagef("-o FILE is required")
	}
	if err := c.Validate(); err != nil {
		return usageError{err}
	}
	if err := atomicfile.Write(*out, func(w *bufio.Writer) error {
		_, err := lasso.Generate(w, c)
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d samples, %d features\n", *out, c.Samples, c.Features)
	return nil
}
