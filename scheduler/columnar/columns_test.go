package columnar

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestColumnsCheck checks the columns shared among the workers as they
// come over the network, for data of 4 rows and 10 columns.
func TestColumnsCheck(t *testing.T) {
	good := func() Columns {
		var c Columns
		c.Add(3, []int32{0, 2}, []float64{1, -1})
		c.Add(7, nil, nil)
		c.Add(8, []int32{3}, []float64{0.5})
		return c
	}
	cases := []struct {
		name   string
		edit   func(c *Columns)
		errHas string // "" for no error
	}{
		{"good", func(*Columns) {}, ""},
		{"empty", func(c *Columns) { *c = Columns{} }, ""},
		{"entries without columns", func(c *Columns) { *c = Columns{Rows: []int32{1}, Vals: []float64{1}} }, "no columns but 1 entries"},
		{"short offsets", func(c *Columns) { c.Ptr = c.Ptr[:3] }, "3 columns with 3 offsets"},
		{"offsets past the entries", func(c *Columns) { c.Ptr[3] = 9 }, "offsets"},
		{"decreasing offsets", func(c *Columns) { c.Ptr[1], c.Ptr[2] = 3, 2 }, "decreasing offsets"},
		{"fewer values", func(c *Columns) { c.Vals = c.Vals[:2] }, "values"},
		{"column past the data", func(c *Columns) { c.IDs[2] = 10 }, "column 10 of 10"},
		{"negative column", func(c *Columns) { c.IDs[0] = -1 }, "column -1 of 10"},
		{"a column twice", func(c *Columns) { c.IDs[2] = 3 }, "column 3 sent twice"},
		{"row past the data", func(c *Columns) { c.Rows[2] = 4 }, "row 4"},
		{"rows not increasing", func(c *Columns) { c.Rows[1] = 0 }, "row 0 after 0"},
		{"NaN", func(c *Columns) { c.Vals[0] = math.NaN() }, "column 3 with value NaN"},
		{"Inf", func(c *Columns) { c.Vals[2] = math.Inf(1) }, "column 8 with value +Inf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.edit(&c)
			err := c.Check(4, 10)
			switch {
			case tc.errHas == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Fatalf("Check: %v, want an error containing %q", err, tc.errHas)
			}
		})
	}
}

// TestColumnsAddAll checks that AddAll copies every column with its
// entries, and Reset empties the set.
func TestColumnsAddAll(t *testing.T) {
	var a, b Columns
	a.Add(1, []int32{0}, []float64{2})
	b.Add(5, []int32{1, 3}, []float64{-1, 4})
	b.Add(6, nil, nil)
	a.AddAll(&b)
	b.Vals[0] = 99 // a holds a copy
	if a.Len() != 3 || !slices.Equal(a.IDs, []int32{1, 5, 6}) {
		t.Fatalf("IDs %v, want [1 5 6]", a.IDs)
	}
	rows, vals := a.Col(1)
	if !slices.Equal(rows, []int32{1, 3}) || !slices.Equal(vals, []float64{-1, 4}) {
		t.Errorf("column 5: rows %v values %v", rows, vals)
	}
	if rows, _ := a.Col(2); len(rows) != 0 {
		t.Errorf("column 6 has rows %v", rows)
	}
	if err := a.Check(4, 10); err != nil {
		t.Error(err)
	}
	a.Reset()
	if a.Len() != 0 || a.Check(4, 10) != nil {
		t.Errorf("after Reset: %+v", a)
	}
}

// TestHandOver checks which violators join a worker's working set: the
// largest scores first, the lower column first among equal ones, at most
// the limit.
func TestHandOver(t *testing.T) {
	cases := []struct {
		name  string
		cand  []int32
		score []float64
		limit int
		want  []int32
	}{
		{"none", nil, nil, 2, nil},
		{"under the limit, in order", []int32{4, 2, 9}, []float64{1, 3, 2}, 3, []int32{4, 2, 9}},
		{"the largest", []int32{4, 2, 9, 7}, []float64{1, 3, 2, 5}, 2, []int32{7, 2}},
		{"ties by column", []int32{9, 4, 6}, []float64{2, 2, 2}, 2, []int32{4, 6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := HandOver(slices.Clone(tc.cand), slices.Clone(tc.score), tc.limit); !slices.Equal(got, tc.want) {
				t.Errorf("HandOver = %v, want %v", got, tc.want)
			}
		})
	}
	if HandLimit(0) != MinHand || HandLimit(10*MinHand) != 10*MinHand {
		t.Errorf("HandLimit(0) = %d, HandLimit(%d) = %d", HandLimit(0), 10*MinHand, HandLimit(10*MinHand))
	}
}

// TestHandOverOrder checks HandOver's pick against a full sort, on random
// scores with many ties.
func TestHandOverOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		n := 1 + rng.IntN(60)
		cand := make([]int32, n)
		score := make([]float64, n)
		for k := range cand {
			cand[k] = int32(rng.IntN(1000))
			score[k] = float64(rng.IntN(8))
		}
		limit := 1 + rng.IntN(n+5)
		idx := make([]int, n)
		for k := range idx {
			idx[k] = k
		}
		sort.SliceStable(idx, func(a, b int) bool {
			ia, ib := idx[a], idx[b]
			return score[ia] > score[ib] || score[ia] == score[ib] && cand[ia] < cand[ib]
		})
		var want []int32
		if n <= limit {
			want = append(want, cand...)
		} else {
			for _, k := range idx[:limit] {
				want = append(want, cand[k])
			}
		}
		got := HandOver(slices.Clone(cand), slices.Clone(score), limit)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: HandOver(%v, %v, %d) = %v, want %v", trial, cand, score, limit, got, want)
		}
	}
}

// TestHeldBlock checks a round's block: the working set and, in a joint
// round, the held columns that are active, in column order.
func TestHeldBlock(t *testing.T) {
	// A worker owning columns [10, 13) of 20 that holds 2 and 17.
	h := NewHeld(10, 3, 20)
	h.IDs = []int32{17, 2}
	coef := []float64{0, 1, 0, 0.5, 0} // own 10..12, then held 17, 2
	for _, tc := range []struct {
		name  string
		set   []int32
		joint bool
		want  []int32
	}{
		{"own round", []int32{12, 10}, false, []int32{10, 12}},
		{"joint round", []int32{12, 10}, true, []int32{10, 12, 17}},
		{"joint, empty set", nil, true, []int32{17}},
	} {
		dst := make([]int32, 0, 1)
		if got := h.Block(dst, tc.set, coef, tc.joint); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
