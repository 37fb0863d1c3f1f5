package lda

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
)

func atoi(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOutputs runs a job to its files and checks them: the top words, the
// word-topic counts (which count every token once), the document-topic
// proportions (a distribution per document), the held-out perplexity
// (better than the unigram model's); and that a second run writes the
// same files (a job is deterministic).
func TestOutputs(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 300, Vocab: 200, Topics: 5, DocLen: 50, TestDocs: 60, Alpha: 0.1, Beta: 0.01, Seed: 4})
	var first map[string][]byte
	for run := range 2 {
		dir := t.TempDir()
		cfg := f.config(2, 20)
		cfg.TopWords, cfg.TestDocword = 7, f.test
		cfg.WordTopicOut, cfg.DocTopicOut = filepath.Join(dir, "wt.csv"), filepath.Join(dir, "dt.csv")
		out := filepath.Join(dir, "topics.txt")
		_, m := runJobOpts(t, cfg, Program(cfg), coordinator.Options{Out: out})

		files := map[string][]byte{}
		for _, p := range []string{out, cfg.WordTopicOut, cfg.DocTopicOut} {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			files[filepath.Base(p)] = b
		}
		if run == 1 {
			for name, b := range files {
				if string(b) != string(first[name]) {
					t.Errorf("%s differs between two runs of the same job", name)
				}
			}
			continue
		}
		first = files

		lines := strings.Split(strings.TrimSpace(string(files["topics.txt"])), "\n")
		var topics int
		for _, l := range lines {
			if strings.HasPrefix(l, "topic ") {
				topics++
				if n := strings.Count(l, " w"); n != 7 {
					t.Errorf("%q: %d words, want 7", l, n)
				}
			}
		}
		if topics != 5 {
			t.Errorf("%d topic lines, want 5:\n%s", topics, files["topics.txt"])
		}

		var tokens int64
		_, wordTopic := testhelper.ReadCSV(t, cfg.WordTopicOut)
		for _, r := range wordTopic {
			if r[1] != "w"+r[0] {
				t.Errorf("word %s is named %s", r[0], r[1])
			}
			tokens += int64(atoi(t, r[3]))
		}
		if tokens != f.model.Tokens {
			t.Errorf("the word-topic counts count %d tokens, want %d", tokens, f.model.Tokens)
		}

		theta := map[int]float64{}
		listed := map[int]int{}
		length := map[int]int{}
		_, docTopic := testhelper.ReadCSV(t, cfg.DocTopicOut)
		for _, r := range docTopic {
			d := atoi(t, r[0])
			v, _ := strconv.ParseFloat(r[3], 64)
			theta[d] += v
			listed[d]++
			length[d] += atoi(t, r[2])
		}
		if len(theta) != m.docs {
			t.Errorf("%d documents in the document-topic file, want %d", len(theta), m.docs)
		}
		for d, s := range theta {
			s += float64(5-listed[d]) * 0.1 / (float64(length[d]) + 5*0.1)
			if math.Abs(s-1) > 1e-4 {
				t.Errorf("document %d: proportions sum to %v", d, s)
			}
		}

		perp, n, ok, err := m.HeldOut()
		if err != nil || !ok || n == 0 {
			t.Fatalf("held-out: %v, %v, %d tokens", err, ok, n)
		}
		uni := unigramPerplexity(t, f, m.w)
		t.Logf("held-out perplexity %.1f on %d tokens; unigram model %.1f", perp, n, uni)
		if !(perp < 0.8*uni) {
			t.Errorf("held-out perplexity %.1f not well below the unigram model's %.1f", perp, uni)
		}
		if !strings.Contains(string(files["topics.txt"]), "held-out perplexity") {
			t.Errorf("the topics file does not give the held-out perplexity")
		}
	}
}

