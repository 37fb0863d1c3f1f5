package lda

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// model is what both coordinators share: the corpus's sizes, the topic
// totals, the reports, the outputs.
type model struct {
	cfg    Config
	k, w   int
	vocab  []string // nil: words are shown by id
	tokens int64    // N
	docs   int      // non-empty documents
	nk     codec.Int32s
	perTok []int64 // tokens of each word

	last      Summary   // the totals of the last reports
	lastLL    float64   // the log-likelihood per token of the last report
	docTopic  []*Sparse // the workers' final reports' (Finish)
	t0        time.Time // the first round
	pulled    uint64    // the last round pulled
	pulledAt  time.Time // when its partials were all in
	trace     []Report
	heldOut   *heldOut
	wordCount func(fn func(w, t, n int32)) // every non-zero count of the table

	priors   Priors        // as the workers have them from the next round on
	lengths  *Hist         // of the documents' lengths
	learned  int           // how many times the priors were learned
	test     []testDoc     // the held-out documents, once read
	testTime time.Duration // spent on held-out perplexity at reports
}

func newModel(cfg Config) (*model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := openCorpus(&cfg)
	if err != nil {
		return nil, err
	}
	m := &model{cfg: cfg, k: cfg.Topics, w: c.words, priors: symmetricPriors(cfg.Topics, cfg.Alpha, cfg.Beta)}
	switch {
	case c.text != nil:
		m.vocab = c.text.words
	case cfg.Vocab != "":
		if m.vocab, err = readVocab(cfg.Vocab, c.words); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// start merges the workers' initial counts: it sets the totals, and
// returns a function that appends row w of the summed table (word w) to a
// Sparse. The rows are summed one at a time, each as it would be in a
// table of all the words (the same order of topics), so that the whole
// table is never held but as the Sparse rows the caller builds.
func (m *model) start(shards []Summary) (func(dst *Sparse, w int32) error, error) {
	if len(shards) != m.cfg.Workers {
		return nil, fmt.Errorf("%d shard summaries for %d workers", len(shards), m.cfg.Workers)
	}
	m.t0 = time.Now()
	m.pulledAt = m.t0
	m.nk = make(codec.Int32s, m.k)
	m.perTok = make([]int64, m.w)
	room := make([]int32, m.w)
	lengths := newHistBuilder(1)
	// at[w]: where word w's rows start in rowsOf, which lists them as
	// (shard, row) pairs in the order of the shards and their rows.
	at := make([]int32, m.w+1)
	for p, s := range shards {
		if s.Counts == nil {
			return nil, fmt.Errorf("worker %d: no counts", p)
		}
		if s.Lengths == nil {
			return nil, fmt.Errorf("worker %d: no document lengths", p)
		}
		if err := s.Lengths.check(1); err != nil {
			return nil, fmt.Errorf("worker %d: document lengths: %w", p, err)
		}
		lengths.addHist(s.Lengths)
		if err := s.Counts.check(-1, m.k, false); err != nil {
			return nil, fmt.Errorf("worker %d: counts: %w", p, err)
		}
		for r, w := range s.Counts.IDs {
			if w < 0 || int(w) >= m.w {
				return nil, fmt.Errorf("worker %d: word %d of %d", p, w, m.w)
			}
			room[w] += s.Counts.Offsets[r+1] - s.Counts.Offsets[r]
			at[w+1]++
		}
		m.tokens += s.Tokens
		m.docs += s.Docs
	}
	if m.tokens == 0 {
		return nil, fmt.Errorf("the corpus has no tokens")
	}
	m.lengths = lengths.hist()
	for w := range m.w {
		at[w+1] += at[w]
	}
	next := slices.Clone(at[:m.w])
	rowsOf := make([][2]int32, at[m.w])
	for p, s := range shards {
		var n int64
		for r, w := range s.Counts.IDs {
			rowsOf[next[w]] = [2]int32{int32(p), int32(r)}
			next[w]++
			topics, counts := s.Counts.Row(r)
			for j, t := range topics {
				m.nk[t] += counts[j]
				m.perTok[w] += int64(counts[j])
				n += int64(counts[j])
			}
		}
		if n != s.Tokens {
			return nil, fmt.Errorf("worker %d: counts of %d tokens, says %d", p, n, s.Tokens)
		}
	}
	var row rows
	empty := &Sparse{Offsets: codec.Int32s{0, 0}}
	return func(dst *Sparse, w int32) error {
		row.build(empty, m.k, func(int) int32 { return room[w] })
		for _, pr := range rowsOf[at[w]:at[w+1]] {
			topics, counts := shards[pr[0]].Counts.Row(int(pr[1]))
			for j, t := range topics {
				row.add(0, t, counts[j])
			}
		}
		return row.appendRow(dst, 0)
	}, nil
}

// pullTopics adds the partials' changes of round to the topic totals, and
// checks that they still count every token once.
func (m *model) pullTopics(round uint64, partials []Partial) error {
	m.pulled, m.pulledAt = round, time.Now()
	if len(partials) != m.cfg.Workers {
		return fmt.Errorf("%d partials for %d workers", len(partials), m.cfg.Workers)
	}
	for p, r := range partials {
		if len(r.DeltaNK) != m.k {
			return fmt.Errorf("worker %d: %d topic changes, want %d", p, len(r.DeltaNK), m.k)
		}
		for t, d := range r.DeltaNK {
			m.nk[t] += d
		}
	}
	var n int64
	for t, c := range m.nk {
		if c < 0 {
			return fmt.Errorf("count invariant: n_k[%d] = %d < 0", t, c)
		}
		n += int64(c)
	}
	if n != m.tokens {
		return fmt.Errorf("count invariant: Σ n_k = %d, want N = %d", n, m.tokens)
	}
	return nil
}

// checkTable checks that the table's counts add up, topic by topic, to
// the totals (Σ_w n_wk = n_k).
func (m *model) checkTable() error {
	totals := make([]int64, m.k)
	m.wordCount(func(_, t, n int32) { totals[t] += int64(n) })
	for t, n := range totals {
		if n != int64(m.nk[t]) {
			return fmt.Errorf("count invariant: Σ_w n_wk = %d for topic %d, but n_k = %d", n, t, m.nk[t])
		}
	}
	return nil
}

// learn learns the priors after round from the workers' histograms of
// their document-topic counts (α) and the table (β), and returns them for
// the workers.
func (m *model) learn(round uint64, partials []Partial) (*Priors, error) {
	docs := newHistBuilder(m.k)
	for p, r := range partials {
		if r.DocTopics == nil {
			return nil, fmt.Errorf("round %d: worker %d sent no document-topic histogram", round, p)
		}
		if err := r.DocTopics.check(m.k); err != nil {
			return nil, fmt.Errorf("round %d: worker %d: %w", round, p, err)
		}
		docs.addHist(r.DocTopics)
	}
	topics := docs.hist()
	// The histograms count every token once: Σ_n n·f_k(n) = n_k.
	for t := range m.k {
		values, freqs := topics.Row(t)
		var n int64
		for i, v := range values {
			n += int64(v) * int64(freqs[i])
		}
		if n != int64(m.nk[t]) {
			return nil, fmt.Errorf("round %d: count invariant: the document-topic histograms count %d tokens of topic %d, n_k = %d", round, n, t, m.nk[t])
		}
	}
	counts, totals := newHistBuilder(1), newHistBuilder(1)
	m.wordCount(func(_, _, n int32) { counts.add(0, n, 1) })
	for _, n := range m.nk {
		if n > 0 {
			totals.add(0, n, 1)
		}
	}
	m.priors = Priors{
		Alpha: optimizeAlpha(m.priors.Alpha, topics, m.lengths),
		Beta:  optimizeBeta(m.priors.Beta, counts.hist(), totals.hist(), m.w),
	}
	if err := m.priors.check(m.k); err != nil {
		return nil, fmt.Errorf("round %d: learning the priors: %w", round, err)
	}
	m.learned++
	return &Priors{Alpha: slices.Clone(m.priors.Alpha), Beta: m.priors.Beta}, nil
}

// Objective implements schmp.Coordinator: the collapsed log-likelihood
// log p(w, z) per token, after checking that the reports agree: every
// worker has the same topic totals n_k, which the documents' counts and
// the words' counts both add up to, and which count N tokens.
func (m *model) Objective(reports []Summary) (schmp.Progress, error) {
	if len(reports) == 0 || len(reports[0].NK) != m.k {
		return schmp.Progress{}, fmt.Errorf("reports without topic totals")
	}
	nk := reports[0].NK
	doc := make([]int64, m.k)
	word := make([]int64, m.k)
	sum := Summary{}
	for p, r := range reports {
		if !slices.Equal(r.NK, nk) {
			return schmp.Progress{}, fmt.Errorf("count invariant: worker %d has other topic totals than worker 0", p)
		}
		if len(r.DocTotals) != m.k || len(r.WordTotals) != m.k {
			return schmp.Progress{}, fmt.Errorf("worker %d: report without totals", p)
		}
		for t := range m.k {
			doc[t] += int64(r.DocTotals[t])
			word[t] += int64(r.WordTotals[t])
		}
		sum.DocLL += r.DocLL
		sum.WordLL += r.WordLL
		sum.WordNNZ += r.WordNNZ
		sum.Sampled += r.Sampled
		sum.SampleNanos += r.SampleNanos
	}
	var n int64
	for t, c := range nk {
		if c < 0 || doc[t] != int64(c) || word[t] != int64(c) {
			return schmp.Progress{}, fmt.Errorf("count invariant: topic %d: n_k = %d, Σ_d n_dk = %d, Σ_w n_wk = %d", t, c, doc[t], word[t])
		}
		n += int64(c)
	}
	if n != m.tokens {
		return schmp.Progress{}, fmt.Errorf("count invariant: Σ n_k = %d, want N = %d", n, m.tokens)
	}
	ll := sum.DocLL + sum.WordLL + topicLL(nk, m.w, m.priors.Beta)
	m.last, m.lastLL = sum, ll/float64(m.tokens)
	r := Report{
		Time: m.pulledAt.Sub(m.t0), Round: m.pulled, Iter: m.iter(),
		LogLik: m.lastLL, Tokens: sum.Sampled, SampleNanos: sum.SampleNanos,
		Priors: Priors{Alpha: slices.Clone(m.priors.Alpha), Beta: m.priors.Beta}, Perplexity: math.NaN(),
	}
	if m.cfg.TestDocword != "" && (m.cfg.TestEvery == 0 || math.Mod(r.Iter, float64(m.cfg.TestEvery)) == 0) {
		t0 := time.Now()
		perp, _, err := m.perplexity()
		if err != nil {
			return schmp.Progress{}, err
		}
		r.Perplexity = perp
		m.testTime += time.Since(t0)
	}
	r.TestTime = m.testTime
	m.trace = append(m.trace, r)
	return schmp.Progress{Objective: m.lastLL, NNZ: sum.WordNNZ, Metrics: r.metrics(m.cfg.TestDocword != "")}, nil
}

// iter returns the iterations that the rounds pulled make.
func (m *model) iter() float64 {
	return float64(m.pulled) / float64(m.cfg.RoundsPerIteration())
}

// WriteModel implements schmp.Coordinator: the top words of every topic.
// The runtime writes the model's files (Outputs) instead.
func (m *model) WriteModel(w io.Writer) error {
	return m.writeTopWords(w)
}

// Coordinator is the rotation's coordinator: it cuts the vocabulary into
// blocks, routes every block to its next owner and sums the changes to
// the topic totals.
type Coordinator struct {
	*model
	rot    scheduler.Rotation
	layout codec.Int32s // the block of each word
	words  [][]int32    // the words of each block, ascending
	blocks []Sparse     // the counts of each block, as of the last pull
}

// NewCoordinator returns the coordinator of cfg.
func NewCoordinator(cfg Config) (*Coordinator, error) {
	m, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{model: m, rot: scheduler.Rotation{Workers: cfg.Workers}}
	m.wordCount = c.eachCount
	return c, nil
}

// Start implements schmp.Coordinator: it sums the workers' counts, cuts
// the vocabulary into P blocks balanced by tokens, and hands every worker
// its first block.
func (c *Coordinator) Start(shards []Summary) (Update, error) {
	row, err := c.start(shards)
	if err != nil {
		return Update{}, err
	}
	c.layout, c.words = cutBlocks(c.perTok, c.cfg.Workers)
	c.blocks = make([]Sparse, len(c.words))
	u := Update{Layout: c.layout, NK: slices.Clone(c.nk)}
	for b, words := range c.words {
		s := &c.blocks[b]
		s.startRows(len(words))
		for _, w := range words {
			if err := row(s, w); err != nil {
				return Update{}, err
			}
		}
		u.Blocks = append(u.Blocks, Handoff{Owner: c.rot.Owner(b, 0), ID: b, Counts: *s})
	}
	return u, nil
}

// cutBlocks cuts the words into p blocks balanced by tokens: the words,
// most tokens first, each go to the block with fewest tokens so far. It
// returns the block of each word and the words of each block.
func cutBlocks(tokens []int64, p int) (codec.Int32s, [][]int32) {
	order := make([]int32, len(tokens))
	for w := range order {
		order[w] = int32(w)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(tokens[b], tokens[a]) })
	load := make([]int64, p)
	layout := make(codec.Int32s, len(tokens))
	words := make([][]int32, p)
	for _, w := range order {
		b := 0
		for i := range load {
			if load[i] < load[b] || (load[i] == load[b] && len(words[i]) < len(words[b])) {
				b = i
			}
		}
		load[b] += tokens[w]
		layout[w] = int32(b)
		words[b] = append(words[b], w)
	}
	for _, ws := range words {
		slices.Sort(ws)
	}
	return layout, words
}

// Pull implements schmp.Coordinator: it checks that every worker sent the
// block it held, and sends each block to its owner in the next sub-round.
func (c *Coordinator) Pull(round uint64, turn scheduler.Turn, partials []Partial) (Update, schmp.Feedback, error) {
	if err := c.pullTopics(round, partials); err != nil {
		return Update{}, schmp.Feedback{}, fmt.Errorf("round %d: %w", round, err)
	}
	u := Update{NK: slices.Clone(c.nk)}
	fb := schmp.Feedback{Vars: make(codec.Int32s, len(partials)), Delta: make(codec.Float64s, len(partials))}
	ring, gathered := c.cfg.ring(), c.cfg.gathers(round)
	for p, r := range partials {
		b := c.rot.Block(p, turn.SubRound)
		if r.BlockID != b {
			return Update{}, fb, fmt.Errorf("worker %d sent block %d in sub-round %d, want %d", p, r.BlockID, turn.SubRound, b)
		}
		if gathered {
			if err := r.Counts.check(len(c.words[b]), c.k, false); err != nil {
				return Update{}, fb, fmt.Errorf("worker %d: block %d: %w", p, b, err)
			}
			c.blocks[b] = r.Counts
		}
		if !ring {
			u.Blocks = append(u.Blocks, Handoff{Owner: c.rot.Owner(b, turn.SubRound+1), ID: b, Counts: r.Counts})
		}
		fb.Vars[p] = int32(b)
		fb.Delta[p] = float64(r.Moved)
	}
	if c.cfg.Check && gathered {
		if err := c.checkTable(); err != nil {
			return Update{}, fb, fmt.Errorf("round %d: %w", round, err)
		}
	}
	if c.cfg.optimizesAfter(round) {
		var err error
		if u.Priors, err = c.learn(round, partials); err != nil {
			return Update{}, fb, err
		}
	}
	return u, fb, nil
}

// eachCount calls fn with every non-zero count of the table.
func (c *Coordinator) eachCount(fn func(w, t, n int32)) {
	for b, words := range c.words {
		s := &c.blocks[b]
		for i, w := range words {
			topics, counts := s.Row(i)
			for j, t := range topics {
				fn(w, t, counts[j])
			}
		}
	}
}

// UnscheduledCoordinator is the baseline's coordinator: it merges the
// workers' changes into the table once per iteration and sends the whole
// table to every worker.
type UnscheduledCoordinator struct {
	*model
	table *Sparse // row w is word w
}

// NewUnscheduledCoordinator returns the baseline's coordinator of cfg.
func NewUnscheduledCoordinator(cfg Config) (*UnscheduledCoordinator, error) {
	m, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	c := &UnscheduledCoordinator{model: m}
	m.wordCount = c.eachCount
	return c, nil
}

// Start implements schmp.Coordinator: the summed table, for every worker.
func (c *UnscheduledCoordinator) Start(shards []Summary) (Table, error) {
	row, err := c.start(shards)
	if err != nil {
		return Table{}, err
	}
	c.table = &Sparse{}
	c.table.startRows(c.w)
	for w := range int32(c.w) {
		if err := row(c.table, w); err != nil {
			return Table{}, err
		}
	}
	return Table{NK: slices.Clone(c.nk), Counts: *c.table}, nil
}

// Pull implements schmp.Coordinator: the table plus every worker's
// changes.
func (c *UnscheduledCoordinator) Pull(round uint64, _ scheduler.Turn, partials []Partial) (Table, schmp.Feedback, error) {
	if err := c.pullTopics(round, partials); err != nil {
		return Table{}, schmp.Feedback{}, fmt.Errorf("round %d: %w", round, err)
	}
	var table rows
	table.build(c.table, c.k, func(w int) int32 { return int32(min(c.perTok[w], int64(c.k))) })
	var moved int64
	for p, r := range partials {
		if err := r.Counts.check(-1, c.k, true); err != nil {
			return Table{}, schmp.Feedback{}, fmt.Errorf("worker %d: changes: %w", p, err)
		}
		for i, w := range r.Counts.IDs {
			if w < 0 || int(w) >= c.w {
				return Table{}, schmp.Feedback{}, fmt.Errorf("worker %d: word %d of %d", p, w, c.w)
			}
			topics, counts := r.Counts.Row(i)
			for j, t := range topics {
				table.add(w, t, counts[j])
			}
		}
		moved += r.Moved
	}
	var err error
	if c.table, err = table.sparse(); err != nil {
		return Table{}, schmp.Feedback{}, fmt.Errorf("round %d: count invariant: %w", round, err)
	}
	if c.cfg.Check {
		if err := c.checkTable(); err != nil {
			return Table{}, schmp.Feedback{}, fmt.Errorf("round %d: %w", round, err)
		}
	}
	fb := schmp.Feedback{Vars: codec.Int32s{0}, Delta: codec.Float64s{float64(moved)}}
	u := Table{NK: slices.Clone(c.nk), Counts: *c.table}
	if c.cfg.optimizesAfter(round) {
		if u.Priors, err = c.learn(round, partials); err != nil {
			return Table{}, fb, err
		}
	}
	return u, fb, nil
}

// eachCount calls fn with every non-zero count of the table.
func (c *UnscheduledCoordinator) eachCount(fn func(w, t, n int32)) {
	for w := range c.table.Rows() {
		topics, counts := c.table.Row(w)
		for j, t := range topics {
			fn(int32(w), t, counts[j])
		}
	}
}
