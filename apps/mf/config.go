package mf

import (
	"fmt"
	"io"
	"math"

	"github.com/strads-go/strads/ps"
)

// The algorithms (Config.Algo).
const (
	// SGD is stochastic gradient descent, one rating at a time.
	SGD = "sgd"
	// CCD is CCD++, rank-one cyclic coordinate descent (Yu et al. 2012).
	CCD = "ccd"
	// ALS is alternating least squares: every round solves each user's
	// row of W (and bias) exactly given H, then each item's row of H
	// given W.
	ALS = "als"
)

// Defaults that a command line may offer; a Config's zero values are not
// these (Lambda 0 is no regularization, Holdout 0 no validation).
const (
	// DefaultLambda is λ of the count-weighted regularization by default.
	// The best λ depends on how much of the ratings the factors explain,
	// not on the data's size (bench/RESULTS.md: 0.01–0.03 on a generated
	// set, 0.3 or more on a real one where the factors explain little).
	// With the default validation stop and SGD's warm start from the
	// bias-only fit, a small λ costs nothing where the factors explain
	// little: the job keeps the evaluation with the lowest validation
	// RMSE, and iteration 0 is the bias-only model.
	DefaultLambda = 0.01
	// DefaultBiasLambda is λ_b by default: each bias is shrunk as if it
	// had 5 more ratings with a residual of 0 (best of 2, 5 and 15 on
	// both sets of bench/RESULTS.md).
	DefaultBiasLambda = 5
	// DefaultValidate is the fraction of the training ratings that a
	// command line holds out for validation by default (Config.Holdout).
	DefaultValidate = 0.05
)

// The schedules of SGD (Config.Schedule).
const (
	// Rotation is DSGD on the static rotation engine: items are cut into
	// one block per worker, and in sub-round t worker p updates block
	// (p+t) mod P, so no two workers ever touch the same factor.
	Rotation = "rotation"
	// Unscheduled is the Hogwild-style baseline: every worker updates its
	// own copy of all of H over all its ratings, and the copies are merged
	// once per iteration.
	Unscheduled = "unscheduled"
)

// The modes of SGD (Config.Mode): Scheduled, or a consistency model of the
// parameter server (package ps) by its name: "bsp", "ssp", "essp" or
// "async" (RunPS).
const (
	// Scheduled is SGD on the runtime's schedules (Config.Schedule).
	Scheduled = "scheduled"
)

