package mf

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
)

// Index is what every role computes from one counting pass over the
// training file, identically: which worker each user belongs to, which
// block each item belongs to, and the internal indices of both. Nothing is
// exchanged to agree on it; the workers send its Fingerprint when they join,
// so that the coordinator can check that they read the same file.
//
// Users go to Shards workers and items to Blocks blocks by the greedy
// longest-processing-time rule on their ratings counts (largest first, ties
// by id, each to the least-loaded worker or block, ties to the lowest
// number), so that workers and blocks hold nearly equal numbers of
// ratings. A worker numbers its users 0, 1, … in ascending id order; items
// are numbered block by block, in ascending id order within a block, so
// that a block is a contiguous range of item indices.
type Index struct {
	Shards, Blocks int
	// Users maps a user id to its worker and its index there.
	Users map[int64]Place
	// ShardUsers holds each worker's user ids, in index order, and
	// ShardRatings its ratings count.
	ShardUsers   [][]int64
	ShardRatings []int
	// UserCount holds each worker's users' ratings counts, in index order.
	UserCount [][]int32
	// Items maps an item id to its index.
	Items map[int64]int32
	// ItemIDs holds the item ids in index order, ItemCount their ratings
	// counts, and BlockStart[b] the first index of block b
	// (BlockStart[Blocks] = len(ItemIDs)).
	ItemIDs    []int64
	ItemCount  []int32
	BlockStart []int32
	// ItemSum holds the sum of each item's ratings, in index order, added
	// in the file's order (so the same on every role): the item biases of
	// the warm start begin from it (see shard.warmStart).
	ItemSum []float64
	// Ratings is the number of ratings; Mean and Std are their mean and
	// standard deviation.
	Ratings   int
	Mean, Std float64
	// Fingerprint hashes all of the above.
	Fingerprint uint64
}

// Place is where a user lives: its worker and its index there.
type Place struct {
	Shard, Index int32
}

// BuildIndex reads the training file at path once and computes its Index
// for shards workers and blocks item blocks.
func BuildIndex(path string, shards, blocks int) (*Index, error) {
	return buildIndex(path, shards, blocks, nil)
}

// buildIndex is BuildIndex of the ratings that keep accepts (all if nil).
func buildIndex(path string, shards, blocks int, keep func(Rating) bool) (*Index, error) {
	users := map[int64]int32{}
	items := map[int64]int32{}
	itemSum := map[int64]float64{}
	var sum, sumSq float64
	n := 0
	err := ReadRatings(path, func(_ int, r Rating) error {
		if keep != nil && !keep(r) {
			return nil
		}
		users[r.User]++
		items[r.Item]++
		itemSum[r.Item] += r.Value
		sum += r.Value
		sumSq += r.Value * r.Value
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no training ratings are left once the validation ratings are held out", path)
	}
	ix := &Index{Shards: shards, Blocks: blocks, Ratings: n, Mean: sum / float64(n)}
	ix.Std = math.Sqrt(max(sumSq/float64(n)-ix.Mean*ix.Mean, 0))

	userBins, userLoad := balance(users, shards)
	ix.Users = make(map[int64]Place, len(users))
	ix.ShardUsers = userBins
	ix.ShardRatings = userLoad
	ix.UserCount = make([][]int32, shards)
	for s, ids := range userBins {
		ix.UserCount[s] = make([]int32, len(ids))
		for k, id := range ids {
			ix.Users[id] = Place{Shard: int32(s), Index: int32(k)}
			ix.UserCount[s][k] = users[id]
		}
	}

	itemBins, _ := balance(items, blocks)
	ix.Items = make(map[int64]int32, len(items))
	ix.BlockStart = make([]int32, blocks+1)
	for b, ids := range itemBins {
		ix.BlockStart[b] = int32(len(ix.ItemIDs))
		for _, id := range ids {
			ix.Items[id] = int32(len(ix.ItemIDs))
			ix.ItemIDs = append(ix.ItemIDs, id)
			ix.ItemCount = append(ix.ItemCount, items[id])
			ix.ItemSum = append(ix.ItemSum, itemSum[id])
		}
	}
	ix.BlockStart[blocks] = int32(len(ix.ItemIDs))
	ix.Fingerprint = ix.fingerprint(sum)
	return ix, nil
}

// Block returns the items of block b as the range [lo, hi) of indices.
func (ix *Index) Block(b int) (lo, hi int) {
	return int(ix.BlockStart[b]), int(ix.BlockStart[b+1])
}

// fingerprint hashes the assignment, the counts and the ratings' sum.
func (ix *Index) fingerprint(sum float64) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	put(uint64(ix.Shards))
	put(uint64(ix.Blocks))
	put(uint64(ix.Ratings))
	put(math.Float64bits(sum))
	for s, ids := range ix.ShardUsers {
		put(uint64(len(ids)))
		for k, id := range ids {
			put(uint64(id))
			put(uint64(ix.UserCount[s][k]))
		}
	}
	for k, id := range ix.ItemIDs {
		put(uint64(id))
		put(uint64(ix.ItemCount[k]))
	}
	for _, b := range ix.BlockStart {
		put(uint64(b))
	}
	return h.Sum64()
}

// balance splits the ids of counts into bins of nearly equal total count
// (greedy longest processing time first, deterministic) and returns each
// bin's ids in ascending order and each bin's total.
func balance(counts map[int64]int32, bins int) ([][]int64, []int) {
	type entry struct {
		id int64
		n  int32
	}
	all := make([]entry, 0, len(counts))
	for id, n := range counts {
		all = append(all, entry{id, n})
	}
	slices.SortFunc(all, func(a, b entry) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([][]int64, bins)
	h := make(loads, bins)
	for b := range h {
		h[b] = load{bin: b}
	}
	for _, e := range all {
		out[h[0].bin] = append(out[h[0].bin], e.id)
		h[0].total += int(e.n)
		heap.Fix(&h, 0)
	}
	total := make([]int, bins)
	for _, l := range h {
		total[l.bin] = l.total
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out, total
}

// load is a bin's total; loads is a min-heap of them, ties by bin number.
type load struct{ bin, total int }
type loads []load

func (h loads) Len() int { return len(h) }
func (h loads) Less(i, j int) bool {
	if h[i].total != h[j].total {
		return h[i].total < h[j].total
	}
	return h[i].bin < h[j].bin
}
func (h loads) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *loads) Push(x any)   { *h = append(*h, x.(load)) }
func (h *loads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
