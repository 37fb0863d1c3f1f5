package lda

// The exact sampler (MHSteps 0): each token's topic is drawn from its
// collapsed conditional itself,
//
//	p(k) ∝ (n_dk + α_k)(n_wk + β)/(n_k + Wβ)   (counts without the token),
//
// split as SparseLDA splits it (Yao, Mimno and McCallum, KDD 2009) into
// three buckets whose sum is the normalizer:
//
//	smoothing  s = Σ_k α_k·β/(n_k + Wβ)                  every topic, kept up to date
//	document   r = Σ_k n_dk·β/(n_k + Wβ)                 the document's topics
//	word       q = Σ_k (n_dk + α_k)·n_wk/(n_k + Wβ)      the word's topics
//
// so that a token costs the topics of its word (its row of the block) and,
// when r's bucket is drawn, its document's tokens, not K. It mixes per
// sweep as collapsed Gibbs does, which the Metropolis–Hastings chains
// approach only with many steps; they win where K is large, being O(1).

// startExact readies the exact sampler for a block taken up: 1/(n_k + Wβ)
// and s from the topic totals as they are now.
func (s *sampler) startExact() {
	s.smoothSum = 0
	s.coef = resize(s.coef, s.k)
	s.qTopics, s.qCum = resize(s.qTopics, s.k), resize(s.qCum, s.k)
	for t, n := range s.nk {
		s.invDen[t] = 1 / (float64(n) + s.wbeta)
		s.coef[t] = s.alpha[t] * s.invDen[t]
		s.smoothSum += s.alpha[t] * s.beta * s.invDen[t]
	}
}

// moveCount adds d to the counts of topic t in the document and the
// totals, keeping 1/(n_t + Wβ), (n_dt + α_t)/(n_t + Wβ), s and the
// document's bucket r current.
func (s *sampler) moveCount(t int32, d int32, r *float64) {
	old := s.invDen[t]
	s.ndk[t] += d
	s.nk[t] += d
	inv := 1 / (float64(s.nk[t]) + s.wbeta)
	s.invDen[t] = inv
	s.coef[t] = (float64(s.ndk[t]) + s.alpha[t]) * inv
	s.smoothSum += s.alpha[t] * s.beta * (inv - old)
	*r += s.beta * (float64(s.ndk[t])*inv - float64(s.ndk[t]-d)*old)
}

// sampleDocExact is sampleDoc for the exact sampler.
func (s *sampler) sampleDocExact(z []int32, lw []int32, first, last int) {
	var r float64
	for _, t := range z {
		s.ndk[t]++
		r += s.beta * s.invDen[t]
	}
	for _, t := range z {
		s.coef[t] = (float64(s.ndk[t]) + s.alpha[t]) * s.invDen[t]
	}
	alpha, beta := s.alpha, s.beta
	for i := first; i < last; i++ {
		w, old := lw[i], z[i]
		s.moveCount(old, -1, &r)
		s.table.add(w, old, -1)

		nq, q := s.wordBucket(w)
		u := s.rng.unit() * (q + r + s.smoothSum)
		t := int32(-1)
		switch {
		case u < q:
			t = s.qTopics[nq-1]
			for j, c := range s.qCum[:nq] {
				if u < c {
					t = s.qTopics[j]
					break
				}
			}
		case u-q < r:
			u -= q
			for j, tz := range z {
				if j == i {
					continue
				}
				t = tz
				if u -= beta * s.invDen[tz]; u < 0 {
					break
				}
			}
		default:
			u -= q + r
			for k := range int32(s.k) {
				t = k
				if u -= alpha[k] * beta * s.invDen[k]; u < 0 {
					break
				}
			}
		}
		if t < 0 { // a document of one token whose r rounded above 0
			t = old
		}
		s.moveCount(t, 1, &r)
		s.table.add(w, t, 1)
		if t != old {
			z[i] = t
			s.moved++
		}
	}
	s.sampled += int64(last - first)
	for _, t := range z {
		s.ndk[t] = 0
		s.coef[t] = s.alpha[t] * s.invDen[t]
	}
}

// wordBucket sets qTopics and qCum to the topics of row w with a positive
// count and the cumulative sums of their weights n_wk·coef[k], and returns
// the number of them and the sum, q.
func (s *sampler) wordBucket(w int32) (int, float64) {
	ts, cum, coef := s.qTopics, s.qCum, s.coef
	var q float64
	j := 0
	m := s.table.meta[w]
	if m.mask < 0 {
		for t, c := range s.table.dense[m.off : m.off+int32(s.k)] {
			if c.n > 0 {
				q += float64(c.n) * coef[t]
				ts[j], cum[j] = int32(t), q
				j++
			}
		}
		return j, q
	}
	for _, c := range s.table.hash[m.off : m.off+m.mask+1] {
		if c.t >= 0 && c.c.n > 0 {
			q += float64(c.c.n) * coef[c.t]
			ts[j], cum[j] = c.t, q
			j++
		}
	}
	return j, q
}
