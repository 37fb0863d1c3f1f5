// Command logreg compares strads's sparse logistic regression with
// liblinear's L1-regularized logistic regression (train -s 6) on the same
// generated data.
//
// It builds the strads command, generates the data with "strads gen
// logreg" (labels 0/1), converts a copy to liblinear's convention (labels
// −1/+1; liblinear fits no bias unless asked), and sets liblinear's
// C = 1/(λ·n), which makes its objective ‖w‖₁ + C·Σ log(1 + exp(−y_i·x_i·w))
// equal to C·n times ours. It runs liblinear --runs times, computes the
// objective F_lib of its model in our convention from the data, and then
// runs strads (every --workers × --schedules variant, --runs times,
// interleaved) until a report shows F ≤ F_lib.
//
// Times are whole-job wall times: for liblinear the train process (read,
// train, write the model); for strads what "strads logreg" does in one
// process: check the input, start the embedded NATS server and the roles,
// load the shards, run rounds until the first report at or below F_lib, and
// write the model. Medians over the runs are reported.
//
// Usage, from the repository root:
//
//	go run ./bench/logreg [flags]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/apps/logreg"
	"github.com/strads-go/strads/bench/machine"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// options are the command-line flags.
type options struct {
	samples, features, trueNNZ int
	density                    float64
	seed                       uint64
	lambdaRatio                float64
	eps                        float64
	liblinear                  string
	runs                       int
	timeLimit                  time.Duration
	workers                    []int
	schedules                  []scheduler.Policy
	sched                      scheduler.Config
	depth                      int
	reportEvery                int
	out                        string
	data                       string
	cpuprofile                 string
	args                       []string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{args: args}
	fs := flag.NewFlagSet("logreg", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.samples, "samples", 100000, "rows n of the generated data")
	fs.IntVar(&o.features, "features", 100000, "columns p of the generated data")
	fs.Float64Var(&o.density, "density", 0.0005, "fraction of non-zeros per row (0.0005·100000 = 50 per row)")
	fs.IntVar(&o.trueNNZ, "true-nnz", 5000, "non-zeros of the true weights")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the data; run r seeds the scheduler with seed+r")
	fs.Float64Var(&o.lambdaRatio, "lambda-ratio", 0.1, "λ = ratio·λ_max, λ_max = ‖Xᵀ(y01 − ½)‖∞/n (no intercept); liblinear's C = 1/(λ·n)")
	fs.Float64Var(&o.eps, "eps", 0.001, "liblinear's -e: the stopping tolerance of train -s 6")
	fs.StringVar(&o.liblinear, "liblinear", "", "liblinear's train `command` (default: liblinear-train, else train, on the PATH)")
	fs.IntVar(&o.runs, "runs", 3, "runs of every solver and variant (medians are reported)")
	fs.DurationVar(&o.timeLimit, "time-limit", 5*time.Minute, "give up on a strads run after this long")
	workers := fs.String("workers", "1,2", "comma-separated numbers of strads workers")
	schedules := fs.String("schedules", "priority,random", "comma-separated strads schedules")
	fs.IntVar(&o.sched.Block, "block", 2048, "strads --block U")
	fs.IntVar(&o.sched.Candidates, "candidates", 2048, "strads --candidates U′")
	fs.Float64Var(&o.sched.Rho, "rho", 1, "strads --rho (1: no dependency check)")
	fs.Float64Var(&o.sched.Gamma, "gamma", 1, "strads --gamma")
	fs.Float64Var(&o.sched.Eta, "eta", 1e-3, "strads --eta")
	fs.IntVar(&o.sched.Warmup, "warmup", -1, "strads --warmup (-1: one sweep)")
	fs.IntVar(&o.depth, "depth", 1, "strads --depth")
	fs.IntVar(&o.reportEvery, "report-every", 25, "strads --report-every: how often the objective is compared with liblinear's")
	fs.StringVar(&o.out, "out", "bench/logreg/results", "`directory` for summary.md and runs.csv")
	fs.StringVar(&o.data, "data", "", "use this LIBSVM `file` (labels 0/1 or ±1) instead of generating one")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the strads runs to `file`")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, s := range strings.Split(*workers, ",") {
		w, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || w < 1 {
			return nil, fmt.Errorf("--workers: bad number %q", s)
		}
		o.workers = append(o.workers, w)
	}
	for _, s := range strings.Split(*schedules, ",") {
		p, err := scheduler.ParsePolicy(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--schedules: %w", err)
		}
		o.schedules = append(o.schedules, p)
	}
	if o.runs < 1 || o.lambdaRatio <= 0 || o.eps <= 0 {
		return nil, errors.New("--runs, --lambda-ratio and --eps must be > 0")
	}
	return o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "logreg bench:", err)
		os.Exit(1)
	}
}

