package lda

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/strads-go/strads/coordinator"
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
