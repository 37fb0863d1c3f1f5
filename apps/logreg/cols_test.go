package logreg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// colJob is a job in the column layout, as runColJob runs it.
type colJob struct {
	cfg     Config
	workers int
	opts    coordinator.Options
	// worker, if set, replaces the config of worker shard k.
	worker func(shard int, cfg Config) Config
}

// runColJob runs a whole job in the column layout on an embedded
// nats-server and returns its result, its coordinator and the path of the
// model, or the job's error.
func runColJob(t *testing.T, j colJob) (*coordinator.Result, *ColCoordinator, string, error) {
	t.Helper()
	copts := j.opts
	copts.Workers = j.workers
	if copts.ReportEvery == 0 {
		copts.ReportEvery = 10
	}
	cfg := j.cfg
	cfg.Layout = lasso.LayoutColumns
	prog := ColumnProgram(cfg, j.workers)
	var coord *ColCoordinator
	prog.NewCoordinator = func(context.Context) (schmp.Coordinator[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
		c, err := NewColCoordinator(cfg)
		coord = c
		return c, err
	}
	if j.worker != nil {
		prog.NewWorker = func(_ context.Context, shard, shards int) (schmp.Worker[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			return NewColWorker(j.worker(shard, cfg), shard, shards)
		}
	}
	res, out, err := testhelper.RunJob(t, prog, copts, time.Minute)
	return res, coord, out, err
}

// colSchedule is the schedule of the column layout's tests.
func colSchedule(policy scheduler.Policy) scheduler.Config {
	return scheduler.Config{Policy: policy, Gamma: 2, Eta: 1e-6, Candidates: 1, Block: 1, Warmup: -1, Rho: 1, Workers: 1, Seed: 1}
}

// TestColumnsKKT solves the problems of TestKKT in the column layout on 1, 2
// and 3 workers, with the default work budget of a round and a small one,
// under each growth policy of the working sets, and on a problem wide
// enough that the working sets grow over several rounds
// (columnar.HandLimit binds), and checks the solution against the
// optimality conditions and the sequential solver, and every report's gap
// against the optimum.
func TestColumnsKKT(t *testing.T) {
	wide := genConfig(50, 120, 24, 1)
	tall := genConfig(200, 30, 10, 2)
	tall.Bias, tall.ZeroOne = 0.8, true
	wider := genConfig(40, 1500, 100, 4)
	wider.TrueNNZ = 40
	policies := []scheduler.Policy{scheduler.Priority, scheduler.Random, scheduler.Cyclic}
	cases := []struct {
		name      string
		gen       GenConfig
		intercept bool
		ratio     float64
		works     []int
	}{
		{"p>n", wide, false, 0.1, []int{0, 150}},
		{"p>n/intercept", wide, true, 0.1, []int{0, 150}},
		{"n>p/intercept", tall, true, 0.1, []int{0, 150}},
		{"p≫n/intercept", wider, true, 0.1, []int{0}},
	}
	for c, tc := range cases {
		pr := newProblem(t, tc.gen)
		lambda := tc.ratio * pr.lambdaMax(tc.intercept)
		rw, rb := pr.reference(t, lambda, tc.intercept)
		want := pr.objective(rw, rb, lambda)
		for i, workers := range []int{1, 2, 3} {
			for _, work := range tc.works {
				policy := policies[(c+i)%len(policies)]
				t.Run(fmt.Sprintf("%s/workers=%d/work=%d/%v", tc.name, workers, work, policy), func(t *testing.T) {
					cfg := Config{Data: pr.path, LambdaRatio: tc.ratio, Intercept: tc.intercept, Schedule: colSchedule(policy), RoundWork: work}
					res, coord, out, err := runColJob(t, colJob{cfg: cfg, workers: workers, opts: coordinator.Options{Tol: 1e-10, MaxRounds: 20000, ReportEvery: 2}})
					if err != nil {
						t.Fatalf("job: %v", err)
					}
					if rel := math.Abs(coord.Lambda()-lambda) / lambda; rel > 1e-12 {
						t.Errorf("λ = %.15g, want %v·λ_max = %.15g", coord.Lambda(), tc.ratio, lambda)
					}
					w, got := pr.checkSolution(t, res, out, lambda, tc.intercept, want)
					nnz := 0
					for _, v := range w {
						if v != 0 {
							nnz++
						}
					}
					if res.Final.NNZ != nnz {
						t.Errorf("reported nnz %d, the model has %d", res.Final.NNZ, nnz)
					}
					if rises, most := countRises(res); rises > 0 {
						t.Errorf("%d reports raised the objective, at most by %.3g of it", rises, most)
					}
					st := coord.Stats()
					t.Logf("%d rounds, objective %.12g, nnz %d; merges %d (%d whole, %d stretched, %d shortened, α ≥ %.3g; %d single, %d rejected)",
						res.Rounds, got, res.Final.NNZ, st.Merged, st.Whole, st.Stretched, st.Shortened, st.MinAlpha, st.Single, st.Rejected)
				})
			}
		}
	}
}

// countRises returns the number of reports whose objective is above the
// previous one's by more than 1e-13 of it, and the largest such rise,
// relative.
func countRises(res *coordinator.Result) (rises int, most float64) {
	for k := 1; k < len(res.Trace); k++ {
		prev, cur := res.Trace[k-1].Objective, res.Trace[k].Objective
		if rise := (cur - prev) / prev; rise > 1e-13 {
			rises++
			most = max(most, rise)
		}
	}
	return rises, most
}

// TestColumnsMonotone runs a problem whose columns come in groups of ten
// with correlation 0.95, split among several workers, whose changes fight:
// with every worker changing its own columns and the coordinator weighing
// their changes on the objective, every report's objective must be at or
// below the previous one, at depth 1 and with rounds in flight (whose
// changes are computed from older margins), and the optimum must be
// reached.
func TestColumnsMonotone(t *testing.T) {
	g := genConfig(100, 80, 8, 3)
	g.Corr, g.Density = 0.95, 0.3
	pr := newProblem(t, g)
	lambda := 0.05 * pr.lambdaMax(false)
	rw, rb := pr.reference(t, lambda, false)
	want := pr.objective(rw, rb, lambda)
	cases := []struct{ workers, depth int }{{2, 1}, {3, 1}, {3, 3}, {1, 3}}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("workers=%d/depth=%d", tc.workers, tc.depth), func(t *testing.T) {
			cfg := Config{Data: pr.path, LambdaRatio: 0.05, Schedule: colSchedule(scheduler.Priority), RoundWork: 300}
			res, coord, out, err := runColJob(t, colJob{cfg: cfg, workers: tc.workers,
				opts: coordinator.Options{Tol: 1e-8, MaxRounds: 3000, ReportEvery: 1, Depth: tc.depth}})
			if err != nil {
				t.Fatalf("job: %v", err)
			}
			rises, most := countRises(res)
			st := coord.Stats()
			sub := (res.Final.Objective - want) / want
			t.Logf("%d rounds: gap %.3g, (F − F*)/F* = %.3g; %d of %d reports rose (at most by %.3g); merges %d (%d whole, %d stretched, %d shortened, α ≥ %.3g; %d single, %d rejected); %d changes dropped",
				res.Rounds, res.Final.Gap, sub, rises, len(res.Trace)-1, most, st.Merged, st.Whole, st.Stretched, st.Shortened, st.MinAlpha, st.Single, st.Rejected, st.Dropped)
			if rises > 0 {
				t.Errorf("%d reports raised the objective, at most by %.3g of it", rises, most)
			}
			w, b := readModel(t, out, len(pr.cols))
			if got := pr.objective(w, b, lambda); math.Abs(got-res.Final.Objective) > 1e-12*got {
				t.Errorf("reported objective %.15g, the model's %.15g", res.Final.Objective, got)
			}
			for _, s := range res.Trace {
				if s.Objective < want*(1-1e-12) || s.Objective-s.Gap > want*(1+1e-12) {
					t.Errorf("round %d: objective %.15g, gap %.3g: does not bracket F* = %.15g", s.Round, s.Objective, s.Gap, want)
				}
			}
			if tc.workers > 1 && st.Merged != st.Rounds {
				t.Errorf("%d of %d rounds that changed the model merged: with several workers, all do", st.Merged, st.Rounds)
			}
			switch {
			case sub > 1e-9:
				t.Errorf("(F − F*)/F* = %.3g after %d rounds, want ≤ 1e-9", sub, res.Rounds)
			case tc.depth == 1 && res.Reason != "converged":
				t.Errorf("stopped by %s after %d rounds (gap %.3g), want converged", res.Reason, res.Rounds, res.Final.Gap)
			}
		})
	}
}