// result is one run of one solver.
type result struct {
	solver    string // "liblinear" or "strads w=N schedule"
	run       int
	wall      time.Duration // whole job, to the target for strads
	setup     time.Duration // strads: from the start to the first round
	reached   bool
	objective float64 // at the end
	nnz       int
	rounds    uint64
	updates   int64
	guard     logreg.Safeguard
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "logreg-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	train, err := findLiblinear(o.liblinear)
	if err != nil {
		return err
	}

	data := o.data
	if data == "" {
		strads := filepath.Join(tmp, "strads")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", strads, "./cmd/strads").CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/strads (run from the repository root): %v\n%s", err, out)
		}
		data = filepath.Join(tmp, "data.svm")
		gen := []string{"gen", "logreg", "--samples", strconv.Itoa(o.samples), "--features", strconv.Itoa(o.features),
			"--density", strconv.FormatFloat(o.density, 'g', -1, 64), "--true-nnz", strconv.Itoa(o.trueNNZ),
			"--noise", "0", "--seed", strconv.FormatUint(o.seed, 10), "--labels", "01", "-o", data}
		fmt.Fprintf(stdout, "strads %s\n", strings.Join(gen, " "))
		if out, err := exec.CommandContext(ctx, strads, gen...).CombinedOutput(); err != nil {
			return fmt.Errorf("strads gen: %v\n%s", err, out)
		}
	}
	d, err := load(data)
	if err != nil {
		return err
	}
	lambda := o.lambdaRatio * d.lambdaMax()
	c := 1 / (lambda * float64(d.n()))
	fmt.Fprintf(stdout, "data: %d samples, %d features, %d non-zeros; λ_max %.6g, λ = %g·λ_max = %.6g, C = 1/(λn) = %.6g\n",
		d.n(), d.p, d.nnz, d.lambdaMax(), o.lambdaRatio, lambda, c)

	// liblinear, on a copy with labels −1/+1.
	llData := filepath.Join(tmp, "data.liblinear")
	if err := convert(data, llData); err != nil {
		return err
	}
	model := filepath.Join(tmp, "model.liblinear")
	cmdArgs := []string{"-s", "6", "-c", strconv.FormatFloat(c, 'g', 17, 64), "-e", strconv.FormatFloat(o.eps, 'g', -1, 64), "-q", llData, model}
	fmt.Fprintf(stdout, "liblinear: %s %s\n", train, strings.Join(cmdArgs, " "))
	var results []result
	for r := 1; r <= o.runs; r++ {
		t0 := time.Now()
		if out, err := exec.CommandContext(ctx, train, cmdArgs...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", train, err, out)
		}
		results = append(results, result{solver: "liblinear", run: r, wall: time.Since(t0), reached: true})
	}
	w, err := readLiblinearModel(model, d.p)
	if err != nil {
		return err
	}
	target, nnz := d.objective(w, lambda)
	for i := range results {
		results[i].objective, results[i].nnz = target, nnz
	}
	fmt.Fprintf(stdout, "liblinear: F = %.12g, nnz %d, median %.3fs\n", target, nnz, median(results, "liblinear").Seconds())

	// strads, until F ≤ F_lib.
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	for r := 1; r <= o.runs; r++ {
		for _, workers := range o.workers {
			for _, policy := range o.schedules {
				res, err := runStrads(ctx, o, data, lambda, target, workers, policy, r)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s run %d: %.3fs (setup %.3fs), reached %v, F = %.12g, nnz %d, %d rounds, %d of %d rounds raised F\n",
					res.solver, r, res.wall.Seconds(), res.setup.Seconds(), res.reached, res.objective, res.nnz, res.rounds, res.guard.Rose, res.guard.Rounds)
				results = append(results, res)
			}
		}
	}
	return write(o, d, lambda, c, target, train, cmdArgs, results, stdout)
}

