package lda

import (
	"fmt"
	"math"
	"slices"

	"github.com/strads-go/strads/codec"
)

// Learning the priors (Config.OptimizeEvery). The document-topic prior is
// an asymmetric Dirichlet α = (α_1, …, α_K), the topic-word prior a
// symmetric β, both fitted by maximizing the evidence of the current topic
// assignments z (Wallach, Mimno & McCallum, "Rethinking LDA: why priors
// matter", NIPS 2009; as MALLET does),
//
//	log p(z | α) = Σ_d [log Γ(A) − log Γ(N_d + A) + Σ_k (log Γ(n_dk + α_k) − log Γ(α_k))],  A = Σ_k α_k,
//	log p(w | z, β) = Σ_k [log Γ(Wβ) − log Γ(n_k + Wβ) + Σ_w (log Γ(n_wk + β) − log Γ(β))],
//
// by Minka's fixed-point iteration ("Estimating a Dirichlet distribution",
// 2000, §3), which needs the counts only through their histograms: for α,
// the histogram of n_dk over the documents for every topic k, and of the
// document lengths N_d; for β, the histogram of n_wk over all words and
// topics, and the topic totals n_k. Writing Δ(a, n) = ψ(a + n) − ψ(a), the
// updates are
//
//	α_k ← (α_k · Σ_d Δ(α_k, n_dk) + ε) / Σ_d Δ(A, N_d),
//	Wβ  ← Wβ · Σ_{w,k} Δ(β, n_wk) / (W · Σ_k Δ(Wβ, n_k)),
//
// each step of which raises the evidence (it maximizes a lower bound that
// touches it at the current value). ε = 1e-3 is a Gamma(1 + ε, 0) prior
// on every α_k (the same lower-bound argument gives the update above): it
// keeps the α of a topic that no document uses positive, which plain
// maximum likelihood would drive to 0. Both iterate until no value moves
// by more than a relative 1e-7 (at most 1000 steps).

// alphaShape is ε, the shape of the Gamma(1 + ε, 0) prior on every α_k.
const alphaShape = 1e-3

// Hist is a histogram of counts, row by row: row r (a topic, or the only
// row) says that Freqs[i] items have the count Values[i], for i in
// [Offsets[r], Offsets[r+1]), values positive and ascending. Zero counts
// are left out: the fixed-point updates do not need them.
type Hist struct {
	Offsets codec.Int32s `msgpack:"o"`
	Values  codec.Int32s `msgpack:"v"`
	Freqs   codec.Int32s `msgpack:"f"`
}

// Rows returns the number of rows of h.
func (h *Hist) Rows() int { return max(len(h.Offsets)-1, 0) }

// Row returns the values and frequencies of row r.
func (h *Hist) Row(r int) (values, freqs []int32) {
	a, b := h.Offsets[r], h.Offsets[r+1]
	return h.Values[a:b], h.Freqs[a:b]
}

// check reports the first malformed part of h, which must have rows rows.
func (h *Hist) check(rows int) error {
	switch {
	case h.Rows() != rows:
		return fmt.Errorf("histogram of %d rows, want %d", h.Rows(), rows)
	case len(h.Values) != len(h.Freqs):
		return fmt.Errorf("histogram of %d values for %d frequencies", len(h.Values), len(h.Freqs))
	case h.Offsets[0] != 0 || int(h.Offsets[rows]) != len(h.Values):
		return fmt.Errorf("histogram offsets do not cover the entries")
	}
	for r := range rows {
		if h.Offsets[r] > h.Offsets[r+1] {
			return fmt.Errorf("histogram row %d: offsets decrease", r)
		}
		values, freqs := h.Row(r)
		for i, v := range values {
			if v <= 0 || (i > 0 && v <= values[i-1]) || freqs[i] <= 0 {
				return fmt.Errorf("histogram row %d: value %d, frequency %d", r, v, freqs[i])
			}
		}
	}
	return nil
}

// histBuilder counts values row by row, densely: row r is a slice indexed
// by value, grown as needed.
type histBuilder struct{ rows [][]int32 }

func newHistBuilder(rows int) *histBuilder { return &histBuilder{rows: make([][]int32, rows)} }

// add counts f more items of value v (> 0) in row r.
func (b *histBuilder) add(r int, v, f int32) {
	row := b.rows[r]
	if int(v) >= len(row) {
		row = slices.Grow(row, int(v)+1-len(row))[:v+1]
		b.rows[r] = row
	}
	row[v] += f
}

// addHist adds every row of h.
func (b *histBuilder) addHist(h *Hist) {
	for r := range h.Rows() {
		values, freqs := h.Row(r)
		for i, v := range values {
			b.add(r, v, freqs[i])
		}
	}
}

