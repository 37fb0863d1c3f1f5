package columnar

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/scheduler"
)

// Screen keeps a column worker's working set (DESIGN "The column layout"): the columns of
// its own on which it runs coordinate descent each round. By the priority
// rule (scheduler.Priority) a column enters when it violates its
// optimality condition (its coefficient is 0 and its correlation with the
// residual, |x̃_jᵀr|, exceeds the threshold nλ: the Gauss–Southwell-r
// rule, worst first); it leaves when its coefficient is 0 and its
// correlation has fallen well below the threshold (PruneMargin), so that
// the set follows the active set as glmnet's and celer's do, without
// cycling. The random and cyclic rules, for comparison, add as many
// columns a round drawn uniformly, or in index order, whether they violate
// or not.
//
// Finding violators needs x̃_jᵀr for every column outside the set: a pass
// over the worker's data. Screen makes most of that pass unnecessary once
// the residual settles: it remembers each column's correlation as last
// computed and how far the residual has moved since (Moved: the sum of
// the updates' norms ‖Δr‖), so that by Cauchy–Schwarz
//
//	|x̃_jᵀr| ≤ |x̃_jᵀr₀| + ‖x̃_j‖·‖r − r₀‖,
//
// and a column whose bound is at most the threshold cannot violate; it is
// skipped. Which columns are skipped never changes what the worker
// decides: a skipped column is provably no violator, and every column that
// might be one is computed exactly.
type Screen struct {
	rule   scheduler.Policy
	rng    *rand.Rand
	pcg    *rand.PCG
	cursor int // the cyclic rule's next column
	first  int
	ws     []int32   // the working set, columns in the order they entered
	in     []bool    // own column l is in ws
	norm   []float64 // ‖x̃_l‖; 0 for a column with nothing to fit
	corr   []float64 // |x̃_lᵀr| as last computed
	at     []float64 // drift when corr was computed; -Inf: never
	drift  float64   // the residual's movement so far, an upper bound
	cand   []int32
	score  []float64
}

// PruneMargin: a column of the working set whose coefficient is 0 leaves
// it when its correlation is at most PruneMargin times the threshold.
const PruneMargin = 0.9

// slack is the relative margin of the bounds over rounding: the bound of a
// column must be below (1 − slack) times the threshold to skip it, and
// every movement is counted (1 + slack) times.
const slack = 1e-9

// NewScreen returns the screen of a worker whose own columns start at
// column first, with the norms ‖x̃_l‖ of its columns (0 for a column that
// never enters the set), an empty working set, the growth rule rule and,
// for the random rule, the seed of its draws.
func NewScreen(first int, norm []float64, rule scheduler.Policy, seed uint64) *Screen {
	s := &Screen{rule: rule, first: first, norm: norm, in: make([]bool, len(norm)), corr: make([]float64, len(norm)), at: make([]float64, len(norm))}
	s.pcg = rand.NewPCG(seed, uint64(first))
	s.rng = rand.New(s.pcg)
	s.Forget()
	return s
}

// Forget drops every correlation computed, as after a restore.
func (s *Screen) Forget() {
	for l := range s.at {
		s.at[l] = math.Inf(-1)
	}
}

// Moved records that the residual moved by at most dr in norm.
func (s *Screen) Moved(dr float64) {
	if dr > 0 {
		s.drift += dr * (1 + slack)
	}
}

// Corr returns |x̃_lᵀr| for own column l, from dot, which computes it,
// unless the residual has not moved since it was last computed.
func (s *Screen) Corr(l int, dot func(l int) float64) float64 {
	if s.at[l] != s.drift {
		s.corr[l], s.at[l] = dot(l), s.drift
	}
	return s.corr[l]
}

// Below reports whether column l's correlation is provably at most t: its
// bound from the last computed value is below t by the rounding margin.
func (s *Screen) Below(l int, t float64) bool {
	return s.corr[l]+s.norm[l]*(s.drift-s.at[l]) <= (1-slack)*t
}

// In reports whether own column l is in the working set.
func (s *Screen) In(l int) bool { return s.in[l] }

// Set returns the working set (valid until the next Update or Restore).
func (s *Screen) Set() []int32 { return s.ws }

// MaxCorr returns the largest correlation over the worker's columns that
// may exceed t — those of the set, and the others that the bound does not
// clear — computing each with dot. Every other column's is at most t, so
// max(MaxCorr(t, dot), t) bounds the largest of all.
func (s *Screen) MaxCorr(t float64, dot func(l int) float64) float64 {
	var most float64
	for l, nm := range s.norm {
		if nm == 0 || !s.in[l] && s.Below(l, t) {
			continue
		}
		most = max(most, s.Corr(l, dot))
	}
	return most
}

