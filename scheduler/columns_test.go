package scheduler

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strads-go/strads/sparse"
)

// denseCSC compresses a dense column-major matrix cols[j][i].
func denseCSC(rows int, cols [][]float64) *sparse.CSC {
	var b sparse.Builder
	for i := range rows {
		var idx []int32
		var val []float64
		for j, c := range cols {
			if c[i] != 0 {
				idx = append(idx, int32(j))
				val = append(val, c[i])
			}
		}
		b.AddRow(idx, val)
	}
	return b.Build(len(cols))
}

// denseDependence is the reference: |Pearson| or |cosine| computed densely,
// 0 for a column of zero norm.
func denseDependence(x, y []float64, centered bool) float64 {
	n := float64(len(x))
	var mx, my float64
	if centered {
		for i := range x {
			mx += x[i]
			my += y[i]
		}
		mx /= n
		my /= n
	}
	var sxy, sxx, syy float64
	for i := range x {
		a, b := x[i]-mx, y[i]-my
		sxy += a * b
		sxx += a * a
		syy += b * b
	}
	if sxx < 1e-20 || syy < 1e-20 {
		return 0
	}
	return math.Abs(sxy) / math.Sqrt(sxx*syy)
}

func TestSparseColumnsMatchesDense(t *testing.T) {
	const rows = 30
	rng := rand.New(rand.NewPCG(3, 1))
	var cols [][]float64
	for range 12 {
		c := make([]float64, rows)
		for i := range c {
			if rng.Float64() < 0.3 {
				c[i] = rng.NormFloat64()*2 + 1
			}
		}
		cols = append(cols, c)
	}
	neg := make([]float64, rows)
	for i, v := range cols[0] {
		neg[i] = -3 * v
	}
	shifted := make([]float64, rows) // dense column: cols[1] + 5 everywhere
	for i, v := range cols[1] {
		shifted[i] = v + 5
	}
	cols = append(cols, neg, shifted, cols[2])
	m := denseCSC(rows, cols)
	for _, centered := range []bool{false, true} {
		sc := NewSparseColumns(m, centered)
		for j := range cols {
			for k := range cols {
				got := sc.Dependence(j, k)
				want := denseDependence(cols[j], cols[k], centered)
				if math.Abs(got-want) > 1e-12 {
					t.Errorf("centered=%v: Dependence(%d,%d) = %v, want %v", centered, j, k, got, want)
				}
				if got != sc.Dependence(k, j) {
					t.Errorf("centered=%v: Dependence(%d,%d) not symmetric", centered, j, k)
				}
			}
		}
	}
	// Spot checks of the special columns.
	n := len(cols)
	checks := []struct {
		centered bool
		j, k     int
		want     float64
	}{
		{false, 0, n - 3, 1}, // negated copy
		{true, 0, n - 3, 1},
		{false, 2, n - 1, 1}, // identical copy
		{true, 1, n - 2, 1},  // a shift is perfectly correlated once centered
	}
	for _, c := range checks {
		if got := NewSparseColumns(m, c.centered).Dependence(c.j, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("centered=%v: Dependence(%d,%d) = %v, want %v", c.centered, c.j, c.k, got, c.want)
		}
	}
	if got := NewSparseColumns(m, false).Dependence(1, n-2); got > 0.99 {
		t.Errorf("uncentered Dependence of a column and its shift = %v, want well below 1", got)
	}
}

func TestSparseColumnsZeroNorm(t *testing.T) {
	const rows = 7
	constant := make([]float64, rows)
	ramp := make([]float64, rows)
	empty := make([]float64, rows)
	for i := range rows {
		constant[i] = 0.1 // 0.1 is inexact, so the mean carries rounding
		ramp[i] = float64(i)
	}
	m := denseCSC(rows, [][]float64{constant, ramp, empty})
	tests := []struct {
		centered bool
		j, k     int
		want     float64
	}{
		{false, 2, 2, 0},
		{false, 2, 1, 0},
		{true, 2, 0, 0},
		{true, 0, 0, 0}, // constant column, centered: zero norm
		{true, 0, 1, 0},
		{true, 1, 0, 0},
		{true, 1, 1, 1},
		{false, 0, 0, 1},
		{false, 0, 1, denseDependence(constant, ramp, false)},
	}
	for _, tt := range tests {
		got := NewSparseColumns(m, tt.centered).Dependence(tt.j, tt.k)
		if math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("centered=%v: Dependence(%d,%d) = %v, want %v", tt.centered, tt.j, tt.k, got, tt.want)
		}
	}
}

func TestSparseColumnsCost(t *testing.T) {
	m := denseCSC(3, [][]float64{{1, 0, 2}, {0, 0, 0}, {1, 1, 1}})
	sc := NewSparseColumns(m, true)
	for j, want := range []float64{3, 1, 4} {
		if got := sc.Cost(j); got != want {
			t.Errorf("Cost(%d) = %v, want %v", j, got, want)
		}
	}
}

// TestSetDependentExact checks that a SparseColumns set decides exactly as
// the pairwise check: at ρ equal to the largest Dependence of j with a
// member it says dependent, and just above it, not, bit for bit, as
// members come and go.
func TestSetDependentExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var b sparse.Builder
	const rows, cols = 60, 40
	for range rows {
		var idx []int32
		var val []float64
		for j := range cols {
			if rng.Float64() < 0.15 {
				idx = append(idx, int32(j))
				val = append(val, rng.NormFloat64()+0.5)
			}
		}
		b.AddRow(idx, val)
	}
	m := b.Build(cols)
	for _, centered := range []bool{false, true} {
		c := NewSparseColumns(m, centered)
		set := c.NewSet()
		in := map[int]bool{}
		for step := range 400 {
			k := rng.IntN(cols)
			if in[k] {
				set.Remove(k)
				delete(in, k)
			} else {
				set.Add(k)
				in[k] = true
			}
			if set.Len() != len(in) {
				t.Fatalf("step %d: Len %d, want %d", step, set.Len(), len(in))
			}
			j := rng.IntN(cols)
			if in[j] {
				continue
			}
			top := 0.0
			for k := range in {
				top = max(top, c.Dependence(j, k))
			}
			if top == 0 {
				if set.Dependent(j, math.SmallestNonzeroFloat64) {
					t.Fatalf("centered=%v step %d: %d dependent, pairwise not", centered, step, j)
				}
				continue
			}
			if !set.Dependent(j, top) || set.Dependent(j, math.Nextafter(top, 2)) {
				t.Fatalf("centered=%v step %d: set disagrees with the pairwise maximum %v for %d", centered, step, top, j)
			}
		}
	}
}