// hist returns the histogram counted.
func (b *histBuilder) hist() *Hist {
	h := &Hist{Offsets: make(codec.Int32s, 1, len(b.rows)+1)}
	for _, row := range b.rows {
		for v, f := range row {
			if f > 0 {
				h.Values, h.Freqs = append(h.Values, int32(v)), append(h.Freqs, f)
			}
		}
		h.Offsets = append(h.Offsets, int32(len(h.Values)))
	}
	return h
}

// digamma returns ψ(x) for x > 0: the recurrence ψ(x) = ψ(x+1) − 1/x up
// to x ≥ 10, then the asymptotic series to the x⁻¹⁰ term (error below
// 3e-14 there).
func digamma(x float64) float64 {
	var r float64
	for x < 10 {
		r -= 1 / x
		x++
	}
	f := 1 / (x * x)
	return r + math.Log(x) - 0.5/x - f*(1.0/12-f*(1.0/120-f*(1.0/252-f*(1.0/240-f*(1.0/132)))))
}

// sumDelta returns Σ_i freqs[i]·(ψ(a + values[i]) − ψ(a)), values
// ascending: up the ladder 1/(a + j) where the values are close, by ψ
// where they are far apart.
func sumDelta(a float64, values, freqs []int32) float64 {
	var sum, d float64
	prev := int32(0)
	var psiA float64
	havePsi := false
	for i, v := range values {
		if v-prev > 32 {
			if !havePsi {
				psiA, havePsi = digamma(a), true
			}
			d = digamma(a+float64(v)) - psiA
		} else {
			for j := prev; j < v; j++ {
				d += 1 / (a + float64(j))
			}
		}
		prev = v
		sum += float64(freqs[i]) * d
	}
	return sum
}

// Fixed-point iteration limits.
const (
	fixedPointTol   = 1e-7
	fixedPointSteps = 1000
)

// optimizeAlpha returns the α that maximizes p(z | α) (with the Gamma
// prior of alphaShape), from alpha: topics is the histogram of the
// document-topic counts n_dk (row k for topic k), lengths the histogram of
// the document lengths N_d (one row).
func optimizeAlpha(alpha []float64, topics, lengths *Hist) []float64 {
	a := slices.Clone(alpha)
	next := make([]float64, len(a))
	lv, lf := lengths.Row(0)
	for range fixedPointSteps {
		var sum float64
		for _, x := range a {
			sum += x
		}
		den := sumDelta(sum, lv, lf)
		if !(den > 0) {
			return a // no document: nothing to learn from
		}
		var moved float64
		for k, x := range a {
			values, freqs := topics.Row(k)
			next[k] = (x*sumDelta(x, values, freqs) + alphaShape) / den
			moved = max(moved, math.Abs(next[k]-x)/x)
		}
		a, next = next, a
		if moved < fixedPointTol {
			break
		}
	}
	return a
}

// optimizeBeta returns the symmetric β that maximizes p(w | z, β), from
// beta: counts is the histogram of the word-topic counts n_wk over every
// word and topic (one row), totals that of the topic totals n_k, and words
// is W.
func optimizeBeta(beta float64, counts, totals *Hist, words int) float64 {
	cv, cf := counts.Row(0)
	tv, tf := totals.Row(0)
	w := float64(words)
	for range fixedPointSteps {
		num := sumDelta(beta, cv, cf)
		den := w * sumDelta(w*beta, tv, tf)
		if !(num > 0 && den > 0) {
			return beta
		}
		next := beta * num / den
		moved := math.Abs(next-beta) / beta
		beta = next
		if moved < fixedPointTol {
			break
		}
	}
	return beta
}

// Priors are the Dirichlet priors of a model: α by topic, and β.
type Priors struct {
	Alpha codec.Float64s `msgpack:"a"`
	Beta  float64        `msgpack:"b"`
}

// symmetricPriors returns the priors α_k = alpha for k topics, and beta.
func symmetricPriors(k int, alpha, beta float64) Priors {
	a := make(codec.Float64s, k)
	for t := range a {
		a[t] = alpha
	}
	return Priors{Alpha: a, Beta: beta}
}

// check reports a bad prior for k topics.
func (p *Priors) check(k int) error {
	if len(p.Alpha) != k {
		return fmt.Errorf("α of %d topics, want %d", len(p.Alpha), k)
	}
	for t, a := range p.Alpha {
		if !(a > 0) || math.IsInf(a, 0) {
			return fmt.Errorf("α_%d = %v, want a finite number > 0", t, a)
		}
	}
	if !(p.Beta > 0) || math.IsInf(p.Beta, 0) {
		return fmt.Errorf("β = %v, want a finite number > 0", p.Beta)
	}
	return nil
}

// alphaStats returns Σ_k α_k, min_k α_k and max_k α_k.
func alphaStats(alpha []float64) (sum, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, a := range alpha {
		sum += a
		lo, hi = min(lo, a), max(hi, a)
	}
	return sum, lo, hi
}
