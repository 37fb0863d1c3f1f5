package mf

import (
	"math/rand/v2"
)

// ratings holds a worker's training ratings in 12 bytes each: the index of
// the item (int32) and the rating (float64), stored once. They are cut
// into cells, cell (b, u) holding user u's ratings of the items of block
// b, and stored cell by cell: block by block and, within a block, user by
// user in ascending index (each block a compressed sparse row matrix), so
// a rating's user is implied by its cell. The order is that of the SGD
// steps (see groupRatings).
//
// item and value are outside Go's heap (mapped) where own is set, which
// gives them back once it is unreachable: slices of them (cells) must not
// outlive the ratings.
type ratings struct {
	users int   // the worker's users: cells per block
	start []int // cell (b, u) holds the ratings [start[b·users+u], start[b·users+u+1])
	item  []int32
	value []float64
	own   *owner
}

// len returns the number of ratings.
func (rs *ratings) len() int { return len(rs.item) }

// block returns the ratings of block b.
func (rs *ratings) block(b int) cells {
	return cells{start: rs.start[b*rs.users : (b+1)*rs.users+1], item: rs.item, value: rs.value}
}

// each calls fn for every rating, in order, with its user's index on the
// worker, its item's index and its value.
func (rs *ratings) each(fn func(u int, i int32, r float64)) {
	for c := 0; c+1 < len(rs.start); c++ {
		u := c % rs.users
		for k := rs.start[c]; k < rs.start[c+1]; k++ {
			fn(u, rs.item[k], rs.value[k])
		}
	}
}

// cells is the ratings of one cell per user (a block): user u's are the
// items item[start[u]:start[u+1]] with the values value[start[u]:start[u+1]].
type cells struct {
	start []int
	item  []int32
	value []float64
}

// len returns the number of ratings.
func (r cells) len() int { return r.start[len(r.start)-1] - r.start[0] }

// groupRatings returns the ratings of a worker of users users, given in
// the file's order as the parallel slices user, item and value, grouped
// into cells (ratings) in the order of the SGD steps: block by block (the
// Index's item blocks), within a block by user in ascending index, and
// each user's ratings of a block in a random order drawn from the seed
// and the worker p: a block's ratings, in the file's order, are shuffled
// (rand.Shuffle of a PCG of seed and p, blocks in order), then sorted
// stably by user. Grouped by user, W is read in order and a user's factor
// stays in cache for all its ratings: measured on 5M generated ratings
// (bench/RESULTS.md), the SGD kernel ran 1.3× (rank 10) to 2.2× (rank 50)
// faster than with all ratings of a block shuffled, and the test RMSE
// after the same number of iterations was no worse.
//
// It moves the ratings in place, by permutations (permute), so that it
// holds 4 bytes a rating besides them (mapped), and takes the slices over:
// item and value become the result's, user is left in the result's order.
func groupRatings(ix *Index, users int, user, item []int32, value []float64, seed uint64, p int) (ratings, error) {
	blocks := ix.Blocks
	dest, free, err := mapped[int32](len(item))
	if err != nil {
		return ratings{}, err
	}
	defer free()
	// Block by block, in the file's order within a block (stable).
	at := make([]int, blocks+1) // block b's ratings are [at[b], at[b+1])
	if blocks > 1 {
		blockOf := make([]int32, len(ix.ItemIDs))
		for b := range blocks {
			lo, hi := ix.Block(b)
			for i := lo; i < hi; i++ {
				blockOf[i] = int32(b)
			}
		}
		for _, i := range item {
			at[blockOf[i]+1]++
		}
		for b := range blocks {
			at[b+1] += at[b]
		}
		next := append([]int(nil), at[:blocks]...)
		for k, i := range item {
			b := blockOf[i]
			dest[k] = int32(next[b])
			next[b]++
		}
		permute(dest, user, item, value)
	} else {
		at[1] = len(item)
	}
	// Within a block: shuffled, then stably by user (a counting sort:
	// cell by cell, each cell in the shuffled order).
	rs := ratings{users: users, start: make([]int, blocks*users+1), item: item, value: value}
	rng := rand.New(rand.NewPCG(seed, uint64(p)))
	next := make([]int, users)
	for b := range blocks {
		lo, hi := at[b], at[b+1]
		u, it, v := user[lo:hi], item[lo:hi], value[lo:hi]
		rng.Shuffle(hi-lo, func(x, y int) {
			u[x], u[y] = u[y], u[x]
			it[x], it[y] = it[y], it[x]
			v[x], v[y] = v[y], v[x]
		})
		clear(next)
		for _, x := range u {
			next[x]++
		}
		pos := lo
		for x, n := range next {
			rs.start[b*users+x] = pos
			next[x] = pos
			pos += n
		}
		for k, x := range u {
			dest[lo+k] = int32(next[x])
			next[x]++
		}
	}
	rs.start[blocks*users] = len(item)
	permute(dest, user, item, value)
	return rs, nil
}

// permute moves rating k of user, item and value to position dest[k], for
// every k, in place: it follows the permutation's cycles, each swap
// putting one rating in its place. dest ends as the identity.
func permute(dest []int32, user, item []int32, value []float64) {
	for k := range dest {
		for d := int(dest[k]); d != k; d = int(dest[k]) {
			user[k], user[d] = user[d], user[k]
			item[k], item[d] = item[d], item[k]
			value[k], value[d] = value[d], value[k]
			dest[k], dest[d] = dest[d], int32(d)
		}
	}
}

// duplicate returns a pair (user index, item index) that the ratings
// hold twice, if any: the first, in their order. Within a block a user's
// ratings are one cell, and an item is in one block only, so a stamp per
// item of the last user that rated it finds every repeated pair in one
// pass.
func (rs *ratings) duplicate(items int) (u, i int32, ok bool) {
	stamp := make([]int32, items)
	for c := 0; c+1 < len(rs.start); c++ {
		x := int32(c%rs.users) + 1
		for _, i := range rs.item[rs.start[c]:rs.start[c+1]] {
			if stamp[i] == x {
				return x - 1, i, true
			}
			stamp[i] = x
		}
	}
	return 0, 0, false
}
