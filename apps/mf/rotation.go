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

// BlockRows is block Block of H, its items' factors row by row, and their
// biases c_i (none without biases): the item biases travel with H.
type BlockRows struct {
	Block int            `msgpack:"b"`
	Rows  codec.Float64s `msgpack:"r"`
	Bias  codec.Float64s `msgpack:"c,omitempty"`
}

// RotationPartial, the R of DSGD on the rotation, is the block of H that a
// worker updated in a sub-round.
type RotationPartial struct {
	BlockRows
	Stats
}

// RotationUpdate, the U of DSGD on the rotation, sends every worker the
// block of H it works on next (Blocks[p] for worker p) or, at an
// evaluation point and at the start, all of H (Full) to every worker. It
// implements schmp.Splitter: each worker receives its own block only.
type RotationUpdate struct {
	// Round is the number of rounds whose updates the state reflects.
	Round uint64 `msgpack:"r"`
	// Factors (in the first update) asks for the users' factors in the
	// reports.
	Factors bool `msgpack:"f,omitempty"`
	// Full is all of H and FullBias all the item biases. FoldBias, in
	// the first update with the folded fit (Config.folds), holds the item
	// biases of the bias-only model of the training and validation
	// ratings together.
	Full     codec.Float64s `msgpack:"h,omitempty"`
	FullBias codec.Float64s `msgpack:"hc,omitempty"`
	FoldBias codec.Float64s `msgpack:"fc,omitempty"`
	Blocks   []BlockRows    `msgpack:"b,omitempty"`
}

// ForShard implements schmp.Splitter.
func (u RotationUpdate) ForShard(p int) RotationUpdate {
	v := u
	v.Blocks = nil
	if p < len(u.Blocks) {
		v.Blocks = []BlockRows{u.Blocks[p]}
	}
	return v
}

// evalPoint reports whether the state after round rounds of SGD on the
// rotation is evaluated: at the start and after every ReportEvery-th
// iteration and the last.
func (c Config) evalPoint(round uint64) bool {
	per := uint64(c.RoundsPerIter())
	if round%per != 0 {
		return false
	}
	it := round / per
	return it%uint64(c.ReportEvery) == 0 || it == uint64(c.Iters)
}

// rotationWorker is worker p of DSGD on the rotation: its users' ratings,
// factors W and biases, which stay home, and H with the item biases, of
// which it holds the block it works on next (all at an evaluation point).
type rotationWorker struct {
	*shard
	rot     scheduler.Rotation
	w, h    []float64
	bs      biases
	round   uint64 // the state reflects this many rounds
	block   int    // the block held; -1: all of H (an evaluation point)
	factors bool
}

func newRotationWorker(cfg Config, p int) (*rotationWorker, error) {
	s, err := loadShard(cfg, p)
	if err != nil {
		return nil, err
	}
	return &rotationWorker{
		shard: s, rot: scheduler.Rotation{Workers: cfg.Workers},
		w: s.initUsers(cfg.Rank), h: make([]float64, len(s.ix.ItemIDs)*cfg.Rank), bs: s.initBiases(), block: -2,
	}, nil
}

// Describe implements schmp.Worker.
func (w *rotationWorker) Describe() (Summary, error) { return w.describe(), nil }

// Apply implements schmp.Worker.
func (w *rotationWorker) Apply(u RotationUpdate) error {
	k := w.cfg.Rank
	if u.Round == 0 {
		w.factors = u.Factors
	}
	w.round = u.Round
	if u.Full != nil {
		if len(u.Full) != len(w.h) {
			return fmt.Errorf("update of round %d: H has %d values, want %d", u.Round, len(u.Full), len(w.h))
		}
		if err := w.bs.setItems(u.Round, u.FullBias, 0, len(w.ix.ItemIDs)); err != nil {
			return err
		}
		copy(w.h, u.Full)
		w.block = -1
		if u.Round == 0 {
			return w.warmApply(w.bs, w.w, w.h, u.FoldBias)
		}
		return nil
	}
	if len(u.Blocks) == 0 && w.cfg.ring() {
		// On the ring the block came from its last owner (Take).
		return nil
	}
	if len(u.Blocks) != 1 {
		return fmt.Errorf("update of round %d: %d blocks for worker %d, want 1", u.Round, len(u.Blocks), w.p)
	}
	b := u.Blocks[0]
	if b.Block < 0 || b.Block >= w.ix.Blocks {
		return fmt.Errorf("update of round %d: no block %d", u.Round, b.Block)
	}
	lo, hi := w.ix.Block(b.Block)
	if len(b.Rows) != (hi-lo)*k {
		return fmt.Errorf("update of round %d: block %d has %d values, want %d", u.Round, b.Block, len(b.Rows), (hi-lo)*k)
	}
	if err := w.bs.setItems(u.Round, b.Bias, lo, hi); err != nil {
		return err
	}
	copy(w.h[lo*k:hi*k], b.Rows)
	w.block = b.Block
	return nil
}

// Push implements schmp.Worker: SGD over the ratings of the worker's users
// on the items of block (p+t) mod P, in sub-round t.
func (w *rotationWorker) Push(_ context.Context, _ uint64, turn scheduler.Turn) (RotationPartial, error) {
	t0 := time.Now()
	t := turn.SubRound
	b := w.rot.Block(w.p, t)
	if t != w.round {
		return RotationPartial{}, fmt.Errorf("sub-round %d on the state after round %d (the rotation needs --depth 1)", t, w.round)
	}
	if w.block != b && w.block != -1 {
		return RotationPartial{}, fmt.Errorf("sub-round %d: holds block %d, works on block %d", t, w.block, b)
	}
	k := w.cfg.Rank
	cell := w.train.block(b)
	w.sgdStep(cell, w.w, w.h, w.bs, w.cfg.stepSize(t/uint64(w.cfg.Workers)))
	lo, hi := w.ix.Block(b)
	w.block = -2 // handed on
	return RotationPartial{
		BlockRows: BlockRows{Block: b, Rows: w.h[lo*k : hi*k], Bias: w.bs.items(lo, hi)},
		Stats:     Stats{Work: float64(cell.len()), Nanos: time.Since(t0).Nanoseconds()},
	}, nil
}

