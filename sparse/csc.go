package sparse

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
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
type Builder struct {
	rows   int
	cols   int
	chunks [][]entry // of chunkLen entries each but the last: growing never copies
}

type entry struct {
	row, col int32
	val      float64
}

// chunkLen is the number of entries of a Builder's chunk (1 MiB).
const chunkLen = 1 << 16

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
		n := len(b.chunks)
		if n == 0 || len(b.chunks[n-1]) == chunkLen {
			b.chunks = append(b.chunks, make([]entry, 0, chunkLen))
			n++
		}
		b.chunks[n-1] = append(b.chunks[n-1], entry{row: int32(b.rows), col: j, val: val[k]})
		if int(j)+1 > b.cols {
			b.cols = int(j) + 1
		}
	}
	b.rows++
}

// Rows returns the number of rows added so far.
func (b *Builder) Rows() int { return b.rows }

// Build returns the matrix with at least cols columns (more if a row used a
// larger index). Large matrices are compressed by GOMAXPROCS goroutines,
// each filling a range of the columns.
func (b *Builder) Build(cols int) *CSC {
	if cols < b.cols {
		cols = b.cols
	}
	m := &CSC{Rows: b.rows, Cols: cols, ColPtr: make([]int, cols+1)}
	nnz := 0
	for _, c := range b.chunks {
		for _, e := range c {
			m.ColPtr[e.col+1]++
		}
		nnz += len(c)
	}
	for j := 0; j < cols; j++ {
		m.ColPtr[j+1] += m.ColPtr[j]
	}
	m.RowIdx = make([]int32, nnz)
	m.Val = make([]float64, nnz)
	parts := 1
	if nnz >= parallelBuild {
		parts = runtime.GOMAXPROCS(0)
	}
	// Part k fills the columns [lo, hi) that hold its share of the
	// non-zeros; every part reads every entry, which is sequential and
	// cheap next to the scattered writes it shares out.
	var wg sync.WaitGroup
	lo := 0
	for k := range parts {
		hi := cols
		if k < parts-1 {
			hi, _ = slices.BinarySearch(m.ColPtr[:cols+1], nnz*(k+1)/parts)
			hi = max(lo, min(hi, cols))
		}
		from := lo
		wg.Go(func() { b.fill(m, int32(from), int32(hi)) })
		lo = hi
	}
	wg.Wait()
	return m
}

// parallelBuild is the number of non-zeros from which Build compresses in
// parallel.
const parallelBuild = 1 << 20

// fill writes the entries of the columns [lo, hi) into m, whose ColPtr is
// set. Rows were added in order, so a stable counting sort by column keeps
// every column's row indices ascending.
func (b *Builder) fill(m *CSC, lo, hi int32) {
	next := append([]int(nil), m.ColPtr[lo:hi]...)
	for _, c := range b.chunks {
		for _, e := range c {
			if e.col < lo || e.col >= hi {
				continue
			}
			p := next[e.col-lo]
			m.RowIdx[p], m.Val[p] = e.row, e.val
			next[e.col-lo]++
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
