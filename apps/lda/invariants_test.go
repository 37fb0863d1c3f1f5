package lda

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/local"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// run runs prog's job on workers workers through the local driver (the
// runtime's rules in one goroutine, every message through msgpack) for
// rounds rounds, reporting every `every`, and calls check, if set, whenever
// the workers have applied a round's update (at depth 1, after every
// round; 0: Start's). It returns the job and the objective of every report.
func run[U any](t *testing.T, prog schmp.Program[scheduler.Turn, Partial, U, Summary], workers, rounds, every int,
	check func(j *local.Job[scheduler.Turn, Partial, U, Summary], round int)) (*local.Job[scheduler.Turn, Partial, U, Summary], []float64) {
	t.Helper()
	var j *local.Job[scheduler.Turn, Partial, U, Summary]
	opts := local.Options{Config: pipeline.Config{Workers: workers, Depth: 1, MaxRounds: uint64(rounds), ReportEvery: every}}
	if check != nil {
		opts.AfterApply = func(round uint64) error {
			check(j, int(round))
			return nil
		}
		// The invariants' jobs check the workers' contract (schmp.Worker)
		// too; the sampling times are measures.
		opts.CheckContract, opts.Ignore = true, []string{"sn", "sample_nanos"}
	}
	j, err := local.New(context.Background(), prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Rounds != uint64(rounds) {
		t.Fatalf("%d rounds, want %d", st.Rounds, rounds)
	}
	var reports []float64
	for _, s := range st.Trace {
		reports = append(reports, s.Objective)
	}
	return j, reports
}

// baseOf returns the shared part of a worker.
func baseOf(w any) *base {
	switch w := w.(type) {
	case *Worker:
		return w.base
	case *UnscheduledWorker:
		return w.base
	}
	panic(fmt.Sprintf("not an lda worker: %T", w))
}

func modelOf(c any) *model {
	switch c := c.(type) {
	case *Coordinator:
		return c.model
	case *UnscheduledCoordinator:
		return c.model
	}
	panic(fmt.Sprintf("not an lda coordinator: %T", c))
}

// recount counts, from the workers' topic assignments alone, the
// word-topic, document-topic and topic counts, and returns the collapsed
// log-likelihood per token computed from them with math.Lgamma.
func recount(bs []*base, k, words int, pr Priors) (nwk map[[2]int32]int32, ndkSum, nk []int64, llPerToken float64) {
	alpha, beta := pr.Alpha, pr.Beta
	asum, _, _ := alphaStats(alpha)
	nwk = map[[2]int32]int32{}
	ndkSum, nk = make([]int64, k), make([]int64, k)
	var ll float64
	var n int64
	for _, b := range bs {
		sh := b.sh
		var ws []int32
		for d := range sh.docs() {
			ndk := make([]int64, k)
			ws = sh.docWords(d, ws[:0])
			for i := sh.start[d]; i < sh.start[d+1]; i++ {
				nwk[[2]int32{ws[i-sh.start[d]], sh.z[i]}]++
				ndk[sh.z[i]]++
				nk[sh.z[i]]++
				n++
			}
			nd := float64(sh.start[d+1] - sh.start[d])
			ll += lgamma(asum) - lgamma(nd+asum)
			for t, c := range ndk {
				ndkSum[t] += c
				ll += lgamma(float64(c)+alpha[t]) - lgamma(alpha[t])
			}
		}
	}
	for _, c := range nwk {
		ll += lgamma(float64(c)+beta) - lgamma(beta)
	}
	for _, c := range nk {
		ll += lgamma(float64(words)*beta) - lgamma(float64(c)+float64(words)*beta)
	}
	return nwk, ndkSum, nk, ll / float64(n)
}

// checkCounts checks the count invariants of a job after a round,
// against counts recomputed from the topic assignments.
func checkCounts(t *testing.T, round int, ws []*base, m *model) float64 {
	t.Helper()
	nwk, ndk, nk, ll := recount(ws, m.k, m.w, m.priors)
	var n int64
	for _, c := range nk {
		n += c
	}
	if n != m.tokens {
		t.Fatalf("round %d: %d tokens assigned, want %d", round, n, m.tokens)
	}
	table := map[[2]int32]int32{}
	wordSum := make([]int64, m.k)
	m.wordCount(func(w, tp, c int32) {
		if c <= 0 {
			t.Fatalf("round %d: count %d of word %d, topic %d", round, c, w, tp)
		}
		key := [2]int32{w, tp}
		if _, dup := table[key]; dup {
			t.Fatalf("round %d: word %d topic %d twice in the table", round, w, tp)
		}
		table[key] = c
		wordSum[tp] += int64(c)
	})
	if len(table) != len(nwk) {
		t.Fatalf("round %d: the table has %d non-zero counts, the assignments %d", round, len(table), len(nwk))
	}
	for key, c := range nwk {
		if table[key] != c {
			t.Fatalf("round %d: n_wk of word %d topic %d is %d, the assignments say %d", round, key[0], key[1], table[key], c)
		}
	}
	for tp := range m.k {
		if int64(m.nk[tp]) != nk[tp] || wordSum[tp] != nk[tp] || ndk[tp] != nk[tp] {
			t.Fatalf("round %d: topic %d: coordinator n_k %d, Σ_w n_wk %d, Σ_d n_dk %d, assignments %d",
				round, tp, m.nk[tp], wordSum[tp], ndk[tp], nk[tp])
		}
	}
	for p, w := range ws {
		for tp, c := range w.s.nk {
			if int64(c) != nk[tp] {
				t.Fatalf("round %d: worker %d has n_k[%d] = %d, want %d", round, p, tp, c, nk[tp])
			}
		}
		if dt := w.sh.docTopic(); dt.check(w.sh.docs(), m.k, false) != nil {
			t.Fatalf("round %d: worker %d: bad document-topic counts", round, p)
		}
	}
	return ll
}

// TestInvariants runs both programs on 1, 2 and 4 workers round by round
// and checks after every sub-round that the word-topic table, the topic
// totals and the documents' counts all agree with the topic assignments
// (Σ_w n_wk = Σ_d n_dk = n_k, Σ_k n_k = N, no count negative), and that
// the reported log-likelihood is the one recomputed from the assignments
// (with the priors as they stand). With learn set, the priors are learned
// after iterations 1, 2 and 3 of 4, so that the counts, the reports and the
// priors of the workers and the coordinator are checked across changes of
// the priors. Both samplers, exact (MHSteps 0) and Metropolis–Hastings.
func TestInvariants(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 150, Vocab: 300, Topics: 6, DocLen: 40, Alpha: 0.2, Beta: 0.05, Seed: 1})
	for _, mh := range []int{0, 2} {
		for _, learn := range []bool{false, true} {
			for _, unscheduled := range []bool{false, true} {
				for _, workers := range []int{1, 2, 4} {
					t.Run(fmt.Sprintf("mh=%d/learn=%v/unscheduled=%v/workers=%d", mh, learn, unscheduled, workers), func(t *testing.T) {
						testInvariantsOf(t, f, mh, learn, unscheduled, workers)
					})
				}
			}
		}
	}
}

