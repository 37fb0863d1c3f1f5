package lasso

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// TestLineSearch checks linePath.minimize against a fine grid and against
// the derivative's sign on random paths with kinks.
func TestLineSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 2000 {
		k := 1 + rng.IntN(6)
		p := linePath{a: rng.Float64() * 3, b: rng.NormFloat64(), lambda: rng.Float64(), b0: make([]float64, k), d: make([]float64, k)}
		if trial%7 == 0 {
			p.a = 0
		}
		for i := range k {
			if rng.IntN(3) > 0 {
				p.b0[i] = rng.NormFloat64()
			}
			p.d[i] = rng.NormFloat64()
			if rng.IntN(4) == 0 && p.b0[i] != 0 {
				p.d[i] = -p.b0[i] * (0.1 + 2*rng.Float64()) // crosses zero
			}
		}
		for _, limit := range []float64{1, MaxStep} {
			alpha := p.minimize(limit)
			if alpha < 0 || alpha > limit {
				t.Fatalf("trial %d: α = %v outside [0, %v]", trial, alpha, limit)
			}
			f := p.at(alpha)
			for g := 0; g <= 1000; g++ {
				x := limit * float64(g) / 1000
				if fx := p.at(x); fx < f-1e-12*(1+math.Abs(f)) {
					t.Fatalf("trial %d (%+v): φ(%v) = %v < φ(α = %v) = %v on [0, %v]", trial, p, x, fx, alpha, f, limit)
				}
			}
			if f > 1e-15 {
				t.Fatalf("trial %d: φ(α) = %v > φ(0) = 0", trial, f)
			}
		}
	}
}

// colSchedule is the engine configuration of the column layout's tests.
func colSchedule(policy scheduler.Policy) scheduler.Config {
	return scheduler.Config{Policy: policy, Gamma: 2, Eta: 1e-6, Warmup: -1, Seed: 1, Block: 1, Candidates: 1, Rho: 1, Workers: 1}
}

// runColumns runs a whole Lasso job in the column layout.
func runColumns(t *testing.T, cfg Config, workers int, copts coordinator.Options) (*coordinator.Result, string, error) {
	t.Helper()
	return runColumnsProg(t, ColumnProgram(cfg, workers), workers, copts)
}

// runColumnsProg is runColumns for a program whose parts a test replaced.
func runColumnsProg(t *testing.T, prog schmp.Program[ColPlan, ColPartial, ColUpdate, ColSummary], workers int, copts coordinator.Options) (*coordinator.Result, string, error) {
	t.Helper()
	copts.Workers = workers
	if copts.ReportEvery == 0 {
		copts.ReportEvery = 1
	}
	copts.RiseTol = 1e-9
	return testhelper.RunJob(t, prog, copts, 2*time.Minute)
}

// TestColumnsKKT solves problems in the column layout on 1, 2 and 3
// workers, with small blocks so that a job takes many rounds, and checks
// the optimality conditions, the sequential solver's objective, and that
// the objective never rose between reports.
func TestColumnsKKT(t *testing.T) {
	cases := []struct {
		name      string
		n, p      int
		intercept bool
		policy    scheduler.Policy
		work      int
		ratio     float64
	}{
		{"p>n", 40, 120, false, scheduler.Priority, 300, 0.1},
		{"p>n/intercept", 40, 120, true, scheduler.Random, 300, 0.1},
		{"n>p/intercept", 150, 30, true, scheduler.Cyclic, 400, 0.1},
		{"p>n/one block", 40, 120, true, scheduler.Priority, 0, 0.1},
		// Several workers stalled here at gaps of 1e-11 to 1e-10, when
		// their changes of Xβ were differences of residuals.
		{"n>p/intercept/λ 0.3", 150, 30, true, scheduler.Priority, 400, 0.3},
		// Wide enough that the working sets grow over several rounds
		// (columnar.HandLimit binds).
		{"p≫n/wide", 40, 1500, true, scheduler.Priority, 0, 0.02},
	}
	for _, tc := range cases {
		pr := newProblem(t, tc.n, tc.p, 42)
		lambda := tc.ratio * pr.lambdaMax(tc.intercept)
		want := pr.objective(pr.sequentialCD(lambda, tc.intercept), lambda, tc.intercept)
		for _, workers := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/workers=%d", tc.name, workers), func(t *testing.T) {
				cfg := Config{Data: pr.path, LambdaRatio: tc.ratio, Intercept: tc.intercept, Schedule: colSchedule(tc.policy), Layout: LayoutColumns, RoundWork: tc.work, InnerTol: 1e-14}
				res, out, err := runColumns(t, cfg, workers, coordinator.Options{Tol: 1e-12, MaxRounds: 20000})
				if err != nil {
					t.Fatal(err)
				}
				got := pr.checkSolution(t, res, out, lambda, tc.intercept, want)
				checkDescent(t, res)
				if res.Reason != "converged" {
					t.Errorf("stopped by %s after %d rounds (gap %.3g), want converged", res.Reason, res.Rounds, res.Final.Gap)
				}
				t.Logf("%d rounds, reason %s, objective %.12g", res.Rounds, res.Reason, got)
			})
		}
	}
}

