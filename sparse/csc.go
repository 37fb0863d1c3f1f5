package sparse

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// CSC is a Rows×Cols matrix in compressed sparse column form: the non-zeros
// of column j are RowIdx[ColPtr[j]:ColPtr[j+1]] (ascending) with the values
// Val[ColPtr[j]:ColPtr[j+1]].
type CSC struct {
	Rows, Cols int
	ColPtr     []int
	RowIdx     []int32
	Val        []float64
}

// Col returns the row indices and values of column j. It panics if j is out
// of range.
func (m *CSC) Col(j int) ([]int32, []float64) {
	lo, hi := m.ColPtr[j], m.ColPtr[j+1]
	return m.RowIdx[lo:hi], m.Val[lo:hi]
}

// NNZ returns the number of stored non-zeros of column j.
func (m *CSC) NNZ(j int) int { return m.ColPtr[j+1] - m.ColPtr[j] }

// Builder collects a matrix row by row and compresses it by column.
// The zero value is ready to use.
//
// It keeps the non-zeros in buckets of bucketCols columns, so that Build
// compresses each bucket alone: its writes stay in the bucket's part of
// the matrix (a few MB, cache-sized, where one counting sort over all
// columns missed the cache on every write), and the buckets compress on
// GOMAXPROCS goroutines.
type Builder struct {
	rows    int
	cols    int
	nnz     int
	buckets [][][]entry // bucket → chunks of entries: growing never copies
}

type entry struct {
	row, col int32
	val      float64
}

// bucketShift sets the columns of a bucket, bucketCols = 1 << bucketShift.
const bucketShift = 12

// chunkLen is the most entries of a bucket's chunk (1 MiB); a bucket's
// chunks grow from minChunk to it.
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
	for k, j := range idx {
		if val[k] == 0 {
			continue
		}
		bk := int(j) >> bucketShift
		for len(b.buckets) <= bk {
			b.buckets = append(b.buckets, nil)
		}
		chunks := b.buckets[bk]
		n := len(chunks)
		if n == 0 || len(chunks[n-1]) == cap(chunks[n-1]) {
			size := minChunk
			if n > 0 {
				size = min(chunkLen, 2*cap(chunks[n-1]))
			}
			chunks = append(chunks, make([]entry, 0, size))
			b.buckets[bk] = chunks
			n++
		}
		chunks[n-1] = append(chunks[n-1], entry{row: int32(b.rows), col: j, val: val[k]})
		if int(j)+1 > b.cols {
			b.cols = int(j) + 1
		}
		b.nnz++
	}
	b.rows++
}

// Rows returns the number of rows added so far.
func (b *Builder) Rows() int { return b.rows }

// Build returns the matrix with at least cols columns (more if a row used a
// larger index). Large matrices are compressed by GOMAXPROCS goroutines,
// a bucket at a time.
func (b *Builder) Build(cols int) *CSC {
	if cols < b.cols {
		cols = b.cols
	}
	m := &CSC{Rows: b.rows, Cols: cols, ColPtr: make([]int, cols+1)}
	for _, chunks := range b.buckets {
		for _, c := range chunks {
			for _, e := range c {
				m.ColPtr[e.col+1]++
			}
		}
	}
	for j := 0; j < cols; j++ {
		m.ColPtr[j+1] += m.ColPtr[j]
	}
	m.RowIdx = make([]int32, b.nnz)
	m.Val = make([]float64, b.nnz)
	workers := 1
	if b.nnz >= parallelBuild {
		workers = runtime.GOMAXPROCS(0)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for bk := int(next.Add(1) - 1); bk < len(b.buckets); bk = int(next.Add(1) - 1) {
				b.fill(m, bk)
			}
		})
	}
	wg.Wait()
	return m
}

// parallelBuild is the number of non-zeros from which Build compresses in
// parallel.
const parallelBuild = 1 << 20

// fill writes the entries of bucket bk into m, whose ColPtr is set. Rows
// were added in order, so a stable counting sort by column keeps every
// column's row indices ascending.
func (b *Builder) fill(m *CSC, bk int) {
	lo := bk << bucketShift
	hi := min(lo+1<<bucketShift, m.Cols)
	if lo >= hi {
		return
	}
	next := append([]int(nil), m.ColPtr[lo:hi]...)
	for _, c := range b.buckets[bk] {
		for _, e := range c {
			p := next[int(e.col)-lo]
			m.RowIdx[p], m.Val[p] = e.row, e.val
			next[int(e.col)-lo]++
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
