package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/bench/machine"
	"github.com/strads-go/strads/bench/proc"
)

//go:embed scripts/fstar.py
var fstarScript []byte

// env is what the runs share.
type env struct {
	o          *options
	stdout     io.Writer
	tmp        string
	strads     string // the strads binary
	provenance string // where it comes from
	sklearn    string // scikit-learn's version, or why it is not used
	hasSklearn bool
	loadStart  string
	loadEnd    string
}

// sample is one report of a run: a row of strads's --metrics CSV.
type sample struct {
	time      float64 // s since the first round
	round     int64
	objective float64
	gap       float64
}

// runResult is one strads job.
type runResult struct {
	v       variant
	run     int     // 1-based; seeds the scheduler
	wall    float64 // the whole process, s
	elapsed float64 // first round to the end, as strads prints it; NaN if unknown
	// status is strads's stop reason (target, time-limit), or diverged,
	// failed, killed.
	status   string
	note     string // the error of a failed run, the round of a diverged one
	rounds   int64
	updates  int64
	planMs   float64 // the scheduler's compute per round, ms; NaN if unknown
	p50Ms    float64 // the median round's latency, ms; NaN if unknown
	final    float64 // the final objective; NaN if none
	trace    []sample
	setup    float64   // wall − elapsed: start, loading, join, teardown
	levelT   []float64 // whole-job time to each level, s; +Inf if not reached
	levelRnd []int64   // the round of that report; -1 if not reached
}

// shapeCase is a shape's data, its F* and its runs.
type shapeCase struct {
	shape     shape
	spec      genSpec
	data      string
	n, p      int
	nnz       int64
	rowReport int
	// F* and where it comes from.
	lambda, lambdaMax float64 // scikit-learn's; NaN without it
	fSklearn          float64 // NaN without it
	gapSklearn        float64 // its duality gap, computed by the script; NaN without it
	sklearnNote       string
	fRef              float64  // the objective the runs stop near: F_sklearn, or the reference run's lowest
	refTrace          []sample // the reference run's reports, without scikit-learn
	fstar             float64  // min(F_sklearn, every report)
	fstarBy           string
	lower             float64 // max(F − gap) of scikit-learn and every report: the optimum is ≥ lower
	runs              []*runResult
}

// setup builds strads, writes the script out and checks for scikit-learn.
func setup(ctx context.Context, o *options, stdout io.Writer) (*env, error) {
	tmp, err := os.MkdirTemp("", "strads-schedules")
	if err != nil {
		return nil, err
	}
	e := &env{o: o, stdout: stdout, tmp: tmp, strads: o.strads, loadStart: loadAverage()}
	if err := os.WriteFile(filepath.Join(tmp, "fstar.py"), fstarScript, 0o644); err != nil {
		return nil, err
	}
	if e.strads == "" {
		e.strads = filepath.Join(tmp, "strads")
		if e.provenance, err = proc.BuildStrads(ctx, o.rev, e.strads, tmp); err != nil {
			return nil, err
		}
	} else {
		e.provenance = "the binary " + e.strads
	}
	out, err := exec.CommandContext(ctx, o.python, "-c", "import sklearn, numpy, sys; print(sklearn.__version__, '(numpy', numpy.__version__ + ', Python', sys.version.split()[0] + ')')").Output()
	if err != nil {
		e.sklearn = fmt.Sprintf("not used: %s -c 'import sklearn' failed (%v)", o.python, err)
		fmt.Fprintln(stdout, "scikit-learn "+e.sklearn+"; F* comes from the strads runs")
	} else {
		e.sklearn, e.hasSklearn = strings.TrimSpace(string(out)), true
	}
	return e, nil
}

func loadAverage() string { return machine.LoadAverage() }

