package columnar

import (
	"fmt"
	"math"
	"slices"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/sparse"
)

// Columns is a set of whole columns of the data in transit from their owner
// to the other workers (CheckShared, Held): column IDs[k] has the entries Rows[Ptr[k]:Ptr[k+1]] and
// Vals[Ptr[k]:Ptr[k+1]], rows increasing. The zero value is the empty set.
// Decoded columns share the decoder's buffers: a receiver that keeps them
// copies them (see Check).
type Columns struct {
	IDs  codec.Int32s   `msgpack:"i"`
	Ptr  codec.Int32s   `msgpack:"p"` // len(IDs)+1 offsets, or none when IDs is empty
	Rows codec.Int32s   `msgpack:"r"`
	Vals codec.Float64s `msgpack:"v"`
}

// Len returns the number of columns in c.
func (c Columns) Len() int { return len(c.IDs) }

// Add appends column j with the given entries.
func (c *Columns) Add(j int32, rows []int32, vals []float64) {
	if len(c.Ptr) == 0 {
		c.Ptr = append(c.Ptr, 0)
	}
	c.IDs = append(c.IDs, j)
	c.Rows = append(c.Rows, rows...)
	c.Vals = append(c.Vals, vals...)
	c.Ptr = append(c.Ptr, int32(len(c.Rows)))
}

// Grow makes room in c for cols more columns of nnz entries in all, so
// that adding them copies none of those before: the columns shared in the
// first rounds are many, and long where the rows are many.
func (c *Columns) Grow(cols, nnz int) {
	if cols == 0 {
		return
	}
	c.IDs = slices.Grow(c.IDs, cols)
	c.Ptr = slices.Grow(c.Ptr, cols+1)
	c.Rows = slices.Grow(c.Rows, nnz)
	c.Vals = slices.Grow(c.Vals, nnz)
}

// Values returns the coefficients coef_j, by column, of each of c's
// columns, in order: nil for no columns.
func (c *Columns) Values(coef []float64) codec.Float64s {
	if c.Len() == 0 {
		return nil
	}
	v := make(codec.Float64s, c.Len())
	for k, j := range c.IDs {
		v[k] = coef[j]
	}
	return v
}

// AddAll appends every column of o.
func (c *Columns) AddAll(o *Columns) {
	for k := range o.Len() {
		rows, vals := o.Col(k)
		c.Add(o.IDs[k], rows, vals)
	}
}

// Col returns the entries of c's column k (not its ID). It panics if k is
// out of range.
func (c *Columns) Col(k int) ([]int32, []float64) {
	lo, hi := c.Ptr[k], c.Ptr[k+1]
	return c.Rows[lo:hi], c.Vals[lo:hi]
}

// Check checks c as it comes over the network, for data of rows rows and
// total columns: consistent offsets, column IDs in [0, total) and each
// once, rows increasing in [0, rows), finite values.
func (c *Columns) Check(rows, total int) error {
	if len(c.IDs) == 0 {
		if len(c.Rows) != 0 || len(c.Vals) != 0 || len(c.Ptr) > 1 {
			return fmt.Errorf("no columns but %d entries", len(c.Rows))
		}
		return nil
	}
	if len(c.Ptr) != len(c.IDs)+1 || c.Ptr[0] != 0 || int(c.Ptr[len(c.IDs)]) != len(c.Rows) || len(c.Rows) != len(c.Vals) {
		return fmt.Errorf("%d columns with %d offsets, %d rows and %d values", len(c.IDs), len(c.Ptr), len(c.Rows), len(c.Vals))
	}
	seen := make(map[int32]bool, len(c.IDs))
	for k, j := range c.IDs {
		if j < 0 || int(j) >= total {
			return fmt.Errorf("column %d of %d", j, total)
		}
		if seen[j] {
			return fmt.Errorf("column %d sent twice", j)
		}
		seen[j] = true
		if c.Ptr[k+1] < c.Ptr[k] {
			return fmt.Errorf("column %d with decreasing offsets", j)
		}
		rs, vs := c.Col(k)
		prev := int32(-1)
		for t, i := range rs {
			if i <= prev || int(i) >= rows {
				return fmt.Errorf("column %d with row %d after %d (of %d rows)", j, i, prev, rows)
			}
			prev = i
			if math.IsNaN(vs[t]) || math.IsInf(vs[t], 0) {
				return fmt.Errorf("column %d with value %v", j, vs[t])
			}
		}
	}
	return nil
}

// Reset empties c, keeping its buffers.
func (c *Columns) Reset() {
	c.IDs, c.Ptr, c.Rows, c.Vals = c.IDs[:0], c.Ptr[:0], c.Rows[:0], c.Vals[:0]
}

