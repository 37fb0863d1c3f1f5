// Command lassosched compares the priority, random and cyclic schedules of
// the Lasso end to end: it generates a synthetic problem with
// lasso.Generate, runs the whole job (embedded NATS server, scheduler,
// coordinator and --workers workers in one process) --runs times per
// schedule, and writes per-run metrics, a summary table and a plot of the
// relative sub-optimality against time to --out.
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
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

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
	workers     int
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
	schedules   []scheduler.Policy
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
	seed := fs.Uint64("seed", 1, "seed of the data; run r of every schedule seeds the scheduler with seed+r")
	fs.Float64Var(&o.lambdaRatio, "lambda-ratio", 0.05, "λ = ratio·λ_max")
	fs.BoolVar(&o.intercept, "intercept", false, "fit an unpenalized intercept")
	fs.IntVar(&o.workers, "workers", 2, "worker nodes")
	fs.IntVar(&o.runs, "runs", 3, "runs per schedule")
	fs.DurationVar(&o.timeLimit, "time-limit", 60*time.Second, "time limit of a run (from its first round)")
	fs.IntVar(&o.block, "block", 64, "coordinates U updated per round, at most")
	fs.IntVar(&o.candidates, "candidates", 128, "candidates U′ examined per round")
	fs.Float64Var(&o.rho, "rho", 0.1, "dependency threshold ρ: never update together columns with |corr| ≥ ρ")
	fs.Float64Var(&o.gamma, "gamma", 2, "priority exponent γ: p(j) ∝ |Δβ_j|^γ + η")
	fs.Float64Var(&o.eta, "eta", 1e-6, "priority floor η: p(j) ∝ |Δβ_j|^γ + η")
	fs.IntVar(&o.warmup, "warmup", -1, "rounds of uniform picks before priorities switch on (-1: one sweep, ⌈p/U⌉)")
	fs.Float64Var(&o.tol, "tol", 1e-6, "stop a run once its duality gap certifies (F − F_opt)/F ≤ tol (0: off)")
	fs.IntVar(&o.reportEvery, "report-every", 20, "rounds between two objective reports")
	fs.Float64Var(&o.target, "target", 1e-3, "relative sub-optimality (F − F*)/F* whose time is measured")
	fs.StringVar(&o.out, "out", filepath.Join("bench", "results"), "output `dir`ectory")
	schedules := fs.String("schedules", "priority,random,cyclic", "comma-separated schedules to compare")
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
	for s := range strings.SplitSeq(*schedules, ",") {
		p, err := scheduler.ParsePolicy(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--schedules: %w", err)
		}
		if slices.Contains(o.schedules, p) {
			return nil, fmt.Errorf("--schedules: %v given twice", p)
		}
		o.schedules = append(o.schedules, p)
	}
	switch {
	case o.runs < 1:
		return nil, fmt.Errorf("--runs must be at least 1, got %d", o.runs)
	case !(o.target > 0):
		return nil, fmt.Errorf("--target must be > 0, got %v", o.target)
	case o.timeLimit <= 0:
		return nil, fmt.Errorf("--time-limit must be > 0 so that every run ends, got %v", o.timeLimit)
	}
	cfg := o.lassoConfig("(generated)", scheduler.Priority, 0)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// lassoConfig returns the job's config for schedule p and run r.
func (o *options) lassoConfig(data string, p scheduler.Policy, r int) lasso.Config {
	return lasso.Config{
		Data:        data,
		LambdaRatio: o.lambdaRatio,
		Intercept:   o.intercept,
		Schedule: scheduler.Config{
			Policy:     p,
			Gamma:      o.gamma,
			Eta:        o.eta,
			Candidates: o.candidates,
			Block:      o.block,
			Warmup:     o.warmup,
			Rho:        o.rho,
			Workers:    o.workers,
			Seed:       o.gen.Seed + uint64(r),
		},
	}
}

// run is one finished job.
type run struct {
	policy scheduler.Policy
	r      int
	seed   uint64
	res    *coordinator.Result
	// Filled in by analyze.
	ttt     time.Duration // time to the target; < 0 if never reached
	finalRS float64       // final relative sub-optimality
}

