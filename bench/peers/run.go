package main

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/bench/machine"
	"github.com/strads-go/strads/bench/proc"
)

//go:embed scripts/*.py scripts/*.R
var scriptFS embed.FS

// env is what the runs share.
type env struct {
	o          *options
	stdout     io.Writer
	tmp        string
	scripts    string // the embedded scripts, written out
	strads     string // the strads binary
	hasTarget  bool   // strads has --target
	versions   []string
	provenance string // where the strads binary comes from
	loadStart  string // the load average when the runs began
}

// runResult is one run of one system on one case.
type runResult struct {
	system   string // scikit-learn, glmnet, liblinear, strads
	workers  int    // strads's --workers; 0 for a peer
	schedule string // strads's --schedule; "" for a peer
	run      int
	wall     float64 // whole process, s
	cpu      float64 // user + system time of the process, s
	fit      float64 // peers: the fit alone as the script timed it; strads: first round to the end; NaN if unknown
	status   string  // peers: ok, timeout, failed; strads: its stop reason, or killed/failed
	ok       bool    // a model was written and evaluated
	obj      float64 // the objective of the written model (eval.go)
	nnz      int
	reached  bool   // strads: obj ≤ target
	note     string // peer's convergence notes, strads's estimate
	// strads only.
	elapsed  float64      // first round to the end, as strads prints it
	toTarget float64      // whole job until the target: wall, or an estimate without --target
	trace    [][2]float64 // (time_s, objective) of the metrics rows
}

// label returns the system's name with its workers, and its schedule
// where it is not the default.
func (r *runResult) label() string {
	if r.system == "strads" {
		return stradsLabel(r.workers, r.schedule)
	}
	return r.system
}

// stradsLabel names strads with w workers and the schedule sched.
func stradsLabel(w int, sched string) string {
	if sched == defaultSchedule {
		return fmt.Sprintf("strads w=%d", w)
	}
	return fmt.Sprintf("strads w=%d %s", w, sched)
}

// defaultSchedule is strads's default --schedule.
const defaultSchedule = "priority"

func joinArgs(args []string) string { return strings.Join(args, " ") }

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', 17, 64) }

// theCase is one problem on one shape.
type theCase struct {
	shape     shape
	prob      problem
	fit       fit
	data      string
	n, p, nnz int
	lambdaMax float64
	lambda    float64
	c         float64 // liblinear's C = 1/(λn)
	best      float64 // the lowest objective of the peers
	bestBy    string
	target    float64
	commands  []string // one line per system, for the record
	runs      []runResult
	d         *dataset
}

// peers returns the peers of a problem, less those --skip-peers names.
func (e *env) peers(prob problem) []string {
	all := []string{"liblinear", "glmnet"}
	if prob == lassoProblem {
		all = []string{"scikit-learn", "glmnet"}
	}
	return slices.DeleteFunc(all, func(p string) bool { return e.o.skipPeers[p] })
}

// peerArgs returns the command line of peer on c, writing its model to out.
func (e *env) peerArgs(c *theCase, peer, out string) (string, []string) {
	icpt := "0"
	if c.fit.intercept {
		icpt = "1"
	}
	switch peer {
	case "scikit-learn":
		return e.o.python, []string{filepath.Join(e.scripts, "sklearn_lasso.py"), c.data, strconv.Itoa(c.p), fmtFloat(c.lambda), icpt,
			fmtFloat(e.o.sklearnTol), strconv.Itoa(e.o.sklearnIter), out}
	case "glmnet":
		family := "gaussian"
		if c.prob == logisticProblem {
			family = "binomial"
		}
		args := []string{filepath.Join(e.scripts, "glmnet.R"), family, c.data, strconv.Itoa(c.p), fmtFloat(c.lambda), icpt,
			fmtFloat(e.o.glmnetThresh), out}
		if e.o.glmnetPath > 1 {
			args = append(args, strconv.Itoa(e.o.glmnetPath), fmtFloat(c.lambdaMax))
		}
		return e.o.rscript, args
	case "liblinear":
		return e.o.liblinear, []string{"-s", "6", "-c", fmtFloat(c.c), "-e", fmtFloat(e.o.liblinearEps), c.data, out}
	}
	panic("unknown peer " + peer)
}

