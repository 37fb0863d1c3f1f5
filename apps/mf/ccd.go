package mf

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// SumsPartial, the R of CCD++, is a worker's share of the new column of H:
// for every item i, Num[i] = Σ_u res_ui·w_ut and Den[i] = Σ_u w_ut² over
// the worker's ratings of i.
type SumsPartial struct {
	Num codec.Float64s `msgpack:"n"`
	Den codec.Float64s `msgpack:"d"`
	Stats
}

// ccdSlots returns the number of CCD++'s rank-one blocks: the K features
// and, with biases, the biases (b, c), whose term b_u + c_i is updated as a
// feature whose other side is fixed at 1.
func (c Config) ccdSlots() int {
	if c.biased() {
		return c.Rank + 1
	}
	return c.Rank
}

// slot returns the block that CCD++ updates in sub-round s: a feature
// (0…Rank−1) or, with biases, ccdBias.
func (c Config) slot(s uint64) int {
	k := int(s / uint64(c.Inner) % uint64(c.ccdSlots()))
	if c.biased() {
		return k - 1 // the biases come first: they explain most
	}
	return k
}

// ccdBias is the slot of the biases.
const ccdBias = -1

// ccdWorker is worker p of CCD++ (Yu et al. 2012). It keeps W and H column
// by column, its users' biases and all items' biases, and for each of its
// ratings the residual without the current slot s, res = r − μ − Σ_{slots
// ≠ s} (that slot's term). A round of a feature t updates w_t exactly for
// its users, w_ut = Σ_i res_ui·h_it / (λ_u + Σ_i h_it²) over the user's
// ratings (λ_u = λ·n_u, or λ with Unweighted), and pushes its parts of
// the sums of the same for h_t; the coordinator completes h_t and sends it
// back. A round of the biases sets b_u = Σ_i (res_ui − c_i)/(n_u + λ_b)
// and pushes the sums of res_ui − b_u for c.
type ccdWorker struct {
	*shard
	w, h    [][]float64 // columns: w[t][u], h[t][i]
	bs      biases
	res     []float64 // by training rating
	cur     int       // the slot res leaves out
	round   uint64
	factors bool
	byUser  []int   // the ratings of user u are train's [byUser[u], byUser[u+1])
	item    []int32 // the items of train: a round reads only them and res
}

func newCCDWorker(cfg Config, p int) (*ccdWorker, error) {
	s, err := loadShard(cfg, p)
	if err != nil {
		return nil, err
	}
	if s.ix.Blocks != 1 {
		return nil, fmt.Errorf("worker %d: the ratings are cut into %d blocks, want 1", p, s.ix.Blocks)
	}
	w := &ccdWorker{shard: s, res: make([]float64, s.train.len()), bs: s.initBiases()}
	rows := s.initUsers(cfg.Rank)
	w.w = columns(rows, len(s.users), cfg.Rank)
	w.byUser, w.item = s.train.block(0).start, s.train.item
	return w, nil
}

// heldSSE returns Σ(r − r̂)² over held-out ratings rs (test or validation).
func (w *ccdWorker) heldSSE(rs []entry) float64 {
	var s float64
	for _, e := range rs {
		d := e.r - w.bs.at(e) - w.predictFactors(int(e.u), e.i)
		s += d * d
	}
	return s
}

// columns returns the n×k matrix of rows (row by row) column by column.
func columns(rows []float64, n, k int) [][]float64 {
	cols := make([][]float64, k)
	for t := range cols {
		cols[t] = make([]float64, n)
		for i := range n {
			cols[t][i] = rows[i*k+t]
		}
	}
	return cols
}

// rows returns the matrix of cols row by row.
func rows(cols [][]float64) []float64 {
	if len(cols) == 0 {
		return nil
	}
	k, n := len(cols), len(cols[0])
	out := make([]float64, n*k)
	for t, c := range cols {
		for i, v := range c {
			out[i*k+t] = v
		}
	}
	return out
}

// Describe implements schmp.Worker.
func (w *ccdWorker) Describe() (Summary, error) { return w.describe(), nil }

