package lda

import (
	"math"

	"github.com/strads-go/strads/wire"
)

// lgammaShift computes lgamma(n + a) − lgamma(a) for counts n, from a
// table for small n.
type lgammaShift struct {
	a, lga float64
	tab    []float64
}

func newLgammaShift(a float64) *lgammaShift {
	l := &lgammaShift{a: a, lga: lgamma(a), tab: make([]float64, 1024)}
	for n := range l.tab {
		l.tab[n] = lgamma(float64(n)+a) - l.lga
	}
	return l
}

func (l *lgammaShift) at(n int32) float64 {
	if int(n) < len(l.tab) {
		return l.tab[n]
	}
	return lgamma(float64(n)+l.a) - l.lga
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}

// The collapsed joint log-likelihood of the words and their topics,
//
//	log p(w, z) = Σ_d [log Γ(Kα) − log Γ(N_d + Kα) + Σ_k (log Γ(n_dk + α) − log Γ(α))]
//	            + Σ_k [log Γ(Wβ) − log Γ(n_k + Wβ) + Σ_w (log Γ(n_wk + β) − log Γ(β))],
//
// is computed in three parts: the document part by each worker over its
// documents (docLL), the word part by each worker over the words it holds
// (wordLL), and the topic part from the totals (topicLL).

// docLL returns the document part of the log-likelihood over the shard,
// and the shard's tokens by topic.
func (sh *shard) docLL(alpha float64) (float64, wire.Int32s) {
	lg := newLgammaShift(alpha)
	kalpha := float64(sh.k) * alpha
	lgk := lgamma(kalpha)
	totals := make(wire.Int32s, sh.k)
	ndk := make([]int32, sh.k)
	var ll float64
	for d := range sh.docs() {
		z := sh.z[sh.start[d]:sh.start[d+1]]
		for _, t := range z {
			ndk[t]++
			totals[t]++
		}
		ll += lgk - lgamma(float64(len(z))+kalpha)
		for _, t := range z {
			if ndk[t] > 0 {
				ll += lg.at(ndk[t])
				ndk[t] = 0
			}
		}
	}
	return ll, totals
}

// wordLL returns the word part of the log-likelihood over the rows of s
// that keep says to (all if keep is nil), their counts by topic, and
// their number of non-zero counts.
func wordLL(s *Sparse, k int, beta float64, keep func(row int) bool) (ll float64, totals wire.Int32s, nnz int) {
	lg := newLgammaShift(beta)
	totals = make(wire.Int32s, k)
	for r := range s.Rows() {
		if keep != nil && !keep(r) {
			continue
		}
		topics, counts := s.Row(r)
		for j, t := range topics {
			ll += lg.at(counts[j])
			totals[t] += counts[j]
		}
		nnz += len(topics)
	}
	return ll, totals, nnz
}

// topicLL returns the topic part of the log-likelihood, for W words.
func topicLL(nk []int32, words int, beta float64) float64 {
	wbeta := float64(words) * beta
	lgw := lgamma(wbeta)
	var ll float64
	for _, n := range nk {
		ll += lgw - lgamma(float64(n)+wbeta)
	}
	return ll
}
