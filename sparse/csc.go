package sparse

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// CSC is a Rows×Cols matrix in compressed sparse column form. It is stored
// in segments of SegmentCols columns, each compressed on its own, so that
// [Builder] can compress one segment at a time and release the rows it
// collected for it: a read never holds the matrix twice.
type CSC struct {
	Rows, Cols int
	segs       []segment
	nnz        int
}

// segment holds columns [s·SegmentCols, …) of a matrix: the non-zeros of
// its column k are row[ptr[k]:ptr[k+1]] (ascending) with the values
// val[ptr[k]:ptr[k+1]].
type segment struct {
	ptr []int
	row []int32
	val []float64
}

// segShift sets the columns of a segment, SegmentCols = 1 << segShift.
const segShift = 12

// SegmentCols is the number of columns of a segment of a [CSC].
const SegmentCols = 1 << segShift

// Col returns the row indices (ascending) and values of column j. It
// panics if j is out of range.
func (m *CSC) Col(j int) ([]int32, []float64) {
	// Out of range, j fails an index: segs, or the last segment's ptr.
	s := &m.segs[j>>segShift]
	k := j & (SegmentCols - 1)
	lo, hi := s.ptr[k], s.ptr[k+1]
	return s.row[lo:hi], s.val[lo:hi]
}

// NNZ returns the number of stored non-zeros of column j. It panics if j is
// out of range.
func (m *CSC) NNZ(j int) int {
	s := &m.segs[j>>segShift]
	k := j & (SegmentCols - 1)
	return s.ptr[k+1] - s.ptr[k]
}

// Nonzeros returns the number of stored non-zeros of the matrix.
func (m *CSC) Nonzeros() int { return m.nnz }

// Builder collects a matrix row by row and compresses it by column.
// The zero value is ready to use.
//
// It keeps the non-zeros of each segment of columns apart, in arrays of
// row, column within the segment and value (14 bytes a non-zero, where the
// matrix takes 12), so that Build compresses a segment at a time: its
// writes stay in the segment's part of the matrix (a few MB, cache-sized,
// where one counting sort over all columns missed the cache on every
// write), the segments compress on GOMAXPROCS goroutines, and each
// segment's arrays are released as soon as it is compressed.
type Builder struct {
	rows    int
	cols    int
	nnz     int
	buckets [][]chunk // segment → chunks: growing never copies
}

// chunk holds non-zeros of one segment: row[k], the column col[k] within
// the segment and the value val[k].
type chunk struct {
	row []int32
	col []uint16
	val []float64
}

// chunkLen is the most non-zeros of a chunk; a segment's chunks grow from
// minChunk to it.
const (
	chunkLen = 1 << 16
	minChunk = 1 << 8
)

// AddRow appends a row whose non-zeros sit at the 0-based column indices idx
// with values val. Explicit zeros are dropped.
func (b *Builder) AddRow(idx []int32, val []float64) {
	if len(idx) != len(val) {
		panic(fmt.Sprintf("sparse: AddRow with %d indices and %d values", len(idx), len(val)))
	}
	row := int32(b.rows)
	for k, j := range idx {
		if val[k] == 0 {
			continue
		}
		bk := int(j) >> segShift
		for len(b.buckets) <= bk {
			b.buckets = append(b.buckets, nil)
		}
		chunks := b.buckets[bk]
		n := len(chunks)
		if n == 0 || len(chunks[n-1].row) == cap(chunks[n-1].row) {
			size := minChunk
			if n > 0 {
				size = min(chunkLen, 2*cap(chunks[n-1].row))
			}
			chunks = append(chunks, chunk{
				row: make([]int32, 0, size),
				col: make([]uint16, 0, size),
				val: make([]float64, 0, size),
			})
			b.buckets[bk] = chunks
			n++
		}
		c := &chunks[n-1]
		c.row = append(c.row, row)
		c.col = append(c.col, uint16(int(j)&(SegmentCols-1)))
		c.val = append(c.val, val[k])
		b.cols = max(b.cols, int(j)+1)
		b.nnz++
	}
	b.rows++
}

// Rows returns the number of rows added so far.
func (b *Builder) Rows() int { return b.rows }

// Build returns the matrix with at least cols columns (more if a row used a
// larger index), and empties the builder. Large matrices are compressed by
// GOMAXPROCS goroutines, a segment at a time.
func (b *Builder) Build(cols int) *CSC {
	cols = max(cols, b.cols)
	m := &CSC{Rows: b.rows, Cols: cols, nnz: b.nnz, segs: make([]segment, (cols+SegmentCols-1)>>segShift)}
	workers := 1
	if b.nnz >= parallelBuild {
		workers = runtime.GOMAXPROCS(0)
	}
	// The segments are compressed in batches of about a 32nd of the
	// non-zeros, with a collection after each: the arrays a batch
	// released are reused by the next, where the collector, paced by the
	// heap at its last run, would let the released arrays and the matrix
	// build up side by side.
	for s := 0; s < len(m.segs); {
		end, n := s, 0
		for end < len(m.segs) && (n == 0 || n < b.nnz/32) {
			if end < len(b.buckets) {
				for _, c := range b.buckets[end] {
					n += len(c.row)
				}
			}
			end++
		}
		var next atomic.Int64
		next.Store(int64(s))
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for k := int(next.Add(1) - 1); k < end; k = int(next.Add(1) - 1) {
					b.fill(m, k)
				}
			})
		}
		wg.Wait()
		if b.nnz >= parallelBuild {
			runtime.GC()
		}
		s = end
	}
	*b = Builder{}
	return m
}

// emptyPtr is the column pointers of an empty segment, shared, never
// written.
var emptyPtr = make([]int, SegmentCols+1)

// parallelBuild is the number of non-zeros from which Build compresses in
// parallel.
const parallelBuild = 1 << 20

// fill compresses segment s of m from its chunks and releases them. Rows
// were added in order, so a stable counting sort by column keeps every
// column's row indices ascending.
func (b *Builder) fill(m *CSC, s int) {
	lo := s << segShift
	seg := &m.segs[s]
	cols := min(SegmentCols, m.Cols-lo)
	if s >= len(b.buckets) || len(b.buckets[s]) == 0 {
		// Empty: every empty segment shares one array of zeros, so a
		// matrix's empty columns cost next to nothing.
		seg.ptr = emptyPtr[:cols+1]
		return
	}
	seg.ptr = make([]int, cols+1)
	chunks := b.buckets[s]
	b.buckets[s] = nil
	n := 0
	for _, c := range chunks {
		for _, k := range c.col {
			seg.ptr[k+1]++
		}
		n += len(c.row)
	}
	for k := 1; k < len(seg.ptr); k++ {
		seg.ptr[k] += seg.ptr[k-1]
	}
	seg.row = make([]int32, n)
	seg.val = make([]float64, n)
	next := append([]int(nil), seg.ptr[:len(seg.ptr)-1]...)
	for _, c := range chunks {
		for t, k := range c.col {
			p := next[k]
			seg.row[p], seg.val[p] = c.row[t], c.val[t]
			next[k]++
		}
	}
}

// ColDot returns Σ_k x_{i_k j}·v[i_k] over the non-zeros of column j, in
// row order. It panics if j is out of range or v is shorter than Rows.
func (m *CSC) ColDot(j int, v []float64) float64 {
	rows, vals := m.Col(j)
	var dot float64
	for t, i := range rows {
		dot += vals[t] * v[i]
	}
	return dot
}
