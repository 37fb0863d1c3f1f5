package sparse

import (
	"reflect"
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
