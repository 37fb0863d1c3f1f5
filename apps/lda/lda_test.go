package lda

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// runJob runs prog's job on the runtime (an embedded NATS server) and
// returns its result and its coordinator's model.
func runJob[U any](t *testing.T, cfg Config, prog schmp.Program[scheduler.Turn, Partial, U, Summary]) (*coordinator.Result, *model) {
	t.Helper()
	return runJobOpts(t, cfg, prog, coordinator.Options{})
}

// runJobOpts is runJob with coordinator options (their Workers, MaxRounds,
// ReportEvery and Timeout are set from cfg).
func runJobOpts[U any](t *testing.T, cfg Config, prog schmp.Program[scheduler.Turn, Partial, U, Summary], opts coordinator.Options) (*coordinator.Result, *model) {
	t.Helper()
	var m *model
	newCoord := prog.NewCoordinator
	prog.NewCoordinator = func(ctx context.Context) (schmp.Coordinator[scheduler.Turn, Partial, U, Summary], error) {
		c, err := newCoord(ctx)
		if err == nil {
			m = modelOf(c)
		}
		return c, err
	}
	opts.Workers = cfg.Workers
	opts.MaxRounds, opts.ReportEvery = cfg.Rounds()
	opts.Timeout = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := job.Run(ctx, prog, job.Options{Job: "lda", Coordinator: opts, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res, m
}

// TestRecovery fits a corpus drawn from a known model of 5 topics on 1, 2
// and 4 workers and checks that the topics found are the true ones, and
// that the log-likelihood rises and plateaus.
//
// Each true topic φ_k is matched to the estimated topic nearest in total
// variation (TV); the matches must be distinct, and their mean TV below
// 0.03. The threshold: the counts of the true assignments, smoothed, are
// themselves at mean TV `floor` ≈ 0.01 from the true topics (the sampling
// noise of a corpus this size), while unrelated topics are at TV ≈ 0.95; a
// merged pair of topics raises the mean by 0.2.
//
// Collapsed Gibbs sampling has local optima: from a random start, a run
// may merge two topics and split a third, with a clearly lower
// log-likelihood, for hundreds of iterations. Plain collapsed Gibbs does
// too (on an 8-topic corpus, 5 runs of 12 after 50 iterations); on this
// corpus 2 runs of 12 on one worker and none of 12 on four were caught
// after 80 iterations. So, as in practice, every worker count runs three
// seeds and the run with the highest training log-likelihood is checked.
func TestRecovery(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 400, Vocab: 300, Topics: 5, DocLen: 100, Alpha: 0.1, Beta: 0.005, Seed: 3})
	_, fd := bestMatch(f.model.Phi, smoothed(f.model.Counts, 0.01))
	t.Logf("noise floor: mean TV of the true assignments' counts %.3f", mean(fd))
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			var best *coordinator.Result
			var bestModel *model
			for seed := range uint64(3) {
				cfg := f.config(workers, 80)
				cfg.Seed, cfg.ReportEvery = seed+1, 4
				res, m := runJob(t, cfg, Program(cfg))
				t.Logf("seed %d: log-likelihood per token %.4f", seed+1, res.Final.Objective)
				if best == nil || res.Final.Objective > best.Final.Objective {
					best, bestModel = res, m
				}
			}
			match, dist := bestMatch(f.model.Phi, bestModel.Phi())
			seen := map[int]bool{}
			for k, j := range match {
				if seen[j] {
					t.Errorf("true topic %d matches estimated topic %d, which another true topic matches too", k, j)
				}
				seen[j] = true
			}
			mtv := mean(dist)
			t.Logf("best run: mean best-match TV %.3f (each %.3f)", mtv, dist)
			if mtv > 0.03 {
				t.Errorf("mean best-match TV %.3f > 0.03", mtv)
			}
			checkPlateau(t, best.Trace)
		})
	}
}

// checkPlateau checks that the log-likelihood rose, and that the last
// fifth of the reports gained less than 2% of the whole rise.
func checkPlateau(t *testing.T, trace []schmp.Sample) {
	t.Helper()
	first, last := trace[0].Objective, trace[len(trace)-1].Objective
	late := trace[len(trace)-1-len(trace)/5].Objective
	if !(last > first) {
		t.Fatalf("the log-likelihood did not rise: %.4f → %.4f", first, last)
	}
	if gain := (last - late) / (last - first); gain > 0.02 {
		t.Errorf("the last fifth of the run gained %.1f%% of the rise: no plateau (%.4f → %.4f → %.4f)", 100*gain, first, late, last)
	}
}

// TestMHStepsRun checks the sampler that AutoMH picks by K, and that
// Validate takes AutoMH and the exact sampler but nothing below.
func TestMHStepsRun(t *testing.T) {
	for _, tc := range []struct{ mh, k, want int }{
		{AutoMH, 20, 0}, {AutoMH, ExactMaxTopics, 0}, {AutoMH, ExactMaxTopics + 1, 2},
		{0, 1000, 0}, {3, 20, 3},
	} {
		c := Config{MHSteps: tc.mh, Topics: tc.k}
		if got := c.MHStepsRun(); got != tc.want {
			t.Errorf("MHSteps %d, K = %d: runs %d, want %d", tc.mh, tc.k, got, tc.want)
		}
	}
	base := Config{Docword: "d", Topics: 5, Alpha: 0.1, Beta: 0.01, Iters: 1, ReportEvery: 1, Workers: 1}
	for mh, ok := range map[int]bool{AutoMH - 1: false, AutoMH: true, 0: true, maxMH: true, maxMH + 1: false} {
		c := base
		c.MHSteps = mh
		if err := c.Validate(); (err == nil) != ok {
			t.Errorf("MHSteps %d: Validate says %v", mh, err)
		}
	}
}