// Config configures a job. Every role gets the same Config.
type Config struct {
	// Train is the training ratings file; Test, if set, the held-out one.
	// Workers read them; the coordinator and the scheduler do not.
	Train, Test string
	// Rank is K, the number of factors.
	Rank int
	// NoBias drops the global mean and the biases: the model is w_u·h_i
	// alone. By default it is μ + b_u + c_i + w_u·h_i (see the package
	// doc).
	NoBias bool
	// Lambda is λ, the factors' regularization: λ(Σ_u n_u‖w_u‖² +
	// Σ_i n_i‖h_i‖²), n_u and n_i the users' and items' training ratings
	// counts (ALS-WR's), or with Unweighted λ(‖W‖² + ‖H‖²).
	Lambda float64
	// Unweighted regularizes the factors by λ(‖W‖² + ‖H‖²) instead of
	// weighting each factor's norm by its ratings count.
	Unweighted bool
	// BiasLambda is λ_b, the biases' regularization λ_b(Σ_u b_u² +
	// Σ_i c_i²): never weighted by counts, so that a bias with few
	// ratings is shrunk toward 0 more than one with many. Unused with
	// NoBias.
	BiasLambda float64
	// ColdStart (with biases) starts from biases of 0 and random W. By
	// default a job starts warm: μ + b_u + c_i is the bias-only fit (two
	// sweeps of exact alternating updates, from the workers' sums; see
	// shard.warmStart) and W is 0 (H is random), so that the state of
	// iteration 0 is the bias-only model; with Holdout, the model written
	// for iteration 0 is the bias-only fit of all the training ratings
	// (folds). SGD on the rotation, CCD++ and ALS start warm; the
	// unscheduled SGD baseline always starts cold.
	ColdStart bool
	// Algo is SGD, CCD or ALS; Schedule (SGD only) Rotation or
	// Unscheduled.
	Algo, Schedule string
	// Mode is Scheduled ("" is the same) or, for data-parallel SGD on
	// the parameter server (RunPS), the consistency model of its item
	// table: "bsp", "ssp", "essp" or "async" (ps.ParseModel).
	Mode string
	// Star sends the rotation's blocks of H through the coordinator, in
	// its partials and updates (the star), instead of straight from the
	// worker that finished a block to its next owner (the ring, the
	// default; DESIGN "Apps"). Both give the same model, bit for bit.
	Star bool
	// LearningRate and Decay set the SGD step size of iteration e (from
	// 0): η_e = LearningRate/(1 + Decay·e^1.5).
	LearningRate, Decay float64
	// Inner is the number of CCD++ inner iterations per feature.
	Inner int
	// Seed seeds the initial factors and the order of the SGD updates.
	Seed uint64
	// Workers is the number of workers P.
	Workers int
	// Holdout, if > 0, is the fraction of the training file's ratings held
	// out as a validation set: rating (u, i) is held out when
	// HeldOut(Seed, u, i, Holdout), a hash of the seed and the pair alone,
	// so that every role that reads the file agrees on the split without
	// exchanging anything. The model is fitted to the others (μ, the
	// counts, the Index are theirs); each worker evaluates its users'
	// held-out ratings (those of a user and item in the rest, like the test
	// ratings) and the coordinator reports their RMSE (val_rmse) and keeps
	// the factors of the evaluation with the lowest one (Model.Best).
	// After Patience evaluations in a row without a new lowest validation
	// RMSE, that evaluation and every report after it ask the runtime to
	// stop (schmp.Progress.Stop: schmp.StopApp), which it does at
	// the end of the iteration; the factors written are the best
	// evaluation's.
	Holdout float64
	// Patience is the number of evaluations in a row without a new lowest
	// validation RMSE after which a job with Holdout stops (at least 1).
	Patience int
	// Iters is the number of iterations the job runs (0: no limit). An
	// iteration is a pass over all ratings: P rounds with Rotation, one
	// round Unscheduled, Rank·Inner rounds with CCD (RoundsPerIter); the
	// runtime's MaxRounds must be Iters·RoundsPerIter.
	Iters int
	// ReportEvery is the number of iterations between evaluations; the
	// runtime's ReportEvery must be ReportEvery·RoundsPerIter.
	ReportEvery int

	// Warn, on the coordinator, receives warnings (test ratings with
	// unseen ids); it may be nil.
	Warn io.Writer
	// Progress, on the coordinator, if set, receives a line of its own
	// per evaluation. Every evaluation's figures are also in the
	// runtime's progress (schmp.Progress.Metrics: iter, train_rmse,
	// test_rmse, ratings, ratings_per_s, ratings_per_core_s), which the
	// runtime's progress line, metrics CSV and monitor show; this writer,
	// like Model.WriteMetrics, stays for callers that do not use them.
	Progress io.Writer
	// Predict and PredictOut, on the coordinator, if set (both or
	// neither), make the model's outputs (the runtime's, see Outputs)
	// include the predictions of the (user, item) pairs of the file
	// Predict (see ReadPairs) at PredictOut, lines "user item prediction"
	// (Model.Predict).
	Predict, PredictOut string
}

// RoundsPerIter returns the number of runtime rounds of an iteration.
func (c Config) RoundsPerIter() int {
	switch {
	case c.Algo == CCD:
		return c.ccdSlots() * max(c.Inner, 1)
	case c.Algo == ALS, c.Schedule == Unscheduled:
		return 1
	}
	return max(c.Workers, 1)
}

// Rounds returns the runtime's MaxRounds and ReportEvery for c: Iters
// iterations and ReportEvery iterations, an iteration being RoundsPerIter
// rounds.
func (c Config) Rounds() (maxRounds uint64, reportEvery int) {
	rpi := c.RoundsPerIter()
	return uint64(c.Iters * rpi), c.ReportEvery * rpi
}

// weight returns the weight of a factor with n ratings in the factors'
// regularization: n, or 1 with Unweighted.
func (c Config) weight(n int32) float64 {
	if c.Unweighted {
		return 1
	}
	return float64(n)
}

// biased reports whether the model has the global mean and biases.
func (c Config) biased() bool { return !c.NoBias }

// WarmStart reports whether a job of c starts from the bias-only fit, so
// that its iteration 0 is the bias-only model (see ColdStart).
func (c Config) WarmStart() bool { return c.warm() }

// warm reports whether the job starts from the bias-only fit (ColdStart):
// SGD on the rotation, CCD++ and ALS. (The unscheduled SGD baseline
// starts cold: from W = 0 its workers' copies of H, merged every
// iteration, learned far more slowly, test RMSE 0.45 against 0.11 after
// 30 iterations on TestConverges' set.)
func (c Config) warm() bool {
	return c.biased() && !c.ColdStart && (c.Algo != SGD || c.Schedule == Rotation)
}

// folds reports whether the warm start also fits the bias-only model to
// all the training ratings, the held-out ones included (with Holdout):
// the model that the job writes if its best evaluation is iteration 0.
func (c Config) folds() bool { return c.warm() && c.Holdout > 0 }

// onPS reports whether the job is SGD on the parameter server (Mode).
func (c Config) onPS() bool { return c.Mode != "" && c.Mode != Scheduled }

// blocks returns the number of item blocks: one per worker with Rotation.
func (c Config) blocks() int {
	if c.Algo == SGD && c.Schedule == Rotation && !c.onPS() {
		return c.Workers
	}
	return 1
}

