package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/strads-go/strads/apps/mf"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/schmp"
)

// mfApp is matrix factorization's command: strads mf, and its roles.
func mfApp() cli.App {
	return cli.App{
		Name:     "mf",
		Summary:  "matrix factorization of ratings",
		Synopsis: "--train FILE [--test FILE] [--validate F] [--rank K --lambda L|auto --iters T --workers N --algo sgd|ccd|als --schedule rotation|unscheduled] [flags]",
		Flags:    mfCommand,
		PerRole:  []string{"train", "test", "predict", "predict-out"},
		Outputs:  []string{"predict-out"},
		Commands: mfCommands(),
	}
}

// mfFlags are the flags of the matrix factorization app, shared by all its
// roles.
type mfFlags struct {
	cfg                 mf.Config
	predict, predictOut string
	lambda              *autoValue[float64]
	rank                *autoValue[int]
	ring                bool
	ps                  mf.PSOptions
}

func addMFFlags(fs *flag.FlagSet) *mfFlags {
	f := &mfFlags{}
	f.cfg.Lambda = mf.DefaultLambda
	f.lambda = &autoValue[float64]{v: &f.cfg.Lambda}
	fs.StringVar(&f.cfg.Train, "train", "", "training ratings `file`, lines \"user item rating\" (white space, comma or :: separated); workers read it")
	fs.StringVar(&f.cfg.Test, "test", "", "held-out ratings `file`: the metrics report its RMSE (ratings of users or items not in --train are left out, and counted)")
	f.cfg.Rank = 10
	f.rank = &autoValue[int]{v: &f.cfg.Rank}
	fs.Var(f.rank, "rank", "rank `K` of the factors, or auto: fit each rank of 5, 10, 20, 40 with --validate (0.1 if 0), print their validation RMSEs, and refit on all the training ratings with the best (with --lambda auto, every pair; a whole job in one process only)")
	fs.Var(f.lambda, "lambda", "λ (a number `L`, or auto) of the factors' regularization λ(Σ_u n_u‖w_u‖² + Σ_i n_i‖h_i‖²), weighted by ratings counts (ALS-WR, Spark); with --unweighted λ(‖W‖² + ‖H‖²); als needs λ > 0. auto: fit each λ of 0.01, 0.0316, 0.1, 0.316, 1 with --validate (0.1 if 0), print their validation RMSEs, and refit on all the training ratings with the best (a whole job in one process only)")
	fs.Float64Var(&f.cfg.Holdout, "validate", mf.DefaultValidate, "hold out fraction `F` of the --train ratings (those whose hash of --seed, user and item falls below F: every role agrees without exchanging anything), report their RMSE (val_rmse), stop once it has not improved for --patience evaluations, and write the factors of the evaluation where it was lowest (iteration 0 is the bias-only model, so the job never ends worse than it on validation, and if it stays the best the bias-only fit of all the ratings is written); 0: no validation, fit all the ratings")
	fs.IntVar(&f.cfg.Patience, "patience", mf.DefaultPatience, "with --validate: stop after `n` evaluations in a row without a new lowest validation RMSE")
	fs.Float64Var(&f.cfg.BiasLambda, "bias-lambda", mf.DefaultBiasLambda, "λ_b of the biases' regularization λ_b(Σ b_u² + Σ c_i²), never weighted by counts: a bias is shrunk as if it had λ_b more ratings of residual 0")
	fs.BoolVar(&f.cfg.Unweighted, "unweighted", false, "regularize the factors by λ(‖W‖² + ‖H‖²), not weighted by ratings counts")
	fs.BoolVar(&f.cfg.NoBias, "no-bias", false, "fit w_u·h_i alone: no global mean and no user or item biases")
	fs.BoolVar(&f.cfg.ColdStart, "cold-start", false, "start from biases of 0 and random factors, instead of from the bias-only fit μ + b_u + c_i with W = 0, so that iteration 0 is the bias-only model (sgd on the rotation, ccd and als; the unscheduled sgd always starts cold)")
	fs.StringVar(&f.cfg.Algo, "algo", mf.SGD, "algorithm: sgd (stochastic gradient descent), ccd (CCD++, rank-one coordinate descent) or als (alternating least squares)")
	fs.BoolVar(&f.ring, "ring", true, "sgd on the rotation: a worker sends the block of H it finished straight to its next owner (the ring); false sends it through the coordinator (the star), as before; both give the same model")
	fs.StringVar(&f.cfg.Mode, "mode", mf.Scheduled, "sgd: scheduled (on the runtime's --schedule) or, data-parallel on the parameter server, the consistency model of its item table: bsp, ssp, essp or async (docs/mf.md)")
	fs.IntVar(&f.ps.Staleness, "staleness", mfStaleness, "ssp and essp: a worker reads H at most `s` clocks stale (0 to 63). 1 by default, the least that lets a worker run ahead: on 1.35M generated ratings, 2 workers, one 2× slower (--slow-worker 2), 20 iterations, the test RMSE rose with s (bsp 0.1374; ssp s = 1, 2, 3, 5: 0.1377, 0.1381, 0.1391, 0.1428) and the time did not fall (2.0–2.4 s at every s and bsp: a lasting straggler sets the pace of any model; docs/mf.md)")
	fs.IntVar(&f.ps.ClocksPerIter, "clocks-per-iter", mf.DefaultClocksPerIter, "bsp, ssp, essp, async: clocks (exchanges of the changes of H) per iteration, each over a share of every worker's users. 10 by default: on 1.35M generated ratings, 2 workers, 20 iterations, ssp's test RMSE was 0.223 at 1 clock an iteration; at 4, ssp with s = 1 ended at 0.21–0.34 in 5 runs of 18 (0.138 in the others), at 8 and 10 at 0.137–0.140 in 28 of 28 (bsp's 0.137); each clock costs a round of messages (docs/mf.md)")
	fs.Float64Var(&f.ps.SlowWorker, "slow-worker", 0, "bsp, ssp, essp, async, for experiments with a straggler: worker 0 takes `F` times as long per clock, sleeping (F−1)× its compute time (0 or 1: off)")
	fs.BoolVar(&f.ps.SlowTurns, "slow-turns", false, "with --slow-worker: the slow worker changes at every clock (worker c mod --workers at clock c), a straggler that comes and goes instead of worker 0 all along")
	fs.StringVar(&f.cfg.Schedule, "schedule", mf.Rotation, "sgd only: rotation (DSGD: item blocks rotate among the workers) or unscheduled (Hogwild-style baseline: every worker updates all of H, merged once per iteration)")
	fs.Float64Var(&f.cfg.LearningRate, "lr", 0.05, "sgd: step size η₀; iteration e uses η₀/(1 + decay·e^1.5)")
	fs.Float64Var(&f.cfg.Decay, "decay", 0.05, "sgd: decay of the step size")
	fs.IntVar(&f.cfg.Inner, "inner", 1, "ccd: inner iterations per feature")
	fs.Uint64Var(&f.cfg.Seed, "seed", 1, "seed of the initial factors and of the SGD order")
	fs.IntVar(&f.cfg.Iters, "iters", 20, "stop after `n` iterations (passes over the ratings; 0: no limit)")
	fs.StringVar(&f.predict, "predict", "", "predict the ratings of the (user, item) pairs of `file` (lines \"user item\") into --predict-out; a pair with an unseen id gets μ plus the bias of the id that is known (the mean training rating with --no-bias)")
	fs.StringVar(&f.predictOut, "predict-out", "", "`file` where --predict writes lines \"user item prediction\"")
	return f
}

