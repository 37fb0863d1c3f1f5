package scheduler

import (
	"fmt"
	"math"
	"slices"

	"github.com/strads-go/strads/sparse"
)

// RowDependencies implements Dependencies for variables that are the rows
// of a sparse matrix (a sample's dual variable, a document's or a user's
// own parameters), or any variables given the features each touches.
//
// Dependence(j, k) is the absolute cosine of rows j and k:
// |Σ_f a_jf·a_kf| / (‖a_j‖·‖a_k‖) over the features f they share, in
// [0,1]. Given feature sets alone (every value 1) it is the overlap of the
// two sets, |A∩B| / √(|A|·|B|): 0 for variables that share no feature, 1
// for the same set. Two variables interfere only through the features
// they share; where the objective couples them through the inner product
// of their rows, as the dual of a linear model couples its samples (and
// the primal its features through their columns: SparseColumns), the
// cosine is that coupling, normalized. A row with no non-zero has
// dependence 0 with every row, itself included.
// Dependence merges the two sorted feature lists, so it costs
// O(|A| + |B|), and is exactly symmetric.
//
// Cost(j) is the number of features of row j plus 1, as SparseColumns'.
type RowDependencies struct {
	ptr  []int     // the features of row j are feat[ptr[j]:ptr[j+1]], ascending
	feat []int32   // feature indices
	val  []float64 // their values; nil for feature sets (every value 1)
	norm []float64 // ‖a_j‖; 0 means no dependence
}

// NewRowDependencies returns the dependencies of the rows of m: variable i
// is row i, its features the columns where it is non-zero, with their
// values. It copies what it needs of m.
func NewRowDependencies(m *sparse.CSC) *RowDependencies {
	r := &RowDependencies{ptr: make([]int, m.Rows+1)}
	for j := range m.Cols {
		rows, _ := m.Col(j)
		for _, i := range rows {
			r.ptr[i+1]++
		}
	}
	for i := range m.Rows {
		r.ptr[i+1] += r.ptr[i]
	}
	r.feat, r.val = make([]int32, r.ptr[m.Rows]), make([]float64, r.ptr[m.Rows])
	next := slices.Clone(r.ptr[:m.Rows])
	// Columns in order: each row's features come out ascending.
	for j := range m.Cols {
		rows, vals := m.Col(j)
		for t, i := range rows {
			r.feat[next[i]], r.val[next[i]] = int32(j), vals[t]
			next[i]++
		}
	}
	r.norm = make([]float64, m.Rows)
	for i := range m.Rows {
		var sq float64
		for _, v := range r.val[r.ptr[i]:r.ptr[i+1]] {
			sq += v * v
		}
		r.norm[i] = math.Sqrt(sq)
	}
	return r
}

// NewSetDependencies returns the dependencies of variables given their
// feature sets: variable j touches the features sets[j] (in any order; a
// feature listed twice counts once). A negative feature is an error.
func NewSetDependencies(sets [][]int32) (*RowDependencies, error) {
	r := &RowDependencies{ptr: make([]int, 1, len(sets)+1), norm: make([]float64, len(sets))}
	for j, s := range sets {
		from := len(r.feat)
		r.feat = append(r.feat, s...)
		f := r.feat[from:]
		slices.Sort(f)
		f = slices.Compact(f)
		if len(f) > 0 && f[0] < 0 {
			return nil, fmt.Errorf("scheduler: variable %d has feature %d, below 0", j, f[0])
		}
		r.feat = r.feat[:from+len(f)]
		r.ptr = append(r.ptr, len(r.feat))
		r.norm[j] = math.Sqrt(float64(len(f)))
	}
	return r, nil
}

// Vars returns the number of variables, rows or sets.
func (r *RowDependencies) Vars() int { return len(r.norm) }

// Dependence returns the absolute cosine of rows j and k (for feature
// sets, their overlap |A∩B| / √(|A|·|B|)), in [0,1]. It is exactly
// symmetric: Dependence(j, k) == Dependence(k, j).
func (r *RowDependencies) Dependence(j, k int) float64 {
	if j > k {
		// Fix the order of the floating-point operations.
		j, k = k, j
	}
	if r.norm[j] == 0 || r.norm[k] == 0 {
		return 0
	}
	lo, hi := r.ptr[j], r.ptr[k]
	a, b := r.feat[lo:r.ptr[j+1]], r.feat[hi:r.ptr[k+1]]
	var s float64
	for p, q := 0, 0; p < len(a) && q < len(b); {
		switch {
		case a[p] < b[q]:
			p++
		case a[p] > b[q]:
			q++
		default:
			if r.val == nil {
				s++
			} else {
				s += r.val[lo+p] * r.val[hi+q]
			}
			p++
			q++
		}
	}
	return min(math.Abs(s)/r.norm[j]/r.norm[k], 1)
}

// Cost returns the number of features of row j plus 1.
func (r *RowDependencies) Cost(j int) float64 { return float64(r.ptr[j+1]-r.ptr[j]) + 1 }
