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
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/libsvm"
)

// lassoApp is the Lasso's command: strads lasso, and its roles.
func lassoApp() cli.App {
	return cli.App{
		Name:     "lasso",
		Summary:  "L1-regularized least squares",
		Synopsis: "--data FILE [--lambda L | --lambda-ratio R] [--lambda-path K] [flags]",
		Flags:    lassoCommand,
		PerRole:  []string{"data", "test"},
		Parts:    []string{"data"},
	}
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
	fs.IntVar(&f.roundWork, "round-work", 0, "column layout: bounds a worker's coordinate descent in a round, in non-zeros visited, at a multiple of this (0: 2^24)")
	return f
}

// resolve returns the layout for the runtime's flags: the flag's; for auto,
// the columns, but rows when the job pipelines (--depth or --schedulers
// above 1, which only the row layout does). A regularization path (regPath)
// runs in the columns only.
func (f *layoutFlags) resolve(opts *coordinator.Options, regPath bool) (lasso.Layout, error) {
	l, auto, err := lasso.ParseLayout(f.layout)
	if err != nil {
		return l, cli.Usagef("--layout: %v", err)
	}
	if f.roundWork < 0 {
		return l, cli.Usagef("--round-work must be >= 0, got %d", f.roundWork)
	}
	if regPath {
		switch {
		case !auto && l != lasso.LayoutColumns:
			return l, cli.Usagef("--lambda-path runs in the column layout only: use --layout cols or auto, not %s", l)
		case opts.Depth > 1 || opts.Schedulers > 1:
			return l, cli.Usagef("--lambda-path runs in the column layout, which takes one scheduler and --depth 1 (got --schedulers %d --depth %d)", opts.Schedulers, opts.Depth)
		}
		return lasso.LayoutColumns, nil
	}
	if auto && (opts.Depth > 1 || opts.Schedulers > 1) {
		return lasso.LayoutRows, nil
	}
	return l, nil
}

// lassoCommand adds the Lasso's flags to fs and returns the function that
// makes its job. It reads the data only for the layout's sake (see
// resolve) and the test data of the roles that evaluate it: the roles that
// read the data check it as they load it, and bad input there fails the
// job with a *libsvm.ParseError, which the command reports as bad input
// (exit status 2) before writing anything.
func lassoCommand(fs *flag.FlagSet) func(*cli.Env) (*cli.Job, error) {
	lf := addLassoFlags(fs)
	lay := addLayoutFlags(fs)
	setLinearDefaults(fs)
	return func(env *cli.Env) (*cli.Job, error) {
		opts := env.Options
		cfg, err := lf.config(opts.Workers)
		if err != nil {
			return nil, err
		}
		if env.Role != cli.Coordinator {
			if err := checkOpen(cfg.Data); err != nil {
				return nil, err
			}
		}
		if cfg.Test != "" && env.Role.Has(cli.Coordinator) {
			if err := checkData(cfg.Test); err != nil {
				return nil, err
			}
		}
		if cfg.Layout, err = lay.resolve(opts, cfg.Path > 0); err != nil {
			return nil, err
		}
		cfg.RoundWork = lay.roundWork
		if env.Role.Has(cli.Coordinator) && cfg.Layout == lasso.LayoutColumns && cfg.Lambda == 0 && cfg.LambdaRatio == 0 {
			// The coordinator would find it out only once the data are read.
			return nil, cli.Usagef("the penalty is required: give --lambda-ratio R > 0 (λ = R·λ_max; 0.01 to 0.1 are typical) or --lambda L > 0")
		}
		if cfg.Layout == lasso.LayoutColumns {
			if err := columnOptions(fs, opts); err != nil {
				return nil, err
			}
		}
		if err := checkPathFlags(cfg.Path, opts); err != nil {
			return nil, err
		}
		if err := checkCV(lf.cv, cfg.Path, env.Role); err != nil {
			return nil, err
		}
		j := &lassoJob{cfg: cfg, workers: opts.Workers, out: opts.Out,
			cv: cvRun{folds: lf.cv, seed: lf.sched.seed, opts: foldOptions(opts), w: env.Stdout}}
		if cfg.Path > 0 {
			opts.Out = "" // the command writes the path's files
		}
		return j.job(env.Role), nil
	}
}

// lassoJob is a Lasso job as the command runs it: the program, and what it
// writes once the job is done.
type lassoJob struct {
	cfg     lasso.Config
	workers int
	out     string // --out: with --lambda-path, the prefix of the path's files
	cv      cvRun
}

// lassoPath returns the regularization path of a job's result, nil for a
// job of one λ, in the row layout, or without a result.
func lassoPath(res *coordinator.Result) *lasso.Path {
	if res == nil {
		return nil
	}
	if c, ok := res.App.(*lasso.ColCoordinator); ok {
		return c.Path()
	}
	return nil
}

