package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/strads-go/strads/apps/logreg"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/schmp"
)

// Defaults of the parameter-server modes, by measurement (docs/logreg.md,
// "Data-parallel SGD").
const (
	// defaultStaleness: on 2 workers of one machine SSP(2) ran as fast as
	// larger bounds and reached the same objective; a larger s only adds
	// stale steps when a worker falls behind for longer.
	defaultStaleness = 2
	// defaultClocksPerPass: on a 20,000 × 200 set, 2 workers, 3 seeds,
	// the objective ended 4–15% above the optimum at 4 clocks a pass,
	// 3–5% at 8 and 3–4% at 16 (bsp, ssp, essp; docs/logreg.md), for
	// about twice the time of 4: every worker steps from the same view
	// for a whole clock, and their summed steps overshoot.
	defaultClocksPerPass = 16
	defaultPasses        = 30
)

const stalenessUsage = "ssp and essp: the most clocks a read of the weights may miss (default 2: measured as fast as larger bounds on one machine, and as accurate as bsp; larger bounds only help when a worker falls behind for longer)"

// psFlags are logreg's flags of the parameter-server modes (--mode bsp,
// ssp, essp, async).
type psFlags struct {
	mode          string
	staleness     int
	penalty       string
	passes        int
	clocksPerPass int
	step          float64
	servers       int
}

func addPSFlags(fs *flag.FlagSet) *psFlags {
	f := &psFlags{}
	fs.StringVar(&f.mode, "mode", "scheduled", "how to solve: scheduled (coordinate descent, SchMP: exact, the default) or by data-parallel SGD on the parameter server with the weights' consistency model bsp, ssp, essp or async (rows of --data split over the workers; docs/logreg.md)")
	fs.IntVar(&f.staleness, "staleness", defaultStaleness, stalenessUsage)
	fs.StringVar(&f.penalty, "penalty", "l1", "parameter-server modes: l1 (λ‖w‖₁, the scheduled mode's) or l2 ((λ/2)‖w‖², λ = 1/(C·n) with --C as in scikit-learn)")
	fs.IntVar(&f.passes, "passes", defaultPasses, "parameter-server modes: most passes over the data (--max-rounds bounds the clocks too)")
	fs.IntVar(&f.clocksPerPass, "clocks-per-pass", defaultClocksPerPass, "parameter-server modes: clocks (mini-batches, each 1/k of every worker's rows) per pass; the workers share their changes at each clock")
	fs.Float64Var(&f.step, "step", 0, "parameter-server modes: step size η₀ of the first pass, pass p taking η₀/√(1+p) (0: 2/r², r² the mean ‖x_i‖², +1 with the intercept)")
	fs.IntVar(&f.servers, "servers", 1, "parameter-server modes: number of parameter servers, each holding every servers-th weight")
	return f
}

// scheduledOnly are the flags that the parameter-server modes refuse:
// the scheduler's, the layouts', the path's and the coordinator's (a lost
// worker fails a parameter-server job: it has no spares).
var scheduledOnly = []string{"schedule", "gamma", "eta", "candidates", "block", "warmup", "rho", "layout", "round-work",
	"lambda-path", "cv", "depth", "schedulers", "spares"}

// psOnly are the flags that the scheduled mode refuses.
var psOnly = []string{"staleness", "penalty", "passes", "clocks-per-pass", "step", "servers"}

// checkMode refuses flags that the mode does not take; given are the flags
// on the command line. It returns the consistency model of a
// parameter-server mode, and ps false for the scheduled mode.
func (f *psFlags) checkMode(given map[string]bool) (m ps.Model, isPS bool, err error) {
	refuse := func(names []string, why string) error {
		for _, n := range names {
			if given[n] {
				return cli.Usagef("--%s %s", n, why)
			}
		}
		return nil
	}
	if f.mode == "scheduled" {
		return 0, false, refuse(psOnly, "is for the parameter-server modes (--mode bsp, ssp, essp or async), not --mode scheduled")
	}
	m, err = ps.ParseModel(f.mode)
	if err != nil {
		return 0, false, cli.Usagef("--mode %q: want scheduled, bsp, ssp, essp or async", f.mode)
	}
	if err := refuse(scheduledOnly, "is for --mode scheduled, not "+f.mode); err != nil {
		return 0, false, err
	}
	if (m == ps.BSP || m == ps.Async) && given["staleness"] {
		return 0, false, cli.Usagef("--staleness is for ssp and essp: %s reads have no such bound", f.mode)
	}
	return m, true, nil
}

