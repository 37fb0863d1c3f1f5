package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/strads-go/strads/apps/lda"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/inputfile"
)

// ldaApp is LDA's command: strads lda, and its roles.
func ldaApp() cli.App {
	return cli.App{
		Name:     "lda",
		Summary:  "topic model (LDA, collapsed Gibbs sampling)",
		Synopsis: "--docword FILE [--vocab FILE] | --text FILE  [--topics K --iters T --workers N --alpha A --beta B --seed S] [flags]\n       " + ldaInferSynopsis,
		Flags:    ldaCommand,
		PerRole:  []string{"docword", "vocab", "text", "stop-words", "test-docword", "word-topic", "doc-topic", "model"},
		Outputs:  []string{"word-topic", "doc-topic", "model"},
		Parts:    []string{"docword"},
		Commands: []cli.Command{
			{Name: "infer", Synopsis: "--model FILE --docword FILE | --text FILE [--out FILE]", Summary: "topic proportions of new documents", Run: runLDAInfer},
		},
	}
}

// ldaFlagNames are the flags of lda.Config's fields not named after them
// (see cli.FlagError).
var ldaFlagNames = map[string]string{"MinDocFreq": "min-df", "MHSteps": "mh-steps", "ModelOut": "model", "TestDocword": "test-docword", "WordTopicOut": "word-topic", "DocTopicOut": "doc-topic"}

// ldaFlags are the flags of the LDA app, shared by all its roles.
type ldaFlags struct {
	cfg      lda.Config
	schedule string
	ring     bool
}

func addLDAFlags(fs *flag.FlagSet) *ldaFlags {
	f := &ldaFlags{}
	c := &f.cfg
	fs.StringVar(&c.Docword, "docword", "", "UCI bag-of-words `file`: lines D, W, NNZ, then \"docID wordID count\" (1-based, sorted by docID); a worker reads only its documents")
	fs.StringVar(&c.Vocab, "vocab", "", "vocabulary `file` of --docword, one word a line (W lines); without it, words show as #id")
	fs.StringVar(&c.Text, "text", "", "instead of --docword: raw text `file`, one document a line, lower-cased and split on non-letters")
	fs.StringVar(&c.StopWords, "stop-words", "", "with --text: `file` of words to drop (separated by blanks or newlines)")
	fs.IntVar(&c.MinDocFreq, "min-df", 1, "with --text: drop words found in fewer than `n` documents")
	fs.StringVar(&c.TestDocword, "test-docword", "", "held-out docword `file` on the same vocabulary: its perplexity by document completion (test_perplexity) at the reports of every --test-every iterations, and printed at the end")
	fs.IntVar(&c.TestEvery, "test-every", 10, "with --test-docword: held-out perplexity at the reports of every `n`-th iteration; 0: every report")
	fs.IntVar(&c.OptimizeEvery, "optimize-every", lda.DefaultOptimizeEvery, "learn an asymmetric α and a symmetric β every `n` iterations from --optimize-burn-in on (Minka's fixed point, as MALLET); 0 keeps --alpha and --beta fixed")
	fs.IntVar(&c.OptimizeBurnIn, "optimize-burn-in", lda.DefaultOptimizeBurnIn, "the first iteration after which the priors are learned")
	fs.IntVar(&c.Topics, "topics", 100, "number of topics K")
	fs.IntVar(&c.Iters, "iters", 100, "iterations: every token is sampled once per iteration (P rounds of the rotation)")
	fs.Float64Var(&c.Alpha, "alpha", 0.1, "symmetric Dirichlet prior α of the document-topic proportions; the starting value when learned (--optimize-every)")
	fs.Float64Var(&c.Beta, "beta", 0.01, "symmetric Dirichlet prior β of the topic-word distributions; the starting value when learned (--optimize-every)")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the initial topics and of the samplers: the same flags give the same model")
	fs.IntVar(&c.MHSteps, "mh-steps", lda.AutoMH, fmt.Sprintf("Metropolis-Hastings cycles per token (a word proposal and a document proposal each); 0 samples every token from its exact conditional (collapsed Gibbs); %d picks 0 for K ≤ %d and 2 above", lda.AutoMH, lda.ExactMaxTopics))
	fs.StringVar(&f.schedule, "schedule", "rotation", "rotation (word blocks rotate among the workers) or unscheduled (data-parallel baseline: every worker samples against its own copy of the whole table, merged once per iteration)")
	fs.BoolVar(&f.ring, "ring", true, "the rotation: a worker sends the word block it finished straight to its next owner (the ring); false sends it through the coordinator (the star), as before; both give the same model")
	fs.IntVar(&c.TopWords, "top-words", 10, "words per topic in --out")
	fs.StringVar(&c.WordTopicOut, "word-topic", "", "write the word-topic counts to `file` (CSV word_id,word,topic,count); needs --out")
	fs.StringVar(&c.DocTopicOut, "doc-topic", "", "write the document-topic proportions to `file` (CSV doc_id,topic,count,theta of the non-zero counts; θ = (n_dk+α)/(N_d+Kα)); needs --out")
	fs.StringVar(&c.ModelOut, "model", "", "write the trained model to `file` as JSON (counts, α, β, vocabulary), for inference on new documents; needs --out")
	fs.BoolVar(&c.Check, "check", false, "check the count invariants after every round, not only at reports")
	return f
}

