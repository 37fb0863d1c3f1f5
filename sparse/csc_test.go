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
