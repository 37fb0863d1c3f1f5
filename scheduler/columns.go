package scheduler

import (
	"math"

	"github.com/strads-go/strads/sparse"
)

// Columns is what the dependency check and the balancing need to know about
// the variables.
type Columns interface {
	// Dependence returns |correlation| of variables j and k in [0,1].
	Dependence(j, k int) float64
	// Cost returns the work of updating variable j (e.g. its column's
	// non-zeros); used to balance blocks.
	Cost(j int) float64
}

// constantTol is the relative variance below which a centered column counts
// as constant: a column whose standard deviation is less than 1e-7 of its
// root mean square is treated as having zero norm, so that rounding noise in
// the mean does not turn into a spurious correlation.
const constantTol = 1e-14

// SparseColumns implements Columns over the columns of a CSC matrix.
//
// If centered, Dependence is the absolute Pearson correlation of the two
// columns (means taken over all Rows, zeros included); otherwise it is the
// absolute cosine similarity. A column with zero norm (empty, or constant
// when centered) has dependence 0 with every column, itself included.
// Dependence merges the two sorted row lists, so it costs
// O(nnz_j + nnz_k); the norms and means are computed once by
// NewSparseColumns.
//
// Cost(j) is the number of non-zeros of column j plus 1.
type SparseColumns struct {
	m        *sparse.CSC
	centered bool
	mean     []float64 // column means over all rows; nil unless centered
	dev      []float64 // Σ (v − mean) over each column's non-zeros; nil unless centered
	norm     []float64 // Euclidean norm of each (centered) column; 0 means no dependence
}

// NewSparseColumns returns the columns of m, centered or not. It keeps a
// reference to m, which must not change afterwards.
func NewSparseColumns(m *sparse.CSC, centered bool) *SparseColumns {
	c := &SparseColumns{m: m, centered: centered, norm: make([]float64, m.Cols)}
	if centered {
		c.mean = make([]float64, m.Cols)
		c.dev = make([]float64, m.Cols)
	}
	rows := float64(m.Rows)
	for j := range m.Cols {
		_, val := m.Col(j)
		var sum, sq float64
		for _, v := range val {
			sum += v
			sq += v * v
		}
		if !centered {
			c.norm[j] = math.Sqrt(sq)
			continue
		}
		if len(val) == 0 {
			continue
		}
		// Sum the squared deviations directly rather than as sq - n·mean²,
		// which cancels badly for columns far from zero.
		mu := sum / rows
		ss := float64(m.Rows-len(val)) * mu * mu
		var dev float64
		for _, v := range val {
			d := v - mu
			ss += d * d
			dev += d
		}
		if ss <= constantTol*sq {
			continue
		}
		c.mean[j] = mu
		c.dev[j] = dev
		c.norm[j] = math.Sqrt(ss)
	}
	return c
}

// Dependence returns the absolute Pearson correlation (centered) or cosine
// similarity (not centered) of columns j and k, in [0,1]. It is exactly
// symmetric: Dependence(j, k) == Dependence(k, j).
func (c *SparseColumns) Dependence(j, k int) float64 {
	if j > k {
		// Fix the order of the floating-point operations.
		j, k = k, j
	}
	nj, nk := c.norm[j], c.norm[k]
	if nj == 0 || nk == 0 {
		return 0
	}
	rj, vj := c.m.Col(j)
	rk, vk := c.m.Col(k)
	var s float64
	if c.centered {
		// Σ_i (x_i−m_j)(y_i−m_k) over all rows, split into the rows where
		// both, only one or neither column is non-zero.
		mj, mk := c.mean[j], c.mean[k]
		sab, sa, sb, n := common(rj, vj, mj, rk, vk, mk)
		neither := c.m.Rows - len(rj) - len(rk) + n
		s = sab - mk*(c.dev[j]-sa) - mj*(c.dev[k]-sb) + float64(neither)*mj*mk
	} else {
		s, _, _, _ = common(rj, vj, 0, rk, vk, 0)
	}
	r := math.Abs(s) / nj / nk
	if r > 1 {
		r = 1
	}
	return r
}

// Cost returns the number of non-zeros of column j plus 1.
func (c *SparseColumns) Cost(j int) float64 { return float64(c.m.NNZ(j)) + 1 }

// common merges two sparse vectors a and b with ascending indices and sums,
// over the rows where both are non-zero, (a_i−ma)(b_i−mb), a_i−ma and
// b_i−mb; n is the number of those rows. The merge step is written without
// unpredictable branches: rows shared by two sparse columns are rare.
func common(ra []int32, va []float64, ma float64, rb []int32, vb []float64, mb float64) (sab, sa, sb float64, n int) {
	p, q := 0, 0
	for p < len(ra) && q < len(rb) {
		x, y := ra[p], rb[q]
		if x == y {
			da, db := va[p]-ma, vb[q]-mb
			sab += da * db
			sa += da
			sb += db
			n++
		}
		p += b2i(x <= y)
		q += b2i(y <= x)
	}
	return sab, sa, sb, n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