// unigramPerplexity is the perplexity of the held-out half of the test
// documents under the training corpus's smoothed word frequencies.
func unigramPerplexity(t *testing.T, f *corpusFiles, words int) float64 {
	t.Helper()
	freq := make([]float64, words)
	var n float64
	for _, row := range f.model.Counts {
		for w, c := range row {
			freq[w] += float64(c)
			n += float64(c)
		}
	}
	docs, err := readTest(f.test, words)
	if err != nil {
		t.Fatal(err)
	}
	var logp float64
	var m int
	for _, d := range docs {
		if len(d) < 2 {
			continue
		}
		for i := 1; i < len(d); i += 2 {
			logp += math.Log((freq[d[i]] + 0.01) / (n + float64(words)*0.01))
			m++
		}
	}
	return math.Exp(-logp / float64(m))
}

// TestEarlyStop stops jobs by a time limit at their first pull, which the
// workers cannot foresee: the stop lands at the end of the first iteration
// (every worker has sampled every word block once), and the
// document-topic proportions, which the workers send once in their final
// reports, are written all the same, of every document.
func TestEarlyStop(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 60, Vocab: 50, Topics: 3, DocLen: 20, Alpha: 0.1, Beta: 0.05, Seed: 6})
	for _, workers := range []int{1, 3} {
		dir := t.TempDir()
		cfg := f.config(workers, 50)
		cfg.DocTopicOut = filepath.Join(dir, "dt.csv")
		maxRounds, every := cfg.Rounds()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := job.Run(ctx, Program(cfg), job.Options{Job: "lda", Timeout: 30 * time.Second,
			Coordinator: coordinator.Options{Workers: workers, MaxRounds: maxRounds, ReportEvery: every, TimeLimit: time.Nanosecond, Out: filepath.Join(dir, "topics.txt")}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason != "time-limit" || res.Rounds != uint64(workers) {
			t.Errorf("%d workers: stopped by %s after %d rounds, want a time limit after %d, the end of the first iteration", workers, res.Reason, res.Rounds, workers)
		}
		docs := map[string]bool{}
		_, docTopic := testhelper.ReadCSV(t, cfg.DocTopicOut)
		for _, row := range docTopic {
			docs[row[0]] = true
		}
		if len(docs) != 60 {
			t.Errorf("%d workers: the document-topic file has %d documents, want 60", workers, len(docs))
		}
	}
}

// TestUnscheduled runs the data-parallel baseline on the runtime: one
// round per iteration, the log-likelihood rises and plateaus, at the
// rotation's (best of two seeds each, see TestRecovery on local optima).
func TestUnscheduled(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 400, Vocab: 300, Topics: 5, DocLen: 100, Alpha: 0.1, Beta: 0.005, Seed: 3})
	best := map[bool]*coordinator.Result{}
	for _, unscheduled := range []bool{false, true} {
		for seed := range uint64(2) {
			cfg := f.config(2, 60)
			cfg.Seed, cfg.ReportEvery, cfg.Unscheduled = seed+1, 3, unscheduled
			var res *coordinator.Result
			if unscheduled {
				res, _ = runJob(t, cfg, Unscheduled(cfg))
				if res.Rounds != 60 {
					t.Errorf("%d rounds, want 60 (one per iteration)", res.Rounds)
				}
			} else {
				res, _ = runJob(t, cfg, Program(cfg))
			}
			if b := best[unscheduled]; b == nil || res.Final.Objective > b.Final.Objective {
				best[unscheduled] = res
			}
		}
	}
	checkPlateau(t, best[true].Trace)
	rot, uns := best[false].Final.Objective, best[true].Final.Objective
	t.Logf("log-likelihood per token after 60 iterations: rotation %.4f, unscheduled %.4f", rot, uns)
	if d := math.Abs(uns - rot); d > 0.01 {
		t.Errorf("unscheduled %.4f, rotation %.4f", uns, rot)
	}
}

