package mf

import (
	"context"
	"fmt"
	"math"
	"testing"
)

// defaults returns the configuration of strads mf with its default flags
// (cmd/strads: rank 10, λ DefaultLambda, λ_b DefaultBiasLambda, SGD on the
// rotation with lr 0.05 and decay 0.05, --validate DefaultValidate with
// patience DefaultPatience, 20 iterations, an evaluation each, 2 workers)
// on the files train and test.
func defaults(train, test string, seed uint64) Config {
	return Config{
		Train: train, Test: test, Rank: 10, Lambda: DefaultLambda, BiasLambda: DefaultBiasLambda,
		Algo: SGD, Schedule: Rotation, LearningRate: 0.05, Decay: 0.05, Inner: 1, Seed: seed, Workers: 2,
		Holdout: DefaultValidate, Patience: DefaultPatience, Iters: 20, ReportEvery: 1,
	}
}

// TestWarmStartNeverWorse checks the default run on generated data whose
// factors explain little (noise of standard deviation 3 on factors of
// variance 1, 45 ratings a user): its first evaluation, iteration 0, is
// the bias-only model (the warm start: its validation RMSE is that of
// FitBiasOnly's converged fit, to 1e-4), and the model it ends with, the
// evaluation with the lowest validation RMSE, is no worse than the
// bias-only model on validation, whereas the same run started cold ends
// worse.
func TestWarmStartNeverWorse(t *testing.T) {
	dir := t.TempDir()
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			train, test := genSet(t, dir, 3, seed)
			cfg := defaults(train, test, seed)
			b, err := FitBiasOnly(cfg, 50)
			if err != nil {
				t.Fatal(err)
			}
			bias, _, err := b.RMSE(cfg.Train, cfg.ValidationFilter())
			if err != nil {
				t.Fatal(err)
			}
			all := cfg
			all.Holdout = 0
			ba, err := FitBiasOnly(all, 50)
			if err != nil {
				t.Fatal(err)
			}
			biasTest, _, err := ba.RMSE(cfg.Test, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, _, err := fitStatus(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			first, best := m.Trace[0], m.Best()
			cold := cfg
			cold.ColdStart = true
			mc, _, err := fitStatus(context.Background(), cold)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("validation RMSE: bias only %.6f; warm: iteration 0 %.6f, best %.6f at iteration %g; cold: best %.6f at iteration %g",
				bias, first.ValRMSE, best.ValRMSE, best.Iter, mc.Best().ValRMSE, mc.Best().Iter)
			t.Logf("test RMSE: bias only (all the training ratings) %.6f; warm: iteration 0 %.6f, best %.6f; cold: best %.6f",
				biasTest, first.TestRMSE, best.TestRMSE, mc.Best().TestRMSE)
			if first.Iter != 0 || math.Abs(first.ValRMSE-bias) > 1e-4*bias {
				t.Errorf("iteration %g: validation RMSE %.6f, want the bias-only model's %.6f at iteration 0", first.Iter, first.ValRMSE, bias)
			}
			if math.Abs(first.TestRMSE-biasTest) > 1e-4*biasTest {
				t.Errorf("iteration 0: test RMSE %.6f, want that of the bias-only model of all the training ratings, %.6f (the folded fit)", first.TestRMSE, biasTest)
			}
			var tests []Rating
			if err := ReadRatings(cfg.Test, func(_ int, r Rating) error { tests = append(tests, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if got := savedRMSE(t, m, tests); math.Abs(got-best.TestRMSE) > 1e-9*got {
				t.Errorf("the model written has test RMSE %.9f, its evaluation says %.9f", got, best.TestRMSE)
			}
			if !(best.ValRMSE <= bias*(1+1e-4)) {
				t.Errorf("the model's validation RMSE %.6f is above the bias-only model's %.6f", best.ValRMSE, bias)
			}
			if !(mc.Best().ValRMSE > bias) {
				t.Errorf("cold start: validation RMSE %.6f, not above the bias-only model's %.6f: the data are no test of the warm start", mc.Best().ValRMSE, bias)
			}
		})
	}
}

// TestRefitKeepsBiasOnly checks Refit after a search whose best fit kept
// iteration 0 of the warm start: the refit keeps the holdout and the
// validation stop (it is that fit again, and writes the bias-only model
// of all the training ratings), where a later best iteration, or a cold
// start, is refitted on all the ratings for that many iterations.
func TestRefitKeepsBiasOnly(t *testing.T) {
	cfg := defaults("train", "test", 1)
	at := func(iter float64) GridPoint { return GridPoint{Lambda: 0.1, Best: Eval{Iter: iter}} }
	if r := Refit(cfg, at(0)); r.Holdout != cfg.Holdout || r.Patience != cfg.Patience || r.Iters != cfg.Iters || r.Lambda != 0.1 {
		t.Errorf("best at iteration 0: refit with holdout %g, patience %d, %d iterations, λ %g; want the fit again at λ 0.1", r.Holdout, r.Patience, r.Iters, r.Lambda)
	}
	if r := Refit(cfg, at(3)); r.Holdout != 0 || r.Iters != 3 {
		t.Errorf("best at iteration 3: refit with holdout %g, %d iterations; want none, 3", r.Holdout, r.Iters)
	}
	cold := cfg
	cold.ColdStart = true
	if r := Refit(cold, at(0)); r.Holdout != 0 || r.Iters != 1 {
		t.Errorf("cold start, best at iteration 0: refit with holdout %g, %d iterations; want none, 1", r.Holdout, r.Iters)
	}
}