// runPeer runs one peer on c once.
func (e *env) runPeer(ctx context.Context, c *theCase, peer string, r int) (runResult, error) {
	res := runResult{system: peer, run: r, fit: math.NaN(), obj: math.NaN()}
	out := filepath.Join(e.tmp, fmt.Sprintf("%s-%s-%s.model", c.shape.name, c.prob, peer))
	os.Remove(out)
	name, args := e.peerArgs(c, peer, out)
	p, err := proc.Run(ctx, e.o.timeLimit, proc.SingleThread, name, args...)
	res.wall, res.cpu = p.Wall, p.CPU
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case p.TimedOut:
		res.status = "timeout"
		return res, nil
	case err != nil:
		res.status = "failed"
		res.note = strings.ReplaceAll(strings.TrimSpace(proc.Tail(err.Error())), "\n", " / ")
		fmt.Fprintf(e.stdout, "  %s failed: %v\n", peer, err)
		return res, nil
	}
	var m model
	if peer == "liblinear" {
		m, err = readLiblinearModel(out, c.p)
		if strings.Contains(p.Stdout, "WARNING") {
			res.note = "liblinear: reaching max number of iterations"
		}
		// liblinear does not time its fit: estimate it as the run less
		// the same run stopped after its first pass (-e 1e30: read, one
		// gradient, write).
		name, args := e.peerArgs(c, peer, out+".read")
		args[slices.Index(args, "-e")+1] = "1e30"
		if q, err := proc.Run(ctx, e.o.timeLimit, proc.SingleThread, name, args...); err == nil && !q.TimedOut {
			res.fit = max(0, p.Wall-q.Wall)
		}
	} else {
		m, err = readModelCSV(out, c.p)
		kv := proc.KeyValues(p.Stdout)
		if v, err := strconv.ParseFloat(kv["fit_s"], 64); err == nil {
			res.fit = v
		}
		switch {
		case kv["converged"] == "0":
			res.note = "scikit-learn: ConvergenceWarning"
		case kv["jerr"] != "" && kv["jerr"] != "0":
			res.note = "glmnet: jerr " + kv["jerr"]
		}
		if kv["n_iter"] != "" {
			gap, _ := strconv.ParseFloat(kv["dual_gap"], 64)
			res.note = strings.TrimSpace(res.note + fmt.Sprintf(" n_iter %s, dual gap %.2g", kv["n_iter"], gap))
		}
		if kv["npasses"] != "" {
			res.note = strings.TrimSpace(res.note + " npasses " + kv["npasses"])
		}
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", peer, err)
	}
	res.status, res.ok = "ok", true
	res.obj, res.nnz = c.d.objective(c.prob, m, c.lambda), m.nnz()
	return res, nil
}

// stradsArgs returns strads's command line on c with w workers and the
// schedule sched (default flags but --workers for the default schedule).
func (e *env) stradsArgs(c *theCase, w int, sched, out, metrics string) []string {
	args := []string{string(c.prob), "--data", c.data, "--lambda", fmtFloat(c.lambda), "--workers", strconv.Itoa(w)}
	if sched != defaultSchedule {
		args = append(args, "--schedule", sched)
	}
	args = append(args, "--intercept="+strconv.FormatBool(c.fit.intercept))
	if e.hasTarget {
		args = append(args, "--target", fmtFloat(c.target), "--tol", "0")
	} else {
		args = append(args, "--tol", "1e-9")
	}
	return append(args, "--time-limit", e.o.timeLimit.String(), "--progress", "0", "--out", out, "--metrics", metrics)
}

// resultLine matches strads's final line.
var resultLine = regexp.MustCompile(`(?m)^objective \S+\s+gap \S+\s+nnz \d+\s+rounds \d+\s+updates \d+\s+time ([0-9.]+)s\s+\(([^)]*)\)`)