// TestRuntimeMetrics runs a job with the runtime's progress line and
// metrics CSV and checks the app's columns there: the iteration, the
// priors (learned after iterations 4 and 6 of 8: the rows from iteration 4
// on, whose reports the workers computed with them, show α's sum moved
// from K·α = 0.5), and
// the held-out perplexity at every other report, which falls from the
// random start and whose last value is the final one (HeldOut): the same
// model and the same evaluation. The progress line shows "iter n/8".
func TestRuntimeMetrics(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 300, Vocab: 200, Topics: 5, DocLen: 50, TestDocs: 60, Alpha: 0.1, Beta: 0.01, Seed: 4})
	dir := t.TempDir()
	cfg := f.config(2, 8)
	cfg.TestDocword, cfg.TestEvery, cfg.ReportEvery = f.test, 2, 1
	cfg.OptimizeEvery, cfg.OptimizeBurnIn = 2, 4
	var progress strings.Builder
	metrics := filepath.Join(dir, "metrics.csv")
	cfg.ModelOut = filepath.Join(dir, "model.json")
	res, m := runJobOpts(t, cfg, Program(cfg), coordinator.Options{Metrics: metrics, Progress: &progress, ProgressEvery: time.Nanosecond,
		Out: filepath.Join(dir, "topics.txt")})
	if !strings.Contains(progress.String(), "iter 8/8") || !strings.Contains(progress.String(), "test_perplexity") {
		t.Errorf("the progress line lacks the iteration or the held-out perplexity:\n%s", progress.String())
	}
	data, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"iter", "tokens_per_s", "sample_tokens_per_s_core", "alpha_sum", "alpha_min", "alpha_max", "beta", "test_perplexity"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("no column %s in %q", name, rows[0])
		}
	}
	if len(rows) != 1+9 { // iterations 0 … 8
		t.Fatalf("%d rows, want 10:\n%s", len(rows), data)
	}
	val := func(r int, name string) float64 {
		s := rows[r][col[name]]
		if s == "" {
			return math.NaN()
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("row %d, %s: %v", r, name, err)
		}
		return v
	}
	var perps []float64
	for r := 1; r < len(rows); r++ {
		it, p := val(r, "iter"), val(r, "test_perplexity")
		if math.IsNaN(p) != (int(it)%2 == 1) {
			t.Errorf("iteration %g: test_perplexity %q, want one at even iterations only", it, rows[r][col["test_perplexity"]])
		}
		if !math.IsNaN(p) {
			perps = append(perps, p)
		}
		sum := val(r, "alpha_sum")
		if learned := it >= 4; learned != (math.Abs(sum-0.5) > 1e-12) {
			t.Errorf("iteration %g: Σα = %v", it, sum)
		}
		if lo, hi := val(r, "alpha_min"), val(r, "alpha_max"); !(lo <= hi && hi < sum) {
			t.Errorf("iteration %g: α from %v to %v, sum %v", it, lo, hi, sum)
		}
	}
	final, _, _, err := m.HeldOut()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("held-out perplexity at iterations 0, 2, …: %.1f; final %.1f; %s", perps, final, res.Reason)
	if last := perps[len(perps)-1]; last != final {
		t.Errorf("the last report's held-out perplexity %v is not the final one %v", last, final)
	}
	// The model file, loaded, gives the written row's perplexity: the
	// files are the model reported.
	written, err := LoadModel(cfg.ModelOut)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := readTest(f.test, written.Words)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, _, err := written.Perplexity(docs, InferOptions{Seed: cfg.Seed})
	if err != nil {
		t.Fatal(err)
	}
	if w := testhelper.WrittenRow(t, metrics); w["iter"] != 8 || w["test_perplexity"] != final || fromFile != final {
		t.Errorf("the metrics' written row is iteration %v, perplexity %v; the model: 8, %v; its file: %v", w["iter"], w["test_perplexity"], final, fromFile)
	}
	if !(final < 0.7*perps[0]) {
		t.Errorf("held-out perplexity %.1f at the start, %.1f at the end: no fall", perps[0], final)
	}
	alpha, beta := m.Priors()
	sum, lo, hi := alphaStats(alpha)
	last := len(rows) - 1
	if val(last, "alpha_sum") != sum || val(last, "alpha_min") != lo || val(last, "alpha_max") != hi || val(last, "beta") != beta {
		t.Errorf("the last row's priors %v are not the model's (Σα %v, %v–%v, β %v)", rows[last], sum, lo, hi, beta)
	}
}