// fmtFloat writes x in the fewest digits that read back as x.
func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// dataFile generates the shape's data into the data directory, unless it
// is there already, and returns its path and non-zeros.
func (e *env) dataFile(ctx context.Context, s shape) (string, int64, error) {
	g := s.spec(e.o.quick)
	if err := os.MkdirAll(e.o.dataDir, 0o755); err != nil {
		return "", 0, err
	}
	name := fmt.Sprintf("lasso-%dx%d-d%g-g%d-c%g-k%d-s%d.svm", g.samples, g.features, g.density, g.groups, g.corr, g.trueNNZ, e.o.seed)
	path := filepath.Join(e.o.dataDir, name)
	if _, err := os.Stat(path); err != nil {
		args := []string{"gen", "lasso", "--samples", strconv.Itoa(g.samples), "--features", strconv.Itoa(g.features),
			"--density", fmtFloat(g.density), "--corr-groups", strconv.Itoa(g.groups), "--corr", fmtFloat(g.corr),
			"--true-nnz", strconv.Itoa(g.trueNNZ), "--seed", strconv.FormatUint(e.o.seed, 10), "-o", path}
		fmt.Fprintf(e.stdout, "strads %s\n", strings.Join(args, " "))
		if out, err := exec.CommandContext(ctx, e.strads, args...).CombinedOutput(); err != nil {
			return "", 0, fmt.Errorf("strads gen: %w\n%s", err, out)
		}
	}
	nnz, err := countNonZeros(path)
	return path, nnz, err
}

// countNonZeros counts the "idx:val" pairs of a LIBSVM file: its ':'.
func countNonZeros(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{':'}))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// sklearnFstar runs scripts/fstar.py on c and sets c.fSklearn and λ.
func (e *env) sklearnFstar(ctx context.Context, c *shapeCase) error {
	icpt := "0"
	if c.shape.intercept {
		icpt = "1"
	}
	p, err := proc.Run(ctx, 10*time.Minute, proc.SingleThread, e.o.python, filepath.Join(e.tmp, "fstar.py"),
		c.data, strconv.Itoa(c.p), fmtFloat(c.shape.ratio), icpt, fmtFloat(e.o.sklearnTol))
	if err == nil && p.TimedOut {
		err = fmt.Errorf("scikit-learn took longer than 10 minutes")
	}
	if err != nil {
		return err
	}
	kv := proc.KeyValues(p.Stdout)
	var errs [4]error
	c.fSklearn, errs[0] = strconv.ParseFloat(kv["objective"], 64)
	c.gapSklearn, errs[1] = strconv.ParseFloat(kv["gap"], 64)
	c.lambda, errs[2] = strconv.ParseFloat(kv["lambda"], 64)
	c.lambdaMax, errs[3] = strconv.ParseFloat(kv["lambda_max"], 64)
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("scikit-learn's output %q: %w", p.Stdout, err)
		}
	}
	c.sklearnNote = fmt.Sprintf("%s non-zeros, %s iterations, duality gap %.2g, fit %s s", kv["nnz"], kv["n_iter"], c.gapSklearn, kv["fit_s"])
	if kv["converged"] != "1" {
		c.sklearnNote += ", ConvergenceWarning"
	}
	return nil
}

// stradsArgs returns the command line of variant v's run r on c, stopping
// at target and writing its metrics to metrics.
func (e *env) stradsArgs(c *shapeCase, v variant, r int, target, metrics string) []string {
	args := []string{"lasso", "--data", c.data, "--lambda-ratio", fmtFloat(c.shape.ratio)}
	args = append(args, "--intercept="+strconv.FormatBool(c.shape.intercept))
	args = append(args, "--layout", v.layout)
	switch v.layout {
	case "rows":
		sched, rho := v.policy(), fmtFloat(e.o.rho)
		if !v.checked() {
			rho = "1"
		}
		block, cand := e.o.block, e.o.candidates
		if v.block > 0 {
			block, cand = v.block, 2*v.block
		}
		args = append(args, "--workers", strconv.Itoa(e.o.rowWorkers), "--schedule", sched, "--rho", rho,
			"--block", strconv.Itoa(block), "--candidates", strconv.Itoa(cand), "--report-every", strconv.Itoa(c.rowReport))
	case "cols":
		args = append(args, "--workers", strconv.Itoa(e.o.colWorkers), "--schedule", v.schedule)
		if w := roundWork(v.work, c.nnz, e.o.colWorkers); w > 0 {
			args = append(args, "--round-work", strconv.FormatInt(w, 10))
		}
		args = append(args, "--report-every", strconv.Itoa(e.o.colReport))
	}
	return append(args, "--seed", strconv.Itoa(r), "--tol", "0", "--target", target,
		"--time-limit", e.o.timeLimit.String(), "--progress", "0", "--metrics", metrics)
}

// roundWork returns the --round-work of work on data with nnz non-zeros
// split among workers: 0 for strads's default, a fraction of a worker's
// non-zeros when below 1 (at least 1), and work itself otherwise.
func roundWork(work float64, nnz int64, workers int) int64 {
	switch {
	case work == 0:
		return 0
	case work < 1:
		return max(1, int64(math.Round(work*float64(nnz)/float64(workers))))
	}
	return int64(work)
}

