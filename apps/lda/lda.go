package lda

import (
	"context"
	"fmt"
	"math"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// Config configures an LDA job. Every role gets the same Config; each
// reads what it needs (a worker, only its documents).
type Config struct {
	// Docword is a UCI bag-of-words file (header D, W, NNZ, then
	// "docID wordID count" lines, 1-based, sorted by document), and Vocab
	// its vocabulary, one word a line (optional: topics then show word
	// ids).
	Docword, Vocab string
	// Text, instead of Docword, is one document a line of raw text:
	// lower-cased and split on non-letters. Words of the StopWords file
	// and words in fewer than MinDocFreq documents are dropped; the
	// vocabulary is the remaining words, sorted.
	Text, StopWords string
	MinDocFreq      int
	// TestDocword, if set, is a held-out docword file on the same
	// vocabulary, whose perplexity the coordinator computes by document
	// completion (see Model.Perplexity) at reports, every TestEvery
	// iterations, and at the end.
	TestDocword string
	// TestEvery is the number of iterations between two held-out
	// evaluations at reports (the metric test_perplexity; a report between
	// two has none): 0 evaluates at every report.
	TestEvery int
	// Topics is K.
	Topics int
	// Alpha and Beta are the Dirichlet priors of the document-topic and
	// topic-word distributions: symmetric, α_k = Alpha for every topic k.
	// With OptimizeEvery they are the starting values of the priors
	// learned.
	Alpha, Beta float64
	// OptimizeEvery, if positive, learns the priors: an asymmetric α and
	// a symmetric β, by Minka's fixed-point iteration on the histograms of
	// the document-topic and word-topic counts (see the package
	// documentation), after every iteration i ≥ OptimizeBurnIn that is a
	// multiple of OptimizeEvery and not the last; 0 keeps Alpha and Beta.
	// DefaultOptimizeEvery and DefaultOptimizeBurnIn are the defaults of
	// the command line.
	OptimizeEvery, OptimizeBurnIn int
	// Seed seeds the initial topics and the samplers: a job is
	// deterministic given its Config.
	Seed uint64
	// Iters is the number of iterations (sweeps over every token), and
	// ReportEvery the iterations between two log-likelihood reports.
	Iters, ReportEvery int
	// Workers is P, the number of workers (and of word blocks).
	Workers int
	// Unscheduled selects the data-parallel baseline: every worker samples
	// all its tokens against its own copy of the whole word-topic table,
	// merged once per iteration.
	Unscheduled bool
	// MHSteps is the number of Metropolis–Hastings cycles per token (a
	// word proposal and a document proposal each); 0 draws each token
	// from its exact conditional instead (collapsed Gibbs, SparseLDA's
	// buckets), and AutoMH picks by K.
	MHSteps int
	// TopWords is the number of words per topic in the model output.
	TopWords int
	// WordTopicOut and DocTopicOut, if set, are the paths of the
	// word-topic counts and document-topic proportions (CSV), written with
	// the model.
	WordTopicOut, DocTopicOut string
	// ModelOut, if set, is the path of the trained model (JSON, see
	// Model), which LoadModel reads back to infer the topics of new
	// documents; it is written with the model.
	ModelOut string
	// Check makes the coordinator check the count invariants after every
	// round, not only at reports (a pass over the word-topic table).
	Check bool
	// Star sends the rotation's word blocks through the coordinator, in
	// its partials and updates (the star), instead of straight from the
	// worker that finished a block to its next owner (the ring, the
	// default; DESIGN "Apps"). Both give the same model, bit for bit.
	Star bool
	// Tokens is N if known (the command line counts them when it checks
	// the input); 0 makes the scheduler count them.
	Tokens int64
}

// The defaults of the command line for learning the priors: every 10
// iterations, from iteration 50 on. Before that the topics are still
// forming: from random topics the assignments are nearly uniform over the
// topics in every document, which a large α fits, and a large α would slow
// the topics' separation down. By iteration 50 the log-likelihood has
// made most of its rise (bench/lda); every 10 iterations is cheap (a
// histogram pass) and lets α follow the topics as they settle.
const (
	DefaultOptimizeEvery  = 10
	DefaultOptimizeBurnIn = 50
)

// Validate reports the first bad setting. The settings that the command
// line had before issue 14 are named as its flags (the command's tests
// read them); the others are a *schmp.FieldError naming the Go field,
// which cli.FlagError renders as the flag.
func (c *Config) Validate() error {
	switch {
	case c.Docword == "" && c.Text == "":
		return fmt.Errorf("--docword FILE or --text FILE is required")
	case c.Docword != "" && c.Text != "":
		return fmt.Errorf("--docword and --text exclude each other")
	case c.Text != "" && c.Vocab != "":
		return fmt.Errorf("--vocab goes with --docword; --text builds its own vocabulary")
	case c.Text == "" && (c.StopWords != "" || c.MinDocFreq > 1):
		return fmt.Errorf("--stop-words and --min-df go with --text")
	case c.MinDocFreq < 0:
		return fmt.Errorf("--min-df must be >= 0, got %d", c.MinDocFreq)
	case c.Topics < 1 || c.Topics > maxTopics:
		return fmt.Errorf("--topics must be in [1, %d], got %d", maxTopics, c.Topics)
	case !(c.Alpha > 0) || math.IsInf(c.Alpha, 0):
		return fmt.Errorf("--alpha must be a finite number > 0, got %v", c.Alpha)
	case !(c.Beta > 0) || math.IsInf(c.Beta, 0):
		return fmt.Errorf("--beta must be a finite number > 0, got %v", c.Beta)
	case c.OptimizeEvery < 0:
		return schmp.Fieldf("OptimizeEvery", "must be >= 0 (0: fixed priors), got %d", c.OptimizeEvery)
	case c.OptimizeBurnIn < 0:
		return schmp.Fieldf("OptimizeBurnIn", "must be >= 0, got %d", c.OptimizeBurnIn)
	case c.TestEvery < 0:
		return schmp.Fieldf("TestEvery", "must be >= 0 (0: every report), got %d", c.TestEvery)
	case c.Iters < 1:
		return fmt.Errorf("--iters must be at least 1, got %d", c.Iters)
	case c.ReportEvery < 1:
		return fmt.Errorf("--report-every must be at least 1, got %d", c.ReportEvery)
	case c.Workers < 1:
		return fmt.Errorf("--workers must be at least 1, got %d", c.Workers)
	case c.MHSteps < AutoMH || c.MHSteps > maxMH:
		return fmt.Errorf("--mh-steps must be in [%d, %d], got %d", AutoMH, maxMH, c.MHSteps)
	case c.TopWords < 0:
		return fmt.Errorf("--top-words must be >= 0, got %d", c.TopWords)
	case c.Tokens < 0:
		return fmt.Errorf("lda: Tokens must be >= 0, got %d", c.Tokens)
	}
	return nil
}

// AutoMH is the MHSteps that picks the sampler by K, the command line's
// default: exact for K ≤ ExactMaxTopics, where it converges in less time
// than the chains (it mixes per sweep as they do only with many steps, at
// a cost per token that grows with the topics of a word and a document),
// and 2 cycles of Metropolis–Hastings above, whose cost does not grow
// with K.
const AutoMH = -1

// ExactMaxTopics is the largest K that AutoMH samples exactly.
const ExactMaxTopics = 256

// MHStepsRun returns the MHSteps the workers run: c.MHSteps, with AutoMH
// resolved.
func (c *Config) MHStepsRun() int {
	switch {
	case c.MHSteps != AutoMH:
		return c.MHSteps
	case c.Topics <= ExactMaxTopics:
		return 0
	}
	return 2
}

// maxTopics bounds K.
const maxTopics = 1 << 20

// RoundsPerIteration returns the runtime rounds of one iteration: P
// sub-rounds of the rotation, or one round of the unscheduled baseline.
func (c *Config) RoundsPerIteration() int {
	if c.Unscheduled {
		return 1
	}
	return c.Workers
}

// optimizesAfter reports whether the priors are learned after round: the
// last round of an iteration i ≥ OptimizeBurnIn that is a multiple of
// OptimizeEvery, and not the last iteration.
func (c *Config) optimizesAfter(round uint64) bool {
	r := uint64(c.RoundsPerIteration())
	if c.OptimizeEvery <= 0 || round == 0 || round%r != 0 {
		return false
	}
	it := round / r
	return it >= uint64(c.OptimizeBurnIn) && it%uint64(c.OptimizeEvery) == 0 && it < uint64(c.Iters)
}

// Rounds returns the coordinator's MaxRounds and ReportEvery for c.
func (c *Config) Rounds() (maxRounds uint64, reportEvery int) {
	r := c.RoundsPerIteration()
	return uint64(c.Iters) * uint64(r), c.ReportEvery * r
}

// Partial, the R of the program, is what a worker sends after a round:
// the rotation's worker sends the block it held, with its counts after
// the sub-round; the unscheduled worker sends the changes it made to its
// copy of the table (rows named by word, signed counts). Both send their
// change to the topic totals.
type Partial struct {
	BlockID int          `msgpack:"b"`
	Counts  Sparse       `msgpack:"c"`
	DeltaNK codec.Int32s `msgpack:"k"`
	// Moved is the number of tokens whose topic changed.
	Moved int64 `msgpack:"m"`
	// DocTopics, after the last round of an iteration whose priors are
	// learned, is the histogram of the worker's document-topic counts
	// n_dk (row k for topic k).
	DocTopics *Hist `msgpack:"h,omitempty"`
}

// Handoff is a block on its way to the worker that owns it next.
type Handoff struct {
	Owner  int    `msgpack:"o"`
	ID     int    `msgpack:"b"`
	Counts Sparse `msgpack:"c"`
}

// Update, the U of the rotation, hands every worker the block it owns in
// the next sub-round, and the topic totals. The first update also carries
// the layout: the block of every word.
type Update struct {
	Layout codec.Int32s `msgpack:"l,omitempty"`
	NK     codec.Int32s `msgpack:"k"`
	Blocks []Handoff    `msgpack:"b"`
	// Priors, if set, are the priors learned, from the next round on.
	Priors *Priors `msgpack:"p,omitempty"`
}

// ForShard implements schmp.Splitter: worker k receives its block alone.
func (u Update) ForShard(k int) Update {
	own := Update{Layout: u.Layout, NK: u.NK, Priors: u.Priors}
	for _, h := range u.Blocks {
		if h.Owner == k {
			own.Blocks = append(own.Blocks, h)
		}
	}
	return own
}

// Table, the U of the unscheduled baseline, is the whole word-topic table
// (row w is word w) and the topic totals, sent to every worker.
type Table struct {
	NK     codec.Int32s `msgpack:"k"`
	Counts Sparse       `msgpack:"c"`
	// Priors, if set, are the priors learned, from the next round on.
	Priors *Priors `msgpack:"p,omitempty"`
}

// Summary, the S of the program, describes a worker's shard when it joins
// (Docs, Tokens, Counts, NK: its initial counts), and its state when it
// reports (NK … DocTopic).
type Summary struct {
	// Docs is the number of non-empty documents, and Tokens of tokens.
	Docs   int   `msgpack:"d,omitempty"`
	Tokens int64 `msgpack:"n,omitempty"`
	// Counts is the shard's initial word-topic counts (rows named by word).
	Counts *Sparse `msgpack:"c,omitempty"`
	// Lengths is the histogram of the shard's document lengths (one row),
	// which learning α needs.
	Lengths *Hist `msgpack:"ln,omitempty"`
	// NK is the topic totals: at join, the shard's; at reports, the whole
	// corpus's as the worker has them.
	NK codec.Int32s `msgpack:"k,omitempty"`
	// DocLL is the document part of the log-likelihood over the shard,
	// and DocTotals the shard's tokens by topic.
	DocLL     float64      `msgpack:"dl,omitempty"`
	DocTotals codec.Int32s `msgpack:"dt,omitempty"`
	// WordLL is the word part of the log-likelihood over the words whose
	// counts the worker holds (its block; a stripe of the table for the
	// baseline), WordTotals their counts by topic and WordNNZ their
	// non-zero counts.
	WordLL     float64      `msgpack:"wl,omitempty"`
	WordTotals codec.Int32s `msgpack:"wt,omitempty"`
	WordNNZ    int          `msgpack:"wn,omitempty"`
	// Sampled is the number of tokens the worker has sampled, and
	// SampleNanos the time it spent sampling them (taking blocks up
	// included).
	Sampled     int64 `msgpack:"s,omitempty"`
	SampleNanos int64 `msgpack:"sn,omitempty"`
	// DocTopic is the shard's document-topic counts (rows named by
	// document), sent once, in the final report (FinalReport).
	DocTopic *Sparse `msgpack:"z,omitempty"`
}

// Program returns the LDA program on the rotation engine for cfg.
func Program(cfg Config) schmp.Program[scheduler.Turn, Partial, Update, Summary] {
	return program(cfg, "lda", NewWorker, NewCoordinator)
}

// Unscheduled returns the data-parallel baseline program for cfg (whose
// Unscheduled must be set).
func Unscheduled(cfg Config) schmp.Program[scheduler.Turn, Partial, Table, Summary] {
	return program(cfg, "lda-unscheduled", NewUnscheduledWorker, NewUnscheduledCoordinator)
}

// program bundles the constructors of a program whose updates are U.
func program[U any, W schmp.Worker[scheduler.Turn, Partial, U, Summary], C schmp.Coordinator[scheduler.Turn, Partial, U, Summary]](
	cfg Config, name string, newWorker func(Config, int, int) (W, error), newCoordinator func(Config) (C, error),
) schmp.Program[scheduler.Turn, Partial, U, Summary] {
	return schmp.Program[scheduler.Turn, Partial, U, Summary]{
		Name: name,
		NewScheduler: func(_ context.Context, part, parts int) (schmp.Scheduler[scheduler.Turn], error) {
			return newScheduler(cfg, part, parts)
		},
		NewWorker: func(_ context.Context, shard, shards int) (schmp.Worker[scheduler.Turn, Partial, U, Summary], error) {
			return newWorker(cfg, shard, shards)
		},
		NewCoordinator: func(context.Context) (schmp.Coordinator[scheduler.Turn, Partial, U, Summary], error) {
			return newCoordinator(cfg)
		},
	}
}

// Scheduler plans the rounds: scheduler.Rotation's sub-rounds, or one
// round a sweep for the baseline. A round samples about N/P tokens (N for
// the baseline), which its plan reports as the variables it updates, so
// that the runtime's update rate is tokens per second.
type Scheduler struct {
	rot    scheduler.Rotation
	rounds int   // rounds per iteration
	tokens int64 // N
}

func newScheduler(cfg Config, part, parts int) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rot, err := scheduler.NewRotation(cfg.Workers, part, parts)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{rot: rot, rounds: cfg.RoundsPerIteration(), tokens: cfg.Tokens}
	if s.tokens == 0 {
		st, err := Scan(cfg)
		if err != nil {
			return nil, err
		}
		s.tokens = st.Tokens
	}
	return s, nil
}