// Apply implements schmp.Worker: all of H at the start, then one column a
// round.
func (w *ccdWorker) Apply(u FullUpdate) error {
	k := w.cfg.Rank
	w.round = u.Round
	if u.Round == 0 {
		w.factors = u.Factors
		if len(u.H) != len(w.ix.ItemIDs)*k {
			return fmt.Errorf("first update: H has %d values, want %d", len(u.H), len(w.ix.ItemIDs)*k)
		}
		if err := w.bs.setItems(0, u.C, 0, len(w.ix.ItemIDs)); err != nil {
			return err
		}
		if err := w.warmApply(w.bs, rows(w.w), u.H, u.FoldBias); err != nil {
			return err
		}
		w.h = columns(u.H, len(w.ix.ItemIDs), k)
		w.cur = w.cfg.slot(0)
		j := 0
		w.train.each(func(u int, i int32, r float64) {
			w.res[j] = r - w.bs.of(u, i) - w.predictFactors(u, i) + w.term(w.cur, u, i)
			j++
		})
		return nil
	}
	switch {
	case u.Bias && !w.bs.on():
		return fmt.Errorf("update of round %d: item biases for a model without biases", u.Round)
	case u.Bias:
		return w.bs.setItems(u.Round, u.Col, 0, len(w.ix.ItemIDs))
	case u.Feature < 0 || u.Feature >= k || len(u.Col) != len(w.ix.ItemIDs):
		return fmt.Errorf("update of round %d: column %d of %d values, want one of %d columns of %d", u.Round, u.Feature, len(u.Col), k, len(w.ix.ItemIDs))
	}
	copy(w.h[u.Feature], u.Col)
	return nil
}

// Push implements schmp.Worker.
func (w *ccdWorker) Push(_ context.Context, _ uint64, turn scheduler.Turn) (SumsPartial, error) {
	t0 := time.Now()
	if w.h == nil {
		return SumsPartial{}, errNotStarted
	}
	if turn.SubRound != w.round {
		return SumsPartial{}, fmt.Errorf("round %d on the state after round %d (CCD++ needs --depth 1)", turn.SubRound+1, w.round)
	}
	t := w.cfg.slot(turn.SubRound)
	a := w.cur
	switching := t != a
	w.cur = t
	n := len(w.ix.ItemIDs)
	num := make(codec.Float64s, n)
	den := make(codec.Float64s, n)
	for u := range w.users {
		lo, hi := w.byUser[u], w.byUser[u+1]
		items, res := w.item[lo:hi], w.res[lo:hi]
		// On a new slot t, res leaves out the last one, a, instead of t,
		// folded into the pass over each user's ratings (which stay in
		// cache for the second pass).
		if switching {
			w.switchSlot(res, items, u, a, t)
		}
		if t == ccdBias {
			var s float64
			for k, i := range items {
				s += res[k] - w.bs.c[i]
			}
			v := s / (float64(len(items)) + w.cfg.BiasLambda)
			w.bs.b[u] = v
			for k, i := range items {
				num[i] += res[k] - v
				den[i]++
			}
			continue
		}
		wt, ht := w.w[t], w.h[t]
		var s, q float64
		for k, i := range items {
			h := ht[i]
			s += res[k] * h
			q += h * h
		}
		v := 0.0
		if d := w.userReg(u) + q; d > 0 {
			v = s / d
		}
		wt[u] = v
		for k, i := range items {
			num[i] += res[k] * v
			den[i] += v * v
		}
	}
	work := float64(w.train.len()) / float64(w.cfg.RoundsPerIter())
	return SumsPartial{Num: num, Den: den, Stats: Stats{Work: work, Nanos: time.Since(t0).Nanoseconds()}}, nil
}

// userReg returns the factor regularization of user u in F: λ·n_u, or λ
// with Unweighted.
func (w *ccdWorker) userReg(u int) float64 {
	return w.cfg.Lambda * w.cfg.weight(w.ix.UserCount[w.p][u])
}

// term returns slot s's term of the prediction of user u (an index on the
// worker) and item i: w_us·h_is, or b_u + c_i.
func (w *ccdWorker) term(s, u int, i int32) float64 {
	if s == ccdBias {
		return w.bs.b[u] + w.bs.c[i]
	}
	return w.w[s][u] * w.h[s][i]
}

// switchSlot moves the residuals res of user u's ratings of items from
// leaving out slot a to leaving out slot t: res += term_t − term_a.
func (w *ccdWorker) switchSlot(res []float64, items []int32, u, a, t int) {
	if a != ccdBias && t != ccdBias {
		wt, ht, wa, ha := w.w[t][u], w.h[t], w.w[a][u], w.h[a]
		for k, i := range items {
			res[k] += wt*ht[i] - wa*ha[i]
		}
		return
	}
	for k, i := range items {
		res[k] += w.term(t, u, i) - w.term(a, u, i)
	}
}

// predictFactors returns w_u·h_i.
func (w *ccdWorker) predictFactors(u int, i int32) float64 {
	var p float64
	for t := range w.w {
		p += w.w[t][u] * w.h[t][i]
	}
	return p
}

