package scheduler

import (
	"math"

	"github.com/strads-go/strads/sparse"
)

// Dependencies is what the dependency check and the balancing need to know
// about the variables: SparseColumns for variables that are the columns of
// a sparse matrix (Lasso's coefficients), RowDependencies for variables
// that are its rows or are given their feature sets.
type Dependencies interface {
	// Dependence returns how much variables j and k depend on each other,
	// in [0,1] (|correlation|, say); the engine never updates together two
	// whose Dependence is at least Config.Rho.
	Dependence(j, k int) float64
	// Cost returns the work of updating variable j (e.g. its column's
	// non-zeros); used to balance blocks.
	Cost(j int) float64
}

// Set is a set of variables that tells whether a variable depends on one of
// them, as a faster form of the pairwise check.
type Set interface {
	Add(j int)
	Remove(j int)
	Len() int
	// Dependent reports whether Dependence(j, k) >= rho for some member k.
	Dependent(j int, rho float64) bool
}

// SetMaker is implemented by Dependencies that can index sets of variables for
// a faster dependency check; the engine uses it when there.
type SetMaker interface {
	NewSet() Set
}

// constantTol is the relative variance below which a centered column counts
// as constant: a column whose standard deviation is less than 1e-7 of its
// root mean square is treated as having zero norm, so that rounding noise in
// the mean does not turn into a spurious correlation.
const constantTol = 1e-14

// SparseColumns implements Dependencies over the columns of a CSC matrix.
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
	if c.norm[j] == 0 || c.norm[k] == 0 {
		return 0
	}
	rj, vj := c.m.Col(j)
	rk, vk := c.m.Col(k)
	var mj, mk float64
	if c.centered {
		mj, mk = c.mean[j], c.mean[k]
	}
	sab, sa, sb, n := common(rj, vj, mj, rk, vk, mk)
	return c.finish(j, k, sab, sa, sb, n)
}

// finish returns the dependence of columns j < k, both of non-zero norm,
// from the sums over the n rows where both are non-zero of
// (x_ij−m_j)(x_ik−m_k) (sab), x_ij−m_j (sa) and x_ik−m_k (sb).
func (c *SparseColumns) finish(j, k int, sab, sa, sb float64, n int) float64 {
	s := sab
	if c.centered {
		// Σ_i (x_i−m_j)(y_i−m_k) over all rows, split into the rows where
		// both, only one or neither column is non-zero.
		mj, mk := c.mean[j], c.mean[k]
		neither := c.m.Rows - c.m.NNZ(j) - c.m.NNZ(k) + n
		s = sab - mk*(c.dev[j]-sa) - mj*(c.dev[k]-sb) + float64(neither)*mj*mk
	}
	r := math.Abs(s) / c.norm[j] / c.norm[k]
	if r > 1 {
		r = 1
	}
	return r
}

// NewSet implements SetMaker.
func (c *SparseColumns) NewSet() Set {
	pos := make([]int32, c.m.Cols)
	for j := range pos {
		pos[j] = -1
	}
	return &sparseSet{c: c, pos: pos, rows: make([][]rowEntry, c.m.Rows)}
}

// farBelow reports whether the centered column j certainly has a
// dependence below rho with every member that shares no row with it. For
// such a member k the covariance is −m_k·Σd_j − m_j·Σd_k + r·m_j·m_k with
// r ≤ Rows, so that the correlation is at most
//
//	|Σd_j|/‖x_j‖·|m_k|/‖x_k‖ + |m_j|/‖x_j‖·|Σd_k|/‖x_k‖ + Rows·|m_j|/‖x_j‖·|m_k|/‖x_k‖,
//
// which the set's maxima bound; the margin covers rounding.
func (s *sparseSet) farBelow(j int, rho float64) bool {
	c := s.c
	a, b := math.Abs(c.mean[j])/c.norm[j], math.Abs(c.dev[j])/c.norm[j]
	bound := b*s.maxMean + a*s.maxDev + float64(c.m.Rows)*a*s.maxMean
	return bound*(1+1e-9) < rho
}