// checkDescent fails t if a report's objective is above an earlier one's.
func checkDescent(t *testing.T, res *coordinator.Result) {
	t.Helper()
	for i := 1; i < len(res.Trace); i++ {
		prev, cur := res.Trace[i-1].Progress.Objective, res.Trace[i].Progress.Objective
		if cur > prev*(1+1e-12) {
			t.Errorf("objective rose from %.15g to %.15g at round %d", prev, cur, res.Trace[i].Round)
		}
	}
}

// TestColumnsCorrelated runs the column layout on data whose columns come
// in groups of strongly correlated ones spread over the workers' ranges,
// with no dependency check at all: the merged steps must never raise the
// objective, and the job must still converge.
func TestColumnsCorrelated(t *testing.T) {
	var sb strings.Builder
	gc := GenConfig{Samples: 60, Features: 90, Density: 1, CorrGroups: 3, Corr: 0.95, TrueNNZ: 12, Noise: 0.3, Seed: 5}
	if _, err := Generate(&sb, gc); err != nil {
		t.Fatal(err)
	}
	path := testhelper.WriteFile(t, "corr.svm", sb.String())
	for _, workers := range []int{2, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			cfg := Config{Data: path, LambdaRatio: 0.05, Intercept: true, Schedule: colSchedule(scheduler.Priority), Layout: LayoutColumns, RoundWork: 200}
			res, _, err := runColumns(t, cfg, workers, coordinator.Options{Tol: 1e-9, MaxRounds: 50000})
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != "converged" {
				t.Errorf("stopped by %s, want converged", res.Reason)
			}
			checkDescent(t, res)
			t.Logf("%d rounds, objective %.12g, gap %.3g", res.Rounds, res.Final.Objective, res.Final.Gap)
		})
	}
}

// TestColumnsDifferentData gives the two workers of a job different files:
// the job must fail and say why.
func TestColumnsDifferentData(t *testing.T) {
	a := newProblem(t, 40, 60, 1)
	b := newProblem(t, 40, 60, 2)
	cfgA := Config{Data: a.path, LambdaRatio: 0.1, Schedule: colSchedule(scheduler.Priority), Layout: LayoutColumns}
	cfgB := cfgA
	cfgB.Data = b.path
	prog := ColumnProgram(cfgA, 2)
	progB := ColumnProgram(cfgB, 2)
	newWorker := prog.NewWorker
	prog.NewWorker = func(ctx context.Context, shard, shards int) (colWorker, error) {
		if shard == 1 {
			return progB.NewWorker(ctx, shard, shards)
		}
		return newWorker(ctx, shard, shards)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	copts := coordinator.Options{Workers: 2, Tol: 1e-6, ReportEvery: 1, JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}
	_, err := job.Run(ctx, prog, job.Options{Job: "test", Coordinator: copts, Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "different data") {
		t.Fatalf("job with different data files: err = %v, want one about different data", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the job timed out instead of failing: %v", err)
	}
}

// colWorker is the worker interface of the column layout.
type colWorker = schmp.Worker[ColPlan, ColPartial, ColUpdate, ColSummary]

// TestColumnsShotgun runs the Shotgun baseline (scheduler.Shotgun): random
// working sets, and every worker's change taken whole, with no joint
// rounds. On weakly coupled columns it reaches the optimum as the weighted
// merge does; on strongly correlated ones, the summed changes overshoot,
// and the job must fail with ErrDiverged, not report success.
func TestColumnsShotgun(t *testing.T) {
	pr := newProblem(t, 40, 120, 42)
	lambda := 0.1 * pr.lambdaMax(true)
	want := pr.objective(pr.sequentialCD(lambda, true), lambda, true)
	cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: colSchedule(scheduler.Shotgun), Layout: LayoutColumns, RoundWork: 300, InnerTol: 1e-14}
	res, coord, out := runColumnsCoord(t, cfg, 2, coordinator.Options{Tol: 1e-12, MaxRounds: 20000})
	pr.checkSolution(t, res, out, lambda, true, want)
	if coord.Shortened != 0 {
		t.Errorf("%d rounds took a change shortened, want every change whole", coord.Shortened)
	}
	t.Logf("weakly coupled: %d rounds, reason %s", res.Rounds, res.Reason)

	var sb strings.Builder
	gc := GenConfig{Samples: 60, Features: 90, Density: 1, CorrGroups: 3, Corr: 0.95, TrueNNZ: 12, Noise: 0.3, Seed: 5}
	if _, err := Generate(&sb, gc); err != nil {
		t.Fatal(err)
	}
	cfg.Data = testhelper.WriteFile(t, "corr.svm", sb.String())
	cfg.LambdaRatio, cfg.RoundWork = 0.05, 200
	res2, _, err := runColumns(t, cfg, 4, coordinator.Options{Tol: 1e-9, MaxRounds: 50000})
	if !errors.Is(err, coordinator.ErrDiverged) {
		t.Fatalf("strongly correlated, 4 workers: %v (result %+v), want ErrDiverged", err, res2)
	}
	t.Logf("strongly correlated: %v", err)
	// The weighted merge solves the same problem.
	cfg.Schedule = colSchedule(scheduler.Random)
	if _, _, err := runColumns(t, cfg, 4, coordinator.Options{Tol: 1e-9, MaxRounds: 50000}); err != nil {
		t.Fatalf("strongly correlated, random with the weighted merge: %v", err)
	}
}
