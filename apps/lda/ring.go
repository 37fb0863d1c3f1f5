package lda

import "fmt"

// The ring (DESIGN "Apps"): in the rotation, the worker that finished a word
// block in a round passes it straight to the block's next owner
// (schmp.Passer), rather than in its partial to the coordinator, which
// would send it on in its update (the star, Config.Star). The coordinator
// receives the blocks only after the rounds whose table it needs
// (gathers): the end of every iteration, where reports, the learning of
// the priors and every stop fall, and every round with Check. Both ends
// decide from the settings alone, so the ring and the star give the same
// model, bit for bit.

// ring reports whether the rotation's blocks travel on the ring.
func (c *Config) ring() bool { return !c.Star && !c.Unscheduled && c.Workers > 1 }

// gathers reports whether the coordinator receives the blocks finished in
// round: on the star, always; on the ring at the end of an iteration
// (the table of reports, of the learned priors, of the model written) and,
// with Check, after every round.
func (c *Config) gathers(round uint64) bool {
	return !c.ring() || c.Check || round%uint64(c.RoundsPerIteration()) == 0
}

// Pass implements schmp.Passer: on the ring, the block finished in round
// goes to its owner in the next sub-round; the coordinator keeps the
// partial's counts only where it gathers them.
func (w *Worker) Pass(round uint64, r Partial) (coord, part Partial, to int, ok bool) {
	if !w.cfg.ring() {
		return r, Partial{}, 0, false
	}
	part = Partial{BlockID: r.BlockID, Counts: r.Counts}
	if !w.cfg.gathers(round) {
		r.Counts = Sparse{}
	}
	// Round r is sub-round r−1: the block's next owner is its owner in
	// sub-round r.
	return r, part, w.rot.Owner(r.BlockID, round), true
}

// Awaits implements schmp.Passer: on the ring, the block the worker works
// on in the sub-round after round comes from its owner in round.
func (w *Worker) Awaits(round uint64) (from int, ok bool) {
	if !w.cfg.ring() {
		return 0, false
	}
	return w.rot.Owner(w.rot.Block(w.shard, round), round-1), true
}

// Take implements schmp.Passer: the block that worker from finished in
// round, which this worker works on next.
func (w *Worker) Take(round uint64, from int, part Partial) error {
	want := w.rot.Block(w.shard, round)
	switch {
	case part.BlockID != want:
		return fmt.Errorf("worker %d received block %d from worker %d after round %d, want block %d", w.shard, part.BlockID, from, round, want)
	case w.held != nil:
		return fmt.Errorf("worker %d received block %d while holding block %d", w.shard, part.BlockID, w.heldID)
	}
	if err := part.Counts.check(len(w.sh.own[want]), w.cfg.Topics, false); err != nil {
		return fmt.Errorf("block %d from worker %d: %w", want, from, err)
	}
	w.held, w.heldID = &part.Counts, want
	return nil
}
