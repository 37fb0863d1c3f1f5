package lda

import (
	"fmt"

	"github.com/strads-go/strads/codec"
)

// Sparse is a sparse table of counts by row and topic, as it travels: row
// r holds the topics Topics[Offsets[r]:Offsets[r+1]] with the counts
// Counts[Offsets[r]:Offsets[r+1]], in no particular order. IDs names the
// rows where they are not implied: the words of a worker's initial counts,
// the documents of its document-topic counts, the words of a change. The
// rows of a block are its words in ascending order, and IDs is nil.
type Sparse struct {
	IDs     codec.Int32s `msgpack:"i,omitempty"`
	Offsets codec.Int32s `msgpack:"o"`
	Topics  codec.Int32s `msgpack:"t"`
	Counts  codec.Int32s `msgpack:"c"`
}

// Rows returns the number of rows of s.
func (s *Sparse) Rows() int { return max(len(s.Offsets)-1, 0) }

// NNZ returns the number of entries of s.
func (s *Sparse) NNZ() int { return len(s.Topics) }

// Row returns the topics and counts of row r.
func (s *Sparse) Row(r int) (topics, counts []int32) {
	a, b := s.Offsets[r], s.Offsets[r+1]
	return s.Topics[a:b], s.Counts[a:b]
}

// startRows makes s empty, with room for rows rows.
func (s *Sparse) startRows(rows int) {
	s.Offsets = make(codec.Int32s, 1, rows+1)
	s.Topics, s.Counts = nil, nil
}

// endRow closes the row whose entries have been appended.
func (s *Sparse) endRow() { s.Offsets = append(s.Offsets, int32(len(s.Topics))) }

// check reports the first malformed part of s, for a table of k topics
// whose rows must number rows (−1: any) and whose counts must be positive
// unless signed.
func (s *Sparse) check(rows, k int, signed bool) error {
	switch {
	case len(s.Offsets) == 0:
		return fmt.Errorf("no rows")
	case rows >= 0 && s.Rows() != rows:
		return fmt.Errorf("%d rows, want %d", s.Rows(), rows)
	case s.IDs != nil && len(s.IDs) != s.Rows():
		return fmt.Errorf("%d ids for %d rows", len(s.IDs), s.Rows())
	case len(s.Topics) != len(s.Counts):
		return fmt.Errorf("%d topics for %d counts", len(s.Topics), len(s.Counts))
	case s.Offsets[0] != 0 || int(s.Offsets[len(s.Offsets)-1]) != len(s.Topics):
		return fmt.Errorf("offsets do not cover the entries")
	}
	for r := range s.Rows() {
		if s.Offsets[r] > s.Offsets[r+1] {
			return fmt.Errorf("row %d: offsets decrease", r)
		}
	}
	for i, t := range s.Topics {
		if t < 0 || int(t) >= k {
			return fmt.Errorf("topic %d out of range [0, %d)", t, k)
		}
		if c := s.Counts[i]; c <= 0 && !(signed && c < 0) {
			return fmt.Errorf("count %d of topic %d", c, t)
		}
	}
	return nil
}

// cell is a count of a dense row: n now, and s when the rows were built.
type cell struct{ n, s int32 }

// hcell is a slot of a hashed row: topic t (−1: empty) and its cell.
type hcell struct {
	t int32
	c cell
}

// rowMeta locates a row: its first cell, and its hash mask (−1 for a dense
// row of K cells).
type rowMeta struct{ off, mask int32 }

// rows is a word-topic table being worked on: each row is dense (K cells)
// or an open-addressing hash of its topics, whichever is smaller, and
// every cell keeps, besides the count, the count when the table was built
// (what the Metropolis–Hastings proposals were made from). Zero counts stay
// in their slots until the table is turned back into a Sparse.
type rows struct {
	k     int
	meta  []rowMeta
	dense []cell
	hash  []hcell
}

// build sets r to the table src of k topics, leaving room in row i for
// headroom(i) topics not in src.
func (r *rows) build(src *Sparse, k int, headroom func(i int) int32) {
	n := src.Rows()
	r.k = k
	r.meta = r.meta[:0]
	nd, nh := 0, 0
	for i := range n {
		m := layoutRow(int(src.Offsets[i+1]-src.Offsets[i])+int(headroom(i)), k)
		if m < 0 {
			r.meta = append(r.meta, rowMeta{int32(nd), -1})
			nd += k
		} else {
			r.meta = append(r.meta, rowMeta{int32(nh), m})
			nh += int(m) + 1
		}
	}
	r.dense = resize(r.dense, nd)
	clear(r.dense)
	r.hash = resize(r.hash, nh)
	for i := range r.hash {
		r.hash[i] = hcell{t: -1}
	}
	for i := range n {
		topics, counts := src.Row(i)
		for j, t := range topics {
			c := r.cell(int32(i), t)
			c.n, c.s = counts[j], counts[j]
		}
	}
}