// sparseSet indexes its members' non-zeros by row, so that Dependent finds
// the members that share a row with a column by walking that column alone.
type sparseSet struct {
	c       *SparseColumns
	members []int32
	pos     []int32      // variable → its index in members, or -1
	rows    [][]rowEntry // row → the members non-zero there

	// Scratch of Dependent, by member index: Σ d_j·d_k, Σ d_j, Σ d_k and
	// the count over shared rows, where d = x − mean.
	sjk, sj, sk []float64
	n           []int
	touched     []int

	// Upper bounds, over the members, of |m_k|/‖x_k‖ and |Σ d_k|/‖x_k‖
	// (kept until the set empties): a centered column that shares no row
	// with the members is independent of all when these say so.
	maxMean, maxDev float64
}

type rowEntry struct {
	k int32
	v float64
}

func (s *sparseSet) Add(j int) {
	if s.pos[j] >= 0 {
		return
	}
	s.pos[j] = int32(len(s.members))
	s.members = append(s.members, int32(j))
	s.sjk, s.sj, s.sk, s.n = append(s.sjk, 0), append(s.sj, 0), append(s.sk, 0), append(s.n, 0)
	rows, vals := s.c.m.Col(j)
	for t, i := range rows {
		s.rows[i] = append(s.rows[i], rowEntry{int32(j), vals[t]})
	}
	if c := s.c; c.centered && c.norm[j] > 0 {
		s.maxMean = max(s.maxMean, math.Abs(c.mean[j])/c.norm[j])
		s.maxDev = max(s.maxDev, math.Abs(c.dev[j])/c.norm[j])
	}
}

func (s *sparseSet) Remove(j int) {
	p := s.pos[j]
	if p < 0 {
		return
	}
	last := int32(len(s.members) - 1)
	s.members[p] = s.members[last]
	s.pos[s.members[p]] = p
	s.members = s.members[:last]
	s.sjk, s.sj, s.sk, s.n = s.sjk[:last], s.sj[:last], s.sk[:last], s.n[:last]
	s.pos[j] = -1
	if last == 0 {
		s.maxMean, s.maxDev = 0, 0
	}
	rows, _ := s.c.m.Col(j)
	for _, i := range rows {
		list := s.rows[i]
		for t, e := range list {
			if e.k == int32(j) {
				list[t] = list[len(list)-1]
				s.rows[i] = list[:len(list)-1]
				break
			}
		}
	}
}

func (s *sparseSet) Len() int { return len(s.members) }

// Dependent computes, for every member k, exactly what Dependence(j, k)
// computes, in the same order of floating-point operations, but finds the
// shared rows through the row index instead of merging two columns.
func (s *sparseSet) Dependent(j int, rho float64) bool {
	c := s.c
	if len(s.members) == 0 || c.norm[j] == 0 {
		return false
	}
	if s.pos[j] >= 0 {
		return c.Dependence(j, j) >= rho
	}
	rows, vals := c.m.Col(j)
	var mj float64
	if c.centered {
		mj = c.mean[j]
	}
	s.touched = s.touched[:0]
	for t, i := range rows {
		dj := vals[t] - mj
		for _, e := range s.rows[i] {
			p := int(s.pos[e.k])
			var mk float64
			if c.centered {
				mk = c.mean[e.k]
			}
			dk := e.v - mk
			if s.n[p] == 0 {
				s.touched = append(s.touched, p)
			}
			s.sjk[p] += dj * dk
			s.sj[p] += dj
			s.sk[p] += dk
			s.n[p]++
		}
	}
	dependent := false
	check := func(p int) {
		k := int(s.members[p])
		if dependent || c.norm[k] == 0 {
			return
		}
		var r float64
		if j < k {
			r = c.finish(j, k, s.sjk[p], s.sj[p], s.sk[p], s.n[p])
		} else {
			r = c.finish(k, j, s.sjk[p], s.sk[p], s.sj[p], s.n[p])
		}
		dependent = r >= rho
	}
	if c.centered && !s.farBelow(j, rho) {
		// Columns that share no row still correlate through their means.
		for p := range s.members {
			check(p)
		}
	} else {
		for _, p := range s.touched {
			check(p)
		}
	}
	for _, p := range s.touched {
		s.sjk[p], s.sj[p], s.sk[p], s.n[p] = 0, 0, 0, 0
	}
	return dependent
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
