// Command lda benchmarks strads LDA end to end: it generates a corpus from
// a known LDA model with lda.Generate and runs whole jobs on it (an
// embedded NATS server, the scheduler, the coordinator and the workers in
// one process, each on its own connection), for three experiments:
//
//   - throughput: one worker (so one core samples) at each K of --topics:
//     the sampler's tokens per second of sampling time, and the whole job's
//     tokens per second, over the second half of the run;
//   - compare: the rotation against the unscheduled data-parallel baseline
//     on --compare-workers workers: log-likelihood per token against time;
//   - staleness: the rotation on each number of workers of --staleness-workers,
//     --seeds seeds each: log-likelihood per token against iterations, the
//     effect of topic totals that are up to one sub-round stale;
//   - peers (not by default: it needs --corpus, a real corpus made by
//     scripts/corpus.py): strads with fixed and with learned priors against
//     scikit-learn's and gensim's LDA (scripts/peers.py), held-out perplexity
//     of every system's topics by the same evaluator, and fit time.
//
// It writes a summary (summary.md), every run's metrics
// (lda-<experiment>-<variant>-seed<s>.csv), runs.csv, peers.csv and the plots
// loglik-time.png/.svg (compare) and loglik-iter.png/.svg (staleness) to
// --out. See bench/README.md.
//
// Usage, from the repository root:
//
//	go run ./bench/lda [flags]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/apps/lda"
	"github.com/strads-go/strads/bench/machine"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// options are the command-line flags.
