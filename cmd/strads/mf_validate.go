package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/strads-go/strads/apps/mf"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
)

// autoValue is a flag of a number or "auto": --lambda and --rank.
type autoValue[T int | float64] struct {
	v    *T
	auto bool
}

func (a *autoValue[T]) String() string {
	if a.auto {
		return "auto"
	}
	if a.v == nil {
		return ""
	}
	return fmt.Sprint(*a.v)
}

func (a *autoValue[T]) Set(s string) error {
	if s == "auto" {
		a.auto = true
		return nil
	}
	var v T
	var err error
	want := "a number"
	switch p := any(&v).(type) {
	case *float64:
		*p, err = strconv.ParseFloat(s, 64)
	case *int:
		*p, err = strconv.Atoi(s)
		want = "a whole number"
	}
	if err != nil {
		return fmt.Errorf("want %s or auto, got %q", want, s)
	}
	*a.v, a.auto = v, false
	return nil
}

// tune runs --lambda auto and --rank auto: a fit per point of grid on the
// training ratings less the held-out ones (--validate, mf.DefaultHoldout
// if not given), each a whole job on the runtime with the validation stop,
// printing every fit's validation RMSE and the bias-only baseline's to w;
// it returns the configuration of the refit on all the training ratings
// with the λ and rank of the lowest validation RMSE.
func tune(ctx context.Context, cfg mf.Config, grid mf.Grid, opts coordinator.Options, w, stderr io.Writer) (mf.Config, error) {
	if cfg.Holdout <= 0 {
		cfg.Holdout = mf.DefaultHoldout
	}
	var what, flags []string
	if grid.Lambdas != nil {
		what, flags = append(what, "λ = "+gridString(grid.Lambdas)), append(flags, "--lambda auto")
	}
	if grid.Ranks != nil {
		rs := make([]string, len(grid.Ranks))
		for i, r := range grid.Ranks {
			rs[i] = strconv.Itoa(r)
		}
		what, flags = append(what, "rank "+strings.Join(rs, ", ")), append(flags, "--rank auto")
	}
	auto := strings.Join(flags, " and ")
	fmt.Fprintf(w, "%s: fitting %s on the training ratings less %g of them held out (by a hash of seed %d, user and item), each until its validation RMSE has not improved for %d evaluations\n",
		auto, strings.Join(what, " by "), cfg.Holdout, cfg.Seed, cfg.Patience)
	// The fits are quiet whole jobs of their own: no outputs, no progress,
	// no target (the objective of another λ is another problem).
	o := opts
	var zero coordinator.Options
	o.Metrics, o.Out, o.Progress, o.Monitor, o.Manifest, o.Claimed = "", "", nil, nil, zero.Manifest, nil
	o.HasTarget = false
	k := 0
	fit := func(ctx context.Context, c mf.Config) (*mf.Model, error) {
		k++
		res, err := runMF(ctx, c, job.Options{Job: fmt.Sprintf("mf-tune-%d", k), Coordinator: o})
		if err != nil {
			return nil, err
		}
		return mf.ModelOf(res.App), nil
	}
	points, best, err := mf.Tune(ctx, cfg, grid, fit)
	for _, p := range points {
		how := "its iterations ran out"
		if p.Stopped {
			how = "stopped"
		}
		fmt.Fprintf(w, "  λ %-7.4g rank %-3d validation RMSE %.6f  train RMSE %.6f  at iteration %g (%s)\n", p.Lambda, p.Rank, p.Best.ValRMSE, p.Best.TrainRMSE, p.Best.Iter, how)
	}
	if err != nil {
		return cfg, err
	}
	b, err := mf.FitBiasOnly(cfg, biasSweeps)
	var rmse float64
	if err == nil {
		rmse, _, err = b.RMSE(cfg.Train, cfg.ValidationFilter())
	}
	if err != nil {
		return cfg, fmt.Errorf("the bias-only baseline: %w", err)
	}
	fmt.Fprintf(w, "  bias-only μ + b_u + c_i (λ_b %g): validation RMSE %.6f\n", cfg.BiasLambda, rmse)
	if v := points[best].Best.ValRMSE; !(v < rmse) {
		fmt.Fprintf(stderr, "mf: warning: the best validation RMSE of the grid, %.6f at λ %g, is not below the bias-only baseline's %.6f: the factors do not help (try a smaller --rank)\n", v, points[best].Lambda, rmse)
	}
	if b := points[best]; b.Best.Iter > 0 {
		// (At iteration 0 the factors are zero: λ and the rank made no
		// difference.)
		if g := grid.Lambdas; g != nil && (b.Lambda == g[0] || b.Lambda == g[len(g)-1]) {
			fmt.Fprintf(w, "  the lowest validation RMSE is at the λ grid's edge: a λ beyond it may do better (try --lambda with --validate)\n")
		}
		if g := grid.Ranks; g != nil && b.Rank == g[len(g)-1] {
			fmt.Fprintf(w, "  the lowest validation RMSE is at the largest rank tried: a larger --rank may do better\n")
		}
	}
	r := mf.Refit(cfg, points[best])
	if r.Holdout > 0 {
		fmt.Fprintf(w, "%s: chose λ %.4g, rank %d; its best evaluation is iteration 0, the bias-only model: running its fit again, which writes the bias-only model of all the training ratings\n", auto, r.Lambda, r.Rank)
		return r, nil
	}
	fmt.Fprintf(w, "%s: chose λ %.4g, rank %d; refitting on all the training ratings for %d iterations (those of its best evaluation)\n", auto, r.Lambda, r.Rank, r.Iters)
	return r, nil
}