// Update makes the working set of a round, for the threshold t = nλ and
// the worker's coefficients coef (indexed by own column): it drops the
// columns whose coefficient is 0 and whose correlation is at most
// PruneMargin·t, then adds the violators among the others (correlation
// above t), worst first (lower column first among equals), at most
// HandLimit of the number of non-zero coefficients. It returns how many
// joined.
func (s *Screen) Update(t float64, coef []float64, dot func(l int) float64) (added int) {
	keep := s.ws[:0]
	nz := 0
	for _, j := range s.ws {
		l := int(j) - s.first
		if coef[l] != 0 || s.Corr(l, dot) > PruneMargin*t {
			keep = append(keep, j)
			continue
		}
		s.in[l] = false
	}
	s.ws = keep
	for _, v := range coef {
		if v != 0 {
			nz++
		}
	}
	var picked []int32
	switch s.rule {
	case scheduler.Random, scheduler.Shotgun:
		picked = s.draw(HandLimit(nz))
	case scheduler.Cyclic:
		picked = s.next(HandLimit(nz))
	default:
		s.cand, s.score = s.cand[:0], s.score[:0]
		for l, nm := range s.norm {
			if nm == 0 || s.in[l] || s.Below(l, t) {
				continue
			}
			if g := s.Corr(l, dot); g > t {
				s.cand = append(s.cand, int32(s.first+l))
				s.score = append(s.score, g)
			}
		}
		picked = HandOver(s.cand, s.score, HandLimit(nz))
	}
	for _, j := range picked {
		s.in[int(j)-s.first] = true
		s.ws = append(s.ws, j)
	}
	return len(picked)
}

// draw returns up to limit of the columns outside the set, drawn
// uniformly without replacement (the random rule).
func (s *Screen) draw(limit int) []int32 {
	s.cand = s.cand[:0]
	for l, nm := range s.norm {
		if nm != 0 && !s.in[l] {
			s.cand = append(s.cand, int32(s.first+l))
		}
	}
	for k := range min(limit, len(s.cand)) {
		i := k + s.rng.IntN(len(s.cand)-k)
		s.cand[k], s.cand[i] = s.cand[i], s.cand[k]
	}
	return s.cand[:min(limit, len(s.cand))]
}

// next returns up to limit of the columns outside the set, in index order
// from where the last call stopped, wrapping around (the cyclic rule).
func (s *Screen) next(limit int) []int32 {
	s.cand = s.cand[:0]
	for range len(s.norm) {
		if len(s.cand) == limit {
			break
		}
		l := s.cursor
		s.cursor = (s.cursor + 1) % len(s.norm)
		if s.norm[l] != 0 && !s.in[l] {
			s.cand = append(s.cand, int32(s.first+l))
		}
	}
	return s.cand
}

// ScreenState is what a snapshot of a Screen saves: its working set and
// where its growth rule stands. Its correlations are not saved: a
// restored screen computes them afresh, and decides alike.
type ScreenState struct {
	Set    codec.Int32s `msgpack:"set"`
	Cursor int          `msgpack:"cursor"`
	Rand   []byte       `msgpack:"rand"`
}

// State returns s's state for a snapshot; it shares s's working set.
func (s *Screen) State() (ScreenState, error) {
	r, err := s.pcg.MarshalBinary()
	if err != nil {
		return ScreenState{}, err
	}
	return ScreenState{Set: s.ws, Cursor: s.cursor, Rand: r}, nil
}

// Restore sets s to the state st: its working set, columns of the
// worker's own, each once, its growth rule's state, and no correlation
// known.
func (s *Screen) Restore(st ScreenState) error {
	if st.Cursor < 0 || st.Cursor >= max(1, len(s.norm)) {
		return fmt.Errorf("screen state with the cyclic rule at column %d of %d", st.Cursor, len(s.norm))
	}
	if err := s.pcg.UnmarshalBinary(st.Rand); err != nil {
		return fmt.Errorf("screen state: %w", err)
	}
	clear(s.in)
	s.ws = s.ws[:0]
	for _, j := range st.Set {
		l := int(j) - s.first
		if l < 0 || l >= len(s.in) || s.in[l] {
			return fmt.Errorf("working set with column %d, outside the worker's columns [%d, %d) or twice", j, s.first, s.first+len(s.in))
		}
		s.in[l] = true
		s.ws = append(s.ws, j)
	}
	s.cursor = st.Cursor
	s.Forget()
	return nil
}
