package mf

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/strads-go/strads/internal/testhelper"
)

// groupEntries is the grouping of the training ratings before they were
// stored in cells (groupRatings): entries of 16 bytes, copied into their
// blocks in the file's order, each block shuffled, then sorted stably by
// user. groupRatings must give the same order, which the SGD steps follow.
func groupEntries(ix *Index, train []entry, seed uint64, p int) []entry {
	blocks := ix.Blocks
	blockOf := make([]int32, len(ix.ItemIDs))
	for b := range blocks {
		lo, hi := ix.Block(b)
		for i := lo; i < hi; i++ {
			blockOf[i] = int32(b)
		}
	}
	cell := make([]int, blocks+1)
	for _, e := range train {
		cell[blockOf[e.i]+1]++
	}
	for b := range blocks {
		cell[b+1] += cell[b]
	}
	grouped := make([]entry, len(train))
	next := slices.Clone(cell[:blocks])
	for _, e := range train {
		b := blockOf[e.i]
		grouped[next[b]] = e
		next[b]++
	}
	rng := rand.New(rand.NewPCG(seed, uint64(p)))
	for b := range blocks {
		c := grouped[cell[b]:cell[b+1]]
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		slices.SortStableFunc(c, func(x, y entry) int { return cmp.Compare(x.u, y.u) })
	}
	return grouped
}

// TestGroupRatings checks that the ratings in cells are in the order of
// groupEntries, rating for rating, and that each cell holds its user's
// ratings of its block, for shards of several shapes: one block, several,
// users without ratings in a block, and a worker without users.
func TestGroupRatings(t *testing.T) {
	for _, tc := range []struct{ users, items, blocks, n int }{
		{1, 1, 1, 1}, {5, 7, 1, 20}, {40, 30, 3, 500}, {100, 9, 4, 300}, {3, 50, 5, 40}, {0, 4, 2, 0},
	} {
		t.Run(fmt.Sprintf("%d users %d items %d blocks %d ratings", tc.users, tc.items, tc.blocks, tc.n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), 3))
			ix := &Index{Blocks: tc.blocks, ItemIDs: make([]int64, tc.items), BlockStart: make([]int32, tc.blocks+1)}
			for b := range tc.blocks + 1 {
				ix.BlockStart[b] = int32(b * tc.items / tc.blocks)
			}
			train := make([]entry, tc.n)
			user, item, value := make([]int32, tc.n), make([]int32, tc.n), make([]float64, tc.n)
			for k := range train {
				train[k] = entry{int32(rng.IntN(tc.users)), int32(rng.IntN(tc.items)), float64(k)}
				user[k], item[k], value[k] = train[k].u, train[k].i, train[k].r
			}
			want := groupEntries(ix, train, 9, 2)
			rs, err := groupRatings(ix, tc.users, user, item, value, 9, 2)
			if err != nil {
				t.Fatal(err)
			}
			if rs.len() != len(want) || len(rs.start) != tc.blocks*tc.users+1 {
				t.Fatalf("%d ratings, %d cell bounds; want %d, %d", rs.len(), len(rs.start), len(want), tc.blocks*tc.users+1)
			}
			k := 0
			rs.each(func(u int, i int32, r float64) {
				if w := want[k]; int32(u) != w.u || i != w.i || r != w.r {
					t.Fatalf("rating %d: (%d, %d, %g), want (%d, %d, %g)", k, u, i, r, w.u, w.i, w.r)
				}
				k++
			})
			for b := range tc.blocks {
				lo, hi := ix.Block(b)
				c := rs.block(b)
				for u := range tc.users {
					for _, i := range c.item[c.start[u]:c.start[u+1]] {
						if int(i) < lo || int(i) >= hi {
							t.Errorf("block %d, user %d: item %d is not in the block", b, u, i)
						}
					}
				}
			}
		})
	}
}

// TestLoadShardMemory checks what a worker reading its shard holds: the
// 12 bytes a training rating that it keeps and, at the peak, the 8 of
// grouping them (groupRatings), outside Go's heap (mapped), and on the
// heap less than 2 bytes a rating besides the index; not the 32 of
// 16-byte entries copied into their blocks on the heap. Dropped, the shard
// gives the memory back.
func TestLoadShardMemory(t *testing.T) {
	var tr bytes.Buffer
	if _, err := Generate(&tr, io.Discard, GenConfig{Users: 1000, Items: 200, Rank: 2, Ratings: 100_000, Noise: 0.1, Alpha: 1, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	train := testhelper.WriteFile(t, "train.txt", tr.String())
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			cfg := Config{Train: train, Rank: 2, Algo: SGD, Schedule: Rotation, LearningRate: 0.01, Inner: 1, Workers: workers, ReportEvery: 1}
			alloc := func(f func()) uint64 {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				f()
				runtime.ReadMemStats(&after)
				return after.TotalAlloc - before.TotalAlloc
			}
			var s *shard
			var err error
			// The shards that earlier tests dropped are unmapped by
			// cleanups that run after a collection: let them end first.
			for prev := int64(-1); mappedNow.now.Load() != prev; time.Sleep(20 * time.Millisecond) {
				prev = mappedNow.now.Load()
				runtime.GC()
			}
			base := mappedNow.now.Load()
			mappedNow.reset()
			total := alloc(func() { s, err = loadShard(cfg, 0) })
			if err != nil {
				t.Fatal(err)
			}
			n := float64(s.train.len())
			held, peak := float64(mappedNow.now.Load()-base)/n, float64(mappedNow.peak.Load()-base)/n
			// The heap, less what does not grow with a worker's ratings:
			// the index (the maps of 1,000 users and 200 items) and the
			// buffer of the read of the training file.
			fixed := alloc(func() { _, err = BuildIndex(train, workers, workers) }) + 64<<10
			heap := (float64(total) - float64(fixed)) / n
			t.Logf("outside the heap %.1f bytes a training rating, %.1f at the peak; on the heap %.1f", held, peak, heap)
			if held != 12 || peak > 20 || heap > 2 {
				t.Errorf("loading held %.1f bytes a training rating outside the heap, %.1f at the peak, and allocated %.1f on the heap (%d bytes, %d for the index, %.0f ratings); want 12, at most 20, at most 2", held, peak, heap, total, fixed, n)
			}
			// Dropped, the shard gives its memory back (its owner's cleanup).
			s = nil
			for deadline := time.Now().Add(10 * time.Second); mappedNow.now.Load() != base; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d bytes still mapped after the shard was dropped", mappedNow.now.Load()-base)
				}
				runtime.GC()
			}
		})
	}
}
