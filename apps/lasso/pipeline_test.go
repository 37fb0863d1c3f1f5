package lasso

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/local"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
)

// sequential runs the Lasso program's functions in one goroutine, without
// the runtime's network, through the local driver at depth 1: the scheduler
// parts plan in turn, each from the feedback of its own rounds, and every
// round is pulled and applied before the next is planned. It returns the
// coordinator after rounds rounds.
func sequential(t *testing.T, cfg Config, workers, parts int, rounds uint64) *Coordinator {
	t.Helper()
	j, st, err := local.Run(context.Background(), Program(cfg), local.Options{Config: pipeline.Config{
		Workers: workers, Parts: parts, Depth: 1, MaxRounds: rounds, ReportEvery: 7,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Rounds != rounds || st.MaxInFlight != 1 {
		t.Fatalf("sequentially: %d rounds, at most %d in flight; want %d, 1", st.Rounds, st.MaxInFlight, rounds)
	}
	return j.Coordinator.(*Coordinator)
}

// TestDepthOneIsSequential checks DESIGN "Pipelining": with one round in flight the
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
	s     *columnar.Scheduler
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

// TestDepthFourDeterministic checks that a job stopped by --tol at depth 4
// stops at the same round and writes the same model file in repeated runs
// on the runtime, as the local driver does: the stop is decided at a report
// and lands depth−1 rounds later, whatever the timing of the messages.
func TestDepthFourDeterministic(t *testing.T) {
	pr := newProblem(t, 300, 200, 5)
	cfg := Config{Data: pr.path, LambdaRatio: 0.05, Schedule: schedule(scheduler.Priority, 2)}
	opts := coordinator.Options{Schedulers: 2, Depth: 4, Tol: 1e-6, MaxRounds: 200000, ReportEvery: 5}
	// Locally, with the workers' contract (schmp.Worker) checked too.
	j, st, err := local.Run(context.Background(), Program(cfg), local.Options{Config: pipeline.Config{
		Workers: 2, Parts: opts.Schedulers, Depth: opts.Depth, Tol: opts.Tol, MaxRounds: opts.MaxRounds, ReportEvery: opts.ReportEvery,
	}, CheckContract: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Reason != schmp.StopConverged || st.Rounds != st.Decided+3 {
		t.Fatalf("locally: stopped (%s) after %d rounds, decided at %d; want converged 3 rounds after the decision", st.Reason, st.Rounds, st.Decided)
	}
	var want bytes.Buffer
	if err := j.Coordinator.WriteModel(&want); err != nil {
		t.Fatal(err)
	}
	for run := range 3 {
		res, out := runJob(t, cfg, 2, opts)
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rounds != st.Rounds || res.Reason != st.Reason || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("run %d: %d rounds (%s), model equal: %v; locally %d rounds (%s)",
				run, res.Rounds, res.Reason, bytes.Equal(got, want.Bytes()), st.Rounds, st.Reason)
		}
		// The final report shows the state written.
		if final := res.Trace[len(res.Trace)-1]; final.Round != res.Rounds || final.Objective != st.Final.Objective {
			t.Errorf("run %d: final report %+v, want the state after round %d, objective %v", run, final, res.Rounds, st.Final.Objective)
		}
	}
	t.Logf("converged at the report of round %d, stopped after round %d", st.Decided, st.Rounds)
}
