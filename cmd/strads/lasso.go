package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/schmp"
)

func init() {
	register("lasso", appCommand{
		summary: "L1-regularized least squares",
		job:     runLasso,
		role:    runLassoRole,
		gen:     genLasso,
	})
}

// layoutFlags are the flags of the data layout, shared by the Lasso and
// logistic regression.
type layoutFlags struct {
	layout    string
	roundWork int
}

func addLayoutFlags(fs *flag.FlagSet) *layoutFlags {
	f := &layoutFlags{}
	fs.StringVar(&f.layout, "layout", "auto", "how the data are split among the workers: cols (each worker owns columns with all rows, many updates per round), rows (each worker owns rows), or auto (cols, but rows with --depth or --schedulers above 1, which the columns do not run)")
	fs.IntVar(&f.roundWork, "round-work", 0, "column layout: the work of a worker's block per round, in non-zeros (0: 2^24, a sweep of every column of most data sets)")
	return f
}

// resolve returns the layout for the runtime's flags: the flag's; for auto,
// the columns, but rows when the job pipelines (--depth or --schedulers
// above 1, which only the row layout does). A regularization path (regPath)
// runs in the columns only.
func (f *layoutFlags) resolve(rf *runFlags, regPath bool) (lasso.Layout, error) {
	l, auto, err := lasso.ParseLayout(f.layout)
	if err != nil {
		return l, usageError{err}
	}
	if f.roundWork < 0 {
		return l, usagef("--round-work must be >= 0, got %d", f.roundWork)
	}
	if regPath {
		switch {
		case !auto && l != lasso.LayoutColumns:
			return l, usagef("--lambda-path runs in the column layout only: use --layout cols or auto, not %s", l)
		case rf.depth > 1 || rf.schedulers > 1:
			return l, usagef("--lambda-path runs in the column layout, which takes one scheduler and --depth 1 (got --schedulers %d --depth %d)", rf.schedulers, rf.depth)
		}
		return lasso.LayoutColumns, nil
	}
	if auto && (rf.depth > 1 || rf.schedulers > 1) {
		return lasso.LayoutRows, nil
	}
	return l, nil
}

// lassoSetup parses the flags of a Lasso command. It reads the data only
// for the layout's sake (see resolve) and the test data of the roles that
// evaluate it: the roles that read the data check it as they load it, and
// bad input there fails the job with a *libsvm.ParseError, which the
// command reports as bad input (exit status 2) before writing anything.
func lassoSetup(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, synopsis, role string) (lasso.Config, *runFlags, coordinator.Options, error) {
	lf := addLassoFlags(fs)
	lay := addLayoutFlags(fs)
	rf := addRunFlags(fs)
	setFlag(fs, "workers", "1", workersUsage)
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
	if role != "coordinator" {
		if err := checkOpen(cfg.Data); err != nil {
			return cfg, nil, opts, err
		}
	}
	if cfg.Test != "" && (role == "" || role == "coordinator") {
		if err := checkData(cfg.Test); err != nil {
			return cfg, nil, opts, err
		}
	}
	if cfg.Layout, err = lay.resolve(rf, cfg.Path > 0); err != nil {
		return cfg, nil, opts, err
	}
	cfg.RoundWork = lay.roundWork
	if cfg.Layout == lasso.LayoutColumns {
		if err := columnOptions(fs, rf, &opts); err != nil {
			return cfg, nil, opts, err
		}
	}
	if err := checkPathFlags(cfg.Path, rf); err != nil {
		return cfg, nil, opts, err
	}
	if cfg.Path > 0 {
		opts.Out = "" // the command writes the path's files
	}
	return cfg, rf, opts, nil
}

// lassoJob is a Lasso job as the command runs it: the program, whose
// coordinator it keeps in the column layout, and what it writes once the
// job is done.
type lassoJob struct {
	cfg     lasso.Config
	workers int
	out     string                // --out: with --lambda-path, the prefix of the path's files
	cols    *lasso.ColCoordinator // nil until the coordinator is made, and on other roles
}