// mfJob is a matrix factorization job as the command runs it: its config.
// Its outputs are the runtime's (the model's Outputs: the factors with
// --out, the predictions with --predict), written and committed together
// once the job is done; what it prints it reads from the coordinator's
// model (mf.ModelOf the result's App).
type mfJob struct {
	cfg mf.Config
}

// mfCommand adds matrix factorization's flags to fs and returns the
// function that makes its job. That checks the input that the role reads
// before anything starts: bad input is a usage error naming its file and
// line.
func mfCommand(fs *flag.FlagSet) func(*cli.Env) (*cli.Job, error) {
	f := addMFFlags(fs)
	cli.SetDefault(fs, "report-every", "1", "evaluate every `n` iterations (one pass over the ratings)")
	cli.SetDefault(fs, "tol", "1e-4", "stop when the objective changes by less than tol, relatively, between two evaluations (0: off)")
	cli.SetDefault(fs, "out", "", "write the factors to `PREFIX`.W.txt and PREFIX.H.txt, lines \"id v1 … vK\" in ascending id order, and with biases μ and the biases to PREFIX.bias.txt (lines \"mean μ\", \"user ID b\", \"item ID c\")")
	cli.SetDefault(fs, "metrics", "", "write a metrics CSV to `file`, a row per evaluation: the runtime's columns (time_s,round,objective,…), then iter,train_rmse,test_rmse,(with --validate) val_rmse,ratings,ratings_per_s,ratings_per_core_s")
	cli.SetDefault(fs, "depth", "1", "rounds in flight: mf needs 1 (every round needs the previous one's update)")
	cli.SetDefault(fs, "max-rounds", "0", "stop after `n` runtime rounds (an iteration is --workers rounds on the rotation, 1 unscheduled, rank·inner with ccd; --iters is simpler; 0: no limit)")
	return func(env *cli.Env) (*cli.Job, error) {
		opts := env.Options
		cfg := f.cfg
		cfg.Workers, cfg.ReportEvery = opts.Workers, opts.ReportEvery
		cfg.Star = !f.ring
		if f.cfg.Mode != mf.Scheduled && f.cfg.Mode != "" && !given(fs)["validate"] {
			cfg.Holdout = 0 // the parameter-server modes hold nothing out
		}
		if err := cfg.Validate(); err != nil {
			return nil, cli.UsageError(err)
		}
		if f.ring && cfg.Algo == mf.SGD && cfg.Schedule == mf.Rotation && opts.MaxRounds%uint64(max(cfg.Workers, 1)) != 0 {
			return nil, cli.Usagef("--max-rounds %d: the ring stops at the end of an iteration (%d rounds): give whole iterations, or --ring=false", opts.MaxRounds, cfg.Workers)
		}
		if (f.lambda.auto || f.rank.auto) && env.Role != cli.All {
			return nil, errAutoRole
		}
		if cfg.Mode != "" && cfg.Mode != mf.Scheduled {
			return f.psJob(fs, env, cfg)
		}
		if err := f.notPS(fs); err != nil {
			return nil, err
		}
		switch {
		case opts.Depth > 1:
			return nil, cli.Usagef("--depth %d: mf needs --depth 1 (on the rotation every round holds every block of H, and every round needs the previous one's update)", opts.Depth)
		case opts.Schedulers > 1:
			return nil, cli.Usagef("--schedulers %d: mf takes one scheduler", opts.Schedulers)
		case (f.predict == "") != (f.predictOut == ""):
			return nil, cli.Usagef("--predict FILE and --predict-out FILE go together")
		}
		j := &mfJob{cfg: cfg}
		if f.predictOut != "" {
			if st, err := os.Stat(filepath.Dir(f.predictOut)); err != nil || !st.IsDir() {
				return nil, cli.Usagef("--predict-out %s: directory %s does not exist", f.predictOut, filepath.Dir(f.predictOut))
			}
		}
		if err := j.check(env.Role, f.predict); err != nil {
			return nil, err
		}
		if f.lambda.auto || f.rank.auto {
			// The search's fits are whole jobs of their own; the job
			// made here is the refit.
			var grid mf.Grid
			if f.lambda.auto {
				grid.Lambdas = mf.LambdaGrid
			}
			if f.rank.auto {
				grid.Ranks = mf.RankGrid
			}
			c, err := tune(context.Background(), j.cfg, grid, *opts, env.Stdout, env.Stderr)
			if err != nil {
				return nil, err
			}
			j.cfg, cfg = c, c
			if err := cfg.Validate(); err != nil {
				return nil, cli.UsageError(err)
			}
		}
		// The runtime counts rounds: an iteration is RoundsPerIter of them.
		rpi := uint64(cfg.RoundsPerIter())
		maxRounds := opts.MaxRounds
		opts.ReportEvery = cfg.ReportEvery * int(rpi)
		if cfg.Iters > 0 {
			opts.MaxRounds = uint64(cfg.Iters) * rpi
			if maxRounds > 0 {
				opts.MaxRounds = min(opts.MaxRounds, maxRounds)
			}
		}
		// The runtime prints the progress, writes the metrics (mf's
		// figures are its app metrics) and the model's files (its
		// Outputs), committed together.
		j.cfg.Warn = env.Stderr
		j.cfg.Predict, j.cfg.PredictOut = f.predict, f.predictOut
		return j.job(env.Role), nil
	}
}

