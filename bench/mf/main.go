// Command mf benchmarks matrix factorization (apps/mf): DSGD on the
// rotation engine against the unscheduled (Hogwild-style) SGD baseline and
// CCD++. It generates a ratings set with mf.Generate, then runs whole jobs
// in this process (runJob: an embedded NATS server, the scheduler, the
// coordinator and the workers, each on its own connection) in three
// phases:
//
//  1. tune: for each SGD schedule and each --curve-ranks rank, every
//     --lrs × --decays step size for --tune-iters iterations; the one with
//     the lowest test RMSE is that schedule's step size at that rank;
//  2. curves: rotation, unscheduled and CCD++ at --workers workers, for
//     --iters iterations, --runs times (interleaved), an evaluation per
//     iteration: test RMSE against time;
//  3. throughput: every algorithm at each of --ranks with 1 and --workers
//     workers for --tp-iters iterations: ratings processed per second.
//
// It writes summary.md, runs.csv, the metrics of every curve run and
// rmse.png/rmse.svg (test RMSE against time) to --out. See bench/README.md.
//
// Usage, from the repository root:
//
//	go run ./bench/mf [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/apps/mf"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
)

// options are the command-line flags.
type options struct {
	gen                  mf.GenConfig
	data                 string
	lambda               float64
	workers              int
	lrs, decays          []float64
	tuneIters            int
	iters, runs          int
	curveRanks, ranks    []int
	tpIters              int
	target               float64
	out                  string
	tune, curves, tputOn bool
	base                 bool
	baseAlgos            []string
	baseValidate         float64
	peer                 bool
	real                 string
	replot               bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("mf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.gen.Users, "users", 50000, "users of the generated set")
	fs.IntVar(&o.gen.Items, "items", 10000, "items of the generated set")
	fs.IntVar(&o.gen.Rank, "gen-rank", 10, "rank of the true factors")
	fs.IntVar(&o.gen.Ratings, "ratings", 5_600_000, "ratings, train and test")
	fs.Float64Var(&o.gen.Noise, "noise", 0.1, "noise of a rating")
	fs.Float64Var(&o.gen.Alpha, "alpha", 1, "item popularity exponent")
	fs.Float64Var(&o.gen.Mean, "mean", 0, "global mean of the generated ratings")
	fs.Float64Var(&o.gen.UserBias, "user-bias", 0, "standard deviation of the generated user biases")
	fs.Float64Var(&o.gen.ItemBias, "item-bias", 0, "standard deviation of the generated item biases")
	baseAlgos := fs.String("base-algos", "sgd,ccd,als", "baselines: the algorithms of strads mf (sgd: the defaults), cold: the defaults with --cold-start, auto: SGD with --lambda auto, and val:L: SGD with λ L and the validation stop (--base-validate)")
	fs.Float64Var(&o.baseValidate, "base-validate", 0.05, "baselines: the held-out fraction of the val:L runs (strads mf --validate)")
	fs.BoolVar(&o.peer, "peer", true, "baselines: run the biased SVD peer")
	fs.StringVar(&o.real, "real", "", "baselines: also a real ratings `file`, split 90/10 at random (seed 1)")
	fs.Float64Var(&o.gen.TestFraction, "test-fraction", 0.1, "fraction of the ratings in the test set")
	fs.Uint64Var(&o.gen.Seed, "seed", 1, "seed of the data and of the jobs")
	fs.StringVar(&o.data, "data", "", "use PREFIX.train.txt and PREFIX.test.txt instead of generating a set")
	fs.Float64Var(&o.lambda, "lambda", 1, "λ")
	fs.IntVar(&o.workers, "workers", 2, "workers of the curves and of the second throughput run")
	lrs := fs.String("lrs", "0.01,0.02,0.05", "SGD step sizes tried")
	decays := fs.String("decays", "0,0.05", "SGD step size decays tried")
	fs.IntVar(&o.tuneIters, "tune-iters", 8, "iterations of a tuning run")
	fs.IntVar(&o.iters, "iters", 30, "iterations of a curve run")
	fs.IntVar(&o.runs, "runs", 3, "runs of every curve")
	curveRanks := fs.String("curve-ranks", "10", "ranks of the curves")
	ranks := fs.String("ranks", "10,50", "ranks of the throughput runs")
	fs.IntVar(&o.tpIters, "tp-iters", 4, "iterations of a throughput run")
	fs.Float64Var(&o.target, "target", 1.2, "time to a test RMSE of target·noise")
	fs.StringVar(&o.out, "out", "bench/mf/results", "output directory")
	phases := fs.String("phases", "tune,curves,throughput", "the phases to run: tune, curves, throughput (the model of issue 5: no biases, λ unweighted) and baselines (issue 13)")
	fs.BoolVar(&o.replot, "replot", false, "only draw the plots again from runs.csv and the metrics in --out (with the flags of the run that wrote them)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.baseAlgos = strings.Split(*baseAlgos, ",")
	var err error
	if o.lrs, err = floats(*lrs); err == nil {
		o.decays, err = floats(*decays)
	}
	if err == nil {
		o.curveRanks, err = ints(*curveRanks)
	}
	if err == nil {
		o.ranks, err = ints(*ranks)
	}
	if err != nil {
		return nil, err
	}
	for p := range strings.SplitSeq(*phases, ",") {
		switch p {
		case "tune":
			o.tune = true
		case "curves":
			o.curves = true
		case "throughput":
			o.tputOn = true
		case "baselines":
			o.base = true
		default:
			return nil, fmt.Errorf("--phases: no phase %q", p)
		}
	}
	if o.workers < 1 || o.runs < 1 || o.iters < 1 || o.tuneIters < 1 || o.tpIters < 2 {
		return nil, errors.New("--workers, --runs, --iters and --tune-iters must be at least 1, --tp-iters at least 2")
	}
	return o, o.gen.Validate()
}

func floats(s string) ([]float64, error) {
	var v []float64
	for f := range strings.SplitSeq(s, ",") {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, err
		}
		v = append(v, x)
	}
	return v, nil
}

func ints(s string) ([]int, error) {
	var v []int
	for f := range strings.SplitSeq(s, ",") {
		x, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		v = append(v, x)
	}
	return v, nil
}

// variant is one configuration of a job.
type variant struct {
	algo      string // "rotation", "unscheduled" or "ccd"
	rank      int
	workers   int
	lr, decay float64
}

func (v variant) String() string {
	s := fmt.Sprintf("%s r=%d w=%d", v.algo, v.rank, v.workers)
	if v.algo != "ccd" {
		s += fmt.Sprintf(" lr=%g decay=%g", v.lr, v.decay)
	}
	return s
}

// run is one job of a variant.
type run struct {
	phase string
	v     variant
	n     int // the run's number, from 1
	model *mf.Model
	res   *coordinator.Result
	wall  time.Duration // the whole job, loading included
}

// config returns the job configuration of v.
func (o *options) config(v variant, iters, reportEvery int, train, test string) mf.Config {
	c := mf.Config{
		Train: train, Test: test, Rank: v.rank, Lambda: o.lambda, NoBias: true, Unweighted: true, Algo: mf.SGD, Schedule: mf.Rotation,
		LearningRate: v.lr, Decay: v.decay, Inner: 1, Seed: o.gen.Seed, Workers: v.workers,
		Iters: iters, ReportEvery: reportEvery,
	}
	switch v.algo {
	case "unscheduled":
		c.Schedule = mf.Unscheduled
	case "ccd":
		c.Algo = mf.CCD
	}
	return c
}

// do runs one job.
func (o *options) do(ctx context.Context, phase string, v variant, n, iters, reportEvery int, train, test string, log io.Writer) (*run, error) {
	cfg := o.config(v, iters, reportEvery, train, test)
	t0 := time.Now()
	res, err := runJob(ctx, cfg, job.Options{Job: "mfbench", Timeout: 5 * time.Minute,
		Coordinator: coordinator.Options{Timeout: 5 * time.Minute, JoinTimeout: 5 * time.Minute}})
	if err != nil {
		return nil, fmt.Errorf("%s %v run %d: %w", phase, v, n, err)
	}
	r := &run{phase: phase, v: v, n: n, model: mf.ModelOf(res.App), res: res, wall: time.Since(t0)}
	f := r.model.Final()
	fmt.Fprintf(log, "%-10s %-40s run %d: %g iterations in %.2fs (job %.1fs): test RMSE %.5f, %.3g ratings/s per core\n",
		phase, v, n, f.Iter, f.Time.Seconds(), r.wall.Seconds(), f.TestRMSE, f.RatingsPerCoreSec)
	return r, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "mf:", err)
		}
		os.Exit(2)
	}
	if err := bench(ctx, o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mf:", err)
		os.Exit(1)
	}
}