func (r *run) reached() bool { return r.ttt >= 0 }

func (r *run) updatesPerSec() float64 {
	if r.res.Elapsed <= 0 {
		return 0
	}
	return float64(r.res.Updates) / r.res.Elapsed.Seconds()
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
	nnz, err := generate(data, o.gen)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "data: %d samples × %d features, %d non-zeros\n", o.gen.Samples, o.gen.Features, nnz)

	// The runs are interleaved (run 1 of every schedule, then run 2, …) so
	// that a slow drift of the machine does not favour one schedule.
	var runs []*run
	for r := 1; r <= o.runs; r++ {
		for _, p := range o.schedules {
			cfg := o.lassoConfig(data, p, r)
			copts := coordinator.Options{
				Workers:     o.workers,
				TimeLimit:   o.timeLimit,
				Tol:         o.tol,
				ReportEvery: o.reportEvery,
				JoinTimeout: 2 * time.Minute,
				Timeout:     time.Minute,
				Metrics:     filepath.Join(o.out, fmt.Sprintf("lasso-%s-run%d.csv", p, r)),
			}
			jctx, cancel := context.WithTimeout(ctx, o.timeLimit+5*time.Minute)
			res, err := job.Run(jctx, lasso.Program(cfg), job.Options{
				Job:         fmt.Sprintf("bench-%s-%d", p, r),
				Coordinator: copts,
				Timeout:     time.Minute,
			})
			cancel()
			if err != nil {
				return fmt.Errorf("%s run %d: %w", p, r, err)
			}
			fmt.Fprintf(os.Stderr, "%-8s run %d: %s after %.2fs, %d rounds, %d updates, F = %.12g, gap %.3g\n",
				p, r, res.Reason, res.Elapsed.Seconds(), res.Rounds, res.Updates, res.Final.Objective, res.Final.Gap)
			runs = append(runs, &run{policy: p, r: r, seed: cfg.Schedule.Seed, res: res})
		}
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
		filepath.Join(o.out, "lasso-<schedule>-run<r>.csv"),
	}, ", "))
	return nil
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

// analyze sets F* to the lowest objective of any report of any run, and
// each run's time to the target and final sub-optimality. It returns F* and
// the best certified lower bound on the optimum, max(F − gap) over every
// report.
func analyze(runs []*run, target float64) (fstar, lower float64) {
	fstar, lower = math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		for _, s := range r.res.Trace {
			fstar = min(fstar, s.Objective)
			if s.HasGap {
				lower = max(lower, s.Objective-s.Gap)
			}
		}
	}
	for _, r := range runs {
		r.ttt = -1
		for _, s := range r.res.Trace {
			if relSub(s.Objective, fstar) <= target {
				r.ttt = s.Time
				break
			}
		}
		r.finalRS = relSub(r.res.Final.Objective, fstar)
	}
	return fstar, lower
}

// fstarWarning returns a warning if the duality gaps do not certify F* to
// within a tenth of the target: the times to the target then measure how
// close the runs came to the best of them rather than to the optimum.
func fstarWarning(fstar, lower, target float64) string {
	if b := relSub(fstar, lower); math.IsInf(lower, -1) || b > target/10 {
		return fmt.Sprintf("the duality gaps certify F* only to within %.3g of the optimum, relatively, not to within a tenth of the target %g: the times to the target measure how close the runs came to the best of them, not to the optimum. Use a longer --time-limit.", b, target)
	}
	return ""
}

func relSub(f, fstar float64) float64 { return (f - fstar) / math.Abs(fstar) }

func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2 // +Inf if s[n/2] is
}

// stats are the medians over a schedule's runs.
type stats struct {
	reached    int
	n          int
	ttt        float64 // seconds; +Inf when the median run did not reach it
	updPerSec  float64
	p50, p99   float64 // milliseconds
	finalRS    float64
	maxElapsed float64 // seconds: the longest run, a lower bound for an unreached time
}