// check reads the input that role reads, so that bad input fails before
// any role starts.
func (j *mfJob) check(role cli.Role, predict string) error {
	var files []string
	if role.Has(cli.Worker) {
		if j.cfg.Train == "" {
			return cli.Usagef("--train FILE is required")
		}
		files = append(files, j.cfg.Train)
		if j.cfg.Test != "" {
			files = append(files, j.cfg.Test)
		}
	}
	for _, path := range files {
		read := func(path string) error { return mf.ReadRatings(path, func(int, mf.Rating) error { return nil }) }
		if path == j.cfg.Train {
			read = mf.CheckTrain // a pair rated twice is an error too
		}
		if err := read(path); err != nil {
			return mfInputError(err)
		}
	}
	if predict != "" && role.Has(cli.Coordinator) {
		if err := mf.ReadPairs(predict, func(int, int64, int64) error { return nil }); err != nil {
			return mfInputError(err)
		}
	}
	return nil
}

// mfInputError makes bad or missing input a usage error.
func mfInputError(err error) error {
	var pe *mf.ParseError
	if errors.As(err, &pe) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return cli.UsageError(err)
	}
	return err
}

// job returns the job as role runs it.
func (j *mfJob) job(role cli.Role) *cli.Job {
	var job *cli.Job
	switch {
	case j.cfg.Algo == mf.CCD:
		job = cli.NewJob(mf.CCDProgram(j.cfg))
	case j.cfg.Algo == mf.ALS:
		job = cli.NewJob(mf.ALSProgram(j.cfg))
	case j.cfg.Schedule == mf.Unscheduled:
		job = cli.NewJob(mf.UnscheduledProgram(j.cfg))
	default:
		job = cli.NewJob(mf.RotationProgram(j.cfg))
	}
	if role.Has(cli.Worker) {
		job.Data = j.cfg.Train
	}
	job.Print = j.print
	return job
}

