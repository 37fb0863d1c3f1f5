// Command lassosched compares variants of the Lasso end to end: schedules
// (priority, random, cyclic), pipeline depths, numbers of workers and
// numbers of scheduler parts. It generates a synthetic problem with
// lasso.Generate, runs the whole job (embedded NATS server, schedulers,
// coordinator and workers in one process) --runs times per variant, and
// writes per-run metrics, a summary table (time to --target, throughput,
// busy fractions, round latency) and a plot of the relative sub-optimality
// against time to --out.
//
// Every combination of --schedules × --depths × --workers × --schedulers
// is a variant, named after the axes that have more than one value, for
// example "priority d=4 w=2".
//
// F* is the lowest objective that any report of any run reached; the
// sub-optimality of a report is (F − F*)/F*, and the time to --target is the
// time of the first report at or below it. See bench/README.md.
//
// Usage, from the repository root:
//
//	go run ./bench/lassosched [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
)

// options are the command-line flags.
type options struct {
	gen         lasso.GenConfig
	lambdaRatio float64
	intercept   bool
	runs        int
	timeLimit   time.Duration
	block       int
	candidates  int
	rho         float64
	gamma       float64
	eta         float64
	warmup      int
	tol         float64
	reportEvery int
	target      float64
	out         string
	// The axes of the variants, in the order given.
	schedules  []scheduler.Policy
	depths     []int
	workers    []int
	schedulers []int
	variants   []*variant
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("lassosched", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.gen.Samples, "samples", 2000, "rows n of the generated data")
	fs.IntVar(&o.gen.Features, "features", 20000, "columns p of the generated data")
	fs.Float64Var(&o.gen.Density, "density", 0.01, "fraction of non-zeros per row (with --corr-groups: fraction of active groups)")
	fs.IntVar(&o.gen.CorrGroups, "corr-groups", 2000, "groups of correlated features (0: independent features)")
	fs.Float64Var(&o.gen.Corr, "corr", 0.8, "correlation of two features of a group")
	fs.IntVar(&o.gen.TrueNNZ, "true-nnz", 200, "non-zeros of the true coefficients")
	fs.Float64Var(&o.gen.Noise, "noise", 0.1, "standard deviation of the noise added to y")
	seed := fs.Uint64("seed", 1, "seed of the data; run r of every variant seeds the scheduler with seed+r")
	fs.Float64Var(&o.lambdaRatio, "lambda-ratio", 0.05, "λ = ratio·λ_max")
	fs.BoolVar(&o.intercept, "intercept", false, "fit an unpenalized intercept")
	fs.IntVar(&o.runs, "runs", 3, "runs per variant")
	fs.DurationVar(&o.timeLimit, "time-limit", 60*time.Second, "time limit of a run (from its first round)")
	fs.IntVar(&o.block, "block", 64, "coordinates U updated per round, at most (per scheduler part)")
	fs.IntVar(&o.candidates, "candidates", 128, "candidates U′ examined per round")
	fs.Float64Var(&o.rho, "rho", 0.1, "dependency threshold ρ: never update together columns with |corr| ≥ ρ (1: no check)")
	fs.Float64Var(&o.gamma, "gamma", 2, "priority exponent γ: p(j) ∝ |Δβ_j|^γ + η")
	fs.Float64Var(&o.eta, "eta", 1e-6, "priority floor η: p(j) ∝ |Δβ_j|^γ + η")
	fs.IntVar(&o.warmup, "warmup", -1, "rounds of uniform picks before priorities switch on (-1: one sweep, ⌈p/U⌉)")
	fs.Float64Var(&o.tol, "tol", 1e-6, "stop a run once its duality gap certifies (F − F_opt)/F ≤ tol (0: off)")
	fs.IntVar(&o.reportEvery, "report-every", 20, "rounds between two objective reports")
	fs.Float64Var(&o.target, "target", 1e-3, "relative sub-optimality (F − F*)/F* whose time is measured")
	fs.StringVar(&o.out, "out", filepath.Join("bench", "results"), "output `dir`ectory")
	schedules := fs.String("schedules", "priority,random,cyclic", "comma-separated `list` of schedules to compare")
	depths := fs.String("depths", "1", "comma-separated `list` of pipeline depths (most rounds in flight) to compare")
	workers := fs.String("workers", "2", "comma-separated `list` of numbers of worker nodes to compare")
	schedulers := fs.String("schedulers", "1", "comma-separated `list` of numbers of scheduler parts to compare")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.gen.Seed = *seed
	if err := o.gen.Validate(); err != nil {
		return nil, err
	}
	var err error
	if o.schedules, err = parseList("--schedules", *schedules, func(s string) (scheduler.Policy, error) {
		return scheduler.ParsePolicy(s)
	}); err != nil {
		return nil, err
	}
	if o.depths, err = parseInts("--depths", *depths, 1, coordinator.MaxDepth); err != nil {
		return nil, err
	}
	if o.workers, err = parseInts("--workers", *workers, 1, 1<<16); err != nil {
		return nil, err
	}
	if o.schedulers, err = parseInts("--schedulers", *schedulers, 1, 1<<16); err != nil {
		return nil, err
	}
	switch {
	case o.runs < 1:
		return nil, fmt.Errorf("--runs must be at least 1, got %d", o.runs)
	case !(o.target > 0):
		return nil, fmt.Errorf("--target must be > 0, got %v", o.target)
	case o.timeLimit <= 0:
		return nil, fmt.Errorf("--time-limit must be > 0 so that every run ends, got %v", o.timeLimit)
	}
	o.variants = o.makeVariants()
	for _, v := range o.variants {
		cfg := o.lassoConfig("(generated)", v, 0)
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		copts := o.coordinatorOptions(v, "")
		if err := copts.Validate(); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// parseList parses the comma-separated list s of flag name with parse; it
// refuses an empty list and a value given twice.
func parseList[T comparable](name, s string, parse func(string) (T, error)) ([]T, error) {
	var list []T
	for f := range strings.SplitSeq(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if slices.Contains(list, v) {
			return nil, fmt.Errorf("%s: %v given twice", name, v)
		}
		list = append(list, v)
	}
	return list, nil
}

// parseInts parses a comma-separated list of integers in [lo, hi].
func parseInts(name, s string, lo, hi int) ([]int, error) {
	return parseList(name, s, func(f string) (int, error) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", f)
		}
		if n < lo || n > hi {
			return 0, fmt.Errorf("%d is not in [%d, %d]", n, lo, hi)
		}
		return n, nil
	})
}

