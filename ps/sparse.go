package ps

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/strads-go/strads/codec"
)

// SparseRow is a row of a table by its nonzero values: Vals[i] is at
// column Cols[i], the columns in increasing order. Every other column is
// 0.
type SparseRow struct {
	Cols []int32
	Vals []float64
}

// addTo adds r to the dense row v, which holds its columns.
func (r SparseRow) addTo(v []float64) {
	for i, c := range r.Cols {
		v[c] += r.Vals[i]
	}
}

// nonzeros returns the nonzero values of the dense row v.
func nonzeros(v []float64) SparseRow {
	var r SparseRow
	for c, x := range v {
		if x != 0 {
			r.Cols = append(r.Cols, int32(c))
			r.Vals = append(r.Vals, x)
		}
	}
	return r
}

// set makes r the nonzero values of vals at cols, which increase, reusing
// r's arrays.
func (r *SparseRow) set(cols []int32, vals []float64) {
	r.Cols, r.Vals = r.Cols[:0], r.Vals[:0]
	for i, c := range cols {
		if vals[i] != 0 {
			r.Cols = append(r.Cols, c)
			r.Vals = append(r.Vals, vals[i])
		}
	}
}

// add adds vals at cols, which increase, to r, and drops the values that
// come to 0. A few values are inserted in place; more are merged into new
// arrays, in time linear in both rows.
func (r *SparseRow) add(cols []int32, vals []float64) {
	if len(cols) <= 8 || 8*len(cols) < len(r.Cols) {
		for k, c := range cols {
			v := vals[k]
			if v == 0 {
				continue
			}
			i, found := slices.BinarySearch(r.Cols, c)
			switch {
			case !found:
				r.Cols = slices.Insert(r.Cols, i, c)
				r.Vals = slices.Insert(r.Vals, i, v)
			case r.Vals[i]+v == 0:
				r.Cols = slices.Delete(r.Cols, i, i+1)
				r.Vals = slices.Delete(r.Vals, i, i+1)
			default:
				r.Vals[i] += v
			}
		}
		return
	}
	n := len(r.Cols) + len(cols)
	out := SparseRow{Cols: make([]int32, 0, n), Vals: make([]float64, 0, n)}
	i, k := 0, 0
	for i < len(r.Cols) || k < len(cols) {
		var c int32
		var v float64
		switch {
		case k == len(cols) || (i < len(r.Cols) && r.Cols[i] < cols[k]):
			c, v = r.Cols[i], r.Vals[i]
			i++
		case i == len(r.Cols) || cols[k] < r.Cols[i]:
			c, v = cols[k], vals[k]
			k++
		default:
			c, v = r.Cols[i], r.Vals[i]+vals[k]
			i++
			k++
		}
		if v != 0 {
			out.Cols = append(out.Cols, c)
			out.Vals = append(out.Vals, v)
		}
	}
	*r = out
}

// sorted returns vals at cols in increasing column order, the values of a
// column given more than once summed in the order given: cols and vals
// themselves when their columns increase already.
func sorted(cols []int32, vals []float64) ([]int32, []float64) {
	if increasing(cols) {
		return cols, vals
	}
	order := make([]int, len(cols))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cols[a], cols[b]) })
	var sc []int32
	var sv []float64
	for _, i := range order {
		if n := len(sc); n > 0 && sc[n-1] == cols[i] {
			sv[n-1] += vals[i]
			continue
		}
		sc = append(sc, cols[i])
		sv = append(sv, vals[i])
	}
	return sc, sv
}

// increasing reports whether s increases strictly.
func increasing(s []int32) bool {
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			return false
		}
	}
	return true
}

// Nonzeros holds some rows of a sparse table by their nonzero values, as
// they travel and are stored: row Rows[k] has the values
// Vals[Ends[k-1]:Ends[k]] (from 0 for k = 0) at the columns Cols at the
// same places, in increasing order.
type Nonzeros struct {
	Rows codec.Int32s   `msgpack:"r"`
	Ends codec.Int32s   `msgpack:"e"`
	Cols codec.Int32s   `msgpack:"c"`
	Vals codec.Float64s `msgpack:"v"`
}

// At returns n's k-th row and its values, which are n's own.
func (n Nonzeros) At(k int) (int, SparseRow) {
	lo, hi := span(n.Ends, k)
	return int(n.Rows[k]), SparseRow{Cols: n.Cols[lo:hi], Vals: n.Vals[lo:hi]}
}

// Row returns the values of row, which are n's own, or none when n does
// not hold it. n's rows must increase, as those of ReadSparse and of a Cut
// do.
func (n Nonzeros) Row(row int) SparseRow {
	k, found := slices.BinarySearch(n.Rows, int32(row))
	if !found {
		return SparseRow{}
	}
	_, r := n.At(k)
	return r
}

// Append appends row and its values r, a copy of them, to n.
func (n *Nonzeros) Append(row int, r SparseRow) {
	n.Rows = append(n.Rows, int32(row))
	n.Cols = append(n.Cols, r.Cols...)
	n.Vals = append(n.Vals, r.Vals...)
	n.Ends = append(n.Ends, int32(len(n.Cols)))
}

// span returns where the k-th row's values are, by the ends of the rows.
func span(ends []int32, k int) (lo, hi int) {
	if k > 0 {
		lo = int(ends[k-1])
	}
	return lo, int(ends[k])
}

// checkValues reports the first thing wrong with the values of rows of
// table tab as they travel: len(rows) runs of the width for a dense table;
// for a sparse one each row's nonzeros, ends[k] the end of row k's in cols
// and vals, at increasing columns within the width. Every value must be
// finite.
func checkValues(tab Table, rows, ends, cols []int32, vals []float64) error {
	if !tab.Sparse {
		if len(ends) > 0 || len(cols) > 0 {
			return fmt.Errorf("table %s is dense, and %d rows come with columns", tab.Name, len(rows))
		}
		if want := len(rows) * tab.Width; len(vals) != want {
			return fmt.Errorf("%d values for %d rows of table %s, want %d", len(vals), len(rows), tab.Name, want)
		}
		for i, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("value %v of table %s row %d", v, tab.Name, rows[i/tab.Width])
			}
		}
		return nil
	}
	if len(ends) != len(rows) || len(cols) != len(vals) {
		return fmt.Errorf("%d rows of table %s with %d ends, %d columns and %d values", len(rows), tab.Name, len(ends), len(cols), len(vals))
	}
	lo := 0
	for k, e := range ends {
		if int(e) < lo || int(e) > len(cols) {
			return fmt.Errorf("row %d of table %s ends at %d, after %d, of %d values", rows[k], tab.Name, e, lo, len(cols))
		}
		hi := int(e)
		for i := lo; i < hi; i++ {
			c, v := cols[i], vals[i]
			switch {
			case c < 0 || int(c) >= tab.Width || (i > lo && c <= cols[i-1]):
				return fmt.Errorf("column %d of table %s row %d (width %d, columns increasing)", c, tab.Name, rows[k], tab.Width)
			case math.IsNaN(v) || math.IsInf(v, 0):
				return fmt.Errorf("value %v of table %s row %d column %d", v, tab.Name, rows[k], c)
			}
		}
		lo = hi
	}
	if lo != len(cols) {
		return fmt.Errorf("%d values of table %s, rows that end at %d", len(cols), tab.Name, lo)
	}
	return nil
}