// print prints the end of a run: the last evaluation, then where the time
// went.
func (j *mfJob) print(w io.Writer, res *coordinator.Result) {
	m := mf.ModelOf(res.App)
	if m == nil {
		cli.PrintResult(w, res)
		return
	}
	e := m.Final()
	if j.cfg.Holdout > 0 {
		e = m.Best()
		why := fmt.Sprintf("the lowest of %d evaluations; ", len(m.Trace))
		if m.Stopped && m.BestAt < len(m.Trace)-1 {
			why = fmt.Sprintf("stopped: no lower one in the %d evaluations after it; ", j.cfg.Patience)
		}
		fmt.Fprintf(w, "validation RMSE %.6f at iteration %g (%sthe figures below and the outputs are of that evaluation)\n", e.ValRMSE, e.Iter, why)
	}
	fmt.Fprintf(w, "train RMSE %.6f  test RMSE %.6f  objective %.12g  iterations %g  rounds %d  time %.3fs  (%s)\n",
		e.TrainRMSE, e.TestRMSE, e.Objective, e.Iter, res.Rounds, res.Elapsed.Seconds(), res.Why())
	if e.Iter == 0 && j.cfg.WarmStart() && j.cfg.Holdout > 0 {
		fmt.Fprintln(w, "the job kept iteration 0, the bias-only model μ + b_u + c_i (two sweeps of its fit, to all the training ratings): the factors did not lower the validation RMSE")
	}
	var start *mf.Eval
	if j.cfg.WarmStart() && len(m.Trace) > 0 && m.Trace[0].Iter == 0 {
		start = &m.Trace[0]
	}
	compareBiasOnly(j.cfg, e, start, w, j.cfg.Warn)
	if j.cfg.Holdout > 0 && m.BestAt == len(m.Trace)-1 && len(m.Trace) > 1 {
		more := map[schmp.Reason]string{
			schmp.StopMaxRounds: fmt.Sprintf("more --iters (now %d)", j.cfg.Iters),
			schmp.StopTimeLimit: "a longer --time-limit",
			schmp.StopConverged: "a smaller --tol",
		}[res.Reason]
		if more != "" {
			fmt.Fprintf(w, "the validation RMSE was still falling at the last evaluation: %s may lower it\n", more)
		}
	}
	if j.cfg.Holdout > 0 {
		res.WriteSummary(w)
		return
	}
	if e.Round < res.Rounds {
		fmt.Fprintf(w, "the figures are those of the last evaluation, after round %d; the outputs are of the state after round %d\n",
			e.Round, res.Rounds)
	}
	res.WriteSummary(w)
}

