package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/apps/lda"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// The peers experiment: strads (fixed and learned priors) against
// scikit-learn's and gensim's online variational Bayes and SCVB0 on a real corpus
// split into training and test documents (bench/lda/scripts/corpus.py),
// every system's topics evaluated by the same held-out evaluator,
// lda.Model.Perplexity (document completion, 40 sweeps, seed 1).

// peerSystems are the systems the experiment knows.
var peerSystems = []string{"strads", "strads-learned", "sklearn", "gensim", "scvb0"}

// peerRun is one fit of one system.
type peerRun struct {
	system     string
	topics     int
	run        int
	fit        time.Duration // the fit alone (strads: the whole job, reading the corpus included)
	perplexity float64
	// common is the held-out perplexity with every system's φ folded in
	// under the same symmetric α (the options' alpha), not its own.
	common   float64
	tokens   int64 // held-out tokens
	alphaSum float64
	beta     float64 // strads only
	// curve is strads' held-out perplexity during the run (every
	// --peer-test-every iterations), at the time from the job's start less
	// the time spent evaluating before.
	curve []curvePoint
}

// curvePoint is a held-out perplexity during a run.
type curvePoint struct {
	t          time.Duration
	iter       float64
	perplexity float64
}

// timeTo returns the first time r's curve is at or below perplexity p,
// and false if it never is.
func (r *peerRun) timeTo(p float64) (time.Duration, bool) {
	for _, c := range r.curve {
		if c.perplexity <= p {
			return c.t, true
		}
	}
	return 0, false
}

// peerCorpus is the corpus of the experiment.
type peerCorpus struct {
	dir          string
	train, vocab string
	words        int
	tokens       int64
	docs         int
	test         [][]int32
}

func openPeerCorpus(dir string) (*peerCorpus, error) {
	c := &peerCorpus{dir: dir, train: filepath.Join(dir, "train.docword.txt"), vocab: filepath.Join(dir, "vocab.txt")}
	st, err := lda.Scan(lda.Config{Docword: c.train, Vocab: c.vocab})
	if err != nil {
		return nil, err
	}
	c.words, c.tokens, c.docs = st.Words, st.Tokens, st.NonEmpty
	if c.test, err = lda.ReadDocword(filepath.Join(dir, "test.docword.txt"), c.words); err != nil {
		return nil, err
	}
	return c, nil
}

// evaluate returns the held-out perplexity of m on the corpus's test
// documents: the one evaluator of every system.
func (c *peerCorpus) evaluate(m *lda.Model) (float64, int64, error) {
	return m.Perplexity(c.test, lda.InferOptions{Seed: 1})
}

// evaluateAt is evaluate with m's topics and a symmetric α of alpha per
// topic in place of m's own.
func (c *peerCorpus) evaluateAt(m *lda.Model, alpha float64) (float64, error) {
	at := *m
	at.Alpha = make([]float64, m.Topics)
	for t := range at.Alpha {
		at.Alpha[t] = alpha
	}
	p, _, err := c.evaluate(&at)
	return p, err
}

// runPeers runs every system of o.peers at every K of o.peerTopics,
// o.peerRuns times each (interleaved), and returns the runs.
func (o *options) runPeers(ctx context.Context) (*peerCorpus, []*peerRun, error) {
	c, err := openPeerCorpus(o.corpus)
	if err != nil {
		return nil, nil, err
	}
	var test int64
	for _, d := range c.test {
		test += int64(len(d))
	}
	fmt.Fprintf(os.Stderr, "corpus %s: %d training documents, %d tokens, W = %d; %d test documents, %d tokens\n",
		c.dir, c.docs, c.tokens, c.words, len(c.test), test)
	var runs []*peerRun
	for _, k := range o.peerTopics {
		for r := range o.peerRuns {
			for _, sys := range o.peers {
				pr := &peerRun{system: sys, topics: k, run: r + 1}
				var m *lda.Model
				switch sys {
				case "strads", "strads-learned":
					m, err = o.fitStrads(ctx, c, pr)
				case "scvb0":
					m, err = o.fitSCVB0(ctx, c, pr)
				default:
					m, err = o.fitPeer(ctx, c, pr)
				}
				if err != nil {
					return nil, nil, fmt.Errorf("%s, K = %d, run %d: %w", sys, k, r+1, err)
				}
				if pr.perplexity, pr.tokens, err = c.evaluate(m); err != nil {
					return nil, nil, fmt.Errorf("%s, K = %d, run %d: evaluate: %w", sys, k, r+1, err)
				}
				if pr.common, err = c.evaluateAt(m, o.alpha); err != nil {
					return nil, nil, fmt.Errorf("%s, K = %d, run %d: evaluate at α = %g: %w", sys, k, r+1, o.alpha, err)
				}
				pr.alphaSum = 0
				for _, a := range m.Alpha {
					pr.alphaSum += a
				}
				fmt.Fprintf(os.Stderr, "%-15s K = %-4d run %d: fit %.1fs, held-out perplexity %.1f (Σα %.3g), %.1f at α = %g\n",
					sys, k, r+1, pr.fit.Seconds(), pr.perplexity, pr.alphaSum, pr.common, o.alpha)
				runs = append(runs, pr)
			}
		}
	}
	return c, runs, nil
}

