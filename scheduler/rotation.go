package scheduler

import (
	"fmt"

	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// Rotation is the static rotation engine (DESIGN §4): the model is cut into
// as many blocks as there are workers, and in sub-round t (from 0) worker p
// works on block (p+t) mod P. No two workers ever hold the same block, and
// in P sub-rounds every worker visits every block once. After a sub-round,
// each block goes to the worker that owns it next, Owner(b, t+1); an app
// sends it there with an update that implements schmp.Splitter.
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
	blocks := make(wire.Int32s, r.Workers)
	for b := range blocks {
		blocks[b] = int32(b)
	}
	return Turn{SubRound: round - 1}, schmp.PlanInfo{Vars: blocks, Candidates: r.Workers, Selected: r.Workers}, nil
}