// genMF writes a synthetic ratings set, split into PREFIX.train.txt and
// PREFIX.test.txt.
func genMF(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen mf", flag.ContinueOnError)
	var c mf.GenConfig
	fs.IntVar(&c.Users, "users", 10000, "number of users")
	fs.IntVar(&c.Items, "items", 2000, "number of items")
	fs.IntVar(&c.Rank, "rank", 10, "rank of the true factors")
	fs.IntVar(&c.Ratings, "ratings", 500000, "number of ratings, train and test together")
	fs.Float64Var(&c.Noise, "noise", 0.1, "standard deviation of the Gaussian noise on a rating (the true ratings w·h have variance 1)")
	fs.Float64Var(&c.Mean, "mean", 0, "global mean of the ratings")
	fs.Float64Var(&c.UserBias, "user-bias", 0, "standard deviation of the Gaussian user biases")
	fs.Float64Var(&c.ItemBias, "item-bias", 0, "standard deviation of the Gaussian item biases")
	fs.Float64Var(&c.Alpha, "alpha", 1, "item popularity: the j-th most popular item is drawn with probability ∝ j^-alpha")
	fs.Float64Var(&c.TestFraction, "test-fraction", 0.1, "fraction of the ratings in the test set")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed: the same flags give the same files")
	out := fs.String("o", "", "output `PREFIX`: writes PREFIX.train.txt and PREFIX.test.txt")
	if err := cli.Parse(fs, args, stdout, "strads gen mf [flags] -o PREFIX"); err != nil {
		return err
	}
	if *out == "" {
		return cli.Usagef("-o PREFIX is required")
	}
	if err := c.Validate(); err != nil {
		return cli.UsageError(err)
	}
	train, err := atomicfile.Create(*out + ".train.txt")
	if err != nil {
		return cli.UsageError(err)
	}
	defer train.Abort()
	test, err := atomicfile.Create(*out + ".test.txt")
	if err != nil {
		return cli.UsageError(err)
	}
	defer test.Abort()
	st, err := mf.Generate(train, test, c)
	if err == nil {
		err = train.Commit()
	}
	if err == nil {
		err = test.Commit()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d ratings) and %s (%d ratings): %d users, %d items, rank %d, noise %g\n",
		train.Path(), st.Train, test.Path(), st.Test, c.Users, c.Items, c.Rank, c.Noise)
	return nil
}