// Schedule implements schmp.Scheduler.
func (s *Scheduler) Schedule(round uint64, fb []schmp.Feedback) (scheduler.Turn, schmp.PlanInfo, error) {
	turn := scheduler.Turn{SubRound: round - 1}
	info := schmp.PlanInfo{Vars: codec.Int32s{0}}
	if s.rounds > 1 {
		var err error
		if turn, info, err = s.rot.Schedule(round, fb); err != nil {
			return turn, info, err
		}
	}
	// Sub-round t of an iteration counts ⌊(t+1)N/P⌋ − ⌊tN/P⌋ tokens, so
	// that an iteration counts N exactly.
	t, p := int64(turn.SubRound%uint64(s.rounds)), int64(s.rounds)
	n := (t+1)*s.tokens/p - t*s.tokens/p
	info.Candidates, info.Selected = int(n), int(n)
	return turn, info, nil
}

// Scan reads and checks the whole input of cfg (the training corpus, its
// vocabulary, and the held-out corpus), and returns the training corpus's
// sizes. Bad input is a *ParseError naming the file and line.
func Scan(cfg Config) (Stats, error) {
	c, err := openCorpus(&cfg)
	if err != nil {
		return Stats{}, err
	}
	st, err := c.scan()
	if err != nil {
		return st, err
	}
	if cfg.Vocab != "" {
		if _, err := readVocab(cfg.Vocab, c.words); err != nil {
			return st, err
		}
	}
	if cfg.TestDocword != "" {
		if _, err := readTest(cfg.TestDocword, c.words); err != nil {
			return st, err
		}
	}
	return st, nil
}