// Report implements schmp.Worker: every state is evaluated. Worker 0
// answers for H and the item biases.
func (w *ccdWorker) Report() (Summary, error) {
	if w.h == nil {
		return Summary{}, errNotStarted
	}
	var e2 float64
	for u := range w.users {
		lo, hi := w.byUser[u], w.byUser[u+1]
		for k, i := range w.item[lo:hi] {
			d := w.res[lo+k] - w.term(w.cur, u, i)
			e2 += d * d
		}
	}
	s := Summary{Round: w.round, Exact: true, SSE: e2, TestSSE: w.heldSSE(w.test), ValSSE: w.heldSSE(w.val)}
	s.WNorm = w.cfg.factorNorm(rows(w.w), w.cfg.Rank, w.ix.UserCount[w.p])
	if w.p == 0 {
		s.HNorm = w.cfg.factorNorm(rows(w.h), w.cfg.Rank, w.ix.ItemCount)
	}
	if w.bs.on() {
		s.BNorm = sumSq(w.bs.b)
		if w.p == 0 {
			s.CNorm = sumSq(w.bs.c)
		}
	}
	if w.factors {
		// Copies: the runtime may encode the report after the next Push.
		s.W, s.B = rows(w.w), slices.Clone(w.bs.b)
	}
	if w.round == 0 {
		w.foldReport(&s, w.factors)
	}
	return s, nil
}

// ccdCoordinator completes each new column of H from the workers' sums:
// h_it = Σ_p Num_p[i] / (λ_i + Σ_p Den_p[i]), λ_i the item's factor
// regularization, and the item biases c_i = Σ_p Num_p[i] / (Σ_p Den_p[i]
// + λ_b), Den then counting the item's ratings.
type ccdCoordinator struct {
	base
	h         [][]float64 // columns
	c         []float64   // nil without biases
	itemCount []int32     // n_i, from worker 0
}

// Start implements schmp.Coordinator.
func (c *ccdCoordinator) Start(sums []Summary) (FullUpdate, error) {
	if err := c.start(sums); err != nil {
		return FullUpdate{}, err
	}
	if c.itemCount = sums[0].ItemCount; len(c.itemCount) != len(c.m.ItemIDs) {
		return FullUpdate{}, fmt.Errorf("worker 0 sent %d item counts for %d items", len(c.itemCount), len(c.m.ItemIDs))
	}
	h, cb, err := c.initItems(sums)
	if err != nil {
		return FullUpdate{}, err
	}
	c.h, c.c = columns(h, len(c.m.ItemIDs), c.cfg.Rank), cb
	return FullUpdate{Factors: c.reportFactors(), H: h, C: slices.Clone(c.c), FoldBias: slices.Clone(c.foldC)}, nil
}

// Pull implements schmp.Coordinator.
func (c *ccdCoordinator) Pull(round uint64, turn scheduler.Turn, partials []SumsPartial) (FullUpdate, schmp.Feedback, error) {
	t := c.cfg.slot(turn.SubRound)
	n := len(c.m.ItemIDs)
	num := make([]float64, n)
	den := make([]float64, n)
	for p, part := range partials {
		if len(part.Num) != n || len(part.Den) != n {
			return FullUpdate{}, schmp.Feedback{}, fmt.Errorf("worker %d sent %d and %d sums for %d items", p, len(part.Num), len(part.Den), n)
		}
		for i := range n {
			num[i] += part.Num[i]
			den[i] += part.Den[i]
		}
		c.account(part.Stats)
	}
	col, reg := c.c, func(int) float64 { return c.cfg.BiasLambda }
	if t != ccdBias {
		col, reg = c.h[t], c.itemReg
	}
	var moved float64
	for i := range n {
		v := 0.0
		if d := reg(i) + den[i]; d > 0 {
			v = num[i] / d
		}
		moved += (v - col[i]) * (v - col[i])
		col[i] = v
	}
	c.pulled = round
	fb := schmp.Feedback{Vars: codec.Int32s{int32(t + 1)}, Delta: codec.Float64s{moved}}
	u := FullUpdate{Round: round, Feature: max(t, 0), Bias: t == ccdBias, Col: slices.Clone(col)}
	return u, fb, nil
}

// itemReg returns the factor regularization of item i in F: λ·n_i, or λ
// with Unweighted.
func (c *ccdCoordinator) itemReg(i int) float64 {
	return c.cfg.Lambda * c.cfg.weight(c.itemCount[i])
}

// Objective implements schmp.Coordinator.
func (c *ccdCoordinator) Objective(reports []Summary) (schmp.Progress, error) {
	return c.evaluate(reports, func() ([]float64, []float64) { return rows(c.h), c.c })
}

// WriteModel implements schmp.Coordinator.
func (c *ccdCoordinator) WriteModel(w io.Writer) error { return c.writeModel(w) }
