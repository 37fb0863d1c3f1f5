package coordinator_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// relay is a toy program on the rotation engine: block b of the model
// counts how often each worker held it. Each worker checks that it holds
// the block the rotation assigns it, counts its visit, and hands the block
// on; the coordinator routes every block to its next owner.
type relayBlock struct {
	ID     int   `msgpack:"id"`
	Visits []int `msgpack:"v"`
}

// relayUpdate maps a worker to the block it owns next.
type relayUpdate struct {
	Next map[int]relayBlock `msgpack:"n"`
}

// ForShard implements schmp.Splitter: a worker receives its block alone.
func (u relayUpdate) ForShard(k int) relayUpdate {
	return relayUpdate{Next: map[int]relayBlock{k: u.Next[k]}}
}

type relayWorker struct {
	rot   scheduler.Rotation
	shard int
	block *relayBlock
	seen  int // updates received that were meant for another worker
}

func (w *relayWorker) Describe() (int, error) { return 0, nil }
func (w *relayWorker) Apply(u relayUpdate) error {
	for k, b := range u.Next {
		if k != w.shard {
			w.seen++
			continue
		}
		w.block = &b
	}
	return nil
}
func (w *relayWorker) Push(_ context.Context, _ uint64, t scheduler.Turn) (relayBlock, error) {
	if w.seen > 0 {
		return relayBlock{}, fmt.Errorf("worker %d received %d blocks of other workers", w.shard, w.seen)
	}
	want := w.rot.Block(w.shard, t.SubRound)
	if w.block == nil || w.block.ID != want {
		return relayBlock{}, fmt.Errorf("worker %d holds %v in sub-round %d, want block %d", w.shard, w.block, t.SubRound, want)
	}
	b := *w.block
	b.Visits[w.shard]++
	w.block = nil // handed on
	return b, nil
}
func (w *relayWorker) Report() (int, error) { return 0, nil }

type relayCoordinator struct {
	rot    scheduler.Rotation
	blocks []relayBlock // as of the last Pull
}

func (c *relayCoordinator) Start([]int) (relayUpdate, error) {
	u := relayUpdate{Next: map[int]relayBlock{}}
	for b := range c.rot.Workers {
		u.Next[c.rot.Owner(b, 0)] = relayBlock{ID: b, Visits: make([]int, c.rot.Workers)}
	}
	return u, nil
}

func (c *relayCoordinator) Pull(_ uint64, t scheduler.Turn, partials []relayBlock) (relayUpdate, schmp.Feedback, error) {
	u := relayUpdate{Next: map[int]relayBlock{}}
	c.blocks = make([]relayBlock, len(partials))
	var fb schmp.Feedback // every block, as the plan names them
	for _, b := range partials {
		u.Next[c.rot.Owner(b.ID, t.SubRound+1)] = b
		c.blocks[b.ID] = b
		fb.Vars = append(fb.Vars, int32(b.ID))
		fb.Delta = append(fb.Delta, 0)
	}
	return u, fb, nil
}

func (c *relayCoordinator) Objective([]int) (schmp.Progress, error) { return schmp.Progress{}, nil }
func (c *relayCoordinator) WriteModel(io.Writer) error              { return nil }

// TestRotation runs the relay on the runtime: every worker must hold the
// right block in every sub-round and receive no other worker's, and after
// k sweeps every worker has visited every block k times.
func TestRotation(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			rot := scheduler.Rotation{Workers: workers}
			coord := &relayCoordinator{rot: rot}
			prog := schmp.Program[scheduler.Turn, relayBlock, relayUpdate, int]{
				Name: "relay",
				NewScheduler: func(_ context.Context, part, parts int) (schmp.Scheduler[scheduler.Turn], error) {
					return scheduler.NewRotation(workers, part, parts)
				},
				NewWorker: func(_ context.Context, shard, _ int) (schmp.Worker[scheduler.Turn, relayBlock, relayUpdate, int], error) {
					return &relayWorker{rot: rot, shard: shard}, nil
				},
				NewCoordinator: func(context.Context) (schmp.Coordinator[scheduler.Turn, relayBlock, relayUpdate, int], error) {
					return coord, nil
				},
			}
			const sweeps = 5
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := job.Run(ctx, prog, job.Options{
				Job:         "relay",
				Coordinator: coordinator.Options{Workers: workers, MaxRounds: uint64(sweeps * workers), ReportEvery: 3, Timeout: 10 * time.Second},
				Timeout:     10 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range coord.blocks {
				for w, v := range b.Visits {
					if v != sweeps {
						t.Errorf("worker %d visited block %d %d times, want %d", w, b.ID, v, sweeps)
					}
				}
			}
			// Every block is in every round: rounds cannot overlap.
			_, err = job.Run(ctx, prog, job.Options{
				Job:         "relay",
				Coordinator: coordinator.Options{Workers: workers, Depth: 2, MaxRounds: 10, ReportEvery: 3, Timeout: 10 * time.Second},
				Timeout:     10 * time.Second,
			})
			if err == nil {
				t.Error("depth 2: no error")
			}
		})
	}
}
