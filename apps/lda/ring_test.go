package lda

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// TestRingStar checks that the rotation's word blocks give the same model
// files, bit for bit, whether they travel from worker to worker (the
// ring) or through the coordinator (the star): with learned priors, the
// held-out perplexity at reports, and on 2 and 3 workers.
func TestRingStar(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 200, Vocab: 150, Topics: 4, DocLen: 40, TestDocs: 30, Alpha: 0.1, Beta: 0.01, Seed: 5})
	for _, workers := range []int{2, 3} {
		var files [2][]byte
		for i, star := range []bool{false, true} {
			dir := t.TempDir()
			cfg := f.config(workers, 8)
			cfg.Star, cfg.TestDocword = star, f.test
			cfg.OptimizeEvery, cfg.OptimizeBurnIn = 2, 2
			cfg.WordTopicOut, cfg.DocTopicOut, cfg.ModelOut = filepath.Join(dir, "wt.csv"), filepath.Join(dir, "dt.csv"), filepath.Join(dir, "model.json")
			out := filepath.Join(dir, "topics.txt")
			runJobOpts(t, cfg, Program(cfg), coordinator.Options{Out: out})
			for _, p := range []string{out, cfg.WordTopicOut, cfg.DocTopicOut, cfg.ModelOut} {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				files[i] = append(append(files[i], filepath.Base(p)...), b...)
			}
		}
		if !bytes.Equal(files[0], files[1]) {
			t.Errorf("%d workers: the ring's model files differ from the star's", workers)
		}
	}
}

// mute is a rotation worker that passes no block on.
type mute struct{ *Worker }

// Pass implements schmp.Passer: the coordinator's share only.
func (m mute) Pass(round uint64, r Partial) (coord, part Partial, to int, ok bool) {
	coord, _, _, _ = m.Worker.Pass(round, r)
	return coord, Partial{}, 0, false
}

// TestRingMissingBlock checks that a worker whose block never comes fails
// the job within the timeout, naming the worker that did not send it.
func TestRingMissingBlock(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 100, Vocab: 80, Topics: 3, DocLen: 30, Alpha: 0.1, Beta: 0.01, Seed: 6})
	cfg := f.config(2, 4)
	prog := Program(cfg)
	newWorker := prog.NewWorker
	prog.NewWorker = func(ctx context.Context, shard, shards int) (schmp.Worker[scheduler.Turn, Partial, Update, Summary], error) {
		w, err := newWorker(ctx, shard, shards)
		if err == nil && shard == 0 {
			return mute{w.(*Worker)}, nil
		}
		return w, err
	}
	opts := coordinator.Options{Workers: cfg.Workers, Timeout: 2 * time.Second}
	opts.MaxRounds, opts.ReportEvery = cfg.Rounds()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := job.Run(ctx, prog, job.Options{Job: "ldaring", Coordinator: opts, Timeout: 2 * time.Second})
	switch {
	case err == nil:
		t.Fatal("the job ran without worker 0's blocks")
	case !strings.Contains(err.Error(), "from worker shard 0"):
		t.Errorf("job: %v, want it to name worker shard 0", err)
	}
	t.Logf("job: %v", err)
}