// HandOver picks the columns that join a worker's working set in a round
// (Screen.Update): of the candidates cand with scores score (the violation
// of the optimality conditions, larger first), at most limit, the largest
// scores first and the lower column first among equal scores, so that every
// node picks alike. It reorders cand and score and returns the picked
// columns, a prefix of cand.
func HandOver(cand []int32, score []float64, limit int) []int32 {
	if len(cand) <= limit {
		return cand
	}
	// better reports whether candidate a comes before b.
	better := func(a, b int) bool {
		return score[a] > score[b] || score[a] == score[b] && cand[a] < cand[b]
	}
	// A heap of the best limit so far, the worst of them on top: a pass
	// over the candidates, not a sort of them all (in the first rounds,
	// most of a worker's columns violate).
	heap := make([]int, 0, limit)
	down := func(i int) {
		for {
			worst, l, r := i, 2*i+1, 2*i+2
			if l < len(heap) && better(heap[worst], heap[l]) {
				worst = l
			}
			if r < len(heap) && better(heap[worst], heap[r]) {
				worst = r
			}
			if worst == i {
				return
			}
			heap[i], heap[worst] = heap[worst], heap[i]
			i = worst
		}
	}
	for k := range cand {
		switch {
		case len(heap) < limit:
			heap = append(heap, k)
			for i := len(heap) - 1; i > 0 && better(heap[(i-1)/2], heap[i]); i = (i - 1) / 2 {
				heap[i], heap[(i-1)/2] = heap[(i-1)/2], heap[i]
			}
		case better(k, heap[0]):
			heap[0] = k
			down(0)
		}
	}
	slices.SortFunc(heap, func(a, b int) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	picked := make([]int32, limit)
	for k, i := range heap {
		picked[k] = cand[i]
	}
	copy(cand, picked)
	return cand[:limit]
}

// HandLimit is how many columns a worker adds to its working set in a
// round (DESIGN "The column layout"), having nnz non-zero coefficients among its own
// columns: as many (the working set grows about as the active set does, as
// in celer's working sets), and at least MinHand. All the violators would
// be too many in the first rounds, when the residual is far from fitted and
// most columns violate, and the worker would solve a problem as large as
// all its columns; bench/RESULTS.md compares the choices.
func HandLimit(nnz int) int { return max(MinHand, nnz) }

// MinHand is the fewest columns a worker adds to its working set in a
// round when it has more violators (see HandLimit).
const MinHand = 256

// CheckShared checks the columns cols that worker shard k of workers shares
// with the others in a round, in the column layout of rows rows and
// len(shared) columns: each a column of k's (OwnedRange) not shared before
// (shared[j]), and the data well formed (Columns.Check). It marks them
// shared.
func CheckShared(k, workers, rows int, cols *Columns, shared []bool) error {
	if cols.Len() == 0 {
		return nil
	}
	total := len(shared)
	if err := cols.Check(rows, total); err != nil {
		return fmt.Errorf("worker shard %d shared columns: %w", k, err)
	}
	lo, hi := OwnedRange(total, k, workers)
	for _, j := range cols.IDs {
		switch {
		case int(j) < lo || int(j) >= hi:
			return fmt.Errorf("worker shard %d shared column %d, outside its columns [%d, %d)", k, j, lo, hi)
		case shared[j]:
			return fmt.Errorf("worker shard %d shared column %d a second time", k, j)
		}
	}
	for _, j := range cols.IDs {
		shared[j] = true
	}
	return nil
}

// Held is what a column worker holds besides its own columns: the columns
// that the other workers shared with it, copied as they arrived. A
// worker's columns have local indices: its own columns [first, first+own)
// first, then the held ones in the order they came, so that its per-column
// state (coefficients, curvatures) extends over them.
// The zero value holds nothing and owns nothing: make one with NewHeld.
type Held struct {
	Columns // the held columns
	first   int
	own     int
	total   int
	where   []int32 // column → its local index; 0: not held (nil until the first)
}

// NewHeld returns the empty Held of a worker that owns the columns
// [first, first+own) of total.
func NewHeld(first, own, total int) Held {
	return Held{first: first, own: own, total: total}
}

// Block returns, in dst's array, the columns a worker sweeps in a round:
// set, its working set, and in a joint round the held columns that are
// active (coef, by local index, non-zero), in column order, so that in a
// joint round every worker sweeps the active set in the same order and
// their solves agree.
func (h *Held) Block(dst, set []int32, coef []float64, joint bool) []int32 {
	block := append(dst[:0], set...)
	if joint {
		for f, j := range h.IDs {
			if coef[h.own+f] != 0 {
				block = append(block, j)
			}
		}
	}
	slices.Sort(block)
	return block
}

// Local returns the local index of column j: of one the worker owns, or
// holds; -1 for another worker's column.
func (h *Held) Local(j int32) int {
	if l := int(j) - h.first; uint(l) < uint(h.own) {
		return l
	}
	if j < 0 || int(j) >= len(h.where) || h.where[j] == 0 {
		return -1
	}
	return int(h.where[j])
}

// Take adds the columns of cols, an update's share of data with rows
// rows, checked (Columns.Check), calling added with each new column's
// values, in order, so that the caller extends its per-column state. A
// column the worker holds already is an error; one it owns, too, unless
// skipOwn, which skips them.
func (h *Held) Take(cols *Columns, rows int, skipOwn bool, added func(vals []float64)) error {
	if err := cols.Check(rows, h.total); err != nil {
		return fmt.Errorf("update sharing columns: %w", err)
	}
	if h.where == nil {
		h.where = make([]int32, h.total)
	}
	for k, j := range cols.IDs {
		if l := int(j) - h.first; skipOwn && uint(l) < uint(h.own) {
			continue
		}
		if h.Local(j) >= 0 {
			return fmt.Errorf("update sharing column %d, which the worker holds already", j)
		}
		r, vals := cols.Col(k)
		h.where[j] = int32(h.own + h.Len())
		h.Add(j, r, vals)
		added(vals)
	}
	return nil
}

// AddOwned appends the columns ids of a worker's own columns x, whose
// column l is column first+l of the data.
func (c *Columns) AddOwned(x *sparse.CSC, first int, ids []int32) {
	for _, j := range ids {
		rows, vals := x.Col(int(j) - first)
		c.Add(j, rows, vals)
	}
}
