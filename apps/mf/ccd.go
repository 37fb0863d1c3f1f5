package mf

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// SumsPartial, the R of CCD++, is a worker's share of the new column of H:
// for every item i, Num[i] = Σ_u res_ui·w_ut and Den[i] = Σ_u w_ut² over
// the worker's ratings of i.
type SumsPartial struct {
	Num wire.Float64s `msgpack:"n"`
	Den wire.Float64s `msgpack:"d"`
	Stats
}

// feature returns the feature that CCD++ updates in sub-round s.
func (c Config) feature(s uint64) int {
	return int(s / uint64(c.Inner) % uint64(c.Rank))
}

// ccdWorker is worker p of CCD++ (Yu et al. 2012). It keeps W and H column
// by column, and for each of its ratings the residual without the current
// feature t, res = r − Σ_{k≠t} w_uk·h_ik. A round updates w_t exactly for
// its users, w_ut = Σ_i res_ui·h_it / (λ + Σ_i h_it²) over the user's
// ratings, and pushes its parts of the sums of the same for h_t; the
// coordinator completes h_t and sends it back.
type ccdWorker struct {
	*shard
	w, h    [][]float64 // columns: w[t][u], h[t][i]
	res     []float64   // by training rating
	cur     int         // the feature res leaves out
	round   uint64
	factors bool
	byUser  []int   // the ratings of user u are train[byUser[u]:byUser[u+1]]
	item    []int32 // train[j].i, apart: a round reads only the items and res
}

func newCCDWorker(cfg Config, p int) (*ccdWorker, error) {
	s, err := loadShard(cfg, p)
	if err != nil {
		return nil, err
	}
	w := &ccdWorker{shard: s, res: make([]float64, len(s.train))}
	rows := s.initUsers(cfg.Rank)
	w.w = columns(rows, len(s.users), cfg.Rank)
	w.byUser = make([]int, len(s.users)+1)
	w.item = make([]int32, len(s.train))
	for j, e := range s.train {
		w.byUser[e.u+1]++
		w.item[j] = e.i
	}
	for u := range s.users {
		w.byUser[u+1] += w.byUser[u]
	}
	return w, nil
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
		w.h = columns(u.H, len(w.ix.ItemIDs), k)
		w.cur = 0
		for j, e := range w.train {
			r := e.r
			for t := 1; t < k; t++ {
				r -= w.w[t][e.u] * w.h[t][e.i]
			}
			w.res[j] = r
		}
		return nil
	}
	if u.Feature < 0 || u.Feature >= k || len(u.Col) != len(w.ix.ItemIDs) {
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
	t := w.cfg.feature(turn.SubRound)
	// On a new feature t, res leaves out the last one, cur, instead of t:
	// res += w_ut·h_it − w_u,cur·h_i,cur, folded into the pass over each
	// user's ratings (which stay in cache for the second pass).
	wa, ha := w.w[w.cur], w.h[w.cur]
	switching := t != w.cur
	w.cur = t
	wt, ht := w.w[t], w.h[t]
	num := make(wire.Float64s, len(ht))
	den := make(wire.Float64s, len(ht))
	lambda := w.cfg.Lambda
	for u := range wt {
		lo, hi := w.byUser[u], w.byUser[u+1]
		items, res := w.item[lo:hi], w.res[lo:hi]
		var a, b float64
		if switching {
			wu, wau := wt[u], wa[u]
			for k, i := range items {
				res[k] += wu*ht[i] - wau*ha[i]
			}
		}
		for k, i := range items {
			h := ht[i]
			a += res[k] * h
			b += h * h
		}
		v := 0.0
		if lambda+b > 0 {
			v = a / (lambda + b)
		}
		wt[u] = v
		for k, i := range items {
			num[i] += res[k] * v
			den[i] += v * v
		}
	}
	work := float64(len(w.train)) / float64(w.cfg.RoundsPerIter())
	return SumsPartial{Num: num, Den: den, Stats: Stats{Work: work, Nanos: time.Since(t0).Nanoseconds()}}, nil
}

// Report implements schmp.Worker: every state is evaluated. Worker 0
// answers for ‖H‖².
func (w *ccdWorker) Report() (Summary, error) {
	if w.h == nil {
		return Summary{}, errNotStarted
	}
	wc, hc := w.w[w.cur], w.h[w.cur]
	var e2 float64
	for j, e := range w.train {
		d := w.res[j] - wc[e.u]*hc[w.item[j]]
		e2 += d * d
	}
	var t2 float64
	for _, e := range w.test {
		d := e.r
		for t := range w.w {
			d -= w.w[t][e.u] * w.h[t][e.i]
		}
		t2 += d * d
	}
	s := Summary{Round: w.round, Exact: true, SSE: e2, TestSSE: t2}
	for t := range w.w {
		s.WNorm += sumSq(w.w[t])
		if w.p == 0 {
			s.HNorm += sumSq(w.h[t])
		}
	}
	if w.factors {
		s.W = rows(w.w)
	}
	return s, nil
}

// ccdCoordinator completes each new column of H from the workers' sums:
// h_it = Σ_p Num_p[i] / (λ + Σ_p Den_p[i]).
type ccdCoordinator struct {
	base
	h [][]float64 // columns
}

// Start implements schmp.Coordinator.
func (c *ccdCoordinator) Start(sums []Summary) (FullUpdate, error) {
	if err := c.start(sums); err != nil {
		return FullUpdate{}, err
	}
	h := initItems(c.m.ItemIDs, c.cfg.Seed, sums[0].Mean, sums[0].Std, c.cfg.Rank)
	c.h = columns(h, len(c.m.ItemIDs), c.cfg.Rank)
	return FullUpdate{Factors: c.m.Factors, H: h}, nil
}

// Pull implements schmp.Coordinator.
func (c *ccdCoordinator) Pull(round uint64, turn scheduler.Turn, partials []SumsPartial) (FullUpdate, schmp.Feedback, error) {
	t := c.cfg.feature(turn.SubRound)
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
	col := c.h[t]
	var moved float64
	for i := range n {
		v := 0.0
		if d := c.cfg.Lambda + den[i]; d > 0 {
			v = num[i] / d
		}
		moved += (v - col[i]) * (v - col[i])
		col[i] = v
	}
	c.pulled = round
	fb := schmp.Feedback{Vars: wire.Int32s{int32(t)}, Delta: wire.Float64s{moved}}
	return FullUpdate{Round: round, Feature: t, Col: slices.Clone(col)}, fb, nil
}

// Objective implements schmp.Coordinator.
func (c *ccdCoordinator) Objective(reports []Summary) (schmp.Progress, error) {
	return c.evaluate(reports, func() []float64 { return rows(c.h) })
}

// WriteModel implements schmp.Coordinator.
func (c *ccdCoordinator) WriteModel(w io.Writer) error { return c.writeModel(w) }