// fitStrads runs a strads LDA job on the training documents on
// o.peerWorkers workers and returns its model.
func (o *options) fitStrads(ctx context.Context, c *peerCorpus, pr *peerRun) (*lda.Model, error) {
	cfg := lda.Config{
		Docword: c.train, Vocab: c.vocab, Topics: pr.topics, Alpha: o.alpha, Beta: o.beta, Seed: uint64(pr.run),
		Iters: o.peerIters, ReportEvery: o.peerTestEvery, Workers: o.peerWorkers, MHSteps: o.mh, TopWords: 10, Tokens: c.tokens,
		TestDocword: filepath.Join(c.dir, "test.docword.txt"),
	}
	if pr.system == "strads-learned" {
		cfg.OptimizeEvery, cfg.OptimizeBurnIn = lda.DefaultOptimizeEvery, lda.DefaultOptimizeBurnIn
	}
	maxRounds, every := cfg.Rounds()
	var coord *lda.Coordinator
	prog := lda.Program(cfg)
	prog.NewCoordinator = func(context.Context) (schmp.Coordinator[scheduler.Turn, lda.Partial, lda.Update, lda.Summary], error) {
		var err error
		coord, err = lda.NewCoordinator(cfg)
		return coord, err
	}
	t0 := time.Now()
	_, err := job.Run(ctx, prog, job.Options{
		Job: "bench-lda-peers", Timeout: 5 * time.Minute,
		Coordinator: coordinator.Options{Workers: cfg.Workers, MaxRounds: maxRounds, ReportEvery: every, Timeout: 5 * time.Minute},
	})
	elapsed := time.Since(t0)
	if err != nil {
		return nil, err
	}
	// The reports' held-out evaluations are not the fit's: take them out
	// of the time, and date every point of the curve by the time from the
	// job's start (reading the corpus included) less the evaluations
	// before it.
	trace := coord.Trace()
	last := trace[len(trace)-1]
	pr.fit = elapsed - last.TestTime
	var before time.Duration
	if len(trace) > 1 {
		before = trace[len(trace)-2].TestTime
	}
	load := pr.fit - (last.Time - before)
	before = 0
	for _, r := range trace {
		if !math.IsNaN(r.Perplexity) {
			pr.curve = append(pr.curve, curvePoint{t: load + r.Time - before, iter: r.Iter, perplexity: r.Perplexity})
		}
		before = r.TestTime
	}
	m := coord.Model()
	pr.beta = m.Beta
	return m, nil
}

