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
	wantPtr := []int{0, 1, 2, 4, 4, 4}
	if !reflect.DeepEqual(m.ColPtr, wantPtr) {
		t.Fatalf("ColPtr %v, want %v", m.ColPtr, wantPtr)
	}
	rows, vals := m.Col(2)
	if !reflect.DeepEqual(rows, []int32{0, 3}) || !reflect.DeepEqual(vals, []float64{2, 4}) {
		t.Fatalf("column 2 = %v %v", rows, vals)
	}
	if m.NNZ(1) != 1 || m.NNZ(4) != 0 {
		t.Fatalf("NNZ wrong: %d %d", m.NNZ(1), m.NNZ(4))
	}
}

// TestBuildParallel checks that a matrix large enough to be compressed in
// parallel is the one a sequential counting sort gives.
func TestBuildParallel(t *testing.T) {
	var b Builder
	const rows, cols = 600, 9000
	for i := range rows {
		var idx []int32
		var val []float64
		for j := (i * 7) % 3; j < cols; j += 1 + (i+j)%4 {
			idx = append(idx, int32(j))
			val = append(val, float64(i*cols+j+1))
		}
		b.AddRow(idx, val)
	}
	m := b.Build(cols + 2)
	if n := len(m.Val); n < parallelBuild {
		t.Fatalf("only %d non-zeros: the test does not reach the parallel fill", n)
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