// ldaJob is an LDA job as the command runs it.
type ldaJob struct {
	cfg lda.Config
}

// ldaResults is what the command reads from the coordinator (the result's
// App).
type ldaResults interface {
	Trace() []lda.Report
	HeldOut() (perplexity float64, tokens int64, ok bool, err error)
}

// ldaCommand adds LDA's flags to fs and returns the function that makes
// its job. That checks the input that the role reads before anything
// starts: bad input is a usage error naming its file and line.
func ldaCommand(fs *flag.FlagSet) func(*cli.Env) (*cli.Job, error) {
	f := addLDAFlags(fs)
	cli.SetDefault(fs, "report-every", "1", "report the log-likelihood every `n` iterations (one pass over the tokens' topics)")
	cli.SetDefault(fs, "tol", "0", "stop when the log-likelihood per token changes by less than tol, relatively, between two reports (0: off)")
	cli.SetDefault(fs, "out", "", "write the topics to `file`: every topic's share of the tokens and its --top-words words with p(word | topic)")
	cli.SetDefault(fs, "metrics", "", "write a metrics CSV to `file`, a row per report: the runtime's columns (time_s,round,objective,…), then iter,tokens_per_s,sample_tokens_per_s_core,alpha_sum,alpha_min,alpha_max,beta and, with --test-docword, test_perplexity")
	cli.SetDefault(fs, "depth", "1", "rounds in flight: lda needs 1 (every round of the rotation holds every block)")
	cli.SetDefault(fs, "max-rounds", "0", "not for lda: use --iters")
	return func(env *cli.Env) (*cli.Job, error) {
		opts := env.Options
		cfg := f.cfg
		cfg.Workers, cfg.ReportEvery = opts.Workers, opts.ReportEvery
		cfg.Star = !f.ring
		switch f.schedule {
		case "rotation":
		case "unscheduled":
			cfg.Unscheduled = true
		default:
			return nil, cli.Usagef("--schedule %q: want rotation or unscheduled", f.schedule)
		}
		if err := cfg.Validate(); err != nil {
			return nil, cli.FlagError(fs, ldaFlagNames, err)
		}
		switch {
		case opts.Depth != 1:
			return nil, cli.Usagef("--depth %d: lda needs --depth 1 (every round of the rotation holds every word block, and needs the previous round's blocks)", opts.Depth)
		case opts.Schedulers != 1:
			return nil, cli.Usagef("--schedulers %d: lda takes one scheduler", opts.Schedulers)
		case opts.MaxRounds != 0:
			return nil, cli.Usagef("--max-rounds: lda counts iterations: use --iters")
		case opts.Out == "" && (cfg.WordTopicOut != "" || cfg.DocTopicOut != "" || cfg.ModelOut != ""):
			return nil, cli.Usagef("--word-topic, --doc-topic and --model are written with the topics: give --out too")
		}
		for _, p := range []struct{ flag, path string }{{"--word-topic", cfg.WordTopicOut}, {"--doc-topic", cfg.DocTopicOut}, {"--model", cfg.ModelOut}} {
			if p.path == "" {
				continue
			}
			if st, err := os.Stat(filepath.Dir(p.path)); err != nil || !st.IsDir() {
				return nil, cli.Usagef("%s %s: directory %s does not exist", p.flag, p.path, filepath.Dir(p.path))
			}
		}
		if _, remote := inputfile.RemoteOf(cfg.Docword); !remote {
			// A worker that reads its documents of a data set in parts (an
			// inputfile.Remote) does not fetch the whole to check it: the
			// coordinator and the scheduler check it, and N is theirs.
			st, err := lda.Scan(cfg)
			if err != nil {
				return nil, ldaInputError(err)
			}
			cfg.Tokens = st.Tokens
		}
		opts.MaxRounds, opts.ReportEvery = cfg.Rounds()
		// The runtime prints the progress and writes the metrics, with
		// lda's figures as its app metrics.
		j := &ldaJob{cfg: cfg}
		return j.job(env.Role)
	}
}