// fitPeer runs bench/lda/scripts/peers.py for pr's system and reads the
// topics it wrote.
func (o *options) fitPeer(ctx context.Context, c *peerCorpus, pr *peerRun) (*lda.Model, error) {
	dir, err := os.MkdirTemp("", "bench-lda-peer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	passes := o.sklearnPasses
	if pr.system == "gensim" {
		passes = o.gensimPasses
	}
	cmd := exec.CommandContext(ctx, o.python, filepath.Join("bench", "lda", "scripts", "peers.py"), "--system", pr.system,
		"--train", c.train, "--words", strconv.Itoa(c.words), "--topics", strconv.Itoa(pr.topics),
		"--seed", strconv.Itoa(pr.run), "--passes", strconv.Itoa(passes), "--out", dir)
	cmd.Stderr = os.Stderr
	if out, err := cmd.Output(); err != nil {
		return nil, fmt.Errorf("%s: %w (%s)", cmd, err, out)
	}
	var res struct {
		FitS float64 `json:"fit_s"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, err
	}
	pr.fit = time.Duration(res.FitS * float64(time.Second))
	raw, err := os.ReadFile(filepath.Join(dir, "phi.f64"))
	if err != nil {
		return nil, err
	}
	if len(raw) != 8*pr.topics*c.words {
		return nil, fmt.Errorf("phi.f64: %d bytes, want %d", len(raw), 8*pr.topics*c.words)
	}
	phi := make([][]float64, pr.topics)
	for k := range phi {
		phi[k] = make([]float64, c.words)
		for w := range phi[k] {
			phi[k][w] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*(k*c.words+w):]))
		}
	}
	b, err = os.ReadFile(filepath.Join(dir, "alpha.txt"))
	if err != nil {
		return nil, err
	}
	var alpha []float64
	for _, f := range strings.Fields(string(b)) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("alpha.txt: %w", err)
		}
		alpha = append(alpha, v)
	}
	return lda.NewModelPhi(phi, alpha, nil)
}

// median returns the median of x (the mean of the middle two for an even
// count).
func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// peerSummary writes the experiment's table: per K and system, the median
// fit time and held-out perplexity over the runs, and every run's.
func (o *options) peerSummary(b *strings.Builder, c *peerCorpus, runs []*peerRun) {
	fmt.Fprintf(b, "## Held-out perplexity against scikit-learn, gensim and SCVB0\n\n")
	fmt.Fprintf(b, "Corpus %s: %d training documents, %d tokens, W = %d; %d test documents. strads: %d workers, %d iterations, "+
		"--mh-steps %d, α = %g, β = %g to start (learned: every %d iterations from iteration %d); sklearn %d epochs; gensim %d passes; "+
		"SCVB0 at most %d epochs, stopped by james-bowman/nlp's rule (every %d epochs, a change under %g). "+
		"Every system's topics evaluated by lda.Model.Perplexity (document completion, 40 sweeps). Medians of %d runs.\n\n",
		c.dir, c.docs, c.tokens, c.words, len(c.test), o.peerWorkers, o.peerIters, o.mh, o.alpha, o.beta,
		lda.DefaultOptimizeEvery, lda.DefaultOptimizeBurnIn, o.sklearnPasses, o.gensimPasses,
		o.scvb0Epochs, scvb0CheckEvery, scvb0Tolerance, o.peerRuns)
	fmt.Fprintf(b, "| K | system | fit time (s), median | held-out perplexity, median | runs: time (s) / perplexity | Σα (median) | perplexity at α = %g, median |\n|---|---|---|---|---|---|---|\n", o.alpha)
	for _, k := range o.peerTopics {
		for _, sys := range o.peers {
			var ts, ps, as, cs []float64
			var each []string
			for _, r := range runs {
				if r.topics == k && r.system == sys {
					ts, ps, as, cs = append(ts, r.fit.Seconds()), append(ps, r.perplexity), append(as, r.alphaSum), append(cs, r.common)
					each = append(each, fmt.Sprintf("%.1f / %.0f", r.fit.Seconds(), r.perplexity))
				}
			}
			if len(ts) == 0 {
				continue
			}
			fmt.Fprintf(b, "| %d | %s | %.1f | %.0f | %s | %.3g | %.0f |\n", k, sys, median(ts), median(ps), strings.Join(each, ", "), median(as), median(cs))
		}
	}
	b.WriteString("\n")
	for _, k := range o.peerTopics {
		best, bestSys := math.Inf(1), ""
		for _, sys := range o.peers {
			if strings.HasPrefix(sys, "strads") {
				continue
			}
			var ps, ts []float64
			for _, r := range runs {
				if r.topics == k && r.system == sys {
					ps, ts = append(ps, r.perplexity), append(ts, r.fit.Seconds())
				}
			}
			if len(ps) > 0 && median(ps) < best {
				best, bestSys = median(ps), fmt.Sprintf("%s (%.0f in %.1f s)", sys, median(ps), median(ts))
			}
		}
		if bestSys == "" {
			continue
		}
		fmt.Fprintf(b, "K = %d: time for strads to reach the best peer's median perplexity, %s, by its held-out perplexity every %d iterations "+
			"(from the job's start, reading the corpus included, less the evaluations):\n\n", k, bestSys, o.peerTestEvery)
		for _, sys := range o.peers {
			if !strings.HasPrefix(sys, "strads") {
				continue
			}
			var each []string
			var ts []float64
			for _, r := range runs {
				if r.topics == k && r.system == sys {
					if t, ok := r.timeTo(best); ok {
						ts = append(ts, t.Seconds())
						each = append(each, fmt.Sprintf("%.1f", t.Seconds()))
					} else {
						each = append(each, "not reached")
					}
				}
			}
			med := "–"
			if len(ts) == len(each) && len(ts) > 0 {
				med = fmt.Sprintf("%.1f s", median(ts))
			}
			fmt.Fprintf(b, "- %s: median %s (runs: %s)\n", sys, med, strings.Join(each, ", "))
		}
		b.WriteString("\n")
	}
}

// writeCurves writes strads' held-out perplexity during every run.
func writeCurves(path string, runs []*peerRun) error {
	var b strings.Builder
	b.WriteString("system,topics,run,iter,time_s,perplexity\n")
	for _, r := range runs {
		for _, c := range r.curve {
			fmt.Fprintf(&b, "%s,%d,%d,%g,%.3f,%.3f\n", r.system, r.topics, r.run, c.iter, c.t.Seconds(), c.perplexity)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// writePeersCSV writes every run of the experiment.
func writePeersCSV(path string, runs []*peerRun) error {
	var b strings.Builder
	b.WriteString("system,topics,run,fit_s,perplexity,heldout_tokens,alpha_sum,beta,perplexity_common_alpha\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "%s,%d,%d,%.3f,%.3f,%d,%.6g,%.6g,%.3f\n", r.system, r.topics, r.run, r.fit.Seconds(), r.perplexity, r.tokens, r.alphaSum, r.beta, r.common)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
