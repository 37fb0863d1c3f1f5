package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/apps/logreg"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/job"
)

// logregApp is the logistic regression's command: strads logreg, and its
// roles.
func logregApp() cli.App {
	return cli.App{
		Name:     "logreg",
		Summary:  "L1-regularized logistic regression",
		Synopsis: "--data FILE (--lambda L | --lambda-ratio R | --C C) [--lambda-path K] [flags]",
		Flags:    logregCommand,
		PerRole:  []string{"data", "test", "predict"},
		Outputs:  []string{"predict"},
		Parts:    []string{"data"},
	}
}

// logregFlags are the flags of the logistic regression app, shared by all
// its roles.
type logregFlags struct {
	fs      *flag.FlagSet
	cfg     logreg.Config
	sched   *scheduleFlags
	ps      *psFlags
	predict string
	cv      int
}

func addLogregFlags(fs *flag.FlagSet) *logregFlags {
	f := &logregFlags{fs: fs}
	fs.StringVar(&f.cfg.Data, "data", "", "LIBSVM `file` of training samples, labels 0/1 or -1/+1; every role reads its own copy")
	fs.StringVar(&f.cfg.Test, "test", "", "LIBSVM `file` of test samples: the metrics report their accuracy")
	fs.Float64Var(&f.cfg.Lambda, "lambda", 0, "L1 penalty λ of (1/n)Σ log(1 + exp(−y_i·(x_i·w + b))) + λ‖w‖₁")
	fs.Float64Var(&f.cfg.LambdaRatio, "lambda-ratio", 0, "set λ = `r`·λ_max, λ_max = ‖Xᵀ(y01 − c)‖∞/n the smallest λ with w = 0 (c = ȳ with the intercept, ½ with --intercept=false)")
	fs.Float64Var(&f.cfg.C, "C", 0, "set λ = 1/(C·n): liblinear's and scikit-learn's C, for their objective ‖w‖₁ + C·Σ loss")
	fs.BoolVar(&f.cfg.Intercept, "intercept", true, "fit an unpenalized intercept b, as scikit-learn and glmnet do (--intercept=false: b = 0)")
	fs.StringVar(&f.predict, "predict", "", "write P(y = +1 | x) for every sample of --test (or of --data without it) to `file`, as a CSV label,probability: the predicted label, written as the training data writes its classes, and the probability, as strads predict writes them from the model file (with --lambda-path, of the last λ's model)")
	fs.IntVar(&f.cfg.Path, "lambda-path", 0, pathUsage)
	fs.IntVar(&f.cv, "cv", 0, cvUsage)
	f.sched = addScheduleFlags(fs)
	f.ps = addPSFlags(fs)
	return f
}

// checkPredict checks that the directory of --predict exists.
func (f *logregFlags) checkPredict() error {
	if f.predict != "" {
		if st, err := os.Stat(filepath.Dir(f.predict)); err != nil || !st.IsDir() {
			return cli.Usagef("--predict %s: directory %s does not exist", f.predict, filepath.Dir(f.predict))
		}
	}
	return nil
}

// config returns the validated logistic regression config of role for
// workers workers.
func (f *logregFlags) config(role cli.Role, workers int) (logreg.Config, error) {
	cfg := f.roleConfig(role)
	var err error
	if cfg.Schedule, err = f.sched.config(workers); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, cli.FlagError(f.fs, linearFlagNames, err)
	}
	return cfg, f.checkPredict()
}

// roleConfig returns the flags' config as role makes its job from them. A
// worker or a scheduler given no penalty takes the job's when it joins,
// and makes its job again then: until that, it stands in λ_max.
func (f *logregFlags) roleConfig(role cli.Role) logreg.Config {
	cfg := f.cfg
	if !role.Has(cli.Coordinator) && cfg.Lambda == 0 && cfg.LambdaRatio == 0 && cfg.C == 0 {
		cfg.LambdaRatio = 1
	}
	return cfg
}

// logregJob is a logistic regression job as the command runs it: the
// program, whose coordinator it keeps, and what it writes once the job is
// done.
type logregJob struct {
	cfg     logreg.Config
	workers int
	predict string
	out     string // --out: with --lambda-path, the prefix of the path's files
	cv      cvRun
}

// logregCoordinator is what the command asks of the coordinator of either
// layout.
type logregCoordinator interface {
	Lambda() float64
	LambdaMax() float64
	Intercept() float64
	Records() []logreg.Record
	WritePredictions(w io.Writer, path string) error
}

