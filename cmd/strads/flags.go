package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/scheduler"
)

// errHelp reports that --help was asked for and answered.
var errHelp = errors.New("help")

// parse parses args into fs. --help prints the flags to stdout; any error
// is a one-line usage error.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer, synopsis string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "Usage: %s\n\nFlags:\n", synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return errHelp
	}
	if err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// scheduleFlags are the flags of the dynamic scheduler (package scheduler),
// shared by the apps that plan with it.
type scheduleFlags struct {
	cfg      scheduler.Config
	schedule string
	seed     uint64
}

func addScheduleFlags(fs *flag.FlagSet) *scheduleFlags {
	f := &scheduleFlags{}
	fs.StringVar(&f.schedule, "schedule", "priority", "how coordinates are picked: priority, random or cyclic")
	fs.Float64Var(&f.cfg.Gamma, "gamma", 2, "priority exponent γ: p(j) ∝ |Δ_j|^γ + η, Δ_j the last change of coordinate j")
	fs.Float64Var(&f.cfg.Eta, "eta", 1e-6, "priority floor η: p(j) ∝ |Δ_j|^γ + η")
	fs.IntVar(&f.cfg.Candidates, "candidates", 64, "candidates U′ drawn per round, before the dependency check")
	fs.IntVar(&f.cfg.Block, "block", 32, "coordinates U updated per round, at most")
	fs.IntVar(&f.cfg.Warmup, "warmup", -1, "rounds of uniform picks before priorities switch on (-1: one sweep, ⌈M/U⌉)")
	fs.Float64Var(&f.cfg.Rho, "rho", 0.1, "never update together two coordinates whose columns have |correlation| ≥ ρ (1 turns the check off)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the scheduler's random draws")
	return f
}

// config returns the scheduler's config for workers workers; the app sets
// its Vars and validates it.
func (f *scheduleFlags) config(workers int) (scheduler.Config, error) {
	c := f.cfg
	p, err := scheduler.ParsePolicy(f.schedule)
	if err != nil {
		return c, usagef("--schedule: %v", err)
	}
	c.Policy = p
	c.Seed = f.seed
	c.Workers = max(workers, 1)
	return c, nil
}

// lassoFlags are the flags of the Lasso app, shared by all its roles.
type lassoFlags struct {
	cfg   lasso.Config
	sched *scheduleFlags
}

func addLassoFlags(fs *flag.FlagSet) *lassoFlags {
	f := &lassoFlags{}
	fs.StringVar(&f.cfg.Data, "data", "", "LIBSVM `file` of samples (label idx:val ...); every role reads its own copy")
	fs.Float64Var(&f.cfg.Lambda, "lambda", 0, "L1 penalty λ of (1/2n)‖y − Xβ‖² + λ‖β‖₁")
	fs.Float64Var(&f.cfg.LambdaRatio, "lambda-ratio", 0, "set λ = `r`·λ_max, λ_max = ‖X̃ᵀỹ‖∞/n, the smallest λ with β = 0 (X and y centered with --intercept; overrides --lambda when > 0)")
	fs.BoolVar(&f.cfg.Intercept, "intercept", false, "fit an unpenalized intercept (centers X and y)")
	fs.StringVar(&f.cfg.Test, "test", "", "LIBSVM `file` of held-out samples: the coordinator reports its model's mean squared error on them (metric test_mse)")
	fs.IntVar(&f.cfg.Path, "lambda-path", 0, pathUsage)
	f.sched = addScheduleFlags(fs)
	return f
}