// Report implements schmp.Worker. At an evaluation point the worker holds
// all of H and evaluates its ratings; it answers for the norm of the block
// it works on next. Elsewhere it cannot, and says so.
func (w *rotationWorker) Report() (Summary, error) {
	if w.block != -1 {
		return Summary{Round: w.round}, nil
	}
	k := w.cfg.Rank
	lo, hi := w.ix.Block(w.rot.Block(w.p, w.round))
	s := Summary{
		Round: w.round, Exact: true,
		SSE: trainSSE(&w.train, w.w, w.h, w.bs, k), TestSSE: sse(w.test, w.w, w.h, w.bs, k),
		ValSSE: sse(w.val, w.w, w.h, w.bs, k),
	}
	w.norms(&s, w.w, w.h, w.bs, lo, hi)
	if w.factors {
		// Copies: the runtime may encode the report after the next Push.
		s.W, s.B = slices.Clone(w.w), slices.Clone(w.bs.b)
	}
	if w.round == 0 {
		w.foldReport(&s, w.factors)
	}
	return s, nil
}

// rotationCoordinator holds H and the item biases as the workers hand its
// blocks on.
type rotationCoordinator struct {
	base
	rot  scheduler.Rotation
	h, c []float64 // c is nil without biases
}

// Start implements schmp.Coordinator: H starts from the seed, and every
// worker receives all of it.
func (c *rotationCoordinator) Start(sums []Summary) (RotationUpdate, error) {
	err := c.start(sums)
	if err != nil {
		return RotationUpdate{}, err
	}
	if len(c.blockStart) != c.cfg.Workers+1 {
		return RotationUpdate{}, fmt.Errorf("worker 0 sent %d block bounds for %d workers", len(c.blockStart), c.cfg.Workers)
	}
	c.h, c.c, err = c.initItems(sums)
	if err != nil {
		return RotationUpdate{}, err
	}
	return RotationUpdate{Round: 0, Factors: c.reportFactors(), Full: slices.Clone(c.h), FullBias: slices.Clone(c.c), FoldBias: slices.Clone(c.foldC)}, nil
}

// Pull implements schmp.Coordinator: it takes the blocks in and sends each
// to its next owner.
func (c *rotationCoordinator) Pull(round uint64, turn scheduler.Turn, partials []RotationPartial) (RotationUpdate, schmp.Feedback, error) {
	k := c.cfg.Rank
	t := turn.SubRound
	fb := schmp.Feedback{}
	gathered := c.cfg.gathers(round)
	for p, part := range partials {
		b := c.rot.Block(p, t)
		lo, hi := int(c.blockStart[b]), int(c.blockStart[b+1])
		if !gathered {
			// On the ring the block went to its next owner.
			if part.Block != b || len(part.Rows) != 0 || len(part.Bias) != 0 {
				return RotationUpdate{}, fb, fmt.Errorf("worker %d sent block %d with %d values and %d biases in round %d, want block %d with none (the ring)", p, part.Block, len(part.Rows), len(part.Bias), round, b)
			}
		} else {
			if part.Block != b || len(part.Rows) != (hi-lo)*k || c.c != nil && len(part.Bias) != hi-lo {
				return RotationUpdate{}, fb, fmt.Errorf("worker %d sent block %d with %d values and %d biases, want block %d with %d", p, part.Block, len(part.Rows), len(part.Bias), b, (hi-lo)*k)
			}
			copy(c.h[lo*k:hi*k], part.Rows)
			if c.c != nil {
				copy(c.c[lo:hi], part.Bias)
			}
		}
		c.account(part.Stats)
		fb.Vars = append(fb.Vars, int32(b))
		fb.Delta = append(fb.Delta, 0)
	}
	c.pulled = round
	u := RotationUpdate{Round: round}
	if c.cfg.evalPoint(round) || round == c.lastRound {
		// At an evaluation point, and at the job's last round (whose
		// check evaluates the state written), every worker gets all of H.
		u.Full, u.FullBias = slices.Clone(c.h), slices.Clone(c.c)
		return u, fb, nil
	}
	if c.cfg.ring() {
		// The workers passed the blocks on themselves.
		return u, fb, nil
	}
	u.Blocks = make([]BlockRows, c.cfg.Workers)
	for p := range u.Blocks {
		b := c.rot.Block(p, t+1)
		lo, hi := int(c.blockStart[b]), int(c.blockStart[b+1])
		u.Blocks[p] = BlockRows{Block: b, Rows: slices.Clone(c.h[lo*k : hi*k])}
		if c.c != nil {
			u.Blocks[p].Bias = slices.Clone(c.c[lo:hi])
		}
	}
	return u, fb, nil
}

// Objective implements schmp.Coordinator.
func (c *rotationCoordinator) Objective(reports []Summary) (schmp.Progress, error) {
	return c.evaluate(reports, func() ([]float64, []float64) { return c.h, c.c })
}

// WriteModel implements schmp.Coordinator.
func (c *rotationCoordinator) WriteModel(w io.Writer) error { return c.writeModel(w) }
