package lda

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler"
)

// base is what both workers share: the shard, the sampler, the
// bookkeeping of rounds and reports.
type base struct {
	cfg         Config
	shard, p    int
	words       int
	sh          *shard
	s           *sampler
	pushed      uint64 // the last round pushed
	sampleNanos int64
	priors      Priors // the priors as of the last update
}

func newBase(cfg Config, shard, shards int) (*base, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if shards != cfg.Workers {
		return nil, fmt.Errorf("lda: %d shards for %d workers", shards, cfg.Workers)
	}
	c, err := openCorpus(&cfg)
	if err != nil {
		return nil, err
	}
	lo, hi := libsvm.ShardRange(c.docs, shard, shards)
	r := newRNG(cfg.Seed, uint64(shard)+1)
	sh, err := loadShard(c, lo, hi, cfg.Topics, &r)
	if err != nil {
		return nil, err
	}
	w := &base{cfg: cfg, shard: shard, p: shards, words: c.words, sh: sh}
	w.priors = symmetricPriors(cfg.Topics, cfg.Alpha, cfg.Beta)
	w.s = newSampler(cfg.Topics, c.words, w.priors, cfg.MHStepsRun(), r)
	return w, nil
}

// Describe implements schmp.Worker: the shard's initial counts, and the
// histogram of its document lengths.
func (w *base) Describe() (Summary, error) {
	counts, nk := w.sh.counts()
	_, lengths, _ := w.sh.docHist()
	return Summary{Docs: w.sh.docs(), Tokens: w.sh.tokens, Counts: counts, NK: nk, Lengths: lengths}, nil
}

// setPriors takes the priors of an update, if it has any.
func (w *base) setPriors(p *Priors) error {
	if p == nil {
		return nil
	}
	if err := p.check(w.cfg.Topics); err != nil {
		return fmt.Errorf("priors: %w", err)
	}
	w.priors = Priors{Alpha: slices.Clone(p.Alpha), Beta: p.Beta}
	w.s.setPriors(w.priors)
	return nil
}

// learnFrom adds to p, if the priors are learned after round, the
// histogram of the shard's document-topic counts.
func (w *base) learnFrom(p *Partial, round uint64) {
	if w.cfg.optimizesAfter(round) {
		p.DocTopics, _, _ = w.sh.docHist()
	}
}

// report returns the report of the worker's state, whose word part is
// over the rows of held that keep says to.
func (w *base) report(held *Sparse, keep func(row int) bool) (Summary, error) {
	if held == nil {
		return Summary{}, fmt.Errorf("worker %d holds no counts to report", w.shard)
	}
	topics, lengths, docTotals := w.sh.docHist()
	wordLL, wordTotals, nnz := wordLL(held, w.cfg.Topics, w.priors.Beta, keep)
	s := Summary{
		NK: slices.Clone(w.s.nk), DocLL: docLL(w.priors.Alpha, topics, lengths), DocTotals: docTotals,
		WordLL: wordLL, WordTotals: wordTotals, WordNNZ: nnz,
		Sampled: w.s.sampled, SampleNanos: w.sampleNanos,
	}
	return s, nil
}

// FinalReport implements schmp.FinalReporter: the shard's document-topic
// counts, which only the outputs need, sent once, after the stop, of the
// state the job ended with.
func (w *base) FinalReport() (Summary, error) {
	return Summary{DocTopic: w.sh.docTopic()}, nil
}

// setTopics sets the worker's topic totals.
func (w *base) setTopics(nk codec.Int32s) error {
	if len(nk) != w.cfg.Topics {
		return fmt.Errorf("%d topic totals, want %d", len(nk), w.cfg.Topics)
	}
	copy(w.s.nk, nk)
	return nil
}

// sampleBlock resamples the shard's tokens in block b of counts, with
// own[i] of them in row i, and returns the partial: the worker's change
// to the topic totals, the tokens moved; the caller sets its Counts.
func (w *base) sampleBlock(ctx context.Context, counts *Sparse, b int) (Partial, error) {
	t0 := time.Now()
	nk0 := slices.Clone(w.s.nk)
	moved := w.s.moved
	w.s.takeUp(counts, w.sh.own[b])
	if err := w.sh.sample(w.s, b, ctx.Err); err != nil {
		return Partial{}, err
	}
	delta := make(codec.Int32s, len(nk0))
	for t, n := range w.s.nk {
		delta[t] = n - nk0[t]
	}
	w.sampleNanos += time.Since(t0).Nanoseconds()
	return Partial{BlockID: b, DeltaNK: delta, Moved: w.s.moved - moved}, nil
}

// Worker is the rotation's worker: it keeps its documents, and holds one
// word block at a time.
type Worker struct {
	*base
	rot    scheduler.Rotation
	held   *Sparse // the block held, until pushed
	heldID int
	ready  bool         // the layout has been applied
	layout codec.Int32s // the block of every word, once applied
}

