package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/strads-go/strads/apps/mf"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/schmp"
)

// mfStaleness is --staleness by default (see its usage).
const mfStaleness = 1

// mfPSOnly are the flags of the parameter-server modes alone.
var mfPSOnly = []string{"staleness", "clocks-per-iter", "slow-worker", "slow-turns"}

// notPS refuses the flags of the parameter-server modes in the scheduled
// mode.
func (f *mfFlags) notPS(fs *flag.FlagSet) error {
	g := given(fs)
	for _, name := range mfPSOnly {
		if g[name] {
			return cli.Usagef("--%s is of --mode bsp, ssp, essp or async, not --mode %s", name, mf.Scheduled)
		}
	}
	return nil
}

// psJob returns the job of a parameter-server mode (mf.RunPS): a whole
// job, on the runtime's NATS server (embedded, or --nats), or the role
// of it that env says.
func (f *mfFlags) psJob(fs *flag.FlagSet, env *cli.Env, cfg mf.Config) (*cli.Job, error) {
	g := given(fs)
	opts := env.Options
	o := f.ps
	switch {
	case env.Role == cli.Scheduler:
		return nil, cli.Usagef("--mode %s has no scheduler role: start a coordinator and --workers workers", cfg.Mode)
	case f.lambda.auto || f.rank.auto:
		return nil, cli.Usagef("--lambda auto and --rank auto need --validate: --mode %s holds nothing out", cfg.Mode)
	case g["staleness"] && cfg.Mode != "ssp" && cfg.Mode != "essp":
		return nil, cli.Usagef("--staleness is of --mode ssp and essp: bsp reads H with none, async with no bound")
	case !(o.SlowWorker == 0 || o.SlowWorker >= 1) || o.SlowWorker > 1000:
		return nil, cli.Usagef("--slow-worker must be 0 (off) or from 1 to 1000, got %v", o.SlowWorker)
	case o.SlowTurns && o.SlowWorker <= 1:
		return nil, cli.Usagef("--slow-turns goes with --slow-worker F, F > 1")
	case o.ClocksPerIter < 1:
		return nil, cli.Usagef("--clocks-per-iter must be at least 1, got %d", o.ClocksPerIter)
	}
	for _, name := range []string{"schedule", "ring", "inner"} {
		if g[name] {
			return nil, cli.Usagef("--%s is of --mode %s, not --mode %s", name, mf.Scheduled, cfg.Mode)
		}
	}
	for _, name := range []string{"max-rounds", "target", "spares"} {
		if g[name] {
			return nil, cli.Usagef("--%s is not of --mode %s (SGD on the parameter server: --iters, --tol and --time-limit stop it; a lost worker fails it)", name, cfg.Mode)
		}
	}
	if err := checkPSCheckpoints(opts, cfg.Mode, fmt.Sprintf("%d an iteration", o.ClocksPerIter)); err != nil {
		return nil, err
	}
	if cfg.Mode != "ssp" && cfg.Mode != "essp" {
		o.Staleness = 0
	}
	if err := cfg.Validate(); err != nil {
		return nil, cli.UsageError(err)
	}
	if o.Staleness < 0 || o.Staleness >= ps.MaxAhead {
		return nil, cli.Usagef("--staleness must be from 0 to %d, got %d", ps.MaxAhead-1, o.Staleness)
	}
	cfg.Warn = env.Stderr
	cfg.Predict, cfg.PredictOut = f.predict, f.predictOut
	o.Tol, o.TimeLimit = opts.Tol, opts.TimeLimit
	o.Node = node.Options{Timeout: opts.Timeout, Keep: opts.CheckpointKeep}
	if opts.Progress != nil {
		o.Progress = opts.Progress
	}
	j := &mfJob{cfg: cfg}
	if f.predictOut != "" && f.predict == "" || f.predict != "" && f.predictOut == "" {
		return nil, cli.Usagef("--predict FILE and --predict-out FILE go together")
	}
	// The coordinator of a ps mode reads --train too: its counting pass
	// shapes the tables and gives the ids of the outputs.
	role := env.Role
	if role == cli.Coordinator {
		role = cli.All
	}
	if err := j.check(role, f.predict); err != nil {
		return nil, err
	}
	p := &psRun{cfg: cfg, o: o, out: opts.Out, metrics: opts.Metrics}
	job := cli.NewRunJob(p.run)
	job.Data = cfg.Train
	job.Print = p.print
	return job, nil
}