func testInvariantsOf(t *testing.T, f *corpusFiles, mh int, learn, unscheduled bool, workers int) {
	cfg := f.config(workers, 3)
	cfg.MHSteps = mh
	if learn {
		cfg.Iters, cfg.OptimizeEvery = 4, 1
	}
	cfg.Unscheduled = unscheduled
	cfg.Check = true
	rounds, every := cfg.Rounds()
	var m *model
	if unscheduled {
		m = testInvariants(t, Unscheduled(cfg), workers, int(rounds), every)
	} else {
		m = testInvariants(t, Program(cfg), workers, int(rounds), every)
	}
	if want := map[bool]int{false: 0, true: 3}[learn]; m.learned != want {
		t.Errorf("priors learned %d times, want %d", m.learned, want)
	}
}

func testInvariants[U any](t *testing.T, prog schmp.Program[scheduler.Turn, Partial, U, Summary], workers, rounds, every int) *model {
	var lls []float64
	j, reports := run(t, prog, workers, rounds, every, func(j *local.Job[scheduler.Turn, Partial, U, Summary], round int) {
		var ws []*base
		for _, w := range j.Workers {
			ws = append(ws, baseOf(w))
		}
		ll := checkCounts(t, round, ws, modelOf(j.Coordinator))
		if round%every == 0 {
			lls = append(lls, ll)
		}
	})
	if len(lls) != len(reports) {
		t.Fatalf("%d reports, %d recounts", len(reports), len(lls))
	}
	for i, ll := range lls {
		if got := reports[i]; math.Abs(got-ll) > 1e-9*math.Abs(ll) {
			t.Errorf("report %d: log-likelihood per token %.12g, recomputed %.12g", i, got, ll)
		}
	}
	if !(reports[len(reports)-1] > reports[0]) {
		t.Errorf("log-likelihood did not rise: %v", reports)
	}
	// The last report carries every document's topics.
	m := modelOf(j.Coordinator)
	var docs int
	for _, s := range m.docTopic {
		docs += s.Rows()
	}
	if docs != m.docs {
		t.Errorf("the last reports carry %d documents, want %d", docs, m.docs)
	}
	return m
}
