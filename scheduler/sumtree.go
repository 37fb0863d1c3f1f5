package scheduler

import (
	"fmt"
	"math"
)

// sumTree is a segment tree over non-negative leaf weights that supports
// setting a weight and drawing a leaf with probability proportional to its
// weight, both in O(log n).
//
// The leaves sit in a power-of-two array; every internal node holds the sum
// of its two children and is recomputed from them on every update rather than
// adjusted by a difference, so the sums never drift: setting a leaf back to an
// earlier weight restores the tree bit for bit.
type sumTree struct {
	n    int       // leaves in use
	size int       // power of two >= n
	node []float64 // node[1] is the root, node[size+i] is leaf i; node[0] is unused
}

// newSumTree returns a tree of n leaves, all of weight 0. It panics if n < 1.
func newSumTree(n int) *sumTree {
	if n < 1 {
		panic(fmt.Sprintf("scheduler: sum tree of %d leaves", n))
	}
	size := 1
	for size < n {
		size <<= 1
	}
	return &sumTree{n: n, size: size, node: make([]float64, 2*size)}
}

// maxWeight returns the largest leaf weight for which the sum of all leaves
// stays finite.
func (t *sumTree) maxWeight() float64 { return math.MaxFloat64 / float64(2*t.size) }

// total returns the sum of all weights.
func (t *sumTree) total() float64 { return t.node[1] }

// weight returns the weight of leaf i.
func (t *sumTree) weight(i int) float64 {
	t.checkLeaf(i)
	return t.node[t.size+i]
}

// set sets the weight of leaf i to w. It panics if w is negative, NaN or
// larger than maxWeight.
func (t *sumTree) set(i int, w float64) {
	t.checkLeaf(i)
	if !(w >= 0 && w <= t.maxWeight()) {
		panic(fmt.Sprintf("scheduler: sum tree weight %v out of range", w))
	}
	p := t.size + i
	t.node[p] = w
	for p >>= 1; p >= 1; p >>= 1 {
		t.node[p] = t.node[2*p] + t.node[2*p+1]
	}
}

// fill sets every weight to w in O(n). It panics like set.
func (t *sumTree) fill(w float64) {
	if !(w >= 0 && w <= t.maxWeight()) {
		panic(fmt.Sprintf("scheduler: sum tree weight %v out of range", w))
	}
	for i := range t.size {
		if i < t.n {
			t.node[t.size+i] = w
		} else {
			t.node[t.size+i] = 0
		}
	}
	for p := t.size - 1; p >= 1; p-- {
		t.node[p] = t.node[2*p] + t.node[2*p+1]
	}
}

// find returns the leaf i whose interval [W_i, W_i+w_i) holds u, where W_i is
// the sum of the weights of the leaves before i; for u uniform in
// [0, total()) leaf i is returned with probability w_i/total(). A leaf of
// weight 0 is never returned: if u is out of range (rounding included) the
// nearest positive leaf is. find returns -1 if the total weight is 0.
func (t *sumTree) find(u float64) int {
	if !(t.node[1] > 0) {
		return -1
	}
	// Invariant: node[p] > 0, so at least one child is positive.
	p := 1
	for p < t.size {
		l, r := t.node[2*p], t.node[2*p+1]
		switch {
		case r == 0:
			p = 2 * p
		case l == 0 || u >= l:
			u -= l
			p = 2*p + 1
		default:
			p = 2 * p
		}
	}
	return p - t.size
}

func (t *sumTree) checkLeaf(i int) {
	if i < 0 || i >= t.n {
		panic(fmt.Sprintf("scheduler: sum tree leaf %d out of range [0,%d)", i, t.n))
	}
}

// leaves returns a copy of the leaf weights.
func (t *sumTree) leaves() []float64 {
	return append([]float64(nil), t.node[t.size:t.size+t.n]...)
}

// setLeaves sets the leaf weights to ws (of length n) in O(n), every
// internal node the sum of its children as set leaves them, so that the
// tree is bit for bit the one whose leaves were ws. It panics like set.
func (t *sumTree) setLeaves(ws []float64) {
	if len(ws) != t.n {
		panic(fmt.Sprintf("scheduler: %d weights for a sum tree of %d leaves", len(ws), t.n))
	}
	for _, w := range ws {
		if !(w >= 0 && w <= t.maxWeight()) {
			panic(fmt.Sprintf("scheduler: sum tree weight %v out of range", w))
		}
	}
	copy(t.node[t.size:], ws)
	clear(t.node[t.size+t.n:])
	for p := t.size - 1; p >= 1; p-- {
		t.node[p] = t.node[2*p] + t.node[2*p+1]
	}
}