// variant is one combination of the axes: a schedule, a pipeline depth, a
// number of workers and a number of scheduler parts.
type variant struct {
	policy                     scheduler.Policy
	depth, workers, schedulers int
	// name names the variant by the axes with more than one value, for
	// example "priority d=4 w=2"; the schedule alone if every axis has one.
	name string
	// stem is the same, usable in file and job names: "priority-d4-w2".
	stem string
}

// makeVariants returns every combination of the axes: the schedules
// outermost, then the depths, the workers and the schedulers, each in the
// order given. The first is the reference of the summary's ratios.
func (o *options) makeVariants() []*variant {
	var vs []*variant
	for _, p := range o.schedules {
		for _, d := range o.depths {
			for _, w := range o.workers {
				for _, s := range o.schedulers {
					vs = append(vs, o.newVariant(p, d, w, s))
				}
			}
		}
	}
	return vs
}

func (o *options) newVariant(p scheduler.Policy, d, w, s int) *variant {
	v := &variant{policy: p, depth: d, workers: w, schedulers: s, stem: p.String()}
	var name []string
	if len(o.schedules) > 1 {
		name = append(name, p.String())
	}
	for _, a := range []struct {
		key   string
		n     int
		value int
	}{{"d", len(o.depths), d}, {"w", len(o.workers), w}, {"s", len(o.schedulers), s}} {
		if a.n > 1 {
			name = append(name, fmt.Sprintf("%s=%d", a.key, a.value))
			v.stem += fmt.Sprintf("-%s%d", a.key, a.value)
		}
	}
	if len(name) == 0 {
		name = []string{p.String()}
	}
	v.name = strings.Join(name, " ")
	return v
}