// runStrads runs the strads command on c with w workers and the schedule
// sched once.
func (e *env) runStrads(ctx context.Context, c *theCase, w int, sched string, r int) (runResult, error) {
	res := runResult{system: "strads", workers: w, schedule: sched, run: r, fit: math.NaN(), obj: math.NaN(), toTarget: math.Inf(1)}
	out := filepath.Join(e.tmp, "strads.model")
	metrics := filepath.Join(e.tmp, "strads-metrics.csv")
	os.Remove(out)
	os.Remove(metrics)
	args := e.stradsArgs(c, w, sched, out, metrics)
	// strads stops itself at --time-limit and writes its model; the hard
	// limit is for a run that does not.
	p, err := proc.Run(ctx, e.o.timeLimit+2*time.Minute, nil, e.strads, args...)
	res.wall, res.cpu = p.Wall, p.CPU
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case p.TimedOut:
		res.status = "killed"
		return res, nil
	case err != nil:
		res.status = "failed"
		res.note = strings.ReplaceAll(strings.TrimSpace(proc.Tail(err.Error())), "\n", " / ")
		fmt.Fprintf(e.stdout, "  strads failed: %v\n", err)
		return res, nil
	}
	if m := resultLine.FindStringSubmatch(p.Stdout); m != nil {
		res.elapsed, _ = strconv.ParseFloat(m[1], 64)
		res.fit = res.elapsed
		res.status = m[2]
	} else {
		res.status = "?"
	}
	md, err := readModelCSV(out, c.p)
	if err != nil {
		return res, fmt.Errorf("strads: %w", err)
	}
	res.ok = true
	res.obj, res.nnz = c.d.objective(c.prob, md, c.lambda), md.nnz()
	res.reached = res.obj <= c.target || res.status == "target"
	if tr, err := readTrace(metrics); err == nil {
		res.trace = tr
	} else {
		fmt.Fprintf(e.stdout, "  strads metrics: %v\n", err)
	}
	switch {
	case e.hasTarget && res.reached:
		res.toTarget = res.wall
	case res.reached:
		// Without --target the job ran on to --tol: the time to the target
		// is the wall time less what came after the first report at or
		// below it.
		for _, s := range res.trace {
			if s[1] <= c.target {
				res.toTarget = res.wall - (res.elapsed - s[0])
				res.note = "time to target estimated from the metrics (no --target)"
				break
			}
		}
		if math.IsInf(res.toTarget, 1) {
			res.toTarget = res.wall
		}
	}
	return res, nil
}

// readTrace reads (time_s, objective) from a strads metrics CSV.
func readTrace(path string) ([][2]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	if !sc.Scan() {
		return nil, fmt.Errorf("%s: empty", path)
	}
	cols := strings.Split(sc.Text(), ",")
	ti, oi := indexOf(cols, "time_s"), indexOf(cols, "objective")
	if ti < 0 || oi < 0 {
		return nil, fmt.Errorf("%s: no time_s or objective column", path)
	}
	var tr [][2]float64
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) <= max(ti, oi) {
			return nil, fmt.Errorf("%s: short row %q", path, sc.Text())
		}
		t, err1 := strconv.ParseFloat(f[ti], 64)
		v, err2 := strconv.ParseFloat(f[oi], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad row %q", path, sc.Text())
		}
		tr = append(tr, [2]float64{t, v})
	}
	return tr, sc.Err()
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// prepare loads c's data and sets λ, C and the records of the commands.
func (e *env) prepare(ctx context.Context, s shape, prob problem) (*theCase, error) {
	c := &theCase{shape: s, prob: prob, fit: s.fits[prob]}
	var err error
	if c.data, err = e.dataFile(ctx, s, prob); err != nil {
		return nil, err
	}
	if c.d, err = loadDataset(c.data); err != nil {
		return nil, err
	}
	c.n, c.p, c.nnz = c.d.n(), c.d.p, c.d.nnz()
	if s.real == "" {
		c.p = max(c.p, s.spec(e.o.quick).features)
		c.d.p = c.p
	}
	c.lambdaMax = c.d.lambdaMax(prob, c.fit.intercept)
	if c.fit.c > 0 {
		c.lambda = 1 / (c.fit.c * float64(c.n))
		c.fit.ratio = c.lambda / c.lambdaMax
	} else {
		c.lambda = c.fit.ratio * c.lambdaMax
	}
	c.c = 1 / (c.lambda * float64(c.n))
	return c, nil
}