// TestColumnsDifferentData checks that workers that read different files
// fail the job at the start with an error that says so.
func TestColumnsDifferentData(t *testing.T) {
	a := newProblem(t, genConfig(40, 30, 6, 1))
	b := newProblem(t, genConfig(40, 30, 6, 2))
	cfg := Config{Data: a.path, LambdaRatio: 0.1, Schedule: colSchedule(scheduler.Cyclic)}
	_, _, out, err := runColJob(t, colJob{cfg: cfg, workers: 2, worker: func(shard int, c Config) Config {
		if shard == 1 {
			c.Data = b.path
		}
		return c
	}})
	if err == nil || !strings.Contains(err.Error(), "the workers read different data") {
		t.Fatalf("job: %v, want an error saying the workers read different data", err)
	}
	if _, serr := os.Stat(out); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("model written despite the error: %v", serr)
	}
}

// TestColumnsReportsDisagree checks that the coordinator refuses reports
// whose sums over the rows differ between workers.
func TestColumnsReportsDisagree(t *testing.T) {
	c := &ColCoordinator{model: model{n: 4, lambda: 0.1}}
	r := ColSummary{Loss: 2.5, Correct: 3, HPos: 1, HNeg: 1, QPos: 0.5, QNeg: 0.5}
	if _, err := c.Objective([]ColSummary{r, r}); err != nil {
		t.Fatalf("equal reports: %v", err)
	}
	other := r
	other.Loss = math.Nextafter(r.Loss, 3)
	if _, err := c.Objective([]ColSummary{r, other}); !errors.Is(err, errData) {
		t.Errorf("reports one ulp apart: %v, want errData", err)
	}
}