// fixedAxes describes the axes with one value, for titles: "priority,
// depth 1, 2 workers, 1 scheduler".
func (o *options) fixedAxes() string {
	var f []string
	if len(o.schedules) == 1 {
		f = append(f, o.schedules[0].String())
	}
	if len(o.depths) == 1 {
		f = append(f, fmt.Sprintf("depth %d", o.depths[0]))
	}
	if len(o.workers) == 1 {
		f = append(f, plural(o.workers[0], "worker"))
	}
	if len(o.schedulers) == 1 {
		f = append(f, plural(o.schedulers[0], "scheduler"))
	}
	return strings.Join(f, ", ")
}

func plural(n int, s string) string {
	if n == 1 {
		return "1 " + s
	}
	return fmt.Sprintf("%d %ss", n, s)
}

// lassoConfig returns the job's config for variant v and run r.
func (o *options) lassoConfig(data string, v *variant, r int) lasso.Config {
	return lasso.Config{
		Data:        data,
		LambdaRatio: o.lambdaRatio,
		Intercept:   o.intercept,
		Schedule: scheduler.Config{
			Policy:     v.policy,
			Gamma:      o.gamma,
			Eta:        o.eta,
			Candidates: o.candidates,
			Block:      o.block,
			Warmup:     o.warmup,
			Rho:        o.rho,
			Workers:    v.workers,
			Seed:       o.gen.Seed + uint64(r),
		},
	}
}

// coordinatorOptions returns the coordinator's options for variant v,
// writing its metrics to metrics.
func (o *options) coordinatorOptions(v *variant, metrics string) coordinator.Options {
	return coordinator.Options{
		Workers:     v.workers,
		Schedulers:  v.schedulers,
		Depth:       v.depth,
		TimeLimit:   o.timeLimit,
		Tol:         o.tol,
		ReportEvery: o.reportEvery,
		JoinTimeout: 2 * time.Minute,
		Timeout:     time.Minute,
		Metrics:     metrics,
	}
}

// run is one finished job.
type run struct {
	v    *variant
	r    int
	seed uint64
	res  *coordinator.Result
	// Filled in by analyze.
	ttt     time.Duration // time to the target; < 0 if never reached
	finalRS float64       // final relative sub-optimality
}

func (r *run) reached() bool { return r.ttt >= 0 }

// perSec returns n per second of the run's elapsed time.
func (r *run) perSec(n float64) float64 {
	if r.res.Elapsed <= 0 {
		return 0
	}
	return n / r.res.Elapsed.Seconds()
}

func (r *run) updatesPerSec() float64 { return r.perSec(float64(r.res.Updates)) }
func (r *run) roundsPerSec() float64  { return r.perSec(float64(r.res.Rounds)) }

// busy returns the mean over ds of d/Timing.Elapsed, in percent.
func (r *run) busy(ds ...time.Duration) float64 {
	e := r.res.Timing.Elapsed
	if e <= 0 || len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return 100 * float64(sum) / float64(len(ds)) / float64(e)
}

// workerBusy is the mean busy fraction of the workers (compute: applying
// updates, pushing, reporting), schedulerBusy that of the scheduler parts
// (planning) and coordinatorBusy the coordinator's (everything but waiting
// for messages), in percent of the run's elapsed time.
func (r *run) workerBusy() float64      { return r.busy(r.res.Timing.Workers...) }
func (r *run) schedulerBusy() float64   { return r.busy(r.res.Timing.Schedulers...) }
func (r *run) coordinatorBusy() float64 { return r.busy(r.res.Timing.Coordinator) }

// perRound returns d per round, in milliseconds.
func (r *run) perRound(d time.Duration) float64 {
	return ms(d) / max(float64(r.res.Rounds), 1)
}