// bench runs every system on c, --runs times, interleaved.
func (e *env) bench(ctx context.Context, c *theCase) error {
	if len(e.peers(c.prob)) == 0 {
		return fmt.Errorf("%s: --skip-peers leaves no peer to set F_best", c.prob)
	}
	fmt.Fprintf(e.stdout, "\n== %s, shape %s: %d × %d, %d non-zeros; λ = %g·λ_max = %.6g\n", c.prob, c.shape.name, c.n, c.p, c.nnz, c.fit.ratio, c.lambda)
	for _, peer := range e.peers(c.prob) {
		name, args := e.peerArgs(c, peer, "MODEL")
		c.commands = append(c.commands, fmt.Sprintf("%s: `%s %s`", peer, filepath.Base(name), joinArgs(relArgs(args, e.scripts))))
	}
	for r := 1; r <= e.o.runs; r++ {
		for _, peer := range e.peers(c.prob) {
			res, err := e.runPeer(ctx, c, peer, r)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "  run %d %-12s %7.2fs (fit %s s, cpu %.2fs) %s F = %.12g nnz %d %s\n", r, peer, res.wall, fmtSec(res.fit), res.cpu, res.status, res.obj, res.nnz, res.note)
			c.runs = append(c.runs, res)
		}
		if r == 1 {
			c.best, c.bestBy = math.Inf(1), ""
			for _, res := range c.runs {
				if res.ok && res.obj < c.best {
					c.best, c.bestBy = res.obj, res.system
				}
			}
			if c.bestBy == "" {
				fmt.Fprintln(e.stdout, "  no peer finished: strads not run")
				return nil
			}
			c.target = c.best * (1 + e.o.targetRel)
			fmt.Fprintf(e.stdout, "  F_best = %.12g (%s), target %.12g\n", c.best, c.bestBy, c.target)
			if e.o.noStrads {
				continue
			}
			for _, sched := range e.o.schedules {
				for _, w := range e.o.workers {
					c.commands = append(c.commands, fmt.Sprintf("%s: `strads %s`", stradsLabel(w, sched), joinArgs(e.stradsArgs(c, w, sched, "MODEL", "METRICS"))))
				}
			}
		}
		for _, sched := range e.o.schedules {
			for _, w := range e.o.workers {
				if e.o.noStrads {
					break
				}
				res, err := e.runStrads(ctx, c, w, sched, r)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "  run %d %s %7.2fs (rounds %.2fs, cpu %.2fs) %s, reached %v, F = %.12g nnz %d %s\n",
					r, res.label(), res.wall, res.elapsed, res.cpu, res.status, res.reached, res.obj, res.nnz, res.note)
				c.runs = append(c.runs, res)
			}
		}
	}
	return nil
}

// relArgs shortens the scripts' paths in args for the record.
func relArgs(args []string, scripts string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.HasPrefix(a, scripts+"/") {
			a = "bench/peers/scripts/" + strings.TrimPrefix(a, scripts+"/")
		}
		out[i] = a
	}
	return out
}

// setup builds strads, writes the scripts out and records the versions.
func setup(ctx context.Context, o *options, stdout io.Writer) (*env, error) {
	tmp, err := os.MkdirTemp("", "strads-peers")
	if err != nil {
		return nil, err
	}
	e := &env{o: o, stdout: stdout, tmp: tmp, scripts: filepath.Join(tmp, "scripts"), strads: o.strads}
	if err := os.MkdirAll(e.scripts, 0o755); err != nil {
		return nil, err
	}
	ents, err := scriptFS.ReadDir("scripts")
	if err != nil {
		return nil, err
	}
	for _, ent := range ents {
		b, err := scriptFS.ReadFile("scripts/" + ent.Name())
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(e.scripts, ent.Name()), b, 0o644); err != nil {
			return nil, err
		}
	}
	if e.strads == "" {
		if e.provenance, err = proc.BuildStrads(ctx, o.rev, filepath.Join(tmp, "strads"), tmp); err != nil {
			return nil, err
		}
		e.strads = filepath.Join(tmp, "strads")
	} else {
		e.provenance = "the binary " + e.strads
	}
	help, _ := exec.CommandContext(ctx, e.strads, "lasso", "--help").CombinedOutput()
	help2, _ := exec.CommandContext(ctx, e.strads, "logreg", "--help").CombinedOutput()
	e.hasTarget = bytes.Contains(help, []byte("-target")) && bytes.Contains(help2, []byte("-target"))
	if !e.hasTarget {
		fmt.Fprintln(stdout, "strads has no --target flag: running it with --tol 1e-9 and estimating the time to the target from its metrics")
	}
	e.versions = versions(ctx, o)
	e.loadStart = machine.LoadAverage()
	return e, nil
}

// versions returns the versions of the peers, one line each.
func versions(ctx context.Context, o *options) []string {
	run := func(name string, args ...string) string {
		out, err := exec.CommandContext(ctx, name, args...).Output()
		if err != nil {
			return "unknown"
		}
		return strings.TrimSpace(string(out))
	}
	return []string{
		"scikit-learn " + run(o.python, "-c", "import sklearn, numpy, scipy, sys; print(sklearn.__version__, '(numpy', numpy.__version__ + ', scipy', scipy.__version__ + ', Python', sys.version.split()[0] + ')')"),
		"glmnet " + run(o.rscript, "-e", `cat(format(packageVersion("glmnet")), "(Matrix", format(packageVersion("Matrix")), paste0(", ", R.version.string, ")"))`),
		"liblinear-tools " + run("dpkg-query", "-W", "-f", "${Version}", "liblinear-tools"),
	}
}