// config returns the validated Lasso config for workers workers.
func (f *lassoFlags) config(workers int) (lasso.Config, error) {
	cfg := f.cfg
	var err error
	if cfg.Schedule, err = f.sched.config(workers); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// runFlags are the flags of the runtime.
type runFlags struct {
	workers     int
	schedulers  int
	depth       int
	maxRounds   uint64
	tol         float64
	target      optionalFloat
	timeLimit   time.Duration
	reportEvery int
	metrics     string
	out         string
	progress    time.Duration
	timeout     time.Duration
	joinTimeout time.Duration
	nats        string
	job         string
	verbose     bool
	http        string
}

func addRunFlags(fs *flag.FlagSet) *runFlags {
	f := &runFlags{}
	fs.IntVar(&f.workers, "workers", 2, "number of workers")
	fs.IntVar(&f.schedulers, "schedulers", 1, "number of scheduler nodes; each plans a contiguous range of the variables, and they take rounds in turn")
	fs.IntVar(&f.depth, "depth", 1, "most rounds in flight at once: the scheduler plans ahead from feedback up to depth-1 rounds old (1: strict rounds)")
	fs.Uint64Var(&f.maxRounds, "max-rounds", 0, "stop after `n` rounds (0: no limit)")
	fs.Float64Var(&f.tol, "tol", 1e-4, "stop when the objective is certified within tol of the optimum, relatively (Lasso: duality gap ≤ tol·objective); 0: off")
	fs.Var(&f.target, "target", "stop once the objective is at most `F` (for benchmarks against a peer's objective); unset: off")
	fs.DurationVar(&f.timeLimit, "time-limit", 0, "stop after this much time (0: no limit)")
	fs.IntVar(&f.reportEvery, "report-every", 10, "compute the objective every `n` rounds (costs one pass over the data; the column layout of lasso and logreg: 1 unless given)")
	fs.StringVar(&f.metrics, "metrics", "", "write a metrics CSV to `file`: time_s,round,objective,nnz,updates,gap, then per-round means since the previous row: plan_ms,dispatch_ms,push_ms,wait_ms,pull_ms,latency_ms,msgs,bytes")
	fs.StringVar(&f.out, "out", "", "write the model to `file` (Lasso: index,value CSV of non-zero coefficients, 1-based; 0 = intercept); with --lambda-path, the prefix of the path's files")
	fs.DurationVar(&f.progress, "progress", 2*time.Second, "print a progress line this often (0: never)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "longest wait for any other role once the job runs")
	fs.DurationVar(&f.joinTimeout, "join-timeout", time.Minute, "longest wait for all roles to join")
	fs.StringVar(&f.nats, "nats", "", "`URL` of the NATS server (empty: start an embedded one)")
	fs.StringVar(&f.job, "job", "lasso", "job `name`: every subject of the job is under strads.<name>.")
	fs.BoolVar(&f.verbose, "verbose", false, "log what every role does")
	fs.StringVar(&f.http, "http", "", "serve Prometheus metrics (/metrics) and pprof profiles (/debug/pprof/) on `addr`, e.g. localhost:9090")
	return f
}

// options returns the coordinator's options; progress lines go to w.
func (f *runFlags) options(w io.Writer) (coordinator.Options, error) {
	o := coordinator.Options{
		Workers:     f.workers,
		Schedulers:  f.schedulers,
		Depth:       f.depth,
		MaxRounds:   f.maxRounds,
		TimeLimit:   f.timeLimit,
		Tol:         f.tol,
		Target:      f.target.v,
		HasTarget:   f.target.set,
		ReportEvery: f.reportEvery,
		JoinTimeout: f.joinTimeout,
		Timeout:     f.timeout,
		Metrics:     f.metrics,
		Out:         f.out,
	}
	if f.progress > 0 {
		o.Progress, o.ProgressEvery = w, f.progress
	}
	if err := o.Validate(); err != nil {
		return o, usageError{err}
	}
	if f.timeout <= 0 || f.joinTimeout <= 0 {
		return o, usagef("--timeout and --join-timeout must be > 0")
	}
	for _, p := range []struct{ flag, path string }{{"--out", f.out}, {"--metrics", f.metrics}} {
		if p.path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(p.path)); err != nil || !st.IsDir() {
			return o, usagef("%s %s: directory %s does not exist", p.flag, p.path, filepath.Dir(p.path))
		}
	}
	return o, nil
}

// optionalFloat is a float flag that knows whether it was given.
type optionalFloat struct {
	v   float64
	set bool
}

// String implements flag.Value: "" when unset, so that no default shows.
func (f *optionalFloat) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatFloat(f.v, 'g', -1, 64)
}

// Set implements flag.Value, with the errors of the flag package's floats.
func (f *optionalFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return errors.New("value out of range")
	case err != nil:
		return errors.New("parse error")
	}
	f.v, f.set = v, true
	return nil
}

// serve starts the --http server, if asked for, and says where on w. It
// returns the metrics for the nodes (nil without --http) and a function
// that stops the server.
func (f *runFlags) serve(w io.Writer, log *slog.Logger) (*monitor.Metrics, func(), error) {
	if f.http == "" {
		return nil, func() {}, nil
	}
	m := monitor.New()
	srv, err := monitor.Serve(f.http, m, log)
	if err != nil {
		return nil, nil, usageError{err}
	}
	fmt.Fprintf(w, "serving metrics on http://%s/metrics and profiles on http://%s/debug/pprof/\n", srv.Addr(), srv.Addr())
	return m, func() { srv.Close() }, nil
}

func (f *runFlags) logger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
