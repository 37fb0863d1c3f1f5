package main

import (
	"flag"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/scheduler"
)

// scheduleFlags are the flags of the dynamic scheduler (package scheduler),
// shared by the apps that plan with it.
type scheduleFlags struct {
	cfg      scheduler.Config
	schedule string
	seed     uint64
}

func addScheduleFlags(fs *flag.FlagSet) *scheduleFlags {
	f := &scheduleFlags{}
	fs.StringVar(&f.schedule, "schedule", "priority", "how coordinates are picked: priority, random, cyclic, or shotgun (random with no dependency check: a baseline)")
	fs.Float64Var(&f.cfg.Gamma, "gamma", 2, "priority exponent γ: p(j) ∝ |Δ_j|^γ + η, Δ_j the last change of coordinate j")
	fs.Float64Var(&f.cfg.Eta, "eta", 1e-6, "priority floor η: p(j) ∝ |Δ_j|^γ + η")
	fs.IntVar(&f.cfg.Candidates, "candidates", 64, "candidates U′ drawn per round, before the dependency check")
	fs.IntVar(&f.cfg.Block, "block", 32, "coordinates U updated per round, at most")
	fs.IntVar(&f.cfg.Warmup, "warmup", -1, "rounds of uniform picks before priorities switch on (-1: one sweep, ⌈M/U⌉)")
	fs.Float64Var(&f.cfg.Rho, "rho", 0.1, "never update together two coordinates whose columns have |correlation| ≥ ρ (1 turns the check off)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the scheduler's random draws")
	return f
}

// config returns the scheduler's config for workers workers, a flag of 0
// taking the scheduler's default (scheduler.Config.WithDefaults), so that
// every role reads the values the engine uses; the app sets its Vars and
// validates it.
func (f *scheduleFlags) config(workers int) (scheduler.Config, error) {
	c := f.cfg
	p, err := scheduler.ParsePolicy(f.schedule)
	if err != nil {
		return c, cli.Usagef("--schedule: %v", err)
	}
	c.Policy = p
	c.Seed = f.seed
	c.Workers = max(workers, 1)
	return c.WithDefaults(), nil
}

// lassoFlags are the flags of the Lasso app, shared by all its roles.
type lassoFlags struct {
	fs    *flag.FlagSet
	cfg   lasso.Config
	sched *scheduleFlags
	cv    int
}

// linearFlagNames are the flags of the Lasso's and logistic regression's
// config fields not named after them (see cli.FlagError).
var linearFlagNames = map[string]string{"Path": "lambda-path", "Policy": "schedule"}

func addLassoFlags(fs *flag.FlagSet) *lassoFlags {
	f := &lassoFlags{fs: fs}
	fs.StringVar(&f.cfg.Data, "data", "", "LIBSVM `file` of samples (label idx:val ...); every role reads its own copy")
	fs.Float64Var(&f.cfg.Lambda, "lambda", 0, "L1 penalty λ of (1/2n)‖y − Xβ‖² + λ‖β‖₁")
	fs.Float64Var(&f.cfg.LambdaRatio, "lambda-ratio", 0, "set λ = `r`·λ_max, λ_max = ‖X̃ᵀỹ‖∞/n, the smallest λ with β = 0 (X and y centered with the intercept; overrides --lambda when > 0)")
	fs.BoolVar(&f.cfg.Intercept, "intercept", true, "fit an unpenalized intercept, centering X and y, as scikit-learn and glmnet do (--intercept=false fits through the origin)")
	fs.StringVar(&f.cfg.Test, "test", "", "LIBSVM `file` of held-out samples: the coordinator reports its model's mean squared error on them (metric test_mse)")
	fs.IntVar(&f.cfg.Path, "lambda-path", 0, pathUsage)
	fs.IntVar(&f.cv, "cv", 0, cvUsage)
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
		return cfg, cli.FlagError(f.fs, linearFlagNames, err)
	}
	return cfg, nil
}

// setLinearDefaults fits the runtime's flags to the Lasso and logistic
// regression: one worker by default, and what --tol, --report-every and
// --out mean for them.
func setLinearDefaults(fs *flag.FlagSet) {
	cli.SetDefault(fs, "workers", "1", workersUsage)
	fs.Lookup("tol").Usage = "stop when the objective is certified within tol of the optimum, relatively (Lasso: duality gap ≤ tol·objective); 0: off"
	fs.Lookup("report-every").Usage = "compute the objective every `n` rounds (costs one pass over the data; the column layout of lasso and logreg: 1 unless given)"
	fs.Lookup("out").Usage = "write the model to `file`: an index,value CSV of the non-zero coefficients (1-based; 0 = the intercept) after a header of # lines (app, features, λ, intercept, version); with --lambda-path, the prefix of the path's files"
}

// given returns the flags of fs given on the command line.
func given(fs *flag.FlagSet) map[string]bool {
	g := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { g[f.Name] = true })
	return g
}
