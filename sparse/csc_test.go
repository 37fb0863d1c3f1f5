package sparse

import (
	"reflect"
	"runtime"
	"testing"
)

func TestBuilder(t *testing.T) {
	var b Builder
	b.AddRow([]int32{0, 2}, []float64{1, 2})
	b.AddRow(nil, nil)
	b.AddRow([]int32{1, 2}, []float64{3, 0}) // explicit zero dropped
	b.AddRow([]int32{2}, []float64{4})
	m := b.Build(5)
	if m.Rows != 4 || m.Cols != 5 {
		t.Fatalf("shape %dx%d, want 4x5", m.Rows, m.Cols)
	}
	for j, want := range []int{1, 1, 2, 0, 0} {
		if got := m.NNZ(j); got != want {
			t.Fatalf("column %d has %d non-zeros, want %d", j, got, want)
		}
	}
	if m.Nonzeros() != 4 {
		t.Fatalf("%d non-zeros, want 4", m.Nonzeros())
	}
	rows, vals := m.Col(2)
	if !reflect.DeepEqual(rows, []int32{0, 3}) || !reflect.DeepEqual(vals, []float64{2, 4}) {
		t.Fatalf("column 2 = %v %v", rows, vals)
	}
	if b.Rows() != 0 {
		t.Fatalf("the builder holds %d rows after Build, want none", b.Rows())
	}
}

// TestBuildParallel checks that a matrix of several segments, large enough
// to be compressed in parallel, holds exactly the entries added: every
// column's rows ascending, with their values.
func TestBuildParallel(t *testing.T) {
	var b Builder
	const rows, cols = 600, 2*SegmentCols + 808
	for i := range rows {
		var idx []int32
		var val []float64
		for j := (i * 7) % 3; j < cols; j += 1 + (i+j)%4 {
			idx = append(idx, int32(j))
			val = append(val, float64(i*cols+j+1))
		}
		b.AddRow(idx, val)
	}
	var want int
	for i := range rows {
		for j := (i * 7) % 3; j < cols; j += 1 + (i+j)%4 {
			want++
		}
	}
	m := b.Build(cols + 2)
	if n := m.Nonzeros(); n < parallelBuild || n != want {
		t.Fatalf("%d non-zeros, want %d (at least %d, to reach the parallel fill)", n, want, parallelBuild)
	}
	if m.Cols != cols+2 || m.NNZ(cols+1) != 0 {
		t.Fatalf("%d columns (the last with %d non-zeros), want %d, empty", m.Cols, m.NNZ(m.Cols-1), cols+2)
	}
	got := 0
	for j := range m.Cols {
		got += m.NNZ(j)
	}
	if got != want {
		t.Fatalf("the columns hold %d non-zeros, want %d", got, want)
	}
	for j := range m.Cols {
		rs, vs := m.Col(j)
		for k, i := range rs {
			if k > 0 && rs[k-1] >= i {
				t.Fatalf("column %d: rows %d, %d not ascending", j, rs[k-1], i)
			}
			if vs[k] != float64(int(i)*cols+j+1) {
				t.Fatalf("column %d row %d: %v, want %v", j, i, vs[k], float64(int(i)*cols+j+1))
			}
		}
	}
}

// TestColOutOfRange checks that a column past the matrix panics, also one
// that falls in the last segment's span.
func TestColOutOfRange(t *testing.T) {
	var b Builder
	b.AddRow([]int32{0, 5}, []float64{1, 2})
	m := b.Build(SegmentCols + 3)
	for _, j := range []int{-1, SegmentCols + 3, SegmentCols + 4, 2 * SegmentCols} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Col(%d) of %d columns did not panic", j, m.Cols)
				}
			}()
			m.Col(j)
		}()
	}
}

// TestEmptySegments checks that a matrix of mostly empty columns (an index
// far past the others) reads as empty there and costs little memory.
func TestEmptySegments(t *testing.T) {
	var b Builder
	const far = 1 << 26
	b.AddRow([]int32{1, far}, []float64{1, 2})
	b.AddRow([]int32{2}, []float64{3})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := b.Build(0)
	runtime.ReadMemStats(&after)
	if m.Cols != far+1 || m.Nonzeros() != 3 {
		t.Fatalf("%d columns, %d non-zeros; want %d, 3", m.Cols, m.Nonzeros(), far+1)
	}
	for _, j := range []int{0, 3, SegmentCols, far - 1} {
		if m.NNZ(j) != 0 {
			t.Errorf("column %d has %d non-zeros, want none", j, m.NNZ(j))
		}
	}
	if rows, vals := m.Col(far); len(rows) != 1 || rows[0] != 0 || vals[0] != 2 {
		t.Errorf("column %d = %v %v, want row 0, value 2", far, rows, vals)
	}
	// 8 bytes a column would be 512 MiB; the segments' headers are 1.2 MiB.
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 8<<20 {
		t.Errorf("Build allocated %d bytes for %d mostly empty columns", grown, m.Cols)
	}
}