// findLiblinear returns liblinear's train command.
func findLiblinear(name string) (string, error) {
	names := []string{"liblinear-train", "train"}
	if name != "" {
		names = []string{name}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no liblinear train command (%s) on the PATH: apt-get install liblinear-tools", strings.Join(names, ", "))
}

// convert writes the LIBSVM file in with its labels as −1/+1 to out.
func convert(in, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	err = libsvm.Read(in, func(_ int, row libsvm.Row) error {
		buf = buf[:0]
		if row.Label > 0 {
			buf = append(buf, "+1"...)
		} else {
			buf = append(buf, "-1"...)
		}
		for k, j := range row.Index {
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, int64(j)+1, 10)
			buf = append(buf, ':')
			buf = strconv.AppendFloat(buf, row.Value[k], 'g', -1, 64)
		}
		_, err := bw.Write(append(buf, '\n'))
		return err
	})
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// readLiblinearModel reads the weights of a liblinear model file as the
// weights of the positive class (+1), whatever order its labels are in.
func readLiblinearModel(path string, p int) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sign := 0.0
	w := make([]float64, 0, p)
	inW := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case inW:
			v, err := strconv.ParseFloat(line, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: weight %q", path, line)
			}
			w = append(w, sign*v)
		case strings.HasPrefix(line, "label "):
			// w is for the first label as the positive class.
			if strings.Fields(line)[1] == "1" {
				sign = 1
			} else {
				sign = -1
			}
		case strings.HasPrefix(line, "bias ") && strings.Fields(line)[1] != "-1":
			return nil, fmt.Errorf("%s: the model has a bias (%s)", path, line)
		case line == "w":
			inW = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if sign == 0 || len(w) > p {
		return nil, fmt.Errorf("%s: no label line, or %d weights for %d features", path, len(w), p)
	}
	return append(w, make([]float64, p-len(w))...), nil
}

// dataset is the data, held by row, for computing objectives.
type dataset struct {
	rows [][]int32
	vals [][]float64
	y    []float64 // ±1
	p    int
	nnz  int
}

func load(path string) (*dataset, error) {
	d := &dataset{}
	err := libsvm.Read(path, func(_ int, row libsvm.Row) error {
		d.rows = append(d.rows, slices.Clone(row.Index))
		d.vals = append(d.vals, slices.Clone(row.Value))
		y := -1.0
		if row.Label > 0 {
			y = 1
		}
		d.y = append(d.y, y)
		if n := len(row.Index); n > 0 {
			d.p = max(d.p, int(row.Index[n-1])+1)
		}
		d.nnz += len(row.Index)
		return nil
	})
	return d, err
}

func (d *dataset) n() int { return len(d.y) }

// lambdaMax returns ‖Xᵀ(y01 − ½)‖∞/n: the smallest λ whose solution is
// w = 0, without an intercept.
func (d *dataset) lambdaMax() float64 {
	g := make([]float64, d.p)
	for i, idx := range d.rows {
		for k, j := range idx {
			g[j] += d.vals[i][k] * d.y[i] / 2
		}
	}
	m := 0.0
	for _, v := range g {
		m = max(m, math.Abs(v))
	}
	return m / float64(d.n())
}