// print prints the end of a run: the runtime's lines, the penalty, then
// the path's table.
func (j *lassoJob) print(w io.Writer, res *coordinator.Result) {
	cli.PrintResult(w, res)
	if c, ok := res.App.(interface {
		Lambda() float64
		LambdaMax() float64
	}); ok {
		fmt.Fprintf(w, "λ %.6g (λ_max %.6g)\n", c.Lambda(), c.LambdaMax())
	}
	printPath(w, lassoPath(res))
}

// job returns the job as role runs it: once it is done, the coordinator
// writes the path's files.
func (j *lassoJob) job(role cli.Role) *cli.Job {
	var job *cli.Job
	if j.cfg.Layout == lasso.LayoutColumns {
		job = cli.NewJob(lasso.ColumnProgram(j.cfg, j.workers))
		job.Print = j.print
	} else {
		job = cli.NewJob(lasso.Program(j.cfg))
		job.Print = j.print
	}
	if role != cli.Coordinator {
		job.Data = j.cfg.Data
	}
	job.Done = func(ctx context.Context, res *coordinator.Result, err error) error {
		if err != nil {
			return err
		}
		return j.cv.writePath(ctx, j.out, j.cfg.Data, lassoPath(res), "mse", j.fold)
	}
	return job
}

// fold runs a fold's path job of --cv (a foldRun) and returns its test
// mean squared error at every step.
func (j *lassoJob) fold(ctx context.Context, train, test string, start, last float64) ([]float64, error) {
	cfg := j.cfg
	cfg.Data, cfg.Test, cfg.Lambda, cfg.LambdaRatio, cfg.PathStart = train, test, last, 0, start
	res, err := job.Run(ctx, lasso.ColumnProgram(cfg, j.workers), job.Options{Job: "lasso-cv", Coordinator: j.cv.opts, Timeout: j.cv.opts.Timeout, Logger: quietLogger})
	if err != nil {
		return nil, err
	}
	return foldErrors(lassoPath(res), cfg.Path, "test_mse", func(v float64) float64 { return v })
}

// columnOptions checks the runtime's flags for the column layout and sets
// its options: one scheduler and --depth 1, since a worker's rounds update
// its own columns one after another; a report every round unless
// --report-every is given, since a round is many sweeps and a report one
// pass over the data; and the tolerance of a rise of the objective, which
// the line search of the merge makes rounding only.
func columnOptions(fs *flag.FlagSet, opts *coordinator.Options) error {
	if opts.Schedulers != 1 || opts.Depth != 1 {
		return cli.Usagef("--layout cols takes one scheduler and --depth 1 (got --schedulers %d --depth %d): a worker's rounds update its own columns one after another; use --layout rows to pipeline", opts.Schedulers, opts.Depth)
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
// regression, whose default is one worker: on one machine two or four
// workers of the column layout fit p ≫ n data faster (DESIGN "The column layout"), one is
// the fastest on n ≫ p, where the job is the read (bench/RESULTS.md, "Two
// workers against one").
const workersUsage = "number of workers: on one machine 2 (to 4) fit p ≫ n data faster than 1, 1 is the fastest on n ≫ p; more for data spread over machines"

// monotoneRiseTol is the rise of the objective, relative, that a job whose
// every round provably lowers it tolerates before it fails: rounding only.
const monotoneRiseTol = 1e-9

// checkData reads the whole data file once, so that bad input is reported
// with its file and line before the job starts.
func checkData(path string) error {
	return dataError(libsvm.Read(path, func(int, libsvm.Row) error { return nil }))
}

// checkOpen checks that the data file at path can be opened: the roles
// that load it check the rest. A data set read in parts (a worker's
// inputfile.Remote) is not fetched for it.
func checkOpen(path string) error {
	if _, ok := inputfile.RemoteOf(path); ok {
		return nil
	}
	f, err := inputfile.Open(path)
	if err != nil {
		return cli.UsageError(fmt.Errorf("--data: %w", err))
	}
	return f.Close()
}

// dataError makes an error of reading data a usage error (exit status 2).
func dataError(err error) error {
	var pe *libsvm.ParseError
	if errors.As(err, &pe) {
		return cli.UsageError(pe)
	}
	return cli.UsageError(err)
}

// genLasso writes a synthetic Lasso data set.
func genLasso(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen lasso", flag.ContinueOnError)
	c := defaultGenConfig()
	addGenFlags(fs, &c, "standard deviation of the noise added to y")
	out := fs.String("o", "", "output `file` (LIBSVM format)")
	if err := cli.Parse(fs, args, stdout, "strads gen lasso [flags] -o FILE"); err != nil {
		return err
	}
	if *out == "" {
		return cli.Usagef("-o FILE is required")
	}
	if err := c.Validate(); err != nil {
		return cli.FlagError(fs, nil, err)
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
