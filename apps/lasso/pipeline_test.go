package lasso

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// sequential runs the Lasso program's functions in one goroutine, without
// the runtime: the scheduler parts plan in turn, each from the feedback of
// its own rounds, and every round is pulled and applied before the next is
// planned. It returns the coordinator after rounds rounds.
func sequential(t *testing.T, cfg Config, workers, parts int, rounds uint64) *Coordinator {
	t.Helper()
	scheds := make([]*scheduler.ColumnScheduler, parts)
	for p := range scheds {
		s, err := NewScheduler(cfg, p, parts)
		if err != nil {
			t.Fatal(err)
		}
		scheds[p] = s
	}
	ws := make([]*Worker, workers)
	sums := make([]Summary, workers)
	for k := range ws {
		w, err := NewWorker(cfg, k, workers)
		if err != nil {
			t.Fatal(err)
		}
		ws[k] = w
		if sums[k], err = w.Describe(); err != nil {
			t.Fatal(err)
		}
	}
	c := NewCoordinator(cfg)
	u, err := c.Start(sums)
	if err != nil {
		t.Fatal(err)
	}
	fb := make([][]schmp.Feedback, parts)
	partials := make([]Partial, workers)
	for r := uint64(1); r <= rounds; r++ {
		for _, w := range ws {
			if err := w.Apply(u); err != nil {
				t.Fatal(err)
			}
		}
		p := int((r - 1) % uint64(parts))
		plan, _, err := scheds[p].Schedule(r, fb[p])
		if err != nil {
			t.Fatal(err)
		}
		fb[p] = nil
		for k, w := range ws {
			if partials[k], err = w.Push(context.Background(), r, plan); err != nil {
				t.Fatal(err)
			}
		}
		var f schmp.Feedback
		if u, f, err = c.Pull(r, plan, partials); err != nil {
			t.Fatal(err)
		}
		f.Round = r
		fb[p] = append(fb[p], f)
	}
	return c
}

// TestDepthOneIsSequential checks DESIGN §3: with one round in flight the
// runtime computes exactly, bit for bit, what the program's functions
// compute run one after the other with the same schedule and seed.
func TestDepthOneIsSequential(t *testing.T) {
	pr := newProblem(t, 60, 90, 3)
	const rounds = 150
	for _, tc := range []struct {
		policy              scheduler.Policy
		workers, schedulers int
	}{
		{scheduler.Priority, 2, 1},
		{scheduler.Cyclic, 3, 1},
		{scheduler.Random, 2, 2},
		{scheduler.Priority, 2, 3},
	} {
		t.Run(fmt.Sprintf("%v/workers=%d/schedulers=%d", tc.policy, tc.workers, tc.schedulers), func(t *testing.T) {
			cfg := Config{Data: pr.path, LambdaRatio: 0.05, Intercept: true, Schedule: schedule(tc.policy, tc.workers)}
			res, out := runJob(t, cfg, tc.workers, coordinator.Options{Schedulers: tc.schedulers, Depth: 1, MaxRounds: rounds, ReportEvery: 7})
			if res.Rounds != rounds {
				t.Fatalf("%d rounds, want %d", res.Rounds, rounds)
			}
			got, b0 := readModel(t, out, pr.p())
			c := sequential(t, cfg, tc.workers, tc.schedulers, rounds)
			if want := c.Beta(); !slices.Equal(got, want) {
				for j := range want {
					if got[j] != want[j] {
						t.Fatalf("β_%d = %.17g, sequentially %.17g", j, got[j], want[j])
					}
				}
			}
			if want := c.Intercept(); b0 != want {
				t.Errorf("intercept %.17g, sequentially %.17g", b0, want)
			}
		})
	}
}

// recorder wraps a Lasso scheduler part and records every plan it makes.
type recorder struct {
	s     *scheduler.ColumnScheduler
	mu    *sync.Mutex
	plans map[uint64][]int32
}

func (r recorder) Schedule(round uint64, fb []schmp.Feedback) (Plan, schmp.PlanInfo, error) {
	p, info, err := r.s.Schedule(round, fb)
	r.mu.Lock()
	r.plans[round] = slices.Clone(p.Vars)
	r.mu.Unlock()
	return p, info, err
}

// TestPipelined runs with several rounds in flight and checks that no
// variable was ever in two rounds in flight, that the pipeline was full,
// and that the solution still meets the optimality conditions.
func TestPipelined(t *testing.T) {
	pr := newProblem(t, 300, 200, 5)
	lambda := 0.05 * pr.lambdaMax(false)
	for _, tc := range []struct {
		depth, schedulers int
		policy            scheduler.Policy
	}{
		{2, 1, scheduler.Priority},
		{4, 1, scheduler.Priority},
		{4, 2, scheduler.Cyclic},
		{8, 2, scheduler.Random},
	} {
		t.Run(fmt.Sprintf("depth=%d/schedulers=%d/%v", tc.depth, tc.schedulers, tc.policy), func(t *testing.T) {
			cfg := Config{Data: pr.path, LambdaRatio: 0.05, Schedule: schedule(tc.policy, 2)}
			var mu sync.Mutex
			plans := map[uint64][]int32{}
			prog := Program(cfg)
			prog.NewScheduler = func(_ context.Context, part, parts int) (schmp.Scheduler[Plan], error) {
				s, err := NewScheduler(cfg, part, parts)
				return recorder{s: s, mu: &mu, plans: plans}, err
			}
			res, out := runProgram(t, prog, 2, coordinator.Options{Schedulers: tc.schedulers, Depth: tc.depth, Tol: 1e-11, MaxRounds: 200000})
			if res.MaxInFlight != tc.depth {
				t.Errorf("at most %d rounds in flight, want %d", res.MaxInFlight, tc.depth)
			}
			// Round t is sent once round t−depth is pulled, so it may be in
			// flight with rounds t−depth+1 … t−1: none may share a variable.
			mu.Lock()
			defer mu.Unlock()
			for round := uint64(1); round <= res.Rounds; round++ {
				for prev := round - min(round-1, uint64(tc.depth-1)); prev < round; prev++ {
					for _, j := range plans[round] {
						if slices.Contains(plans[prev], j) {
							t.Fatalf("variable %d is in round %d and in round %d, which may be in flight together", j, round, prev)
						}
					}
				}
			}
			t.Logf("%d rounds, %d updates, %s", res.Rounds, res.Updates, res.Reason)
			beta, _ := readModel(t, out, pr.p())
			pr.checkKKT(t, beta, lambda, false, 1e-6)
		})
	}
}