// objective returns F(w) = (1/n)Σ log(1 + exp(−y_i·x_i·w)) + λ‖w‖₁ and the
// non-zeros of w.
func (d *dataset) objective(w []float64, lambda float64) (float64, int) {
	var loss, l1 float64
	for i, idx := range d.rows {
		var z float64
		for k, j := range idx {
			z += d.vals[i][k] * w[j]
		}
		m := d.y[i] * z
		if m > 0 {
			loss += math.Log1p(math.Exp(-m))
		} else {
			loss += -m + math.Log1p(math.Exp(m))
		}
	}
	nnz := 0
	for _, v := range w {
		if v != 0 {
			l1 += math.Abs(v)
			nnz++
		}
	}
	return loss/float64(d.n()) + lambda*l1, nnz
}

// stopAt is a logreg coordinator whose job stops at the first report with
// F ≤ target (by reporting a zero gap to a runtime whose tolerance is tiny).
type stopAt struct {
	*logreg.Coordinator
	target float64
}

// stopTol is the runtime's Tol: only a report that stopAt zeroes meets it.
const stopTol = 1e-300

func (s *stopAt) Objective(reports []logreg.Summary) (schmp.Progress, error) {
	p, err := s.Coordinator.Objective(reports)
	if err == nil && p.Objective <= s.target {
		p.Gap = 0
	}
	return p, err
}

// runStrads runs one strads job as "strads logreg" would, until F ≤ target.
func runStrads(ctx context.Context, o *options, data string, lambda, target float64, workers int, policy scheduler.Policy, r int) (result, error) {
	name := fmt.Sprintf("strads w=%d %v", workers, policy)
	sc := o.sched
	sc.Policy, sc.Workers, sc.Seed = policy, workers, o.seed+uint64(r)
	cfg := logreg.Config{Data: data, Lambda: lambda, Schedule: sc}
	if err := cfg.Validate(); err != nil {
		return result{}, err
	}
	prog := logreg.Program(cfg)
	var coord *logreg.Coordinator
	prog.NewCoordinator = func(context.Context) (schmp.Coordinator[logreg.Plan, logreg.Partial, logreg.Update, logreg.Summary], error) {
		c, err := logreg.NewCoordinator(cfg)
		coord = c
		return &stopAt{Coordinator: c, target: target}, err
	}
	out, err := os.CreateTemp("", "logreg-bench-model")
	if err != nil {
		return result{}, err
	}
	out.Close()
	defer os.Remove(out.Name())
	runtime.GC()
	t0 := time.Now()
	if err := logreg.CheckData(data); err != nil {
		return result{}, err
	}
	res, err := job.Run(ctx, prog, job.Options{Job: "bench", Timeout: time.Minute, Coordinator: coordinator.Options{
		Workers: workers, Depth: o.depth, Tol: stopTol, TimeLimit: o.timeLimit, ReportEvery: o.reportEvery,
		JoinTimeout: 5 * time.Minute, Timeout: time.Minute, Out: out.Name(),
	}})
	wall := time.Since(t0)
	if err != nil {
		return result{}, fmt.Errorf("%s run %d: %w", name, r, err)
	}
	return result{
		solver: name, run: r, wall: wall, setup: wall - res.Elapsed,
		reached: res.Reason == "converged", objective: res.Final.Objective, nnz: res.Final.NNZ,
		rounds: res.Rounds, updates: res.Updates, guard: coord.Safeguard(),
	}, nil
}

// median returns the median whole-job time of solver's runs (the runs that
// did not reach the target count as +∞).
func median(rs []result, solver string) time.Duration {
	var t []time.Duration
	for _, r := range rs {
		if r.solver == solver {
			d := r.wall
			if !r.reached {
				d = math.MaxInt64
			}
			t = append(t, d)
		}
	}
	slices.Sort(t)
	if len(t) == 0 {
		return 0
	}
	return t[(len(t)-1)/2]
}