// NewWorker loads shard of shards of cfg's corpus and gives its tokens
// random topics.
func NewWorker(cfg Config, shard, shards int) (*Worker, error) {
	b, err := newBase(cfg, shard, shards)
	if err != nil {
		return nil, err
	}
	return &Worker{base: b, rot: scheduler.Rotation{Workers: shards}, heldID: -1}, nil
}

// Apply implements schmp.Worker: it takes the layout (first update), the
// topic totals, and the block the worker owns next.
func (w *Worker) Apply(u Update) error {
	if u.Layout != nil && !w.ready {
		if len(u.Layout) != w.words {
			return fmt.Errorf("layout of %d words, want %d", len(u.Layout), w.words)
		}
		if err := w.sh.layout(u.Layout, w.p); err != nil {
			return err
		}
		w.layout, w.ready = slices.Clone(u.Layout), true
	}
	if !w.ready {
		return fmt.Errorf("worker %d: an update before the layout", w.shard)
	}
	if err := w.setTopics(u.NK); err != nil {
		return err
	}
	if err := w.setPriors(u.Priors); err != nil {
		return err
	}
	for _, h := range u.Blocks {
		switch {
		case h.Owner != w.shard:
			return fmt.Errorf("worker %d received block %d of worker %d", w.shard, h.ID, h.Owner)
		case w.held != nil:
			return fmt.Errorf("worker %d received block %d while holding block %d", w.shard, h.ID, w.heldID)
		case h.ID < 0 || h.ID >= w.p:
			return fmt.Errorf("worker %d received block %d of %d", w.shard, h.ID, w.p)
		}
		if err := h.Counts.check(len(w.sh.own[h.ID]), w.cfg.Topics, false); err != nil {
			return fmt.Errorf("block %d: %w", h.ID, err)
		}
		w.held, w.heldID = &h.Counts, h.ID
	}
	return nil
}

// Push implements schmp.Worker: it samples the worker's tokens of the
// block it holds, and hands the block on.
func (w *Worker) Push(ctx context.Context, round uint64, turn scheduler.Turn) (Partial, error) {
	b := w.rot.Block(w.shard, turn.SubRound)
	if w.held == nil || w.heldID != b {
		return Partial{}, fmt.Errorf("worker %d holds block %d in sub-round %d, want block %d", w.shard, w.heldID, turn.SubRound, b)
	}
	p, err := w.sampleBlock(ctx, w.held, b)
	if err != nil {
		return p, err
	}
	counts, err := w.s.table.sparse()
	if err != nil {
		return p, fmt.Errorf("block %d: %w", b, err)
	}
	p.Counts = *counts
	w.held, w.heldID, w.pushed = nil, -1, round
	w.learnFrom(&p, round)
	return p, nil
}

// Report implements schmp.Worker.
func (w *Worker) Report() (Summary, error) { return w.report(w.held, nil) }

// UnscheduledWorker is the baseline's worker: it samples all its tokens
// against its own copy of the whole table.
type UnscheduledWorker struct {
	*base
	table *Sparse
}

// NewUnscheduledWorker loads shard of shards of cfg's corpus and gives its
// tokens random topics.
func NewUnscheduledWorker(cfg Config, shard, shards int) (*UnscheduledWorker, error) {
	b, err := newBase(cfg, shard, shards)
	if err != nil {
		return nil, err
	}
	if err := b.sh.layout(make([]int32, b.words), 1); err != nil {
		return nil, err
	}
	return &UnscheduledWorker{base: b}, nil
}

// Apply implements schmp.Worker: it takes the merged table.
func (w *UnscheduledWorker) Apply(u Table) error {
	if err := u.Counts.check(w.words, w.cfg.Topics, false); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	w.table = &u.Counts
	if err := w.setPriors(u.Priors); err != nil {
		return err
	}
	return w.setTopics(u.NK)
}

// Push implements schmp.Worker: a sweep over all the worker's tokens.
func (w *UnscheduledWorker) Push(ctx context.Context, round uint64, _ scheduler.Turn) (Partial, error) {
	if w.table == nil {
		return Partial{}, fmt.Errorf("worker %d has no table", w.shard)
	}
	p, err := w.sampleBlock(ctx, w.table, 0)
	if err != nil {
		return p, err
	}
	p.Counts = *w.s.table.changes()
	w.pushed = round
	w.learnFrom(&p, round)
	return p, nil
}

// Report implements schmp.Worker: the word part over the words w with
// w mod P = shard.
func (w *UnscheduledWorker) Report() (Summary, error) {
	return w.report(w.table, func(row int) bool { return row%w.p == w.shard })
}
