package scheduler

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/strads-go/strads/sparse"
)

// rowsCSC returns the matrix of the dense rows.
func rowsCSC(cols int, rows [][]float64) *sparse.CSC {
	var b sparse.Builder
	for _, r := range rows {
		var idx []int32
		var val []float64
		for j, v := range r {
			if v != 0 {
				idx = append(idx, int32(j))
				val = append(val, v)
			}
		}
		b.AddRow(idx, val)
	}
	return b.Build(cols)
}

// TestRowDependencies checks the dependence of a matrix's rows against
// their |cosine| computed densely, its exact symmetry, and the costs.
func TestRowDependencies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([][]float64, 12)
	for i := range random {
		random[i] = make([]float64, 9)
		for j := range random[i] {
			if rng.IntN(3) == 0 {
				random[i][j] = rng.NormFloat64()
			}
		}
	}
	for _, tt := range []struct {
		name string
		rows [][]float64
	}{
		{"orthogonal", [][]float64{{1, 0, 0}, {0, 2, 0}, {0, 0, -3}}},
		{"opposite and scaled", [][]float64{{1, 2, 0}, {-2, -4, 0}, {1, 0, 1}}},
		{"an empty row", [][]float64{{1, 1, 0}, {0, 0, 0}, {0, 1, 1}}},
		{"random", random},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRowDependencies(rowsCSC(len(tt.rows[0]), tt.rows))
			if r.Vars() != len(tt.rows) {
				t.Fatalf("%d variables, want %d", r.Vars(), len(tt.rows))
			}
			for i, a := range tt.rows {
				nnz := 0
				for _, v := range a {
					if v != 0 {
						nnz++
					}
				}
				if got := r.Cost(i); got != float64(nnz+1) {
					t.Errorf("Cost(%d) = %v, want %d", i, got, nnz+1)
				}
				for k, b := range tt.rows {
					got, want := r.Dependence(i, k), denseDependence(a, b, false)
					if math.Abs(got-want) > 1e-12 || got < 0 || got > 1 {
						t.Errorf("Dependence(%d, %d) = %v, want %v", i, k, got, want)
					}
					if back := r.Dependence(k, i); math.Float64bits(back) != math.Float64bits(got) {
						t.Errorf("Dependence(%d, %d) = %v, but Dependence(%d, %d) = %v", i, k, got, k, i, back)
					}
				}
			}
		})
	}
}

// TestSetDependencies checks the overlap of feature sets, |A∩B|/√(|A|·|B|),
// whatever the order and repeats of the features listed, and that a
// negative feature is an error.
func TestSetDependencies(t *testing.T) {
	for _, tt := range []struct {
		name string
		a, b []int32
		want float64
		cost float64 // of a
	}{
		{"disjoint", []int32{0, 1}, []int32{2, 3}, 0, 3},
		{"one shared", []int32{0, 1, 2}, []int32{2, 3}, 1 / math.Sqrt(6), 4},
		{"the same, listed apart", []int32{5, 1, 3}, []int32{3, 5, 1, 1}, 1, 4},
		{"a subset", []int32{7, 2, 9, 4}, []int32{9}, 0.5, 5},
		{"repeats count once", []int32{1, 1, 1, 2}, []int32{1, 3}, 0.5, 3},
		{"an empty set", nil, []int32{0}, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := slices.Clone(tt.a)
			r, err := NewSetDependencies([][]int32{a, tt.b})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Dependence(0, 1); math.Abs(got-tt.want) > 1e-15 {
				t.Errorf("Dependence = %v, want %v", got, tt.want)
			}
			if got := r.Cost(0); got != tt.cost {
				t.Errorf("Cost = %v, want %v", got, tt.cost)
			}
			if !slices.Equal(a, tt.a) {
				t.Errorf("the set given changed to %v", a)
			}
		})
	}
	if _, err := NewSetDependencies([][]int32{{1}, {3, -1}}); err == nil || !strings.Contains(err.Error(), "variable 1 has feature -1") {
		t.Errorf("a negative feature: error %v", err)
	}
}

// TestRowDependenciesPlan checks the engine with rows' dependencies: no
// two variables of a plan as dependent as Rho, every policy.
func TestRowDependenciesPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sets := make([][]int32, 50)
	for j := range sets {
		for range 1 + rng.IntN(4) {
			sets[j] = append(sets[j], int32(rng.IntN(30)))
		}
	}
	deps, err := NewSetDependencies(sets)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Policy{Priority, Random, Cyclic} {
		t.Run(p.String(), func(t *testing.T) {
			c := Config{Vars: deps.Vars(), Policy: p, Block: 6, Rho: 0.3, Workers: 2, Seed: 9}
			d := mustDynamic(t, c, deps)
			c = c.WithDefaults()
			for round := range 40 {
				s := d.Next()
				checkSelection(t, s, c, deps)
				delta := make([]float64, len(s.Vars))
				for k := range delta {
					delta[k] = float64((round + k) % 5)
				}
				d.Feedback(s.Vars, delta)
			}
		})
	}
}
