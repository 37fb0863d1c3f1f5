package columnar

import (
	"errors"
	"fmt"
	"math"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/schmp"
)

// BlockPlan is the plan of a round in the column layout: Blocks[k] lists the
// columns that worker k updates, in order, all of them columns that worker k
// owns (see OwnedRange).
type BlockPlan struct {
	Blocks []codec.Int32s `msgpack:"b"`
}

// DefaultRoundWork is the default work budget of a column-layout
// worker's round, in non-zeros visited (the apps' RoundWork; a worker's
// coordinate descent stops at a multiple of it): some 10–20 ms of
// coordinate updates on one core, a hundred times the fixed cost of a
// round over NATS. It is large because sweeps over the whole of a worker's
// columns, with many sweeps of the non-zero coordinates between them
// (glmnet's strategy), measured far faster than small blocks drawn by
// priority (bench/RESULTS.md).
const DefaultRoundWork = 1 << 24

// Feedback returns the feedback of a round of plan p before its changes are
// known: every planned column, in the plan's order, with a change of 0.
func (p BlockPlan) Feedback() schmp.Feedback {
	var fb schmp.Feedback
	for _, b := range p.Blocks {
		fb.Vars = append(fb.Vars, b...)
	}
	fb.Delta = make([]float64, len(fb.Vars))
	return fb
}

// Check checks plan p of the column layout of total columns against
// workers workers: a block for each, of columns in [0, total).
func (p BlockPlan) Check(workers, total int) error {
	if len(p.Blocks) != workers {
		return fmt.Errorf("plan of %d blocks for %d workers", len(p.Blocks), workers)
	}
	for _, b := range p.Blocks {
		for _, j := range b {
			if j < 0 || int(j) >= total {
				return fmt.Errorf("plan of column %d of %d", j, total)
			}
		}
	}
	return nil
}

// CheckChange checks the change that worker shard k of workers sends in the
// column layout of total columns and rows rows: a value for every column it
// names, each a column the worker owns (OwnedRange) and each finite, and a
// direction of dirLen entries, over every row or none. It reports whether
// the change moves the model (it has a direction).
func CheckChange(k, workers, total, rows int, vars []int32, vals []float64, dirLen int) (moved bool, err error) {
	if len(vars) != len(vals) {
		return false, fmt.Errorf("worker shard %d sent %d variables and %d values", k, len(vars), len(vals))
	}
	lo, hi := OwnedRange(total, k, workers)
	for i, j := range vars {
		if int(j) < lo || int(j) >= hi {
			return false, fmt.Errorf("worker shard %d changed column %d, outside its columns [%d, %d)", k, j, lo, hi)
		}
		if math.IsNaN(vals[i]) || math.IsInf(vals[i], 0) {
			return false, fmt.Errorf("worker shard %d set column %d to %v", k, j, vals[i])
		}
	}
	switch dirLen {
	case 0:
		return false, nil
	case rows:
		return true, nil
	}
	return false, fmt.Errorf("worker shard %d sent a direction over %d rows, want %d", k, dirLen, rows)
}

// OwnedRange returns the columns [lo, hi) that worker shard of shards owns in
// the column layout of total columns: a contiguous split as [libsvm.ShardRange]
// splits rows.
func OwnedRange(total, shard, shards int) (lo, hi int) {
	return libsvm.ShardRange(total, shard, shards)
}

// OwnedShard is what a worker of the column layout holds, as it says when it
// joins.
type OwnedShard struct {
	Rows, Features int // of all the data
	First, Cols    int // its columns [First, First+Cols)
	Data           libsvm.Fingerprint
}

// CheckOwnedShards checks the workers of a column layout, indexed by shard:
// that they read the same data (an error wrapping libsvm.ErrDifferentData
// otherwise) and that each holds its OwnedRange of the columns.
func CheckOwnedShards(shards []OwnedShard) error {
	if len(shards) == 0 {
		return errors.New("no workers")
	}
	s0 := shards[0]
	for k, s := range shards {
		lo, hi := OwnedRange(s0.Features, k, len(shards))
		switch {
		case s.Data != s0.Data:
			return fmt.Errorf("%w: worker shard %d read %v, shard 0 read %v", libsvm.ErrDifferentData, k, s.Data, s0.Data)
		case s.Rows != s0.Rows || s.Features != s0.Features:
			return fmt.Errorf("%w: worker shard %d has %d×%d, shard 0 %d×%d", libsvm.ErrDifferentData, k, s.Rows, s.Features, s0.Rows, s0.Features)
		case s.First != lo || s.First+s.Cols != hi:
			return fmt.Errorf("worker shard %d holds columns [%d, %d), want [%d, %d)", k, s.First, s.First+s.Cols, lo, hi)
		}
	}
	return nil
}

// BlockScheduler is the scheduler of the column layout (DESIGN "The column layout"), in
// which each worker owns a contiguous range of the columns with all their
// rows and chooses the columns it updates itself, from its own working set
// (Screen): every plan gives each worker an empty block. It reads no data.
type BlockScheduler struct {
	workers int
}

// NewBlockScheduler returns the scheduler of the column layout for workers
// workers. It must be the only scheduler part: the column layout plans
// every worker each round.
func NewBlockScheduler(workers, part, parts int) (*BlockScheduler, error) {
	if parts != 1 || part != 0 {
		return nil, fmt.Errorf("the column layout takes one scheduler, not %d", parts)
	}
	if workers < 1 {
		return nil, fmt.Errorf("workers must be >= 1, got %d", workers)
	}
	return &BlockScheduler{workers: workers}, nil
}

// Schedule implements schmp.Scheduler: an empty block for every worker.
func (s *BlockScheduler) Schedule(round uint64, fbs []schmp.Feedback) (BlockPlan, schmp.PlanInfo, error) {
	return BlockPlan{Blocks: make([]codec.Int32s, s.workers)}, schmp.PlanInfo{}, nil
}