// resultLine matches strads's final line.
var resultLine = regexp.MustCompile(`(?m)^objective (\S+)\s+gap \S+\s+nnz \d+\s+rounds (\d+)\s+updates (\d+)\s+time ([0-9.]+)s\s+\(([^)]*)\)`)

// planLine and latencyLine match strads's summary of where a round's time
// went.
var (
	planLine    = regexp.MustCompile(`(?m)^per round: plan ([0-9.]+) ms`)
	latencyLine = regexp.MustCompile(`(?m)^round latency p50 ([0-9.]+) ms`)
)

// divergedLine matches the error of a job whose model diverged.
var divergedLine = regexp.MustCompile(`round (\d+): [^\n]*diverged`)

// parseResult fills r's final objective, rounds, updates, elapsed time and
// stop reason from strads's output, or reports that the line is missing;
// and the plan time and latency per round if it finds them (NaN if not).
func parseResult(stdout string, r *runResult) error {
	r.planMs, r.p50Ms = math.NaN(), math.NaN()
	if m := planLine.FindStringSubmatch(stdout); m != nil {
		r.planMs, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := latencyLine.FindStringSubmatch(stdout); m != nil {
		r.p50Ms, _ = strconv.ParseFloat(m[1], 64)
	}
	m := resultLine.FindStringSubmatch(stdout)
	if m == nil {
		return fmt.Errorf("no result line in strads's output %q", stdout)
	}
	var errs [4]error
	r.final, errs[0] = strconv.ParseFloat(m[1], 64)
	r.rounds, errs[1] = strconv.ParseInt(m[2], 10, 64)
	r.updates, errs[2] = strconv.ParseInt(m[3], 10, 64)
	r.elapsed, errs[3] = strconv.ParseFloat(m[4], 64)
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("strads's result line %q: %w", m[0], err)
		}
	}
	r.status = m[5]
	return nil
}

// runStrads runs variant v once on c.
func (e *env) runStrads(ctx context.Context, c *shapeCase, v variant, r int) (*runResult, error) {
	res := &runResult{v: v, run: r, elapsed: math.NaN(), final: math.NaN(), setup: math.NaN(), planMs: math.NaN(), p50Ms: math.NaN()}
	metrics := filepath.Join(e.tmp, "metrics.csv")
	os.Remove(metrics)
	target := fmtFloat(c.fRef * (1 + e.o.levels[len(e.o.levels)-1]/2))
	// strads stops itself at --time-limit; the hard limit is for a run
	// that does not.
	p, err := proc.Run(ctx, e.o.timeLimit+2*time.Minute, nil, e.strads, e.stradsArgs(c, v, r, target, metrics)...)
	res.wall = p.Wall
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case p.TimedOut:
		res.status = "killed"
		return res, nil
	case err != nil:
		if m := divergedLine.FindStringSubmatch(p.Stderr); m != nil {
			res.status, res.note = "diverged", "round "+m[1]
			res.rounds, _ = strconv.ParseInt(m[1], 10, 64)
			return res, nil
		}
		res.status, res.note = "failed", strings.Join(strings.Fields(p.Stderr), " ")
		return res, nil
	}
	if err := parseResult(p.Stdout, res); err != nil {
		return nil, err
	}
	res.setup = res.wall - res.elapsed
	if res.trace, err = readMetricsFile(metrics); err != nil {
		return nil, err
	}
	return res, nil
}

// readMetricsFile reads the metrics CSV at path.
func readMetricsFile(path string) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := readMetrics(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}

// readMetrics reads time_s, round, objective and gap from strads's metrics
// CSV.
func readMetrics(r io.Reader) ([]sample, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	if !sc.Scan() {
		return nil, fmt.Errorf("empty metrics: %w", io.ErrUnexpectedEOF)
	}
	col := map[string]int{}
	for i, name := range strings.Split(sc.Text(), ",") {
		col[name] = i
	}
	want := []string{"time_s", "round", "objective", "gap"}
	idx := make([]int, len(want))
	for i, name := range want {
		k, ok := col[name]
		if !ok {
			return nil, fmt.Errorf("metrics header %q has no %s column", sc.Text(), name)
		}
		idx[i] = k
	}
	var tr []sample
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		var v [4]float64
		for i, k := range idx {
			if k >= len(f) {
				return nil, fmt.Errorf("short metrics row %q", sc.Text())
			}
			x, err := strconv.ParseFloat(f[k], 64)
			if err != nil {
				return nil, fmt.Errorf("metrics row %q: %w", sc.Text(), err)
			}
			v[i] = x
		}
		tr = append(tr, sample{time: v[0], round: int64(v[1]), objective: v[2], gap: v[3]})
	}
	return tr, sc.Err()
}