// psJob is a logistic regression job on the parameter server.
type psJob struct {
	cfg     logreg.SGDConfig
	predict string
	out     string
	metrics string
	res     *logreg.SGDResult
}

// logregPSJob returns the job of a parameter-server mode m.
func logregPSJob(fs *flag.FlagSet, env *cli.Env, lf *logregFlags, pf *psFlags, m ps.Model) (*cli.Job, error) {
	if env.Role == cli.Scheduler {
		return nil, cli.Usagef("--mode %s has no scheduler role: start a coordinator and --workers workers", pf.mode)
	}
	opts := env.Options
	if err := checkPSCheckpoints(opts, pf.mode, fmt.Sprintf("%d a pass", pf.clocksPerPass)); err != nil {
		return nil, err
	}
	sched, err := lf.sched.config(opts.Workers)
	if err != nil {
		return nil, err
	}
	pen, err := logreg.ParsePenalty(pf.penalty)
	if err != nil {
		return nil, cli.Usagef("--penalty: %v", err)
	}
	cfg := logreg.SGDConfig{
		Config:  lf.roleConfig(env.Role),
		Penalty: pen, Model: m, Workers: opts.Workers, Servers: pf.servers,
		ClocksPerPass: pf.clocksPerPass, Passes: pf.passes, MaxClocks: int(min(opts.MaxRounds, math.MaxInt32)),
		Step: pf.step, Tol: opts.Tol, Target: opts.Target, HasTarget: opts.HasTarget, TimeLimit: opts.TimeLimit,
		Seed: lf.sched.seed, Progress: opts.Progress, ProgressEvery: opts.ProgressEvery,
	}
	cfg.Node = node.Options{Timeout: opts.Timeout, Keep: opts.CheckpointKeep}
	cfg.Schedule = sched
	if m == ps.SSP || m == ps.ESSP {
		cfg.Staleness = pf.staleness
	}
	// One evaluation a pass unless --report-every says otherwise: it
	// costs a pass.
	cfg.EvalEvery = cfg.ClocksPerPass
	if given(fs)["report-every"] {
		cfg.EvalEvery = opts.ReportEvery
	}
	if err := cfg.Validate(); err != nil {
		return nil, cli.FlagError(fs, map[string]string{"EvalEvery": "report-every", "MaxClocks": "max-rounds"}, err)
	}
	if err := lf.checkPredict(); err != nil {
		return nil, err
	}
	if err := logreg.CheckData(cfg.Data); err != nil {
		return nil, cli.UsageError(err)
	}
	if cfg.Test != "" {
		if _, _, err := logreg.CheckLabels(cfg.Test); err != nil {
			return nil, cli.UsageError(err)
		}
	}
	j := &psJob{cfg: cfg, predict: lf.predict, out: opts.Out, metrics: opts.Metrics}
	job := cli.NewRunJob(j.run)
	job.Print = j.print
	return job, nil
}