type options struct {
	gen         lda.GenConfig
	alpha, beta float64
	mh          int
	reportEvery int
	experiments []string
	out         string

	topics      []int // throughput
	tputIters   int
	cmpTopics   int // compare
	cmpIters    int
	cmpWorkers  int
	staleTopics int // staleness
	staleIters  int
	staleP      []int
	seeds       int

	corpus        string // peers
	peerTopics    []int
	peerIters     int
	peerWorkers   int
	peerRuns      int
	peerTestEvery int
	peers         []string
	sklearnPasses int
	gensimPasses  int
	scvb0Epochs   int
	scvb0Every    int
	python        string
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("lda", flag.ContinueOnError)
	fs.IntVar(&o.gen.Docs, "docs", 20000, "documents of the generated corpus")
	fs.IntVar(&o.gen.Vocab, "vocab", 20000, "vocabulary of the generated corpus")
	fs.IntVar(&o.gen.Topics, "gen-topics", 100, "topics of the model the corpus is drawn from")
	fs.IntVar(&o.gen.DocLen, "doc-len", 100, "mean document length (uniform in [L/2, 3L/2])")
	fs.Float64Var(&o.gen.Alpha, "gen-alpha", 0.1, "Dirichlet prior of the true document-topic proportions")
	fs.Float64Var(&o.gen.Beta, "gen-beta", 0.01, "Dirichlet prior of the true topics")
	fs.Uint64Var(&o.gen.Seed, "seed", 1, "seed of the corpus; a run of seed s seeds its job with s")
	fs.Float64Var(&o.alpha, "alpha", 0.1, "α of the fitted model")
	fs.Float64Var(&o.beta, "beta", 0.01, "β of the fitted model")
	fs.IntVar(&o.mh, "mh-steps", lda.AutoMH, "Metropolis-Hastings cycles per token (strads lda's --mh-steps)")
	fs.IntVar(&o.reportEvery, "report-every", 2, "iterations between two log-likelihood reports")
	exps := fs.String("experiments", "throughput,compare,staleness", "comma-separated experiments to run")
	fs.StringVar(&o.out, "out", filepath.Join("bench", "results", "lda"), "output `dir`ectory")
	topics := fs.String("topics", "100,1000", "throughput: comma-separated K")
	fs.IntVar(&o.tputIters, "throughput-iters", 30, "throughput: iterations of a run")
	fs.IntVar(&o.cmpTopics, "compare-topics", 100, "compare: K")
	fs.IntVar(&o.cmpIters, "compare-iters", 60, "compare: iterations of a run")
	fs.IntVar(&o.cmpWorkers, "compare-workers", 2, "compare: workers")
	fs.IntVar(&o.staleTopics, "staleness-topics", 100, "staleness: K")
	fs.IntVar(&o.staleIters, "staleness-iters", 30, "staleness: iterations of a run")
	staleP := fs.String("staleness-workers", "1,2,4", "staleness: comma-separated numbers of workers")
	fs.IntVar(&o.seeds, "seeds", 2, "compare and staleness: runs (seeds 1, 2, …) of every variant")
	fs.StringVar(&o.corpus, "corpus", "", "peers: `dir`ectory of train.docword.txt, test.docword.txt and vocab.txt (scripts/corpus.py)")
	peerTopics := fs.String("peer-topics", "20", "peers: comma-separated K")
	fs.IntVar(&o.peerIters, "peer-iters", 100, "peers: strads iterations (strads lda's default)")
	fs.IntVar(&o.peerWorkers, "peer-workers", 2, "peers: strads workers")
	fs.IntVar(&o.peerTestEvery, "peer-test-every", 10, "peers: strads' iterations between two held-out evaluations during the run (not timed)")
	fs.IntVar(&o.peerRuns, "peer-runs", 3, "peers: runs (seeds 1, 2, …) of every system at every K")
	peers := fs.String("peers", strings.Join(peerSystems, ","), "peers: comma-separated systems")
	fs.IntVar(&o.sklearnPasses, "sklearn-passes", 10, "peers: scikit-learn's epochs (max_iter; its default 10)")
	fs.IntVar(&o.gensimPasses, "gensim-passes", 5, "peers: gensim's passes (its default 1)")
	fs.IntVar(&o.scvb0Epochs, "scvb0-epochs", 1000, "peers: SCVB0's most epochs (james-bowman/nlp's default; it stops sooner by its rule, see scvb0.go)")
	fs.IntVar(&o.scvb0Every, "scvb0-test-every", 5, "peers: SCVB0's epochs between two held-out evaluations (not timed)")
	fs.StringVar(&o.python, "python", "/usr/bin/python3", "peers: the Python with scikit-learn and gensim")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := o.gen.Validate(); err != nil {
		return nil, err
	}
	o.experiments = strings.Split(*exps, ",")
	for _, e := range o.experiments {
		if !slices.Contains([]string{"throughput", "compare", "staleness", "peers"}, e) {
			return nil, fmt.Errorf("--experiments: no experiment %q", e)
		}
	}
	if slices.Contains(o.experiments, "peers") && o.corpus == "" {
		return nil, fmt.Errorf("--experiments peers needs --corpus DIR")
	}
	o.peers = strings.Split(*peers, ",")
	for _, p := range o.peers {
		if !slices.Contains(peerSystems, p) {
			return nil, fmt.Errorf("--peers: no system %q (want %s)", p, strings.Join(peerSystems, ", "))
		}
	}
	var err error
	if o.peerTopics, err = parseInts("--peer-topics", *peerTopics); err != nil {
		return nil, err
	}
	if o.peerIters < 1 || o.peerWorkers < 1 || o.peerRuns < 1 || o.peerTestEvery < 1 || o.sklearnPasses < 1 || o.gensimPasses < 1 || o.scvb0Epochs < 1 || o.scvb0Every < 1 {
		return nil, fmt.Errorf("--peer-iters, --peer-workers, --peer-runs, --peer-test-every, --sklearn-passes, --gensim-passes, --scvb0-epochs and --scvb0-test-every must be ≥ 1")
	}
	if o.topics, err = parseInts("--topics", *topics); err != nil {
		return nil, err
	}
	if o.staleP, err = parseInts("--staleness-workers", *staleP); err != nil {
		return nil, err
	}
	if o.seeds < 1 || o.tputIters < 2 || o.cmpIters < 2 || o.staleIters < 2 || o.reportEvery < 1 {
		return nil, fmt.Errorf("--seeds must be ≥ 1, iterations ≥ 2, --report-every ≥ 1")
	}
	return o, nil
}

func parseInts(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive integer", name, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// run is one job of an experiment.
type run struct {
	exp, variant string
	topics       int
	workers      int
	unscheduled  bool
	seed         uint64
	iters        int
	res          *coordinator.Result
	trace        []lda.Report
}

// name is the run's file stem.
func (r *run) name() string {
	return fmt.Sprintf("lda-%s-%s-seed%d", r.exp, strings.ReplaceAll(r.variant, " ", "-"), r.seed)
}

func main() {
	if err := mainErr(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "lda:", err)
		os.Exit(1)
	}
}

