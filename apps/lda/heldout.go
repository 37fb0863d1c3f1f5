package lda

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// heldOutSweeps is the number of Gibbs sweeps over a test document's
// observed tokens; θ_d is averaged over the second half.
const heldOutSweeps = 40

// heldOut is the result of the evaluation.
type heldOut struct {
	perplexity float64
	tokens     int64 // held-out tokens
	docs       int
}

// testDoc is a test document's tokens, in file order.
type testDoc []int32

// readTest reads a held-out docword file on a vocabulary of w words.
func readTest(path string, w int) ([]testDoc, error) {
	c, err := openDocword(path)
	if err != nil {
		return nil, err
	}
	if c.words != w {
		return nil, parseErrorf(path, 2, "W = %d, but the training corpus has W = %d", c.words, w)
	}
	var docs []testDoc
	err = c.read(0, c.docs, true, func(_ int, words, counts []int32) error {
		var d testDoc
		for j, wd := range words {
			for range counts[j] {
				d = append(d, wd)
			}
		}
		docs = append(docs, d)
		return nil
	})
	return docs, err
}

// fullTable returns the whole word-topic table, row w for word w.
func (m *model) fullTable() *Sparse {
	type entry struct{ w, t, n int32 }
	var all []entry
	m.wordCount(func(w, t, n int32) { all = append(all, entry{w, t, n}) })
	slices.SortFunc(all, func(a, b entry) int { return cmp.Compare(a.w, b.w) })
	s := &Sparse{}
	s.startRows(m.w)
	i := 0
	for w := range int32(m.w) {
		for ; i < len(all) && all[i].w == w; i++ {
			s.Topics, s.Counts = append(s.Topics, all[i].t), append(s.Counts, all[i].n)
		}
		s.endRow()
	}
	return s
}

// HeldOut computes (once) and returns the held-out perplexity on
// Config.TestDocword and the number of held-out tokens; ok is false
// without a test file.
//
// The method is document completion (Wallach et al., 2009, "Evaluation
// methods for topic models", §4.2): every test document with at least two
// tokens is split into its even-numbered tokens (observed) and its
// odd-numbered ones (held out), in file order. With the trained topics
// φ_kw = (n_wk + β)/(n_k + Wβ) fixed, 40 Gibbs sweeps over the observed
// tokens (the sampler's proposals, exact here since φ does not move)
// estimate the document's topic proportions θ_d, averaged over the last
// 20 sweeps; the perplexity is exp(−Σ log Σ_k θ_dk φ_kw / M) over the M
// held-out tokens.
func (m *model) HeldOut() (perplexity float64, tokens int64, ok bool, err error) {
	if m.cfg.TestDocword == "" {
		return 0, 0, false, nil
	}
	if m.heldOut == nil {
		docs, err := readTest(m.cfg.TestDocword, m.w)
		if err != nil {
			return 0, 0, false, err
		}
		h, err := m.evalHeldOut(docs)
		if err != nil {
			return 0, 0, false, err
		}
		m.heldOut = h
	}
	return m.heldOut.perplexity, m.heldOut.tokens, true, nil
}

func (m *model) evalHeldOut(docs []testDoc) (*heldOut, error) {
	table := m.fullTable()
	own := make([]int32, m.w)
	for _, d := range docs {
		for i, w := range d {
			if i%2 == 0 {
				own[w] = 1
			}
		}
	}
	s := newSampler(m.k, m.w, m.cfg.Alpha, m.cfg.Beta, m.cfg.MHSteps, newRNG(m.cfg.Seed, 0x68656c64))
	copy(s.nk, m.nk)
	s.takeUp(table, own)
	var smooth float64 // Σ_k β/(n_k + Wβ)
	for _, v := range s.invDen {
		smooth += m.cfg.Beta * v
	}
	kalpha := float64(m.k) * m.cfg.Alpha
	acc := make([]float64, m.k)
	h := &heldOut{}
	var logp float64
	var z, obs []int32
	var touched []int32
	for _, d := range docs {
		if len(d) < 2 {
			continue
		}
		obs, z = obs[:0], z[:0]
		for i := 0; i < len(d); i += 2 {
			obs = append(obs, d[i])
			z = append(z, s.proposeWord(d[i]))
		}
		touched = touched[:0]
		const burn = heldOutSweeps / 2
		for sweep := range heldOutSweeps {
			s.sampleFixed(z, obs)
			if sweep < burn {
				continue
			}
			for _, t := range z {
				if acc[t] == 0 {
					touched = append(touched, t)
				}
				acc[t]++
			}
		}
		// θ_dk = (acc_k/S + α)/(N_obs + Kα), S the sweeps averaged.
		norm := float64(len(obs)) + kalpha
		sweeps := float64(heldOutSweeps - burn)
		base := m.cfg.Alpha * smooth // Σ_k α·β/(n_k + Wβ)
		for _, t := range touched {
			base += acc[t] / sweeps * m.cfg.Beta * s.invDen[t]
		}
		for i := 1; i < len(d); i += 2 {
			w := d[i]
			p := base
			// (n_wk·invDen_k) parts, over the word's topics.
			s.table.each(w, func(t, n, _ int32) {
				p += (acc[t]/sweeps + m.cfg.Alpha) * float64(n) * s.invDen[t]
			})
			logp += math.Log(p / norm)
			h.tokens++
		}
		for _, t := range touched {
			acc[t] = 0
		}
		h.docs++
	}
	if h.tokens == 0 {
		return nil, fmt.Errorf("%s: no document with two tokens or more to complete", m.cfg.TestDocword)
	}
	h.perplexity = math.Exp(-logp / float64(h.tokens))
	return h, nil
}

// sampleFixed resamples the topics z of a document's tokens words, with
// the table and totals fixed: target (n_dk + α)·φ_kw.
func (s *sampler) sampleFixed(z, words []int32) {
	for _, t := range z {
		s.ndk[t]++
	}
	nd := float64(len(z))
	phi := func(w, t int32) float64 {
		n, _ := s.table.get(w, t)
		return (float64(n) + s.beta) * s.invDen[t]
	}
	for i, w := range words {
		cur := z[i]
		s.ndk[cur]--
		for range s.mh {
			// Word proposal q = φ_w exactly: accept by the document terms.
			t := s.proposeWord(w)
			if t != cur && s.rng.unit()*(float64(s.ndk[cur])+s.alpha) < float64(s.ndk[t])+s.alpha {
				cur = t
				z[i] = t
			}
			// Document proposal: accept by the word terms.
			u := s.rng.unit() * (nd + s.kalpha)
			if u < nd {
				t = z[int(u)]
			} else {
				t = int32(min((u-nd)/s.alpha, float64(s.k-1)))
			}
			if t != cur && s.rng.unit()*phi(w, cur) < phi(w, t) {
				cur = t
				z[i] = t
			}
		}
		s.ndk[cur]++
	}
	for _, t := range z {
		s.ndk[t] = 0
	}
}
