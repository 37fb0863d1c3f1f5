package scheduler

import (
	"fmt"
	"math"
	"slices"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// A Dynamic's snapshot is a sealed envelope (schmp.Seal) of kind
// dynamicKind: the encoding's version and the msgpack body, followed by
// the CRC-32C of all of it, so that a snapshot of something else or of
// another version, truncated or corrupted, is an error, never a state.

// dynamicVersion is the version of the encoding of a Dynamic's snapshot.
// Version 1 was bare msgpack with a version field, which Unseal refuses
// (its last bytes are no checksum of the rest).
const dynamicVersion = 2

// dynamicKind is the kind of a Dynamic's snapshot.
const dynamicKind = "scheduler/dynamic"

// dynamicState is what a Dynamic's snapshot saves between two rounds: what
// NewDynamic does not rebuild from the Config and the columns. The scratch
// of a round (draws, rejections, the weights taken out of the tree) is
// empty between rounds and is not saved.
type dynamicState struct {
	Vars     int          `msgpack:"vars"`
	Policy   int          `msgpack:"policy"`
	Round    int          `msgpack:"round"`
	RNG      []byte       `msgpack:"rng"`      // the PCG's state
	Inflight codec.Int32s `msgpack:"inflight"` // in the engine's order
	Walk     bool         `msgpack:"walk"`     // the walk (Cyclic, Priority's warm-up) is on
	Cursor   int          `msgpack:"cursor"`
	Queue    codec.Int32s `msgpack:"queue"`
	// Unqueued lists the variables of Queue that the walk no longer
	// counts as queued: with rounds in flight, a round's walk can draw a
	// variable twice (once deferred, once rejected, say), which then
	// stands twice in the queue, and the next round's examining of one
	// entry unmarks both. Empty without such duplicates.
	Unqueued codec.Int32s   `msgpack:"unqueued,omitempty"`
	Perm     codec.Int32s   `msgpack:"perm"`    // Random, Shotgun and Priority
	Weights  codec.Float64s `msgpack:"weights"` // Priority: the tree's leaves
}

// Snapshot returns the engine's state between two rounds (after a Next,
// or the Feedback that follows it), encoded: the rounds served, the state
// of the random number generator, the variables in flight, the walk's
// cursor and queue, the permutation of the uniform draws and the
// priorities. Restore sets an engine of the same Config and columns to it.
// It must not be called during a round (there is none: Next returns only
// at its end).
func (d *Dynamic) Snapshot() ([]byte, error) {
	rng, err := d.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("scheduler: snapshot of the random state: %w", err)
	}
	s := dynamicState{
		Vars: d.cfg.Vars, Policy: int(d.cfg.Policy), Round: d.round, RNG: rng,
		Inflight: d.inflight, Walk: d.queued != nil, Cursor: d.cursor, Queue: d.queue, Perm: d.perm,
	}
	if d.queued != nil {
		seen := map[int32]bool{}
		for _, j := range d.queue {
			if !d.queued[j] && !seen[j] {
				seen[j] = true
				s.Unqueued = append(s.Unqueued, j)
			}
		}
	}
	if d.tree != nil {
		s.Weights = d.tree.leaves()
	}
	return schmp.Seal(dynamicKind, dynamicVersion, s)
}

// Restore sets the engine to the state that b, a Snapshot of an engine of
// the same Config and columns, encodes. The engine may have served rounds
// (a rollback to a checkpoint restores it in place, DESIGN "Spares and replacement"): it then
// goes on exactly as an engine that NewDynamic has just built and that
// was restored from b, since a new one is built, restored and put in its
// place. Bytes that do not fit the engine (another kind or version, bytes
// truncated or corrupted, another number of variables or policy, a
// variable out of range or twice, a weight out of range) are an error,
// and leave the engine as it was. A
// variable twice in the walk's queue is not an error: with rounds in
// flight the engine can queue one twice.
func (d *Dynamic) Restore(b []byte) error {
	// Everything it holds (in flight, the walk's queue and order, the
	// weights, the sets, the scratch) is built anew from the Config.
	fresh, err := NewDynamic(d.cfg, d.cols)
	if err != nil {
		return fmt.Errorf("scheduler: restore: %w", err)
	}
	if err := fresh.restoreState(b); err != nil {
		return err
	}
	*d = *fresh
	return nil
}