// logregCommand adds the logistic regression's flags to fs and returns the
// function that makes its job. That checks the input that the role reads
// before anything starts: bad input is a usage error naming its file and
// line.
func logregCommand(fs *flag.FlagSet) func(*cli.Env) (*cli.Job, error) {
	lf := addLogregFlags(fs)
	lay := addLayoutFlags(fs)
	setLinearDefaults(fs)
	return func(env *cli.Env) (*cli.Job, error) {
		model, isPS, err := lf.ps.checkMode(given(fs))
		if err != nil {
			return nil, err
		}
		if isPS {
			return logregPSJob(fs, env, lf, lf.ps, model)
		}
		opts := env.Options
		cfg, err := lf.config(env.Role, opts.Workers)
		if err != nil {
			return nil, err
		}
		if _, remote := inputfile.RemoteOf(cfg.Data); env.Role != cli.Coordinator && !remote {
			// The labels only (cheap): the features are checked as the
			// roles load them. A worker that reads its data set in parts
			// (an inputfile.Remote) checks its rows' labels as it loads
			// them, and the coordinator the classes of all.
			if err := logreg.CheckData(cfg.Data); err != nil {
				return nil, cli.UsageError(err)
			}
		}
		if cfg.Layout, err = lay.resolve(opts, cfg.Path > 0); err != nil {
			return nil, err
		}
		cfg.RoundWork = lay.roundWork
		if err := cfg.Validate(); err != nil {
			// Again, with the layout: some settings hold in one only.
			return nil, cli.FlagError(fs, linearFlagNames, err)
		}
		if cfg.Layout == lasso.LayoutColumns {
			if err := columnOptions(fs, opts); err != nil {
				return nil, err
			}
		}
		if env.Role.Has(cli.Coordinator) {
			if cfg.Test != "" {
				if _, _, err := logreg.CheckLabels(cfg.Test); err != nil {
					return nil, cli.UsageError(err)
				}
			}
			if lf.predict != "" && cfg.Test == "" && env.Role == cli.Coordinator {
				if err := logreg.CheckData(cfg.Data); err != nil {
					return nil, cli.UsageError(err)
				}
			}
		}
		if err := checkPathFlags(cfg.Path, opts); err != nil {
			return nil, err
		}
		if err := checkCV(lf.cv, cfg.Path, env.Role); err != nil {
			return nil, err
		}
		j := &logregJob{cfg: cfg, workers: opts.Workers, predict: lf.predict, out: opts.Out,
			cv: cvRun{folds: lf.cv, seed: lf.sched.seed, opts: foldOptions(opts), w: env.Stdout}}
		if cfg.Path > 0 {
			opts.Out = "" // the command writes the path's files
		}
		return j.job(env.Role), nil
	}
}

// job returns the job as role runs it: once it is done, the coordinator
// writes the predictions and the path's files.
func (j *logregJob) job(role cli.Role) *cli.Job {
	var job *cli.Job
	if j.cfg.Layout == lasso.LayoutColumns {
		job = cli.NewJob(logreg.ColumnProgram(j.cfg, j.workers))
	} else {
		job = cli.NewJob(logreg.Program(j.cfg))
	}
	if role != cli.Coordinator {
		job.Data = j.cfg.Data
	}
	job.Print = j.print
	job.Done = func(ctx context.Context, res *coordinator.Result, err error) error {
		if err != nil {
			return err
		}
		return j.finish(ctx, res)
	}
	return job
}

// print prints the end of a run: the runtime's lines, then the accuracy and
// what the step safeguard (rows) or the merges (columns) did.
func (j *logregJob) print(w io.Writer, res *coordinator.Result) {
	cli.PrintResult(w, res)
	c, ok := res.App.(logregCoordinator)
	if !ok {
		return
	}
	fmt.Fprintf(w, "λ %.6g (λ_max %.6g)", c.Lambda(), c.LambdaMax())
	if j.cfg.Intercept {
		fmt.Fprintf(w, "  intercept %.6g", c.Intercept())
	}
	if recs := c.Records(); len(recs) > 0 {
		last := recs[len(recs)-1]
		fmt.Fprintf(w, "  train accuracy %.4f", last.Train)
		if !math.IsNaN(last.Test) {
			fmt.Fprintf(w, "  test accuracy %.4f", last.Test)
		}
	}
	switch c := c.(type) {
	case *logreg.Coordinator:
		g := c.Safeguard()
		fmt.Fprintf(w, "\nsafeguard: %d of %d rounds raised the objective (the most by %.2g of F(0)); joint-step factor θ ≥ %.3g\n",
			g.Rose, g.Rounds, g.MaxRise, g.MinTheta)
	case *logreg.ColCoordinator:
		s := c.Stats()
		fmt.Fprintf(w, "\ncolumn layout: %d rounds changed the model; %d merged by line search (%d with a step below 1, α ≥ %.3g; %d took one worker's change; %d changed nothing)\n",
			s.Rounds, s.Merged, s.Shortened, s.MinAlpha, s.Single, s.Rejected)
		printPath(w, c.Path())
	}
}

