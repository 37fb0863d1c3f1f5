package scheduler

import (
	"encoding/binary"
	"fmt"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// Rotation is the static rotation engine (DESIGN "Scheduling engines"): the model is cut into
// as many blocks as there are workers, and in sub-round t (from 0) worker p
// works on block (p+t) mod P. No two workers ever hold the same block, and
// in P sub-rounds every worker visits every block once. After a sub-round,
// each block goes to the worker that owns it next, Owner(b, t+1): an app
// passes it there straight from worker to worker (schmp.Passer, the ring),
// or through the coordinator with an update that implements
// schmp.Splitter (the star).
//
// Rotation is a schmp.Scheduler whose plan is the sub-round. Every round
// holds every block, so rounds cannot overlap: the runtime refuses a depth
// above 1.
type Rotation struct {
	// Workers is P, the number of workers and of blocks.
	Workers int
}

// NewRotation returns the rotation of workers blocks for scheduler part of
// parts; a rotation has a single part.
func NewRotation(workers, part, parts int) (Rotation, error) {
	switch {
	case workers < 1:
		return Rotation{}, fmt.Errorf("a rotation needs at least 1 worker, got %d", workers)
	case parts != 1 || part != 0:
		return Rotation{}, fmt.Errorf("the rotation takes one scheduler, got %d", parts)
	}
	return Rotation{Workers: workers}, nil
}

// Block returns the block that worker works on in sub-round t.
func (r Rotation) Block(worker int, t uint64) int {
	return int((uint64(worker) + t) % uint64(r.Workers))
}

// Owner returns the worker that works on block in sub-round t.
func (r Rotation) Owner(block int, t uint64) int {
	p := uint64(r.Workers)
	return int((uint64(block) + p - t%p) % p)
}

// Turn is the plan of a round of the rotation: its sub-round.
type Turn struct {
	SubRound uint64 `msgpack:"t"`
}

// Schedule implements schmp.Scheduler: round r (from 1) is sub-round r−1,
// and updates every block.
func (r Rotation) Schedule(round uint64, _ []schmp.Feedback) (Turn, schmp.PlanInfo, error) {
	blocks := make(codec.Int32s, r.Workers)
	for b := range blocks {
		blocks[b] = int32(b)
	}
	return Turn{SubRound: round - 1}, schmp.PlanInfo{Vars: blocks, Candidates: r.Workers, Selected: r.Workers}, nil
}

// rotationSnapshot is the version of the encoding of Rotation.Snapshot.
const rotationSnapshot = 1

// Snapshot implements schmp.Snapshotter. A rotation has no state beyond
// its settings: the bytes are a version and the number of workers, which
// Restore checks against its own.
func (r Rotation) Snapshot() ([]byte, error) {
	b := binary.AppendUvarint([]byte{rotationSnapshot}, uint64(r.Workers))
	return b, nil
}

// Restore implements schmp.Snapshotter: it checks that b is the snapshot
// of a rotation of as many workers as r; there is nothing to restore.
func (r Rotation) Restore(b []byte) error {
	if len(b) == 0 || b[0] != rotationSnapshot {
		return fmt.Errorf("rotation: not a snapshot of version %d", rotationSnapshot)
	}
	p, n := binary.Uvarint(b[1:])
	switch {
	case n <= 0 || 1+n != len(b):
		return fmt.Errorf("rotation: malformed snapshot of %d bytes", len(b))
	case p != uint64(r.Workers):
		return fmt.Errorf("rotation: the snapshot is of %d workers, the job has %d", p, r.Workers)
	}
	return nil
}