// write writes summary.md and runs.csv to o.out, and the summary to stdout.
func write(o *options, d *dataset, lambda, c, target float64, train string, cmdArgs []string, rs []result, stdout io.Writer) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var csv strings.Builder
	csv.WriteString("solver,run,wall_s,setup_s,reached,objective,nnz,rounds,updates,rounds_rose,rounds_measured\n")
	for _, r := range rs {
		fmt.Fprintf(&csv, "%s,%d,%.3f,%.3f,%v,%.15g,%d,%d,%d,%d,%d\n", r.solver, r.run, r.wall.Seconds(), r.setup.Seconds(),
			r.reached, r.objective, r.nnz, r.rounds, r.updates, r.guard.Rose, r.guard.Rounds)
	}
	if err := os.WriteFile(filepath.Join(o.out, "runs.csv"), []byte(csv.String()), 0o644); err != nil {
		return err
	}
	var s strings.Builder
	fmt.Fprintf(&s, "# strads logreg vs liblinear train -s 6\n\n")
	fmt.Fprintf(&s, "Command: `go run ./bench/logreg %s`\n\n", strings.Join(o.args, " "))
	fmt.Fprintf(&s, "Data: %d samples × %d features, %d non-zeros (%.1f per row); λ = %g·λ_max = %.6g (no intercept); liblinear C = 1/(λn) = %.6g.\n\n",
		d.n(), d.p, d.nnz, float64(d.nnz)/float64(d.n()), o.lambdaRatio, lambda, c)
	fmt.Fprintf(&s, "liblinear: `%s %s`; its model has F = %.12g (our convention), nnz %d: the target.\n\n", filepath.Base(train), strings.Join(cmdArgs, " "), target, rs[0].nnz)
	fmt.Fprintf(&s, "strads: --block %d --candidates %d --rho %g --gamma %g --eta %g --warmup %d --depth %d --report-every %d.\n\n",
		o.sched.Block, o.sched.Candidates, o.sched.Rho, o.sched.Gamma, o.sched.Eta, o.sched.Warmup, o.depth, o.reportEvery)
	fmt.Fprintf(&s, "Machine: %d CPUs, %s, %s.\n\n", runtime.NumCPU(), machine.CPUModel(), runtime.Version())
	s.WriteString("| solver | runs reaching F_lib | whole-job time to F_lib (s), median | of which setup (s) | rounds | updates | final F | nnz | rounds that raised F |\n|---|---|---|---|---|---|---|---|---|\n")
	var names []string
	for _, r := range rs {
		if !slices.Contains(names, r.solver) {
			names = append(names, r.solver)
		}
	}
	for _, name := range names {
		var mine []result
		for _, r := range rs {
			if r.solver == name {
				mine = append(mine, r)
			}
		}
		slices.SortFunc(mine, func(a, b result) int { return cmpDur(a, b) })
		m := mine[(len(mine)-1)/2]
		reached := 0
		for _, r := range mine {
			if r.reached {
				reached++
			}
		}
		t := "not reached"
		if md := median(rs, name); md != math.MaxInt64 {
			t = fmt.Sprintf("%.2f", md.Seconds())
		}
		fmt.Fprintf(&s, "| %s | %d/%d | %s | %.2f | %d | %d | %.10g | %d | %d/%d |\n", name, reached, len(mine), t, m.setup.Seconds(),
			m.rounds, m.updates, m.objective, m.nnz, m.guard.Rose, m.guard.Rounds)
	}
	if err := os.WriteFile(filepath.Join(o.out, "summary.md"), []byte(s.String()), 0o644); err != nil {
		return err
	}
	_, err := io.WriteString(stdout, "\n"+s.String())
	return err
}

// cmpDur orders runs by whole-job time, those that missed the target last.
func cmpDur(a, b result) int {
	switch {
	case a.reached != b.reached && a.reached:
		return -1
	case a.reached != b.reached:
		return 1
	}
	return int(a.wall - b.wall)
}
