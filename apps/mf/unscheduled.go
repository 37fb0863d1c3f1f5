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

// FullUpdate, the U of the unscheduled SGD and of CCD++, is broadcast to
// every worker: all of H (at the start, and after every round of the
// unscheduled SGD) or one column of it (CCD++).
type FullUpdate struct {
	// Round is the number of rounds whose updates the state reflects.
	Round uint64 `msgpack:"r"`
	// Factors (in the first update) asks for the users' factors in the
	// reports.
	Factors bool `msgpack:"f,omitempty"`
	// H is all of H, row by row, and C all the item biases (none without
	// biases). FoldBias, in the first update with the folded fit
	// (Config.folds), holds the item biases of the bias-only model of the
	// training and validation ratings together.
	H        codec.Float64s `msgpack:"h,omitempty"`
	C        codec.Float64s `msgpack:"hc,omitempty"`
	FoldBias codec.Float64s `msgpack:"fc,omitempty"`
	// Feature and Col (CCD++): column Feature of H is now Col, or with
	// Bias, the item biases are.
	Feature int            `msgpack:"k,omitempty"`
	Bias    bool           `msgpack:"kb,omitempty"`
	Col     codec.Float64s `msgpack:"c,omitempty"`
}

// DeltaPartial, the R of the unscheduled SGD, is how a worker's copy of H
// moved in an iteration: Delta holds, row by row, the change of the
// factors of the items Items, on which the worker has Counts ratings, and
// BiasDelta the change of their biases (none without biases).
type DeltaPartial struct {
	Items     codec.Int32s   `msgpack:"i"`
	Counts    codec.Int32s   `msgpack:"n"`
	Delta     codec.Float64s `msgpack:"d"`
	BiasDelta codec.Float64s `msgpack:"dc,omitempty"`
	Stats
}

// unscheduledWorker is worker p of the unscheduled SGD: each round (an
// iteration) it runs SGD over all its ratings on its own copy of all of H,
// as every other worker does at the same time, and sends the change.
type unscheduledWorker struct {
	*shard
	fullH
	w       []float64
	items   []int32 // the items of its ratings, ascending
	counts  []int32 // its ratings of each
	before  []float64
	cBefore []float64
}

func newUnscheduledWorker(cfg Config, p int) (*unscheduledWorker, error) {
	s, err := loadShard(cfg, p)
	if err != nil {
		return nil, err
	}
	w := &unscheduledWorker{shard: s, fullH: s.newFullH(cfg.Rank), w: s.initUsers(cfg.Rank)}
	w.items, w.counts = ratedItems(&s.train, len(s.ix.ItemIDs))
	w.before = make([]float64, len(w.items)*cfg.Rank)
	if w.bs.on() {
		w.cBefore = make([]float64, len(w.items))
	}
	return w, nil
}

// Describe implements schmp.Worker.
func (w *unscheduledWorker) Describe() (Summary, error) { return w.describe(), nil }

// Apply implements schmp.Worker: H is the merged one.
func (w *unscheduledWorker) Apply(u FullUpdate) error { return w.apply(u, len(w.ix.ItemIDs)) }

// fullH is the state of a worker that every update gives all of H and of
// the item biases (the unscheduled SGD, ALS).
type fullH struct {
	h       []float64
	bs      biases
	round   uint64
	started bool // the first update is in
	factors bool
}

// newFullH returns the state for the items of shard s at rank k, before
// the first update.
func (s *shard) newFullH(k int) fullH {
	return fullH{h: make([]float64, len(s.ix.ItemIDs)*k), bs: s.initBiases()}
}

// apply takes update u of all of H and of the biases of items items.
func (f *fullH) apply(u FullUpdate, items int) error {
	if u.Round == 0 {
		f.factors = u.Factors
	}
	if len(u.H) != len(f.h) {
		return fmt.Errorf("update of round %d: H has %d values, want %d", u.Round, len(u.H), len(f.h))
	}
	if err := f.bs.setItems(u.Round, u.C, 0, items); err != nil {
		return err
	}
	copy(f.h, u.H)
	f.round = u.Round
	f.started = true
	return nil
}