// ldaInputError makes bad or missing input a usage error.
func ldaInputError(err error) error {
	var pe *lda.ParseError
	if errors.As(err, &pe) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return cli.UsageError(err)
	}
	return err
}

// job returns the job as role runs it.
func (j *ldaJob) job(role cli.Role) (*cli.Job, error) {
	var job *cli.Job
	if j.cfg.Unscheduled {
		job = cli.NewJob(lda.Unscheduled(j.cfg))
	} else {
		job = cli.NewJob(lda.Program(j.cfg))
	}
	job.Data = j.cfg.Docword
	if j.cfg.Text != "" {
		job.Data = j.cfg.Text
	}
	job.Print = j.print
	return job, nil
}

// print prints the end of a run: the log-likelihood, the rates, the
// held-out perplexity, then where the time went.
func (j *ldaJob) print(w io.Writer, res *coordinator.Result) {
	results, ok := res.App.(ldaResults)
	if !ok {
		cli.PrintResult(w, res)
		return
	}
	trace := results.Trace()
	if len(trace) == 0 {
		return
	}
	r := trace[len(trace)-1]
	fmt.Fprintf(w, "log-likelihood/token %.6f  iterations %g  rounds %d  tokens %d  time %.3fs  tokens/s %.4g  sampling %.4g tokens/s per core  (%s)\n",
		r.LogLik, r.Iter, res.Rounds, r.Tokens, res.Elapsed.Seconds(), r.TokensPerSecond(), r.SamplingRate(), res.Why())
	if perp, n, ok, err := results.HeldOut(); err != nil {
		fmt.Fprintf(w, "held-out perplexity: %v\n", err)
	} else if ok {
		fmt.Fprintf(w, "held-out perplexity %.3f on %d tokens of %s (document completion)\n", perp, n, j.cfg.TestDocword)
	}
	res.WriteSummary(w)
}

// genLDA writes a synthetic corpus drawn from a known LDA model:
// PREFIX.docword.txt, PREFIX.vocab.txt, PREFIX.phi.csv (the model) and,
// with --test-docs, PREFIX.test.docword.txt.
func genLDA(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen lda", flag.ContinueOnError)
	var c lda.GenConfig
	fs.IntVar(&c.Docs, "docs", 1000, "number of documents D")
	fs.IntVar(&c.Vocab, "vocab", 5000, "vocabulary size W")
	fs.IntVar(&c.Topics, "topics", 20, "number of true topics K")
	fs.IntVar(&c.DocLen, "doc-len", 100, "mean document length: lengths are uniform in [L/2, 3L/2]")
	fs.IntVar(&c.TestDocs, "test-docs", 0, "also draw `n` held-out documents into PREFIX.test.docword.txt")
	fs.Float64Var(&c.Alpha, "alpha", 0.1, "Dirichlet prior of the true document-topic proportions")
	fs.Float64Var(&c.Beta, "beta", 0.01, "Dirichlet prior of the true topics")
	fs.Float64Var(&c.Zipf, "zipf", 0, "with `s` > 0, word frequencies follow Zipf's law with exponent s: topics ~ Dirichlet(W·beta·π), π_w ∝ w^−s")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed: the same flags give the same files")
	out := fs.String("o", "", "output `PREFIX`: writes PREFIX.docword.txt, PREFIX.vocab.txt, PREFIX.phi.csv (the true topics: topic,word_id,prob ≥ 1e-6)")
	if err := cli.Parse(fs, args, stdout, "strads gen lda [flags] -o PREFIX"); err != nil {
		return err
	}
	if *out == "" {
		return cli.Usagef("-o PREFIX is required")
	}
	if err := c.Validate(); err != nil {
		return cli.UsageError(err)
	}
	names := []string{".docword.txt", ".vocab.txt", ".phi.csv"}
	if c.TestDocs > 0 {
		names = append(names, ".test.docword.txt")
	}
	var files []*atomicfile.File
	defer func() {
		for _, f := range files {
			f.Abort()
		}
	}()
	ws := make([]*bufio.Writer, 4)
	for i, name := range names {
		f, err := atomicfile.Create(*out + name)
		if err != nil {
			return cli.UsageError(err)
		}
		files = append(files, f)
		ws[i] = f.Writer
	}
	t0 := time.Now()
	m, err := lda.Generate(ws[0], ws[1], ws[2], ws[3], c)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := f.Commit(); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %s.docword.txt: %d documents, %d words, %d tokens from %d topics (%.1fs)\n",
		*out, c.Docs, c.Vocab, m.Tokens, c.Topics, time.Since(t0).Seconds())
	return nil
}