func scheduleStats(runs []*run, p scheduler.Policy) stats {
	var st stats
	var ttt, ups, p50, p99, frs []float64
	for _, r := range runs {
		if r.policy != p {
			continue
		}
		st.n++
		t := math.Inf(1)
		if r.reached() {
			st.reached++
			t = r.ttt.Seconds()
		}
		ttt = append(ttt, t)
		ups = append(ups, r.updatesPerSec())
		p50 = append(p50, ms(r.res.RoundQuantile(0.5)))
		p99 = append(p99, ms(r.res.RoundQuantile(0.99)))
		frs = append(frs, r.finalRS)
		st.maxElapsed = max(st.maxElapsed, r.res.Elapsed.Seconds())
	}
	st.ttt, st.updPerSec, st.p50, st.p99, st.finalRS = median(ttt), median(ups), median(p50), median(p99), median(frs)
	return st
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// summaryTable returns the markdown table of the medians over the runs of
// every schedule, and the speed-ups of priority over the others.
func summaryTable(runs []*run, o *options) string {
	var b strings.Builder
	tgt := strconv.FormatFloat(o.target, 'g', -1, 64)
	fmt.Fprintf(&b, "| schedule | runs reaching %s | time to %s (s), median | updates/s, median | round p50 (ms), median | round p99 (ms), median | final (F − F*)/F*, median |\n", tgt, tgt)
	b.WriteString("|---|---|---|---|---|---|---|\n")
	all := map[scheduler.Policy]stats{}
	for _, p := range o.schedules {
		st := scheduleStats(runs, p)
		all[p] = st
		t := "not reached"
		if !math.IsInf(st.ttt, 1) {
			t = fmt.Sprintf("%.3f", st.ttt)
		}
		fmt.Fprintf(&b, "| %s | %d/%d | %s | %.0f | %.3f | %.3f | %.3g |\n",
			p, st.reached, st.n, t, st.updPerSec, st.p50, st.p99, st.finalRS)
	}
	pr, ok := all[scheduler.Priority]
	if !ok {
		return b.String()
	}
	b.WriteString("\n")
	for _, q := range o.schedules {
		if q == scheduler.Priority {
			continue
		}
		fmt.Fprintf(&b, "- speed-up of priority over %s (median time to %s of %s ÷ that of priority; > 1: priority is faster): %s\n",
			q, tgt, q, speedup(all[q], pr))
	}
	return b.String()
}

// speedup returns t_other / t_priority of the median times as text, with a
// bound where one of them was not reached.
func speedup(other, pr stats) string {
	switch {
	case math.IsInf(other.ttt, 1) && math.IsInf(pr.ttt, 1):
		return "n/a (neither reached the target)"
	case math.IsInf(pr.ttt, 1):
		return fmt.Sprintf("< %.3g (priority did not reach the target within %.3gs)", other.ttt/pr.maxElapsed, pr.maxElapsed)
	case math.IsInf(other.ttt, 1):
		return fmt.Sprintf("> %.3g (the other did not reach the target within %.3gs)", other.maxElapsed/pr.ttt, other.maxElapsed)
	case pr.ttt == 0:
		return "n/a (priority's time is 0)"
	}
	return fmt.Sprintf("%.2f", other.ttt/pr.ttt)
}

func writeSummary(path string, o *options, args []string, nnz int64, fstar, lower float64, runs []*run, table string) error {
	var b strings.Builder
	b.WriteString("# Lasso: priority vs random vs cyclic scheduling\n\n")
	b.WriteString("Command (from the repository root):\n\n```\n")
	b.WriteString(commandLine(args))
	b.WriteString("\n```\n\n")
	b.WriteString("## Setup\n\n")
	fmt.Fprintf(&b, "- data (lasso.Generate): %d samples × %d features, density %g, %d correlated groups with correlation %g, %d true non-zeros, noise %g, seed %d; %d non-zeros in X\n",
		o.gen.Samples, o.gen.Features, o.gen.Density, o.gen.CorrGroups, o.gen.Corr, o.gen.TrueNNZ, o.gen.Noise, o.gen.Seed, nnz)
	fmt.Fprintf(&b, "- Lasso: λ = %g·λ_max, intercept %v\n", o.lambdaRatio, o.intercept)
	fmt.Fprintf(&b, "- scheduler: U = %d (--block), U′ = %d (--candidates), ρ = %g, γ = %g, η = %g, warm-up %d (-1: one sweep); run r seeds the scheduler with %d+r\n",
		o.block, o.candidates, o.rho, o.gamma, o.eta, o.warmup, o.gen.Seed)
	fmt.Fprintf(&b, "- runtime: job.Run on the embedded NATS server, %d workers, %d runs per schedule (interleaved), time limit %v per run, stop when gap ≤ %g·F, objective reported every %d rounds\n",
		o.workers, o.runs, o.timeLimit, o.tol, o.reportEvery)
	fmt.Fprintf(&b, "- machine: %s, %s/%s, %d CPUs (GOMAXPROCS %d), %s\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), cpuModel())
	b.WriteString("\n## Results\n\n")
	fmt.Fprintf(&b, "F* = %.15g is the lowest objective reported by any run of any schedule. ", fstar)
	if !math.IsInf(lower, -1) {
		fmt.Fprintf(&b, "The best duality gap of all the reports bounds the optimum from below by %.15g, so F* is within %.3g of the optimum, relatively. ",
			lower, max(relSub(fstar, lower), 0))
	}
	if w := fstarWarning(fstar, lower, o.target); w != "" {
		b.WriteString("\n\n**Warning:** " + w + "\n\n")
	}
	fmt.Fprintf(&b, "The time to %g is the time since the first round of the first report with (F − F*)/F* ≤ %g (reports every %d rounds, so it is rounded up to a report). Updates/s is the run's coordinate updates over its elapsed time; the round latencies are each run's median and 99th percentile, from asking for the plan to the end of the coordinator's update. Every column is the median over the runs of a schedule.\n\n",
		o.target, o.target, o.reportEvery)
	b.WriteString(table)
	b.WriteString("\n### Runs\n\n")
	fmt.Fprintf(&b, "| schedule | run | seed | stop | elapsed (s) | rounds | updates | final F | final gap | nnz | time to %g (s) | updates/s | round p50 (ms) | round p99 (ms) |\n", o.target)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		t := "not reached"
		if r.reached() {
			t = fmt.Sprintf("%.3f", r.ttt.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %.3f | %d | %d | %.12g | %.3g | %d | %s | %.0f | %.3f | %.3f |\n",
			r.policy, r.r, r.seed, r.res.Reason, r.res.Elapsed.Seconds(), r.res.Rounds, r.res.Updates,
			r.res.Final.Objective, r.res.Final.Gap, r.res.Final.NNZ, t, r.updatesPerSec(),
			ms(r.res.RoundQuantile(0.5)), ms(r.res.RoundQuantile(0.99)))
	}
	b.WriteString("\nPer-run traces: `lasso-<schedule>-run<r>.csv` (time_s,round,objective,nnz,updates,gap). Plot: `objective.png` / `objective.svg`.\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// commandLine returns the command that reproduces this run, shell-quoted.
func commandLine(args []string) string {
	parts := []string{"go", "run", "./bench/lassosched"}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=.,/:+@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "CPU model
// unknown".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "CPU model unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "CPU model unknown"
}

func writeRunsCSV(path string, runs []*run) error {
	var b strings.Builder
	b.WriteString("schedule,run,seed,reason,elapsed_s,rounds,updates,final_objective,final_gap,nnz,time_to_target_s,updates_per_s,round_p50_ms,round_p99_ms\n")
	for _, r := range runs {
		t := ""
		if r.reached() {
			t = strconv.FormatFloat(r.ttt.Seconds(), 'f', 6, 64)
		}
		fmt.Fprintf(&b, "%s,%d,%d,%s,%.6f,%d,%d,%.17g,%.6g,%d,%s,%.1f,%.4f,%.4f\n",
			r.policy, r.r, r.seed, r.res.Reason, r.res.Elapsed.Seconds(), r.res.Rounds, r.res.Updates,
			r.res.Final.Objective, r.res.Final.Gap, r.res.Final.NNZ, t, r.updatesPerSec(),
			ms(r.res.RoundQuantile(0.5)), ms(r.res.RoundQuantile(0.99)))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// colors of the schedules in the plot.
var colors = map[scheduler.Policy]color.Color{
	scheduler.Priority: color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	scheduler.Random:   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	scheduler.Cyclic:   color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// plotObjective draws (F − F*)/F* on a log axis (log10 drawn on a linear
// one, see decadeTicks) against time, one colour per
// schedule: run 1 thick, the other runs thin and dashed. Reports at F*
// itself (sub-optimality 0) cannot be drawn on a log axis and are left out.
func plotObjective(path string, runs []*run, o *options, fstar float64) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Lasso, %d×%d, λ = %g·λ_max, %d workers", o.gen.Samples, o.gen.Features, o.lambdaRatio, o.workers)
	p.X.Label.Text = "time since the first round (s)"
	p.Y.Label.Text = "relative sub-optimality (F − F*) / F*, log scale"
	p.Y.Tick.Marker = plot.TickerFunc(decadeTicks)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, q := range o.schedules {
		for _, r := range runs {
			if r.policy != q {
				continue
			}
			var pts plotter.XYs
			for _, s := range r.res.Trace {
				if v := relSub(s.Objective, fstar); v > 0 {
					pts = append(pts, plotter.XY{X: s.Time.Seconds(), Y: math.Log10(v)})
					ymin, ymax = min(ymin, v), max(ymax, v)
				}
			}
			if len(pts) == 0 {
				continue
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = colors[q]
			if r.r == 1 {
				l.Width = vg.Points(1.5)
				p.Legend.Add(q.String(), l)
			} else {
				l.Width = vg.Points(0.6)
				l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			}
			p.Add(l)
		}
	}
	if math.IsInf(ymin, 1) {
		ymin, ymax = o.target/10, 1
	}
	// The target as a dotted horizontal line.
	ymin, ymax = min(ymin, o.target), max(ymax, o.target)
	xmax := 0.0
	for _, r := range runs {
		if n := len(r.res.Trace); n > 0 {
			xmax = max(xmax, r.res.Trace[n-1].Time.Seconds())
		}
	}
	lt := math.Log10(o.target)
	tl, err := plotter.NewLine(plotter.XYs{{X: 0, Y: lt}, {X: max(xmax, 1e-3), Y: lt}})
	if err != nil {
		return err
	}
	tl.Color = color.Gray{Y: 0x60}
	tl.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(tl)
	p.Legend.Add(fmt.Sprintf("target %g", o.target), tl)
	if o.runs > 1 {
		p.Legend.Add("(thin dashed: runs 2…)")
	}
	p.Y.Min, p.Y.Max = math.Log10(ymin/2), math.Log10(ymax*2)
	p.X.Min = 0
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}

// decadeTicks returns the ticks of an axis that shows log10 of the values,
// from min to max: a tick labelled 10^k at every integer k (every other one,
// or sparser, over many decades) and unlabelled ones at log10(i·10^k) for
// i = 2…9.
//
// The plot draws log10 on a linear axis rather than using plot.LogScale,
// whose axis label padding is computed at the arithmetic midpoint and
// leaves a large blank band above the data.
func decadeTicks(min, max float64) []plot.Tick {
	lo, hi := int(math.Floor(min)), int(math.Ceil(max))
	step := 1 + (hi-lo)/12
	var ticks []plot.Tick
	for k := lo; k <= hi; k++ {
		if v := float64(k); v >= min && v <= max {
			t := plot.Tick{Value: v}
			if k%step == 0 {
				t.Label = decadeLabel(k)
			}
			ticks = append(ticks, t)
		}
		for i := 2; i <= 9; i++ {
			if m := float64(k) + math.Log10(float64(i)); m >= min && m <= max {
				ticks = append(ticks, plot.Tick{Value: m})
			}
		}
	}
	if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Label != "" }) {
		for i := range ticks { // less than a decade: label them all
			ticks[i].Label = strconv.FormatFloat(math.Pow(10, ticks[i].Value), 'g', 2, 64)
		}
	}
	return ticks
}

// decadeLabel returns 10^k as 0.01, 0.1, 1, 10, 100 or 1e-3, 1e3 …
func decadeLabel(k int) string {
	if k >= -2 && k <= 2 {
		return strconv.FormatFloat(math.Pow(10, float64(k)), 'f', -1, 64)
	}
	return fmt.Sprintf("1e%d", k)
}