// colProgram returns the job's program in the column layout; its
// coordinator is kept in j.
func (j *lassoJob) colProgram() schmp.Program[lasso.ColPlan, lasso.ColPartial, lasso.ColUpdate, lasso.ColSummary] {
	prog := lasso.ColumnProgram(j.cfg, j.workers)
	prog.NewCoordinator = func(context.Context) (schmp.Coordinator[lasso.ColPlan, lasso.ColPartial, lasso.ColUpdate, lasso.ColSummary], error) {
		j.cols = lasso.NewColCoordinator(j.cfg)
		return j.cols, nil
	}
	return prog
}

// path returns the job's regularization path, nil for a job of one λ or on
// a role other than the coordinator.
func (j *lassoJob) path() *lasso.Path {
	if j.cols == nil {
		return nil
	}
	return j.cols.Path()
}

// print prints the end of a run: the runtime's lines, then the path's table.
func (j *lassoJob) print(w io.Writer, res *coordinator.Result) {
	printResult(w, res)
	printPath(w, j.path())
}

// run runs the job (role "") or one role of it, then writes the path's
// files.
func (j *lassoJob) run(ctx context.Context, role string, rf *runFlags, opts coordinator.Options, stdout, stderr io.Writer) error {
	var err error
	if j.cfg.Layout == lasso.LayoutColumns {
		err = runProgram(ctx, role, j.colProgram(), rf, opts, stdout, stderr, j.print)
	} else {
		err = runProgram(ctx, role, lasso.Program(j.cfg), rf, opts, stdout, stderr, printResult)
	}
	if err != nil {
		return err
	}
	return writePath(j.out, j.path())
}

// columnOptions checks the runtime's flags for the column layout and sets
// its options: one scheduler and --depth 1, since a worker's rounds update
// its own columns one after another; a report every round unless
// --report-every is given, since a round is many sweeps and a report one
// pass over the data; and the tolerance of a rise of the objective, which
// the line search of the merge makes rounding only.
func columnOptions(fs *flag.FlagSet, rf *runFlags, opts *coordinator.Options) error {
	if rf.schedulers != 1 || rf.depth != 1 {
		return usagef("--layout cols takes one scheduler and --depth 1 (got --schedulers %d --depth %d): a worker's rounds update its own columns one after another; use --layout rows to pipeline", rf.schedulers, rf.depth)
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "report-every" })
	if !given {
		opts.ReportEvery = 1
	}
	opts.RiseTol = monotoneRiseTol
	return nil
}

// workersUsage is the usage of --workers for the Lasso and logistic
// regression, whose default is one worker: on one machine several workers
// of the column layout only share its cores, and their merged changes
// converge in more rounds (bench/RESULTS.md).
const workersUsage = "number of workers: one is the fastest on one machine; more for data spread over machines, or n ≫ p data in the row layout"

// monotoneRiseTol is the rise of the objective, relative, that a job whose
// every round provably lowers it tolerates before it fails: rounding only.
const monotoneRiseTol = 1e-9

// runLasso runs a whole Lasso job in this process.
func runLasso(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lasso", flag.ContinueOnError)
	cfg, rf, opts, err := lassoSetup(fs, args, stdout, stderr, "strads lasso --data FILE [--lambda L | --lambda-ratio R] [--lambda-path K] [flags]", "")
	if err != nil {
		return err
	}
	j := &lassoJob{cfg: cfg, workers: rf.workers, out: rf.out}
	return j.run(ctx, "", rf, opts, stdout, stderr)
}

// runLassoRole runs one role of a Lasso job.
func runLassoRole(ctx context.Context, role string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(role, flag.ContinueOnError)
	addAppFlag(fs)
	cfg, rf, opts, err := lassoSetup(fs, args, stdout, stderr, fmt.Sprintf("strads %s --app lasso --nats URL --job NAME [flags]", role), role)
	if err != nil {
		return err
	}
	if err := checkRole(rf); err != nil {
		return err
	}
	j := &lassoJob{cfg: cfg, workers: rf.workers, out: rf.out}
	return j.run(ctx, role, rf, opts, stdout, stderr)
}

// checkData reads the whole data file once, so that bad input is reported
// with its file and line before the job starts.
func checkData(path string) error {
	return dataError(libsvm.Read(path, func(int, libsvm.Row) error { return nil }))
}

// checkOpen checks that the data file at path can be opened: the roles
// that load it check the rest.
func checkOpen(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return usageError{fmt.Errorf("--data: %w", err)}
	}
	return f.Close()
}

// dataError makes an error of reading data a usage error (exit status 2).
func dataError(err error) error {
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
