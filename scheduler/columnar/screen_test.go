package columnar

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strads-go/strads/scheduler"
)

// screenProblem is a worker's columns as dense vectors, for driving a
// Screen against exact correlations.
type screenProblem struct {
	cols [][]float64
	r    []float64
}

func (p *screenProblem) dot(l int) float64 {
	var s float64
	for i, v := range p.cols[l] {
		s += v * p.r[i]
	}
	return math.Abs(s)
}

func (p *screenProblem) norms() []float64 {
	nm := make([]float64, len(p.cols))
	for l, c := range p.cols {
		for _, v := range c {
			nm[l] += v * v
		}
		nm[l] = math.Sqrt(nm[l])
	}
	return nm
}

// TestScreenSkipsSafely moves a residual by random steps and checks that
// the screen's working set is, round after round, exactly the one that
// exact correlations give (the violators that join, worst first, and the
// zeros that leave), and that its largest correlation is exact above the
// threshold, while it computes fewer correlations than a full pass each.
func TestScreenSkipsSafely(t *testing.T) {
	const rows, cols, first = 30, 400, 1000
	rng := rand.New(rand.NewPCG(1, 2))
	p := &screenProblem{r: make([]float64, rows)}
	for range cols {
		c := make([]float64, rows)
		for i := range c {
			if rng.IntN(4) == 0 {
				c[i] = rng.NormFloat64()
			}
		}
		p.cols = append(p.cols, c)
	}
	p.cols[7] = make([]float64, rows) // a column with nothing to fit
	for i := range p.r {
		p.r[i] = rng.NormFloat64()
	}
	norm := p.norms()
	s := NewScreen(first, norm, scheduler.Priority, 1)
	coef := make([]float64, cols)
	in := make([]bool, cols) // the reference working set, by exact correlations
	var ref []int32
	computed := 0
	dot := func(l int) float64 { computed++; return p.dot(l) }
	for round := range 60 {
		// Threshold and coefficients as a solver's would move.
		t0 := 0.8 * slices.Max(func() []float64 {
			g := make([]float64, cols)
			for l := range g {
				g[l] = p.dot(l)
			}
			return g
		}())
		computed = 0
		added := s.Update(t0, coef, dot)

		// The reference: drop settled zeros, add the worst violators.
		keep := ref[:0]
		for _, j := range ref {
			l := int(j) - first
			if coef[l] != 0 || p.dot(l) > PruneMargin*t0 {
				keep = append(keep, j)
			} else {
				in[l] = false
			}
		}
		ref = keep
		var cand []int32
		var score []float64
		nz := 0
		for l := range cols {
			if coef[l] != 0 {
				nz++
			}
			if norm[l] == 0 || in[l] {
				continue
			}
			if g := p.dot(l); g > t0 {
				cand = append(cand, int32(first+l))
				score = append(score, g)
			}
		}
		picked := HandOver(cand, score, HandLimit(nz))
		for _, j := range picked {
			in[int(j)-first] = true
		}
		ref = append(ref, picked...)
		if added != len(picked) || !slices.Equal(s.Set(), ref) {
			t.Fatalf("round %d: working set %v (%d added), want %v", round, s.Set(), added, ref)
		}
		most := s.MaxCorr(t0, dot)
		want := 0.0
		for l := range cols {
			want = max(want, p.dot(l))
		}
		if want > t0 && most != want || most > max(want, t0) {
			t.Fatalf("round %d: largest correlation %v, exact %v (threshold %v)", round, most, want, t0)
		}
		// Some coefficients of the set become non-zero, others zero; the
		// residual moves, by a shrinking step once the set has settled.
		for _, j := range ref {
			l := int(j) - first
			switch rng.IntN(3) {
			case 0:
				coef[l] = 0
			case 1:
				coef[l] = rng.NormFloat64()
			}
		}
		size := 1.0
		if round > 20 {
			size = math.Pow(0.5, float64(round-20))
		}
		var dr float64
		for i := range p.r {
			d := size * 0.05 * rng.NormFloat64()
			p.r[i] += d
			dr += d * d
		}
		s.Moved(math.Sqrt(dr))
		if round > 40 && computed >= cols {
			t.Errorf("round %d: %d correlations computed, a full pass is %d", round, computed, cols)
		}
	}
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	bad := st
	bad.Set = []int32{first + 3, first + 3}
	if err := s.Restore(bad); err == nil {
		t.Error("Restore of a column twice: no error")
	}
	bad.Set = []int32{first - 1}
	if err := s.Restore(bad); err == nil {
		t.Error("Restore of another worker's column: no error")
	}
	st.Set = slices.Clone(ref)
	if err := s.Restore(st); err != nil || !slices.Equal(s.Set(), ref) {
		t.Errorf("Restore(%v): %v, set %v", ref, err, s.Set())
	}
}

// TestScreenRules checks the random and cyclic rules: as many columns a
// round as the priority rule would take, none twice in the set, the
// cyclic rule in index order from where it stopped, and a restored screen
// drawing what the original draws.
func TestScreenRules(t *testing.T) {
	const cols, first = 1000, 50
	norm := make([]float64, cols)
	for l := range norm {
		norm[l] = 1
	}
	norm[3] = 0
	for _, rule := range []scheduler.Policy{scheduler.Random, scheduler.Cyclic} {
		s := NewScreen(first, norm, rule, 9)
		coef := make([]float64, cols)
		zero := func(int) float64 { return 0 }
		s.Update(1, coef, zero)
		if got := len(s.Set()); got != MinHand {
			t.Fatalf("%v: %d columns in the set after a round, want %d", rule, got, MinHand)
		}
		for _, j := range s.Set() {
			coef[int(j)-first] = 1 // all stay
		}
		st, err := s.State()
		if err != nil {
			t.Fatal(err)
		}
		st.Set = slices.Clone(st.Set)
		twin := NewScreen(first, norm, rule, 1234)
		if err := twin.Restore(st); err != nil {
			t.Fatal(err)
		}
		s.Update(1, coef, zero)
		twin.Update(1, coef, zero)
		if !slices.Equal(s.Set(), twin.Set()) {
			t.Fatalf("%v: a restored screen grew otherwise", rule)
		}
		seen := map[int32]bool{}
		for _, j := range s.Set() {
			if seen[j] || j == first+3 {
				t.Fatalf("%v: column %d in the set twice, or one with nothing to fit", rule, j)
			}
			seen[j] = true
		}
		if rule == scheduler.Cyclic && !slices.IsSorted(s.Set()) {
			t.Fatalf("cyclic: set %v not in index order", s.Set())
		}
	}
}