func mainErr(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	tmp, err := os.MkdirTemp("", "bench-lda-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	docword := filepath.Join(tmp, "docword.txt")
	var tokens int64
	if slices.ContainsFunc(o.experiments, func(e string) bool { return e != "peers" }) {
		t0 := time.Now()
		if tokens, err = generate(docword, o.gen); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "corpus: %d documents, %d words, %d tokens from %d topics (generated in %.1fs)\n",
			o.gen.Docs, o.gen.Vocab, tokens, o.gen.Topics, time.Since(t0).Seconds())
	}

	var runs []*run
	var peerCorp *peerCorpus
	var peerRuns []*peerRun
	for _, exp := range o.experiments {
		if exp == "peers" {
			if peerCorp, peerRuns, err = o.runPeers(ctx); err != nil {
				return err
			}
			continue
		}
		for _, r := range o.plan(exp) {
			if err := o.runJob(ctx, r, docword, tokens); err != nil {
				return fmt.Errorf("%s: %w", r.name(), err)
			}
			last := r.trace[len(r.trace)-1]
			fmt.Fprintf(os.Stderr, "%-40s log-likelihood/token %.4f after %g iterations, %.1fs, %.3g tokens/s\n",
				r.name(), last.LogLik, last.Iter, last.Time.Seconds(), last.TokensPerSecond())
			runs = append(runs, r)
		}
	}
	summary := o.summary(args, tokens, runs)
	if peerCorp != nil {
		var b strings.Builder
		o.peerSummary(&b, peerCorp, peerRuns)
		summary += b.String()
		if err := writePeersCSV(filepath.Join(o.out, "peers.csv"), peerRuns); err != nil {
			return err
		}
		if err := writeCurves(filepath.Join(o.out, "peers-curves.csv"), peerRuns); err != nil {
			return err
		}
	}
	fmt.Print(summary)
	if err := os.WriteFile(filepath.Join(o.out, "summary.md"), []byte(summary), 0o644); err != nil {
		return err
	}
	if err := writeRunsCSV(filepath.Join(o.out, "runs.csv"), runs); err != nil {
		return err
	}
	for _, ext := range []string{"png", "svg"} {
		if cmp := filter(runs, "compare"); len(cmp) > 0 {
			if err := plotLogLik(filepath.Join(o.out, "loglik-time."+ext), cmp, o, true); err != nil {
				return fmt.Errorf("plot: %w", err)
			}
		}
		if st := filter(runs, "staleness"); len(st) > 0 {
			if err := plotLogLik(filepath.Join(o.out, "loglik-iter."+ext), st, o, false); err != nil {
				return fmt.Errorf("plot: %w", err)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", o.out)
	return nil
}

// plan lists the runs of an experiment, interleaved by seed so that a
// drift of the machine does not favour one variant.
func (o *options) plan(exp string) []*run {
	var runs []*run
	switch exp {
	case "throughput":
		for _, k := range o.topics {
			runs = append(runs, &run{exp: exp, variant: fmt.Sprintf("K=%d", k), topics: k, workers: 1, seed: 1, iters: o.tputIters})
		}
	case "compare":
		for s := range uint64(o.seeds) {
			for _, uns := range []bool{false, true} {
				v := "rotation"
				if uns {
					v = "unscheduled"
				}
				runs = append(runs, &run{exp: exp, variant: v, topics: o.cmpTopics, workers: o.cmpWorkers, unscheduled: uns, seed: s + 1, iters: o.cmpIters})
			}
		}
	case "staleness":
		for s := range uint64(o.seeds) {
			for _, p := range o.staleP {
				runs = append(runs, &run{exp: exp, variant: fmt.Sprintf("P=%d", p), topics: o.staleTopics, workers: p, seed: s + 1, iters: o.staleIters})
			}
		}
	}
	return runs
}

// runJob runs r's job on the corpus and writes its metrics.
func (o *options) runJob(ctx context.Context, r *run, docword string, tokens int64) error {
	cfg := lda.Config{
		Docword: docword, Topics: r.topics, Alpha: o.alpha, Beta: o.beta, Seed: r.seed, Iters: r.iters,
		ReportEvery: o.reportEvery, Workers: r.workers, Unscheduled: r.unscheduled, MHSteps: o.mh, TopWords: 10, Tokens: tokens,
	}
	maxRounds, every := cfg.Rounds()
	// The runtime writes the metrics: the columns of strads lda --metrics.
	opts := job.Options{
		Job: "bench-lda", Timeout: 5 * time.Minute,
		Coordinator: coordinator.Options{Workers: r.workers, MaxRounds: maxRounds, ReportEvery: every, Timeout: 5 * time.Minute,
			Metrics: filepath.Join(o.out, r.name()+".csv")},
	}
	var trace func() []lda.Report
	var err error
	if r.unscheduled {
		prog := lda.Unscheduled(cfg)
		prog.NewCoordinator = func(context.Context) (schmp.Coordinator[scheduler.Turn, lda.Partial, lda.Table, lda.Summary], error) {
			c, err := lda.NewUnscheduledCoordinator(cfg)
			if err == nil {
				trace = c.Trace
			}
			return c, err
		}
		r.res, err = job.Run(ctx, prog, opts)
	} else {
		prog := lda.Program(cfg)
		prog.NewCoordinator = func(context.Context) (schmp.Coordinator[scheduler.Turn, lda.Partial, lda.Update, lda.Summary], error) {
			c, err := lda.NewCoordinator(cfg)
			if err == nil {
				trace = c.Trace
			}
			return c, err
		}
		r.res, err = job.Run(ctx, prog, opts)
	}
	if err != nil {
		return err
	}
	r.trace = trace()
	return nil
}

// generate writes the corpus and returns its tokens.
func generate(docword string, c lda.GenConfig) (int64, error) {
	f, err := os.Create(docword)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	discard := bufio.NewWriter(nopWriter{})
	m, err := lda.Generate(w, discard, discard, nil, c)
	if err != nil {
		return 0, err
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	return m.Tokens, nil
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func filter(runs []*run, exp string) []*run {
	var out []*run
	for _, r := range runs {
		if r.exp == exp {
			out = append(out, r)
		}
	}
	return out
}

// half returns the rates over the second half of r's reports: the
// sampler's tokens per second of sampling time per core, and the job's
// tokens per second.
func (r *run) half() (sampling, job float64) {
	a, b := r.trace[len(r.trace)/2], r.trace[len(r.trace)-1]
	dt := float64(b.Tokens - a.Tokens)
	return dt / (float64(b.SampleNanos-a.SampleNanos) / 1e9), dt / (b.Time - a.Time).Seconds()
}

// at returns the log-likelihood of r's report at iteration it (NaN if
// none).
func (r *run) at(it float64) float64 {
	for _, s := range r.trace {
		if s.Iter == it {
			return s.LogLik
		}
	}
	return math.NaN()
}

func (o *options) summary(args []string, tokens int64, runs []*run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# LDA benchmark\n\nCommand: `go run ./bench/lda %s`\n\n", strings.Join(args, " "))
	if len(runs) == 0 {
		fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s.\n\n", runtime.NumCPU(), machine.CPUModel(), runtime.Version())
		return b.String()
	}
	fmt.Fprintf(&b, "Corpus: lda.Generate, %d documents, %d words, %d tokens, from %d topics (α = %g, β = %g), seed %d. "+
		"Fitted with α = %g, β = %g, %d Metropolis–Hastings cycles per token. Machine: %d CPUs (%s), %s.\n\n",
		o.gen.Docs, o.gen.Vocab, tokens, o.gen.Topics, o.gen.Alpha, o.gen.Beta, o.gen.Seed, o.alpha, o.beta, o.mh,
		runtime.NumCPU(), machine.CPUModel(), runtime.Version())
	if tp := filter(runs, "throughput"); len(tp) > 0 {
		b.WriteString("## Throughput (1 worker: one core samples)\n\n")
		b.WriteString("| K | iterations | sampler tokens/s per core (2nd half) | job tokens/s (2nd half) | job tokens/s (whole run) | final log-likelihood/token |\n|---|---|---|---|---|---|\n")
		for _, r := range tp {
			s, j := r.half()
			last := r.trace[len(r.trace)-1]
			fmt.Fprintf(&b, "| %d | %d | %.3g | %.3g | %.3g | %.4f |\n", r.topics, r.iters, s, j, last.TokensPerSecond(), last.LogLik)
		}
		b.WriteString("\n")
	}
	if cmp := filter(runs, "compare"); len(cmp) > 0 {
		fmt.Fprintf(&b, "## Rotation vs unscheduled (K = %d, %d workers)\n\n", o.cmpTopics, o.cmpWorkers)
		best := math.Inf(-1)
		for _, r := range cmp {
			best = max(best, r.trace[len(r.trace)-1].LogLik)
		}
		target := best - 0.05
		fmt.Fprintf(&b, "Target: log-likelihood/token %.4f (the best final value of all runs less 0.05).\n\n", target)
		b.WriteString("| schedule | seed | s/iteration | tokens/s | log-likelihood/token at iteration 10 | 30 | final | time to target (s) |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range cmp {
			last := r.trace[len(r.trace)-1]
			ttt := "not reached"
			for _, s := range r.trace {
				if s.LogLik >= target {
					ttt = fmt.Sprintf("%.1f", s.Time.Seconds())
					break
				}
			}
			fmt.Fprintf(&b, "| %s | %d | %.3f | %.3g | %s | %s | %.4f | %s |\n", r.variant, r.seed, last.Time.Seconds()/last.Iter,
				last.TokensPerSecond(), num(r.at(10)), num(r.at(30)), last.LogLik, ttt)
		}
		b.WriteString("\nPlot: loglik-time.png.\n\n")
	}
	if st := filter(runs, "staleness"); len(st) > 0 {
		fmt.Fprintf(&b, "## Staleness of n_k: the rotation on P workers (K = %d), log-likelihood/token by iteration, mean over %d seeds\n\n", o.staleTopics, o.seeds)
		var its []float64
		for _, it := range []float64{2, 6, 10, 20, float64(o.staleIters)} {
			if it <= float64(o.staleIters) && int(it)%o.reportEvery == 0 && !slices.Contains(its, it) {
				its = append(its, it)
			}
		}
		b.WriteString("| P |")
		for _, it := range its {
			fmt.Fprintf(&b, " iter %g |", it)
		}
		b.WriteString(" seeds (final) |\n|---|")
		for range its {
			b.WriteString("---|")
		}
		b.WriteString("---|\n")
		for _, p := range o.staleP {
			fmt.Fprintf(&b, "| %d |", p)
			var finals []string
			for _, it := range its {
				var sum float64
				n := 0
				for _, r := range st {
					if r.workers == p && !math.IsNaN(r.at(it)) {
						sum += r.at(it)
						n++
					}
				}
				fmt.Fprintf(&b, " %s |", num(sum/float64(n)))
			}
			for _, r := range st {
				if r.workers == p {
					finals = append(finals, fmt.Sprintf("%.4f", r.trace[len(r.trace)-1].LogLik))
				}
			}
			fmt.Fprintf(&b, " %s |\n", strings.Join(finals, ", "))
		}
		b.WriteString("\nPlot: loglik-iter.png.\n")
	}
	return b.String()
}

// num formats a log-likelihood, "–" for none.
func num(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.4f", x)
}

func writeRunsCSV(path string, runs []*run) error {
	var b strings.Builder
	b.WriteString("experiment,variant,topics,workers,seed,iterations,elapsed_s,final_loglik,tokens_per_s,sampling_tokens_per_s_core_2nd_half,job_tokens_per_s_2nd_half\n")
	for _, r := range runs {
		last := r.trace[len(r.trace)-1]
		s, j := r.half()
		fmt.Fprintf(&b, "%s,%s,%d,%d,%d,%g,%.3f,%.6f,%.0f,%.0f,%.0f\n", r.exp, r.variant, r.topics, r.workers, r.seed,
			last.Iter, r.res.Elapsed.Seconds(), last.LogLik, last.TokensPerSecond(), s, j)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