func bench(ctx context.Context, o *options, log io.Writer) error {
	if o.replot {
		runs, err := readCurves(o.out)
		if err != nil {
			return err
		}
		return plotRMSE(o.out, runs, o)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	train, test, cleanup, err := o.dataset(log)
	if err != nil {
		return err
	}
	defer cleanup()
	if o.base {
		sets := []dataset{{name: "generated", train: train, test: test, oracle: o.gen.Noise,
			source: fmt.Sprintf("mf.Generate: %d users, %d items, rank %d, %d ratings, mean %g, user bias sd %g, item bias sd %g, noise %g, popularity ∝ j^-%g, seed %d, %g%% test",
				o.gen.Users, o.gen.Items, o.gen.Rank, o.gen.Ratings, o.gen.Mean, o.gen.UserBias, o.gen.ItemBias, o.gen.Noise, o.gen.Alpha, o.gen.Seed, 100*o.gen.TestFraction)}}
		if o.real != "" {
			rtrain, rtest, err := splitFile(o.real, filepath.Dir(train), 0.1, 1)
			if err != nil {
				return err
			}
			sets = append([]dataset{{name: filepath.Base(o.real), train: rtrain, test: rtest, oracle: math.NaN(),
				source: o.real + ", each rating to the test set with probability 0.1 (seed 1)"}}, sets...)
		}
		if err := o.baselines(ctx, sets, log); err != nil {
			return err
		}
		if !o.tune && !o.curves && !o.tputOn {
			return nil
		}
	}

	var runs []*run
	best := map[string]variant{} // "algo rank" → the tuned variant
	for _, rank := range o.curveRanks {
		for _, algo := range []string{"rotation", "unscheduled"} {
			best[fmt.Sprint(algo, rank)] = variant{algo: algo, rank: rank, workers: o.workers, lr: o.lrs[0], decay: o.decays[0]}
			if !o.tune {
				continue
			}
			bestRMSE := math.Inf(1)
			for _, lr := range o.lrs {
				for _, decay := range o.decays {
					v := variant{algo: algo, rank: rank, workers: o.workers, lr: lr, decay: decay}
					r, err := o.do(ctx, "tune", v, 1, o.tuneIters, o.tuneIters, train, test, log)
					if errors.Is(err, mf.ErrDiverged) {
						fmt.Fprintln(log, err)
						continue // a step size too large: not a candidate
					}
					if err != nil {
						return err
					}
					runs = append(runs, r)
					if f := r.model.Final().TestRMSE; f < bestRMSE {
						bestRMSE, best[fmt.Sprint(algo, rank)] = f, v
					}
				}
			}
		}
	}
	if o.curves {
		for n := 1; n <= o.runs; n++ {
			for _, rank := range o.curveRanks {
				for _, algo := range []string{"rotation", "unscheduled", "ccd"} {
					v := best[fmt.Sprint(algo, rank)]
					if algo == "ccd" {
						v = variant{algo: algo, rank: rank, workers: o.workers}
					}
					r, err := o.do(ctx, "curve", v, n, o.iters, 1, train, test, log)
					if err != nil {
						return err
					}
					runs = append(runs, r)
				}
			}
		}
	}
	if o.tputOn {
		for _, rank := range o.ranks {
			for _, algo := range []string{"rotation", "unscheduled", "ccd"} {
				for _, w := range slices.Compact([]int{1, o.workers}) {
					v := best[fmt.Sprint(algo, rank)]
					if v.algo == "" || algo == "ccd" {
						v = variant{algo: algo, rank: rank, lr: o.lrs[0], decay: o.decays[0]}
					}
					v.workers = w
					r, err := o.do(ctx, "throughput", v, 1, o.tpIters, o.tpIters, train, test, log)
					if err != nil {
						return err
					}
					runs = append(runs, r)
				}
			}
		}
	}
	return o.write(runs, train, test)
}

// splitFile splits the ratings file at path into dir/real.train.txt and
// dir/real.test.txt, each line to the test file with probability frac
// (seeded).
func splitFile(path, dir string, frac float64, seed uint64) (train, test string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	rng := rand.New(rand.NewPCG(seed, 0x73706c6974))
	var tr, te []byte
	for line := range strings.Lines(string(b)) {
		if rng.Float64() < frac {
			te = append(te, line...)
		} else {
			tr = append(tr, line...)
		}
	}
	train, test = filepath.Join(dir, "real.train.txt"), filepath.Join(dir, "real.test.txt")
	if err := os.WriteFile(train, tr, 0o644); err != nil {
		return "", "", err
	}
	return train, test, os.WriteFile(test, te, 0o644)
}

// dataset returns the paths of the training and test files: --data's, or a
// generated set in a temporary directory that cleanup removes.
func (o *options) dataset(log io.Writer) (train, test string, cleanup func(), err error) {
	if o.data != "" {
		return o.data + ".train.txt", o.data + ".test.txt", func() {}, nil
	}
	dir, err := os.MkdirTemp("", "mfbench")
	if err != nil {
		return "", "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	train, test = filepath.Join(dir, "train.txt"), filepath.Join(dir, "test.txt")
	t0 := time.Now()
	tf, err := os.Create(train)
	if err == nil {
		var sf *os.File
		if sf, err = os.Create(test); err == nil {
			var st mf.GenStats
			st, err = mf.Generate(tf, sf, o.gen)
			fmt.Fprintf(log, "generated %d train and %d test ratings in %.1fs\n", st.Train, st.Test, time.Since(t0).Seconds())
			if cerr := sf.Close(); err == nil {
				err = cerr
			}
		}
		if cerr := tf.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		cleanup()
		return "", "", nil, err
	}
	return train, test, cleanup, nil
}

// write writes the results to o.out.
func (o *options) write(runs []*run, train, test string) error {
	for _, r := range runs {
		if r.phase != "curve" {
			continue
		}
		name := metricsName(r.v, r.n)
		if err := atomicfile.Write(filepath.Join(o.out, name), func(w *bufioWriter) error { return r.model.WriteMetrics(w) }); err != nil {
			return err
		}
	}
	if err := atomicfile.Write(filepath.Join(o.out, "runs.csv"), func(w *bufioWriter) error { return writeRuns(w, runs, o) }); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(o.out, "summary.md"), func(w *bufioWriter) error { return o.summary(w, runs, train, test) }); err != nil {
		return err
	}
	if !o.curves {
		return nil
	}
	return plotRMSE(o.out, runs, o)
}