// biasSweeps is the number of alternating sweeps of the bias-only
// baseline: on the sets of bench/RESULTS.md its RMSE settles in fewer.
const biasSweeps = 20

// gridString returns the grid as "0.01, 0.0316, …".
func gridString(grid []float64) string {
	s := make([]string, len(grid))
	for k, v := range grid {
		s[k] = strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strings.Join(s, ", ")
}

// runMF runs the job of cfg on the runtime (an embedded NATS server unless
// opts.NATS says otherwise), with the runtime's rounds and reports as cfg's
// iterations say.
func runMF(ctx context.Context, cfg mf.Config, opts job.Options) (*coordinator.Result, error) {
	rpi := cfg.RoundsPerIter()
	o := &opts.Coordinator
	o.Workers, o.Depth, o.Schedulers = cfg.Workers, 1, 1
	o.MaxRounds = uint64(cfg.Iters * rpi)
	o.ReportEvery = cfg.ReportEvery * rpi
	switch {
	case cfg.Algo == mf.ALS:
		return job.Run(ctx, mf.ALSProgram(cfg), opts)
	case cfg.Algo == mf.CCD:
		return job.Run(ctx, mf.CCDProgram(cfg), opts)
	case cfg.Schedule == mf.Unscheduled:
		return job.Run(ctx, mf.UnscheduledProgram(cfg), opts)
	}
	return job.Run(ctx, mf.RotationProgram(cfg), opts)
}

// compareBiasOnly prints the bias-only baseline's validation and test RMSE
// next to the model's (e, the evaluation whose factors are written), and
// warns on stderr where the model is worse. start is the job's iteration 0
// where it started warm, the bias-only model fitted in two sweeps (to the
// training ratings less the held-out ones for the validation RMSE, to all
// of them for the test RMSE): its figures are the baseline's. Otherwise
// (nil) the baseline is fitted here (refitBiasOnly).
func compareBiasOnly(cfg mf.Config, e mf.Eval, start *mf.Eval, stdout, stderr io.Writer) {
	val, test := cfg.Holdout > 0, cfg.Test != ""
	if !val && !test {
		return
	}
	var baseVal, baseTest float64
	if start != nil {
		baseVal, baseTest = start.ValRMSE, start.TestRMSE
	} else {
		var err error
		if baseVal, baseTest, err = refitBiasOnly(cfg, val, test); err != nil {
			fmt.Fprintf(stderr, "mf: %v\n", err)
			return
		}
	}
	for _, c := range []struct {
		on          bool
		name        string
		model, base float64
	}{
		{val, "validation", e.ValRMSE, baseVal},
		{test, "test", e.TestRMSE, baseTest},
	} {
		if !c.on {
			continue
		}
		fmt.Fprintf(stdout, "bias-only μ + b_u + c_i (λ_b %g): %s RMSE %.6f; this model's %.6f\n", cfg.BiasLambda, c.name, c.base, c.model)
		if e.Iter == 0 && cfg.WarmStart() {
			// The model is the bias-only one, fitted in two sweeps: no
			// factor advice helps.
			continue
		}
		if !(c.model < c.base) {
			fmt.Fprintf(stderr, "mf: warning: the model's %s RMSE %.6f is not below the bias-only baseline's %.6f: the factors do not help at λ %g, rank %d (try --lambda auto, a larger --lambda, or a smaller --rank)\n",
				c.name, c.model, c.base, cfg.Lambda, cfg.Rank)
		}
	}
}

// refitBiasOnly fits the bias-only baseline in biasSweeps sweeps and
// returns its validation RMSE (with val) and test RMSE (with test): fitted
// to the job's training ratings for the first, to all of them, held-out
// ones included, for the second, as the bias-only model that a job writes
// for its iteration 0 is. It reads the training file, so it runs where the
// process has it.
func refitBiasOnly(cfg mf.Config, val, test bool) (valRMSE, testRMSE float64, err error) {
	if cfg.Train == "" {
		return 0, 0, errors.New("this process has no --train: the model is not compared with the bias-only baseline")
	}
	b, err := mf.FitBiasOnly(cfg, biasSweeps)
	if err != nil {
		return 0, 0, fmt.Errorf("the bias-only baseline: %w", err)
	}
	if val {
		if valRMSE, _, err = b.RMSE(cfg.Train, cfg.ValidationFilter()); err != nil {
			return 0, 0, fmt.Errorf("the bias-only baseline: %w", err)
		}
	}
	if test {
		all := b
		if cfg.Holdout > 0 {
			c := cfg
			c.Holdout = 0
			if all, err = mf.FitBiasOnly(c, biasSweeps); err != nil {
				return 0, 0, fmt.Errorf("the bias-only baseline: %w", err)
			}
		}
		if testRMSE, _, err = all.RMSE(cfg.Test, nil); err != nil {
			return 0, 0, fmt.Errorf("the bias-only baseline: %w", err)
		}
	}
	return valRMSE, testRMSE, nil
}

// errAutoRole is --lambda auto or --rank auto in a role of a job of
// several processes.
var errAutoRole = cli.Usagef("--lambda auto and --rank auto run their fits as whole jobs in one process: run it as \"strads mf\", then give the roles the λ and rank it chose")
