package lda

import (
	"math"

	"github.com/strads-go/strads/codec"
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

// docHist returns the histograms of the shard's document-topic counts
// n_dk (row k for topic k) and of its document lengths N_d (one row), and
// its tokens by topic.
func (sh *shard) docHist() (topics, lengths *Hist, totals codec.Int32s) {
	tb, lb := newHistBuilder(sh.k), newHistBuilder(1)
	totals = make(codec.Int32s, sh.k)
	ndk := make([]int32, sh.k)
	for d := range sh.docs() {
		z := sh.z[sh.start[d]:sh.start[d+1]]
		for _, t := range z {
			ndk[t]++
			totals[t]++
		}
		lb.add(0, int32(len(z)), 1)
		for _, t := range z {
			if ndk[t] > 0 {
				tb.add(int(t), ndk[t], 1)
				ndk[t] = 0
			}
		}
	}
	return tb.hist(), lb.hist(), totals
}

// docLL returns the document part of the log-likelihood,
// Σ_d [log Γ(A) − log Γ(N_d + A) + Σ_k (log Γ(n_dk + α_k) − log Γ(α_k))],
// from the histograms of docHist.
func docLL(alpha []float64, topics, lengths *Hist) float64 {
	var sum float64
	for _, a := range alpha {
		sum += a
	}
	var ll float64
	lgs := lgamma(sum)
	values, freqs := lengths.Row(0)
	for i, n := range values {
		ll += float64(freqs[i]) * (lgs - lgamma(float64(n)+sum))
	}
	for k, a := range alpha {
		lga := lgamma(a)
		values, freqs := topics.Row(k)
		for i, n := range values {
			ll += float64(freqs[i]) * (lgamma(float64(n)+a) - lga)
		}
	}
	return ll
}

// wordLL returns the word part of the log-likelihood over the rows of s
// that keep says to (all if keep is nil), their counts by topic, and
// their number of non-zero counts.
func wordLL(s *Sparse, k int, beta float64, keep func(row int) bool) (ll float64, totals codec.Int32s, nnz int) {
	lg := newLgammaShift(beta)
	totals = make(codec.Int32s, k)
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