// psRun is a job of a parameter-server mode as the command runs it.
type psRun struct {
	cfg          mf.Config
	o            mf.PSOptions
	out, metrics string
	res          *mf.PSResult
	elapsed      time.Duration
}

// run runs the job, or the role of it that rt says, and writes its
// outputs, all or none.
func (p *psRun) run(ctx context.Context, rt *cli.Runtime) (*coordinator.Result, error) {
	t0 := time.Now()
	p.o.Node.Log = rt.Logger
	p.o.CheckpointEvery = psCheckpoints(rt, &p.o.Node)
	if m := rt.Monitor; m != nil {
		report := psReporter(m)
		p.o.Report = func(e mf.Eval, st ps.Stats) {
			report(float64(e.Round), e.Ratings, e.Objective, math.NaN(), map[string]float64{"train_rmse": e.TrainRMSE, "test_rmse": e.TestRMSE, "iter": e.Iter}, st)
		}
	}
	var res *mf.PSResult
	var err error
	if rt.Role == cli.All {
		res, err = mf.RunPS(ctx, p.cfg, p.o, rt.Dial)
	} else {
		var j *mf.PSJob
		if j, err = mf.NewPSJob(p.cfg, p.o); err != nil {
			return nil, err
		}
		if rt.Role == cli.Worker {
			return nil, j.Host(ctx, rt.Dial, rt.Place)
		}
		res, err = j.Coordinate(ctx, rt.Conn, rt.Dial, rt.Options.JoinTimeout)
	}
	if err != nil {
		return nil, err
	}
	p.res, p.elapsed = res, time.Since(t0)
	outs, err := res.Outputs(p.out)
	if err != nil {
		return nil, err
	}
	if p.metrics != "" {
		outs = append(outs, schmp.Output{Path: p.metrics, Write: res.Model.WriteMetrics})
	}
	return nil, writeOutputs(outs)
}

// writeOutputs writes outs and commits them together.
func writeOutputs(outs []schmp.Output) error {
	if len(outs) == 0 {
		return nil
	}
	paths := make([]string, len(outs))
	for k, o := range outs {
		paths[k] = o.Path
	}
	g, err := atomicfile.CreateGroup(paths...)
	if err != nil {
		return err
	}
	defer g.Abort()
	for k, f := range g.Files() {
		if err := outs[k].Write(f); err != nil {
			return fmt.Errorf("%s: %w", paths[k], err)
		}
	}
	return g.Commit()
}

// print prints the end of the job: the final state's evaluation (of the
// model written), and the staleness of the reads.
func (p *psRun) print(w io.Writer, _ *coordinator.Result) {
	r := p.res
	if r == nil {
		return
	}
	e := r.Model.Final()
	// The time is the final evaluation's, since the workers had read
	// their data, as the scheduled job's; the job ran elapsed in all.
	fmt.Fprintf(w, "train RMSE %.6f  test RMSE %.6f  objective %.12g  iterations %g  clocks %d  time %.3fs  (%s; %.3fs with the loading)\n",
		e.TrainRMSE, e.TestRMSE, e.Objective, e.Iter, r.Clocks, e.Time.Seconds(), r.Reason, p.elapsed.Seconds())
	st := r.Staleness[len(r.Staleness)-1]
	fmt.Fprintf(w, "--mode %s: %d reads of H, staleness mean %.3g, variance %.3g, max %d clocks\n", p.cfg.Mode, st.Reads, st.Mean(), st.Var(), st.Max)
	compareBiasOnly(p.cfg, e, nil, w, p.cfg.Warn)
}