// restoreState is Restore on an engine that NewDynamic has just built.
func (d *Dynamic) restoreState(b []byte) error {
	var s dynamicState
	if err := schmp.Unseal(b, dynamicKind, dynamicVersion, &s); err != nil {
		return err
	}
	if err := d.checkState(&s); err != nil {
		return fmt.Errorf("scheduler: restore: %w", err)
	}
	if err := d.pcg.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("scheduler: restore: the random state: %w", err)
	}
	d.round = s.Round
	for _, j := range s.Inflight {
		d.busy[j] = int32(len(d.inflight))
		d.inflight = append(d.inflight, j)
		if d.flightSet != nil {
			d.flightSet.Add(int(j))
		}
	}
	d.cursor = s.Cursor
	if s.Walk {
		d.queue = append(d.queue[:0], s.Queue...)
		for _, j := range d.queue {
			d.queued[j] = true
		}
		for _, j := range s.Unqueued {
			d.queued[j] = false
		}
	} else if d.order != nil {
		// Priority's warm-up is over: its walk is dropped.
		d.order, d.queue, d.spare, d.queued = nil, nil, nil, nil
	}
	if d.perm != nil {
		copy(d.perm, s.Perm)
	}
	if d.tree != nil {
		d.tree.setLeaves(s.Weights)
	}
	return nil
}

// checkState reports why s is not a state of d's engine, or nil if it is.
func (d *Dynamic) checkState(s *dynamicState) error {
	m := d.cfg.Vars
	switch {
	case s.Vars != m || s.Policy != int(d.cfg.Policy):
		return fmt.Errorf("snapshot of an engine of %d variables with policy %v, this one has %d with %v", s.Vars, Policy(s.Policy), m, d.cfg.Policy)
	case s.Round < 0:
		return fmt.Errorf("snapshot after %d rounds", s.Round)
	case len(s.Inflight) > m:
		return fmt.Errorf("%d variables in flight of %d", len(s.Inflight), m)
	}
	seen := make([]bool, m)
	if err := distinct("in flight", s.Inflight, seen); err != nil {
		return err
	}
	// The walk is on for Cyclic, and for Priority until the first round
	// after its warm-up.
	walk := d.cfg.Policy == Cyclic || d.cfg.Policy == Priority && d.cfg.Warmup > 0 && s.Round <= d.cfg.Warmup
	switch {
	case s.Walk != walk:
		return fmt.Errorf("snapshot with the walk on: %t after %d rounds, want %t", s.Walk, s.Round, walk)
	case s.Cursor < 0 || s.Cursor >= m:
		// It stays where the walk left it once the warm-up is over.
		return fmt.Errorf("the walk's cursor at %d of %d", s.Cursor, m)
	case !walk && len(s.Queue) != 0:
		return fmt.Errorf("a walk's queue of %d variables without a walk", len(s.Queue))
	}
	// The queue may hold a variable twice (Unqueued), never one out of
	// range.
	clear(seen)
	for _, j := range s.Queue {
		if j < 0 || int(j) >= m {
			return fmt.Errorf("variable %d queued, of %d", j, m)
		}
		seen[j] = true
	}
	inQueue := slices.Clone(seen)
	clear(seen)
	if err := distinct("unqueued", s.Unqueued, seen); err != nil {
		return err
	}
	for _, j := range s.Unqueued {
		if !inQueue[j] {
			return fmt.Errorf("variable %d unqueued, not in the queue", j)
		}
	}
	if d.perm == nil && len(s.Perm) != 0 || d.perm != nil && len(s.Perm) != m {
		return fmt.Errorf("a permutation of %d variables, want %d", len(s.Perm), len(d.perm))
	}
	clear(seen)
	if err := distinct("in the permutation", s.Perm, seen); err != nil {
		return err
	}
	if d.tree == nil {
		if len(s.Weights) != 0 {
			return fmt.Errorf("%d weights for policy %v", len(s.Weights), d.cfg.Policy)
		}
		return nil
	}
	if len(s.Weights) != m {
		return fmt.Errorf("%d weights for %d variables", len(s.Weights), m)
	}
	for j, w := range s.Weights {
		if !(w >= 0 && w <= d.tree.maxWeight()) || math.IsInf(w, 0) {
			return fmt.Errorf("variable %d has weight %v", j, w)
		}
	}
	return nil
}

// distinct reports an error naming what if vars has a variable out of
// [0, len(seen)) or twice; seen must be all false, and marks vars after.
func distinct(what string, vars []int32, seen []bool) error {
	for _, j := range vars {
		if j < 0 || int(j) >= len(seen) {
			return fmt.Errorf("variable %d %s, of %d", j, what, len(seen))
		}
		if seen[j] {
			return fmt.Errorf("variable %d %s twice", j, what)
		}
		seen[j] = true
	}
	return nil
}