// referenceFlags are those of the run that finds F_ref without
// scikit-learn: the column layout on one worker, until its duality gap
// certifies the objective to 1e-11, relatively.
const referenceFlags = "--layout cols --workers 1 --tol 1e-11 --report-every 1"

// prepare generates the shape's data and finds the objective the runs
// stop near: scikit-learn's, or else the lowest of a reference run's
// reports.
func (e *env) prepare(ctx context.Context, s shape) (*shapeCase, error) {
	c := &shapeCase{shape: s, spec: s.spec(e.o.quick), lambda: math.NaN(), lambdaMax: math.NaN(), fSklearn: math.NaN(), gapSklearn: math.NaN()}
	var err error
	if c.data, c.nnz, err = e.dataFile(ctx, s); err != nil {
		return nil, err
	}
	c.n, c.p = c.spec.samples, c.spec.features
	c.rowReport = e.o.rowReport
	if c.rowReport == 0 {
		c.rowReport = (c.p + 4*e.o.block - 1) / (4 * e.o.block)
	}
	if e.hasSklearn {
		if err := e.sklearnFstar(ctx, c); err != nil {
			fmt.Fprintf(e.stdout, "  scikit-learn failed, F* from the strads runs: %v\n", err)
			c.sklearnNote = "failed: " + strings.Join(strings.Fields(err.Error()), " ")
		}
	}
	c.fRef = c.fSklearn
	if math.IsNaN(c.fRef) {
		// A reference run of the column layout, certified by its gap.
		metrics := filepath.Join(e.tmp, "reference.csv")
		args := []string{"lasso", "--data", c.data, "--lambda-ratio", fmtFloat(s.ratio)}
		args = append(args, strings.Fields(referenceFlags)...)
		args = append(args, "--time-limit", (10 * e.o.timeLimit).String(), "--progress", "0", "--metrics", metrics)
		args = append(args, "--intercept="+strconv.FormatBool(s.intercept))
		p, err := proc.Run(ctx, 10*e.o.timeLimit+2*time.Minute, nil, e.strads, args...)
		if err == nil && p.TimedOut {
			err = fmt.Errorf("the reference run did not stop")
		}
		if err != nil {
			return nil, err
		}
		if c.refTrace, err = readMetricsFile(metrics); err != nil {
			return nil, fmt.Errorf("the reference run: %w", err)
		}
		c.fRef = math.Inf(1)
		for _, s := range c.refTrace {
			c.fRef = min(c.fRef, s.objective)
		}
		if math.IsInf(c.fRef, 1) {
			return nil, fmt.Errorf("the reference run reported nothing")
		}
	}
	return c, nil
}

// benchShape runs every variant on shape s, --runs times, interleaved;
// runs after the first only for the variants whose first run took less than
// --repeat-under.
func (e *env) benchShape(ctx context.Context, s shape) (*shapeCase, error) {
	c, err := e.prepare(ctx, s)
	if err != nil {
		return nil, err
	}
	from := "scikit-learn: " + c.sklearnNote
	if math.IsNaN(c.fSklearn) {
		from = "the reference run"
	}
	fmt.Fprintf(e.stdout, "\n== shape %s: %s, %d non-zeros; F_ref %.15g (%s)\n", s.name, c.spec.describe(), c.nnz, c.fRef, from)
	first := map[variant]float64{}
	for r := 1; r <= e.o.runs; r++ {
		for _, v := range e.o.variants {
			if r > 1 && !repeat(first[v], e.o.repeatUnder) {
				continue
			}
			res, err := e.runStrads(ctx, c, v, r)
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", v.name(), r, err)
			}
			if r == 1 {
				first[v] = res.wall
			}
			fmt.Fprintf(e.stdout, "  run %d %-22s %7.2fs (%s) rounds %d updates %d F = %.12g %s\n",
				r, v.name(), res.wall, res.status, res.rounds, res.updates, res.final, res.note)
			c.runs = append(c.runs, res)
		}
	}
	analyze(c, e.o.levels)
	return c, nil
}

// repeat reports whether a variant whose first run took wall seconds is run
// again.
func repeat(wall float64, under time.Duration) bool {
	return wall < under.Seconds()
}