// finish writes the outputs that only the command knows: the predictions,
// and a regularization path's files.
func (j *logregJob) finish(ctx context.Context, res *coordinator.Result) error {
	c, ok := res.App.(logregCoordinator)
	if !ok {
		return nil
	}
	if cols, ok := c.(*logreg.ColCoordinator); ok {
		if err := j.cv.writePath(ctx, j.out, j.cfg.Data, cols.Path(), "misclassification", j.fold); err != nil {
			return err
		}
	}
	if j.predict != "" {
		path := j.cfg.Test
		if path == "" {
			path = j.cfg.Data
		}
		if err := atomicfile.Write(j.predict, func(w *bufio.Writer) error {
			return c.WritePredictions(w, path)
		}); err != nil {
			return err
		}
	}
	return nil
}

// fold runs a fold's path job of --cv (a foldRun) and returns its
// misclassification rate at every step.
func (j *logregJob) fold(ctx context.Context, train, test string, start, last float64) ([]float64, error) {
	cfg := j.cfg
	cfg.Data, cfg.Test, cfg.Lambda, cfg.LambdaRatio, cfg.C, cfg.PathStart = train, test, last, 0, 0, start
	res, err := job.Run(ctx, logreg.ColumnProgram(cfg, j.workers), job.Options{Job: "logreg-cv", Coordinator: j.cv.opts, Timeout: j.cv.opts.Timeout, Logger: quietLogger})
	if err != nil {
		return nil, err
	}
	var p *lasso.Path
	if c, ok := res.App.(*logreg.ColCoordinator); ok {
		p = c.Path()
	}
	return foldErrors(p, cfg.Path, "test_accuracy", func(acc float64) float64 { return 1 - acc })
}

// genLogreg writes a synthetic classification data set.
func genLogreg(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen logreg", flag.ContinueOnError)
	var c logreg.GenConfig
	c.GenConfig = defaultGenConfig()
	c.Noise = 0
	addGenFlags(fs, &c.GenConfig, "standard deviation of the noise added to the margin x·w*")
	fs.Float64Var(&c.Bias, "bias", 0, "the true intercept: P(y = +1) = σ(x·w* + bias)")
	labels := fs.String("labels", "pm1", "how labels are written: pm1 (-1/+1) or 01 (0/1)")
	truth := fs.String("truth", "", "also write the true weights w* to `file`, as a CSV index,value of the non-zeros (1-based)")
	out := fs.String("o", "", "output `file` (LIBSVM format)")
	if err := cli.Parse(fs, args, stdout, "strads gen logreg [flags] -o FILE"); err != nil {
		return err
	}
	switch *labels {
	case "pm1":
	case "01":
		c.ZeroOne = true
	default:
		return cli.Usagef("--labels %q: want pm1 or 01", *labels)
	}
	if *out == "" {
		return cli.Usagef("-o FILE is required")
	}
	if err := c.Validate(); err != nil {
		return cli.FlagError(fs, nil, err)
	}
	var w []float64
	if err := atomicfile.Write(*out, func(bw *bufio.Writer) error {
		var err error
		w, err = logreg.Generate(bw, c)
		return err
	}); err != nil {
		return err
	}
	if *truth != "" {
		if err := atomicfile.Write(*truth, func(bw *bufio.Writer) error {
			bw.WriteString("index,value\n")
			for j, v := range w {
				if v != 0 {
					fmt.Fprintf(bw, "%d,%s\n", j+1, strconv.FormatFloat(v, 'g', -1, 64))
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %s: %d samples, %d features\n", *out, c.Samples, c.Features)
	return nil
}