// Validate reports the first bad setting, named as its command-line flag.
func (c Config) Validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case c.Rank < 1:
		return fmt.Errorf("--rank must be at least 1, got %d", c.Rank)
	case c.Rank > 1<<12:
		return fmt.Errorf("--rank must be at most %d, got %d", 1<<12, c.Rank)
	case !(c.Lambda >= 0) || !finite(c.Lambda):
		return fmt.Errorf("--lambda must be a finite number >= 0, got %v", c.Lambda)
	case c.Algo != SGD && c.Algo != CCD && c.Algo != ALS:
		return fmt.Errorf("--algo must be %s, %s or %s, got %q", SGD, CCD, ALS, c.Algo)
	case c.Schedule != Rotation && c.Schedule != Unscheduled:
		return fmt.Errorf("--schedule must be %s or %s, got %q", Rotation, Unscheduled, c.Schedule)
	case c.Algo != SGD && c.Schedule != Rotation:
		return fmt.Errorf("--schedule=unscheduled is a baseline of --algo=sgd; %s has none", c.Algo)
	case c.Algo == ALS && !(c.Lambda > 0):
		return fmt.Errorf("Config.Lambda must be > 0 with ALS, so that every least-squares system is positive definite; got %v", c.Lambda)
	case !c.NoBias && (!(c.BiasLambda >= 0) || !finite(c.BiasLambda)):
		return fmt.Errorf("Config.BiasLambda must be a finite number >= 0, got %v", c.BiasLambda)
	case c.Algo == SGD && (!(c.LearningRate > 0) || !finite(c.LearningRate)):
		return fmt.Errorf("--lr must be a finite number > 0, got %v", c.LearningRate)
	case !(c.Decay >= 0) || !finite(c.Decay):
		return fmt.Errorf("--decay must be a finite number >= 0, got %v", c.Decay)
	case c.Algo == CCD && c.Inner < 1:
		return fmt.Errorf("--inner must be at least 1, got %d", c.Inner)
	case c.Workers < 1 || c.Workers > 1<<12:
		return fmt.Errorf("--workers must be in [1, %d], got %d", 1<<12, c.Workers)
	case c.Iters < 0:
		return fmt.Errorf("--iters must be >= 0, got %d", c.Iters)
	case c.ReportEvery < 1:
		return fmt.Errorf("--report-every must be at least 1, got %d", c.ReportEvery)
	case !(c.Holdout >= 0 && c.Holdout < 1):
		return fmt.Errorf("--validate must be a fraction in [0, 1), got %v", c.Holdout)
	case c.Holdout > 0 && c.Patience < 1:
		return fmt.Errorf("--patience must be at least 1, got %d", c.Patience)
	}
	if !c.onPS() {
		return nil
	}
	if _, err := ps.ParseModel(c.Mode); err != nil {
		return fmt.Errorf("--mode must be %s, bsp, ssp, essp or async, got %q", Scheduled, c.Mode)
	}
	switch {
	case c.Algo != SGD:
		return fmt.Errorf("--mode %s is SGD on the parameter server: --algo %s has no such mode", c.Mode, c.Algo)
	case c.Schedule != Rotation:
		return fmt.Errorf("--schedule is of --mode %s; --mode %s has no schedule", Scheduled, c.Mode)
	case c.Holdout > 0:
		return fmt.Errorf("--validate with --mode %s: the parameter-server modes hold nothing out; give --validate 0", c.Mode)
	case c.Iters < 1:
		return fmt.Errorf("--iters must be at least 1 with --mode %s (its tables have a row per evaluation), got %d", c.Mode, c.Iters)
	}
	return nil
}

// HeldOut reports whether the rating of item by user is held out for
// validation at fraction f with seed: a hash of (seed, user, item), mapped
// to [0, 1), is below f. It depends on nothing else (not on the file's
// order, the workers or the algorithm), so every role that reads a
// training file holds out the same ratings, and about a fraction f of any
// large set of pairs.
func HeldOut(seed uint64, user, item int64, f float64) bool {
	if f <= 0 {
		return false
	}
	x := splitmix(seed ^ splitmix(holdoutStream^splitmix(uint64(user))^splitmix(splitmix(uint64(item)))))
	return float64(x>>11)/(1<<53) < f
}

// holdoutStream separates HeldOut's hash from the initial factors'.
const holdoutStream = 0x686f6c64 // "hold"

// trainFilter returns the filter of the ratings that the model is fitted
// to: nil (all) without Holdout.
func (c Config) trainFilter() func(Rating) bool {
	if c.Holdout <= 0 {
		return nil
	}
	seed, f := c.Seed, c.Holdout
	return func(r Rating) bool { return !HeldOut(seed, r.User, r.Item, f) }
}

// stepSize returns the SGD step size of iteration e.
func (c Config) stepSize(e uint64) float64 {
	return c.LearningRate / (1 + c.Decay*math.Pow(float64(e), 1.5))
}