func main() {
	if err := mainErr(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "lassosched:", err)
		os.Exit(1)
	}
}

func mainErr(args []string) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	tmp, err := os.MkdirTemp("", "lassosched-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	data := filepath.Join(tmp, "data.svm")
	start := time.Now()
	nnz, err := generate(data, o.gen)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "data: %d samples × %d features, %d non-zeros (generated in %.1fs)\n",
		o.gen.Samples, o.gen.Features, nnz, time.Since(start).Seconds())

	runs, err := runAll(ctx, o, data)
	if err != nil {
		return err
	}

	fstar, lower := analyze(runs, o.target)
	table := summaryTable(runs, o)
	fmt.Printf("F* = %.15g (lowest objective of all runs); optimum ≥ %.15g (best duality gap)\n\n", fstar, lower)
	fmt.Print(table)
	if w := fstarWarning(fstar, lower, o.target); w != "" {
		fmt.Println("\nwarning:", w)
	}

	if err := writeSummary(filepath.Join(o.out, "summary.md"), o, args, nnz, fstar, lower, runs, table); err != nil {
		return err
	}
	if err := writeRunsCSV(filepath.Join(o.out, "runs.csv"), runs); err != nil {
		return err
	}
	for _, ext := range []string{"png", "svg"} {
		if err := plotObjective(filepath.Join(o.out, "objective."+ext), runs, o, fstar); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", strings.Join([]string{
		filepath.Join(o.out, "summary.md"), filepath.Join(o.out, "runs.csv"),
		filepath.Join(o.out, "objective.png"), filepath.Join(o.out, "objective.svg"),
		filepath.Join(o.out, "lasso-<variant>-run<r>.csv"),
	}, ", "))
	return nil
}

// runAll runs every variant --runs times on data. The runs are interleaved
// (run 1 of every variant, then run 2, …) so that a slow drift of the
// machine does not favour one variant.
func runAll(ctx context.Context, o *options, data string) ([]*run, error) {
	width := 0
	for _, v := range o.variants {
		width = max(width, len(v.name))
	}
	var runs []*run
	for r := 1; r <= o.runs; r++ {
		for _, v := range o.variants {
			cfg := o.lassoConfig(data, v, r)
			copts := o.coordinatorOptions(v, filepath.Join(o.out, fmt.Sprintf("lasso-%s-run%d.csv", v.stem, r)))
			start := time.Now()
			jctx, cancel := context.WithTimeout(ctx, o.timeLimit+5*time.Minute)
			res, err := job.Run(jctx, lasso.Program(cfg), job.Options{
				Job:         fmt.Sprintf("bench-%s-%d", v.stem, r),
				Coordinator: copts,
				Timeout:     time.Minute,
			})
			cancel()
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", v.name, r, err)
			}
			ru := &run{v: v, r: r, seed: cfg.Schedule.Seed, res: res}
			fmt.Fprintf(os.Stderr, "%-*s run %d: %s after %.2fs (%.1fs with loading), %d rounds, %d updates (%.0f/s), busy: workers %.0f%%, schedulers %.0f%%, coordinator %.0f%%; F = %.12g, gap %.3g\n",
				width, v.name, r, res.Reason, res.Elapsed.Seconds(), time.Since(start).Seconds(), res.Rounds, res.Updates, ru.updatesPerSec(),
				ru.workerBusy(), ru.schedulerBusy(), ru.coordinatorBusy(), res.Final.Objective, res.Final.Gap)
			runs = append(runs, ru)
		}
	}
	return runs, nil
}

// generate writes the data set to path and returns its number of non-zeros.
func generate(path string, c lasso.GenConfig) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: f}
	if _, err := lasso.Generate(cw, c); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return cw.colons, nil
}

// countingWriter counts the ':' written through it: one per non-zero of a
// LIBSVM file.
type countingWriter struct {
	w      io.Writer
	colons int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == ':' {
			c.colons++
		}
	}
	return c.w.Write(p)
}
