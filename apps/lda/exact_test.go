package lda

import (
	"math/rand/v2"
	"testing"
)

// exactGibbs runs plain collapsed Gibbs sampling, O(K) per token, on the
// shard's tokens from random topics: the reference the sampler must agree
// with. The shard is laid out in one block, so its tokens' rows are their
// words.
func exactGibbs(sh *shard, k, words int, alpha, beta float64, iters int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 1))
	nwk := make([][]float64, words)
	for w := range nwk {
		nwk[w] = make([]float64, k)
	}
	nk := make([]float64, k)
	ndk := make([][]float64, sh.docs())
	for d := range ndk {
		ndk[d] = make([]float64, k)
		for i := sh.start[d]; i < sh.start[d+1]; i++ {
			sh.z[i] = int32(r.IntN(k))
			nwk[sh.word[i]][sh.z[i]]++
			nk[sh.z[i]]++
			ndk[d][sh.z[i]]++
		}
	}
	cum := make([]float64, k)
	wbeta := float64(words) * beta
	for range iters {
		for d := range ndk {
			for i := sh.start[d]; i < sh.start[d+1]; i++ {
				w, t := sh.word[i], sh.z[i]
				nwk[w][t]--
				nk[t]--
				ndk[d][t]--
				var sum float64
				for j := range k {
					sum += (ndk[d][j] + alpha) * (nwk[w][j] + beta) / (nk[j] + wbeta)
					cum[j] = sum
				}
				u := r.Float64() * sum
				t = 0
				for t < int32(k-1) && cum[t] < u {
					t++
				}
				sh.z[i] = t
				nwk[w][t]++
				nk[t]++
				ndk[d][t]++
			}
		}
	}
}

// TestMatchesExactGibbs checks the whole sampler, both ways, against plain
// collapsed Gibbs sampling on a corpus: both must reach the same
// log-likelihood per token, within 0.01 (runs of either differ by about
// 0.002). The Metropolis–Hastings chains mix more slowly per iteration, so
// they run three times as many iterations; it is checked on its best of two seeds (see TestRecovery on
// local optima). TestKernel checks the acceptance ratios more finely.
func TestMatchesExactGibbs(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 400, Vocab: 300, Topics: 5, DocLen: 100, Alpha: 0.1, Beta: 0.005, Seed: 3})
	cfg := f.config(1, 1)
	w, err := NewUnscheduledWorker(cfg, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	exactGibbs(w.sh, cfg.Topics, 300, cfg.Alpha, cfg.Beta, 60, 1)
	_, _, _, exact := recount([]*base{w.base}, cfg.Topics, 300, symmetricPriors(cfg.Topics, cfg.Alpha, cfg.Beta))
	for _, tc := range []struct{ mh, iters int }{{0, 60}, {2, 180}} {
		best := -1e300
		for seed := range uint64(2) {
			cfg.Seed, cfg.MHSteps = seed+1, tc.mh
			_, reports := run(t, Program(cfg), 1, tc.iters, tc.iters, nil)
			best = max(best, reports[len(reports)-1])
		}
		t.Logf("log-likelihood per token: exact Gibbs %.4f, sampler (mh %d, %d iterations) %.4f", exact, tc.mh, tc.iters, best)
		if d := best - exact; d < -0.01 || d > 0.01 {
			t.Errorf("the sampler (mh %d) reaches %.4f, exact Gibbs %.4f", tc.mh, best, exact)
		}
	}
}

// TestKernel checks the Metropolis–Hastings kernel of one token against
// the exact conditional it must leave invariant,
// p(k) ∝ (n_dk + α_k)(n_wk + β)/(n_k + Wβ) without the token, where the
// proposals were built from counts that have moved since (as another
// word's moves and the token's own do within a sub-round): resampling the
// token many times, the frequencies of its topics must be that
// distribution, within TV 0.01 (the noise of 200,000 draws is about
// 0.002). LightLDA's shortcut, which evaluates the word proposal at the
// current counts, fails this. With an asymmetric α the document proposal
// draws its prior part from an alias table over α, and both acceptance
// ratios take the α_k of the topics compared; the test's power is checked
// too: a sampler given the symmetric α of the same sum instead must miss
// the asymmetric conditional by far more than the bound.
func TestKernel(t *testing.T) {
	const k = 6
	asym := Priors{Alpha: []float64{0.05, 1.6, 0.3, 0.9, 0.02, 2.5}, Beta: 0.2}
	sum, _, _ := alphaStats(asym.Alpha)
	for _, tc := range []struct {
		name            string
		target, sampler Priors
		atLeast, atMost float64
	}{
		{"symmetric", symmetricPriors(k, 0.3, 0.2), symmetricPriors(k, 0.3, 0.2), 0, 0.01},
		{"asymmetric", asym, asym, 0, 0.01},
		{"asymmetric, sampled as symmetric", asym, symmetricPriors(k, sum/k, 0.2), 0.05, 1},
	} {
		for _, mh := range []int{0, 1, 2} {
			d := kernelTV(tc.target, tc.sampler, mh)
			t.Logf("%s, mh %d: TV %.4f between the token's topics and the conditional", tc.name, mh, d)
			if d < tc.atLeast || d > tc.atMost {
				t.Errorf("%s, mh %d: TV %.4f between the token's topics and the conditional, want it in [%g, %g]", tc.name, mh, d, tc.atLeast, tc.atMost)
			}
		}
	}
}

// kernelTV resamples a token many times with a sampler of priors pr and
// returns the total variation between the frequencies of its topics and
// its exact conditional under the priors target.
func kernelTV(target, pr Priors, mh int) float64 {
	const k, words = 6, 3
	s := newSampler(k, words, pr, mh, newRNG(1, 2))
	// The counts when the block is taken up, and the topic totals.
	block := &Sparse{
		Offsets: []int32{0, 3, 7, 9},
		Topics:  []int32{0, 2, 5 /**/, 0, 1, 3, 4 /**/, 2, 3},
		Counts:  []int32{4, 1, 2 /**/, 1, 6, 1, 2 /**/, 3, 5},
	}
	copy(s.nk, []int32{9, 12, 8, 10, 5, 7})
	// One document of 7 tokens; token 2 (word 1) is resampled.
	z := []int32{0, 1, 1, 3, 2, 1, 4}
	lw := []int32{0, 1, 1, 1, 2, 1, 1}
	own := []int32{1, 5, 1}
	s.takeUp(block, own)
	// The counts move after the proposals were built.
	for _, m := range []struct{ w, t, d int32 }{{1, 1, -3}, {1, 5, 4}, {1, 4, 2}, {1, 3, -1}} {
		s.table.add(m.w, m.t, m.d)
		s.nk[m.t] += m.d
	}
	const i = 2
	// The exact conditional, from the counts without token i.
	ndk := make([]float64, k)
	for j, tp := range z {
		if j != i {
			ndk[tp]++
		}
	}
	want := make([]float64, k)
	var sum float64
	wbeta := float64(words) * target.Beta
	for tp := range int32(k) {
		n, _ := s.table.get(1, tp)
		nk := s.nk[tp]
		if tp == z[i] {
			n, nk = n-1, nk-1
		}
		want[tp] = (ndk[tp] + target.Alpha[tp]) * (float64(n) + target.Beta) / (float64(nk) + wbeta)
		sum += want[tp]
	}
	for tp := range want {
		want[tp] /= sum
	}
	got := make([]float64, k)
	const n = 200000
	for range n {
		s.startBlock(own)
		s.sampleDoc(z, lw, i, i+1)
		got[z[i]]++
	}
	for tp := range got {
		got[tp] /= n
	}
	return tv(got, want)
}