// run runs the job, or the role of it that rt says, and writes its
// outputs: the model, the metrics and the predictions.
func (j *psJob) run(ctx context.Context, rt *cli.Runtime) (*coordinator.Result, error) {
	j.cfg.Node.Log = rt.Logger
	if m := rt.Monitor; m != nil {
		report := psReporter(m)
		j.cfg.Report = func(r logreg.SGDRecord) {
			report(float64(r.Clock), float64(r.Samples), r.Objective, float64(r.NNZ), map[string]float64{"train_accuracy": r.Train, "test_accuracy": r.Test}, r.Staleness)
		}
	}
	j.cfg.CheckpointEvery = psCheckpoints(rt, &j.cfg.Node)
	var res *logreg.SGDResult
	var err error
	if rt.Role == cli.All {
		res, err = logreg.RunSGD(ctx, rt.Dial, j.cfg)
	} else {
		var sj *logreg.SGDJob
		if sj, err = logreg.NewSGDJob(j.cfg); err != nil {
			return nil, err
		}
		if rt.Role == cli.Worker {
			return nil, sj.Host(ctx, rt.Dial, rt.Place)
		}
		res, err = sj.Coordinate(ctx, rt.Conn, rt.Dial, rt.Options.JoinTimeout)
	}
	if err != nil {
		return nil, err
	}
	j.res = res
	if j.out != "" {
		if err := atomicfile.Write(j.out, func(w *bufio.Writer) error { return res.Model.Write(w) }); err != nil {
			return nil, err
		}
	}
	if j.metrics != "" {
		if err := atomicfile.Write(j.metrics, func(w *bufio.Writer) error { return writePSMetrics(w, res) }); err != nil {
			return nil, err
		}
	}
	if j.predict != "" {
		path := j.cfg.Test
		if path == "" {
			path = j.cfg.Data
		}
		if err := atomicfile.Write(j.predict, func(w *bufio.Writer) error { return res.Model.WritePredictions(w, path) }); err != nil {
			return nil, err
		}
	}
	last := res.Records[len(res.Records)-1]
	return &coordinator.Result{
		Rounds: uint64(res.Clocks), Updates: last.Samples, Elapsed: res.Elapsed,
		Final: schmp.Progress{Objective: res.Objective, NNZ: res.Model.NNZ()},
	}, nil
}

// psMetricsHeader are the columns of a parameter-server mode's metrics
// CSV: the runtime's that mean the same (round: the clock; updates: the
// SGD steps; gap: empty, SGD certifies none), logreg's accuracies, and the
// staleness of the workers' reads so far.
const psMetricsHeader = "time_s,round,objective,nnz,updates,gap,train_accuracy,test_accuracy,staleness_mean,staleness_var,staleness_max"

func writePSMetrics(w io.Writer, res *logreg.SGDResult) error {
	if _, err := fmt.Fprintln(w, psMetricsHeader); err != nil {
		return err
	}
	g := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	for _, r := range res.Records {
		s := r.Staleness
		if _, err := fmt.Fprintf(w, "%.3f,%d,%s,%d,%d,,%s,%s,%s,%s,%d\n", r.Time, r.Clock, g(r.Objective), r.NNZ, r.Samples,
			g(r.Train), g(r.Test), g(s.Mean()), g(s.Var()), s.Max); err != nil {
			return err
		}
	}
	return nil
}

// print prints the end of the job: the objective of the model written,
// recomputed from it, and the staleness of the reads.
func (j *psJob) print(w io.Writer, _ *coordinator.Result) {
	r := j.res
	if r == nil {
		return
	}
	last := r.Records[len(r.Records)-1]
	fmt.Fprintf(w, "objective %.12g  nnz %d  clocks %d  passes %.3g  updates %d  time %.3fs  (%s)\n",
		r.Objective, r.Model.NNZ(), r.Clocks, float64(last.Samples)/float64(r.Train.Rows), last.Samples, r.Elapsed.Seconds(), r.Reason)
	mode := j.cfg.Model.String()
	if j.cfg.Model == ps.SSP || j.cfg.Model == ps.ESSP {
		mode += fmt.Sprintf("(%d)", j.cfg.Staleness)
	}
	s := last.Staleness
	fmt.Fprintf(w, "parameter server: %s, %d workers, %d servers; staleness of the reads mean %.3g var %.3g max %d\n",
		mode, j.cfg.Workers, j.cfg.Servers, s.Mean(), s.Var(), s.Max)
	var b strings.Builder
	fmt.Fprintf(&b, "λ %.6g", r.Lambda)
	if j.cfg.Penalty == logreg.L1 {
		fmt.Fprintf(&b, " (λ_max %.6g)", r.LambdaMax)
	} else {
		b.WriteString(" (L2)")
	}
	if j.cfg.Intercept {
		fmt.Fprintf(&b, "  intercept %.6g", r.Model.Intercept)
	}
	fmt.Fprintf(&b, "  train accuracy %.4f", r.Train.Accuracy())
	if j.cfg.Test != "" {
		fmt.Fprintf(&b, "  test accuracy %.4f", r.Test.Accuracy())
	}
	fmt.Fprintln(w, b.String())
}