// Push implements schmp.Worker.
func (w *unscheduledWorker) Push(_ context.Context, _ uint64, turn scheduler.Turn) (DeltaPartial, error) {
	t0 := time.Now()
	if !w.started || turn.SubRound != w.round {
		return DeltaPartial{}, fmt.Errorf("round %d on the state after round %d (the job needs --depth 1)", turn.SubRound+1, w.round)
	}
	k := w.cfg.Rank
	for j, i := range w.items {
		copy(w.before[j*k:(j+1)*k], w.h[int(i)*k:int(i+1)*k])
		if w.bs.on() {
			w.cBefore[j] = w.bs.c[i]
		}
	}
	w.sgdStep(w.train.block(0), w.w, w.h, w.bs, w.cfg.stepSize(turn.SubRound))
	delta := make(codec.Float64s, len(w.before))
	var biasDelta codec.Float64s
	if w.bs.on() {
		biasDelta = make(codec.Float64s, len(w.items))
	}
	for j, i := range w.items {
		for c := range k {
			delta[j*k+c] = w.h[int(i)*k+c] - w.before[j*k+c]
		}
		if biasDelta != nil {
			biasDelta[j] = w.bs.c[i] - w.cBefore[j]
		}
	}
	return DeltaPartial{
		Items: w.items, Counts: w.counts, Delta: delta, BiasDelta: biasDelta,
		Stats: Stats{Work: float64(w.train.len()), Nanos: time.Since(t0).Nanoseconds()},
	}, nil
}

// Report implements schmp.Worker: after every update the worker holds the
// merged H, so every state is evaluated. Worker 0 answers for ‖H‖².
func (w *unscheduledWorker) Report() (Summary, error) {
	if !w.started {
		return Summary{}, errNotStarted
	}
	k := w.cfg.Rank
	s := Summary{
		Round: w.round, Exact: true,
		SSE: trainSSE(&w.train, w.w, w.h, w.bs, k), TestSSE: sse(w.test, w.w, w.h, w.bs, k),
		ValSSE: sse(w.val, w.w, w.h, w.bs, k),
	}
	hi := 0
	if w.p == 0 {
		hi = len(w.ix.ItemIDs)
	}
	w.norms(&s, w.w, w.h, w.bs, 0, hi)
	if w.factors {
		// Copies: the runtime may encode the report after the next Push.
		s.W, s.B = slices.Clone(w.w), slices.Clone(w.bs.b)
	}
	return s, nil
}

// unscheduledCoordinator merges the workers' copies of H: each item's
// factor moves by the average of the workers' changes weighted by their
// ratings of it, h_i += Σ_p n_pi·Δ_pi / Σ_p n_pi.
type unscheduledCoordinator struct {
	base
	h, c   []float64 // c is nil without biases
	weight []float64
}

// Start implements schmp.Coordinator.
func (c *unscheduledCoordinator) Start(sums []Summary) (FullUpdate, error) {
	err := c.start(sums)
	if err != nil {
		return FullUpdate{}, err
	}
	c.h, c.c, err = c.initItems(sums)
	if err != nil {
		return FullUpdate{}, err
	}
	c.weight = make([]float64, len(c.m.ItemIDs))
	return FullUpdate{Factors: c.reportFactors(), H: slices.Clone(c.h), C: slices.Clone(c.c)}, nil
}

// Pull implements schmp.Coordinator.
func (c *unscheduledCoordinator) Pull(round uint64, _ scheduler.Turn, partials []DeltaPartial) (FullUpdate, schmp.Feedback, error) {
	k := c.cfg.Rank
	clear(c.weight)
	for p, part := range partials {
		if len(part.Counts) != len(part.Items) || len(part.Delta) != len(part.Items)*k || c.c != nil && len(part.BiasDelta) != len(part.Items) {
			return FullUpdate{}, schmp.Feedback{}, fmt.Errorf("worker %d sent %d items, %d counts, %d values and %d biases", p, len(part.Items), len(part.Counts), len(part.Delta), len(part.BiasDelta))
		}
		for j, i := range part.Items {
			if i < 0 || int(i) >= len(c.weight) {
				return FullUpdate{}, schmp.Feedback{}, fmt.Errorf("worker %d sent item %d of %d", p, i, len(c.weight))
			}
			c.weight[i] += float64(part.Counts[j])
		}
	}
	for _, part := range partials {
		for j, i := range part.Items {
			f := float64(part.Counts[j]) / c.weight[i]
			hi := c.h[int(i)*k : int(i+1)*k]
			for d, v := range part.Delta[j*k : (j+1)*k] {
				hi[d] += f * v
			}
			if c.c != nil {
				c.c[i] += f * part.BiasDelta[j]
			}
		}
		c.account(part.Stats)
	}
	c.pulled = round
	return FullUpdate{Round: round, H: slices.Clone(c.h), C: slices.Clone(c.c)}, schmp.Feedback{Vars: codec.Int32s{0}, Delta: codec.Float64s{0}}, nil
}

// Objective implements schmp.Coordinator.
func (c *unscheduledCoordinator) Objective(reports []Summary) (schmp.Progress, error) {
	return c.evaluate(reports, func() ([]float64, []float64) { return c.h, c.c })
}

// WriteModel implements schmp.Coordinator.
func (c *unscheduledCoordinator) WriteModel(w io.Writer) error { return c.writeModel(w) }