// layoutRow returns the hash mask of a row that may hold keys topics of
// k, or −1 if a dense row is smaller.
func layoutRow(keys, k int) int32 {
	capacity := 4
	for capacity < 2*keys {
		capacity *= 2
	}
	if capacity*12 >= k*8 {
		return -1
	}
	return int32(capacity - 1)
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// hslot is the home slot of topic t in a hashed row of mask m.
func hslot(t, m int32) int32 {
	h := uint32(t) * 0x9E3779B1
	return int32(h^(h>>15)) & m
}

// get returns the counts of topic t in row i: now, and when built.
func (r *rows) get(i, t int32) (n, s int32) {
	m := r.meta[i]
	if m.mask < 0 {
		c := r.dense[m.off+t]
		return c.n, c.s
	}
	for h := hslot(t, m.mask); ; h = (h + 1) & m.mask {
		c := &r.hash[m.off+h]
		if c.t == t {
			return c.c.n, c.c.s
		}
		if c.t < 0 {
			return 0, 0
		}
	}
}

// cell returns the cell of topic t in row i, adding it if absent.
func (r *rows) cell(i, t int32) *cell {
	m := r.meta[i]
	if m.mask < 0 {
		return &r.dense[m.off+t]
	}
	for h := hslot(t, m.mask); ; h = (h + 1) & m.mask {
		c := &r.hash[m.off+h]
		if c.t == t {
			return &c.c
		}
		if c.t < 0 {
			c.t = t
			return &c.c
		}
	}
}

// add adds d to the count of topic t in row i.
func (r *rows) add(i, t, d int32) { r.cell(i, t).n += d }

// each calls fn with every topic of row i that has a cell, its count now
// and when built.
func (r *rows) each(i int32, fn func(t, n, s int32)) {
	m := r.meta[i]
	if m.mask < 0 {
		for t, c := range r.dense[m.off : m.off+int32(r.k)] {
			if c.n != 0 || c.s != 0 {
				fn(int32(t), c.n, c.s)
			}
		}
		return
	}
	for _, c := range r.hash[m.off : m.off+m.mask+1] {
		if c.t >= 0 {
			fn(c.t, c.c.n, c.c.s)
		}
	}
}

// appendRow appends row i's non-zero counts to dst as a row. It returns an
// error for a negative count.
func (r *rows) appendRow(dst *Sparse, i int32) error {
	var bad error
	r.each(i, func(t, n, _ int32) {
		if n > 0 {
			dst.Topics, dst.Counts = append(dst.Topics, t), append(dst.Counts, n)
		} else if n < 0 && bad == nil {
			bad = fmt.Errorf("row %d: count %d of topic %d", i, n, t)
		}
	})
	dst.endRow()
	return bad
}

// sparse returns the table's non-zero counts, every row in order, in
// arrays of their exact size (a first pass counts them).
func (r *rows) sparse() (*Sparse, error) {
	nnz := 0
	for i := range r.meta {
		r.each(int32(i), func(_, n, _ int32) {
			if n > 0 {
				nnz++
			}
		})
	}
	s := &Sparse{}
	s.startRows(len(r.meta))
	s.Topics, s.Counts = make(codec.Int32s, 0, nnz), make(codec.Int32s, 0, nnz)
	for i := range r.meta {
		if err := r.appendRow(s, int32(i)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// changes returns the counts that changed since the table was built, as
// signed differences in the rows that changed (named in IDs).
func (r *rows) changes() *Sparse {
	s := &Sparse{IDs: codec.Int32s{}}
	s.startRows(0)
	for i := range r.meta {
		before := len(s.Topics)
		r.each(int32(i), func(t, n, old int32) {
			if n != old {
				s.Topics, s.Counts = append(s.Topics, t), append(s.Counts, n-old)
			}
		})
		if len(s.Topics) > before {
			s.IDs = append(s.IDs, int32(i))
			s.endRow()
		}
	}
	return s
}
