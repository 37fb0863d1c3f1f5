package mf

import "fmt"

// The ring (DESIGN "Apps"): in DSGD on the rotation, the worker that finished
// a block of H in a round passes it straight to the block's next owner
// (schmp.Passer), rather than in its partial to the coordinator, which
// would send it on in its update (the star, Config.Star). The coordinator
// receives the blocks only at the end of an iteration (gathers), where
// evaluations and every stop fall, and sends all of H at an evaluation
// point as on the star; there nothing is passed. Both ends decide from the
// settings alone, so the ring and the star give the same model, bit for
// bit.

// ring reports whether DSGD's blocks travel on the ring.
func (c Config) ring() bool {
	return !c.Star && c.Algo == SGD && c.Schedule == Rotation && c.Workers > 1
}

// gathers reports whether the coordinator receives the blocks finished in
// round: on the star always, on the ring at the end of an iteration.
func (c Config) gathers(round uint64) bool {
	return !c.ring() || round%uint64(c.RoundsPerIter()) == 0
}

// passes reports whether the blocks finished in round go from worker to
// worker: on the ring, except at an evaluation point, where the
// coordinator sends all of H.
func (c Config) passes(round uint64) bool { return c.ring() && !c.evalPoint(round) }

// Pass implements schmp.Passer.
func (w *rotationWorker) Pass(round uint64, r RotationPartial) (coord, part RotationPartial, to int, ok bool) {
	if !w.cfg.passes(round) {
		return r, RotationPartial{}, 0, false
	}
	part = RotationPartial{BlockRows: r.BlockRows}
	if !w.cfg.gathers(round) {
		r.Rows, r.Bias = nil, nil
	}
	// Round r is sub-round r−1: the block's next owner is its owner in
	// sub-round r.
	return r, part, w.rot.Owner(r.Block, round), true
}

// Awaits implements schmp.Passer: the block the worker works on in the
// sub-round after round comes from its owner in round.
func (w *rotationWorker) Awaits(round uint64) (from int, ok bool) {
	if !w.cfg.passes(round) {
		return 0, false
	}
	return w.rot.Owner(w.rot.Block(w.p, round), round-1), true
}

// Take implements schmp.Passer: the block of H that worker from finished
// in round, which this worker works on next.
func (w *rotationWorker) Take(round uint64, from int, part RotationPartial) error {
	k := w.cfg.Rank
	b := w.rot.Block(w.p, round)
	lo, hi := w.ix.Block(b)
	if part.Block != b || len(part.Rows) != (hi-lo)*k {
		return fmt.Errorf("after round %d: block %d with %d values from worker %d, want block %d with %d", round, part.Block, len(part.Rows), from, b, (hi-lo)*k)
	}
	if err := w.bs.setItems(round, part.Bias, lo, hi); err != nil {
		return fmt.Errorf("block %d from worker %d: %w", b, from, err)
	}
	copy(w.h[lo*k:hi*k], part.Rows)
	w.block = b
	return nil
}
