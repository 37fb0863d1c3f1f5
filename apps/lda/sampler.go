package lda

import (
	"math"
	"math/bits"
)

// rng is wyrand: a 64-bit generator that is fast enough for the sampler's
// few draws per Metropolis–Hastings step. Its state is a counter that
// every draw advances by rngStep, so the n-th draw from a state is at
// hand without the n−1 before it (skip).
type rng struct{ s uint64 }

// rngStep is what a draw adds to the state.
const rngStep = 0xa0761d6478bd642f

func newRNG(seed, stream uint64) rng {
	r := rng{s: seed ^ bits.RotateLeft64(stream*0x9E3779B97F4A7C15, 17)}
	for range 4 {
		r.next()
	}
	return r
}

func (r *rng) next() uint64 {
	r.s += rngStep
	hi, lo := bits.Mul64(r.s, r.s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// skip advances r by n draws.
func (r *rng) skip(n uint64) { r.s += n * rngStep }

// unit returns a uniform number in [0, 1).
func (r *rng) unit() float64 { return float64(r.next()>>11) * 0x1p-53 }

// aliasEntry is a column of a Walker alias table: a uniform draw in the
// column returns topic if its 32 random bits are below thresh, else alias.
type aliasEntry struct {
	thresh       uint32
	topic, alias int32
}

// aliasScratch holds the work lists of buildAlias.
type aliasScratch struct {
	p            []float64
	small, large []int32
}

// buildAlias fills out (one entry per topic of topics) with the alias table
// of the distribution ∝ weights (Vose's method). The weights must be
// positive.
func buildAlias(out []aliasEntry, topics []int32, weights []float64, sc *aliasScratch) {
	n := len(topics)
	var sum float64
	for _, w := range weights {
		sum += w
	}
	sc.p = resize(sc.p, n)
	sc.small, sc.large = sc.small[:0], sc.large[:0]
	scale := float64(n) / sum
	for i, w := range weights {
		sc.p[i] = w * scale
		out[i] = aliasEntry{thresh: math.MaxUint32, topic: topics[i], alias: topics[i]}
		if sc.p[i] < 1 {
			sc.small = append(sc.small, int32(i))
		} else {
			sc.large = append(sc.large, int32(i))
		}
	}
	for len(sc.small) > 0 && len(sc.large) > 0 {
		s := sc.small[len(sc.small)-1]
		sc.small = sc.small[:len(sc.small)-1]
		l := sc.large[len(sc.large)-1]
		out[s].thresh = uint32(sc.p[s] * (1 << 32))
		out[s].alias = topics[l]
		sc.p[l] -= 1 - sc.p[s]
		if sc.p[l] < 1 {
			sc.large = sc.large[:len(sc.large)-1]
			sc.small = append(sc.small, l)
		}
	}
	// What is left is 1 up to rounding: always its own topic (the defaults).
}

// draw returns a topic from the alias table tab, using the 64 random bits r.
func draw(tab []aliasEntry, r uint64) int32 {
	e := tab[(uint64(uint32(r))*uint64(len(tab)))>>32]
	if uint32(r>>32) < e.thresh {
		return e.topic
	}
	return e.alias
}

// sampler resamples the topics of a shard's tokens whose words are in one
// word block, by Metropolis–Hastings with LightLDA's two proposals (see the
// package documentation), alternating a word proposal and a document
// proposal MHSteps times per token. Its cost per token does not depend on
// K.
type sampler struct {
	k              int
	alpha          []float64 // α_k
	beta, wbeta    float64
	kalpha         float64      // A = Σ_k α_k
	symmetric      bool         // every α_k is alpha0
	alpha0         float64      // α_0, when symmetric
	alphaTab       []aliasEntry // the distribution ∝ α_k, when not symmetric
	mh             int
	nk             []int32   // the topic totals as this worker has them
	invDen         []float64 // 1/(n_k + Wβ) when the block was taken up
	smooth         []aliasEntry
	smoothMass     float64 // β·Σ_k invDen[k]
	words          []aliasEntry
	wordRows       []wordRow // by row of the block
	table          rows
	ndk            []int32 // the counts of the current document
	rng            rng
	sc             aliasScratch
	weights        []float64
	topicsK        []int32
	propRNG        rng     // the word proposals' stream: see startBlock
	rowNext        []int32 // the next position of each row's tokens: see startBlock
	docProps       []int32 // the word proposals of a document's tokens in the block
	sampled, moved int64
	nwords         int // W
	// The exact sampler's (gibbs.go): s, (n_dk + α_k)/(n_k + Wβ), and the
	// word bucket's topics and cumulative weights (K of room). invDen is
	// then current, not as taken up.
	smoothSum float64
	coef      []float64
	qTopics   []int32
	qCum      []float64
}

func newSampler(k, words int, p Priors, mh int, r rng) *sampler {
	s := &sampler{
		k: k, nwords: words, mh: mh, nk: make([]int32, k), invDen: make([]float64, k), smooth: make([]aliasEntry, k),
		ndk: make([]int32, k), rng: r, topicsK: make([]int32, k),
	}
	for t := range s.topicsK {
		s.topicsK[t] = int32(t)
	}
	s.setPriors(p)
	return s
}

// setPriors sets the priors α (by topic) and β, which p must hold for the
// sampler's K topics (Priors.check).
func (s *sampler) setPriors(p Priors) {
	s.alpha = append(s.alpha[:0], p.Alpha...)
	s.beta, s.wbeta = p.Beta, float64(s.nwords)*p.Beta
	s.kalpha, s.symmetric, s.alpha0 = 0, true, s.alpha[0]
	for _, a := range s.alpha {
		s.kalpha += a
		s.symmetric = s.symmetric && a == s.alpha0
	}
	if !s.symmetric {
		s.alphaTab = resize(s.alphaTab, s.k)
		buildAlias(s.alphaTab, s.topicsK, s.alpha, &s.sc)
	}
}

// priorTopic returns a topic drawn from the distribution ∝ α_k, given a
// uniform number u in [0, A).
func (s *sampler) priorTopic(u float64) int32 {
	if s.symmetric {
		return int32(min(u/s.alpha0, float64(s.k-1)))
	}
	return draw(s.alphaTab, s.rng.next())
}

// takeUp prepares the sampling of a block: the working table from the
// block's counts (with room for own[i] new topics in row i), and the
// proposals from the block's counts and the topic totals as they are now.
// Only the rows with own[i] > 0 get a word proposal.
func (s *sampler) takeUp(block *Sparse, own []int32) {
	s.table.build(block, s.k, func(i int) int32 { return own[i] })
	if s.mh == 0 {
		s.startExact()
		return
	}
	s.weights = resize(s.weights, s.k)
	var mass float64
	for t, n := range s.nk {
		s.invDen[t] = 1 / (float64(n) + s.wbeta)
		s.weights[t] = s.invDen[t]
		mass += s.invDen[t]
	}
	s.smoothMass = s.beta * mass
	buildAlias(s.smooth, s.topicsK, s.weights, &s.sc)

	s.words = resize(s.words, block.NNZ())
	s.wordRows = resize(s.wordRows, block.Rows())
	for i := range block.Rows() {
		s.wordRows[i] = wordRow{off: block.Offsets[i], end: block.Offsets[i+1]}
		if own[i] == 0 {
			continue
		}
		topics, counts := block.Row(i)
		s.weights = s.weights[:len(topics)]
		var m float64
		for j, t := range topics {
			s.weights[j] = float64(counts[j]) * s.invDen[t]
			m += s.weights[j]
		}
		s.wordRows[i].mass = m
		a := block.Offsets[i]
		buildAlias(s.words[a:a+int32(len(topics))], topics, s.weights, &s.sc)
	}
}

// proposeWord draws a topic from the word proposal of row w:
// q(t) ∝ (n_wt + β)/(n_t + Wβ) with the counts of takeUp, with two draws
// of r.
func (s *sampler) proposeWord(w int32, r *rng) int32 {
	row := s.wordRows[w]
	u := r.unit() * (row.mass + s.smoothMass)
	x := r.next()
	if u < row.mass {
		return draw(s.words[row.off:row.end], x)
	}
	return draw(s.smooth, x)
}

// wordRow is what a word's proposal needs, together in 16 bytes (one
// look-up): its alias table s.words[off:end] and the mass Σ_k
// n_wk/(n_k + Wβ) over its topics.
type wordRow struct {
	mass     float64
	off, end int32
}

// maxMH bounds MHSteps.
const maxMH = 16

// proposal is a topic proposed to a token, with the counts the acceptance
// needs: n_wt now and when taken up, n_dt and n_t, all including the
// token itself.
type proposal struct {
	t          int32
	nw, sw     int32
	nd, nk     int32
	docPropose bool
}

// startBlock starts the sampling of a block taken up, of whose row i the
// shard has own[i] tokens. The word proposals come from a stream of their
// own: the j-th proposal of the token at position p, in the order of the
// rows and within a row of the documents (each document's tokens in
// order), takes draws 2(p·mh+j) and 2(p·mh+j)+1 of the sampler's
// generator as it is now, which then skips them all. These are the draws
// that drawing every proposal up front, row by row, would take, but no
// proposal is kept: sampleDoc draws a token's as it comes to it, keeping
// a position for each row, not for each token.
func (s *sampler) startBlock(own []int32) {
	s.rowNext = resize(s.rowNext, len(own))
	var n int64
	for i, c := range own {
		s.rowNext[i] = int32(n)
		n += int64(c)
	}
	s.propRNG = s.rng
	s.rng.skip(uint64(2 * int64(s.mh) * n))
}

// sampleDoc resamples tokens [first, last) of a document whose topics are
// z (all its tokens, in every block) and whose block rows are lw (the same
// indexing; only [first, last) is read), after startBlock, the documents
// in order: exactly (gibbs.go) if MHSteps is 0, else by sampleDocMH.
func (s *sampler) sampleDoc(z []int32, lw []int32, first, last int) {
	if s.mh == 0 {
		s.sampleDocExact(z, lw, first, last)
	} else {
		s.sampleDocMH(z, lw, first, last)
	}
}

// sampleDocMH is sampleDoc by Metropolis–Hastings.
//
// A token's chain proposes topics from distributions that do not depend on
// its state, but for the document proposal's pick of the token itself,
// which proposes the current topic and is a no-op: so all its proposals
// are drawn, and their counts looked up, before the chain runs. The
// look-ups are independent memory accesses that the processor overlaps,
// and no count changes during the chain (only when it ends).
func (s *sampler) sampleDocMH(z []int32, lw []int32, first, last int) {
	for _, t := range z {
		s.ndk[t]++
	}
	nd := float64(len(z))
	alpha, beta, wbeta := s.alpha, s.beta, s.wbeta
	steps := 2 * s.mh
	// The word proposals first, all the document's: their look-ups (the
	// words' alias tables) are independent, so the processor overlaps
	// them, as it could not within a token's chain.
	s.docProps = resize(s.docProps, (last-first)*s.mh)
	for i := first; i < last; i++ {
		w := lw[i]
		pr := s.propRNG
		pr.skip(uint64(2 * int64(s.mh) * int64(s.rowNext[w])))
		s.rowNext[w]++
		for j := range s.mh {
			s.docProps[(i-first)*s.mh+j] = s.proposeWord(w, &pr)
		}
	}
	var ps [2 * maxMH]proposal
	for i := first; i < last; i++ {
		w, s0 := lw[i], z[i]
		for j := 0; j < steps; j += 2 {
			ps[j] = proposal{t: s.docProps[(i-first)*s.mh+j/2]}
			u := s.rng.unit() * (nd + s.kalpha)
			t := int32(-1) // the token itself: its current topic
			switch {
			case u >= nd:
				t = s.priorTopic(u - nd)
			case int(u) != i:
				t = z[int(u)]
			}
			ps[j+1] = proposal{t: t, docPropose: true}
		}
		for j := range ps[:steps] {
			p := &ps[j]
			if p.t >= 0 {
				p.nw, p.sw = s.table.get(w, p.t)
				p.nd, p.nk = s.ndk[p.t], s.nk[p.t]
			}
		}
		// The counts of the current topic without this token.
		cur := s0
		nw, sw := s.table.get(w, cur)
		nwCur, swCur := float64(nw-1), float64(sw)
		ndCur, nkCur := float64(s.ndk[cur]-1), float64(s.nk[cur]-1)
		for j := range ps[:steps] {
			p := &ps[j]
			t := p.t
			if t < 0 || t == cur {
				continue
			}
			nwT, swT, ndT, nkT := float64(p.nw), float64(p.sw), float64(p.nd), float64(p.nk)
			if t == s0 {
				nwT, ndT, nkT = nwT-1, ndT-1, nkT-1
			}
			var num, den float64
			if p.docPropose {
				// A random token's topic (this one's included) or, with
				// weight A = Σ_k α_k, a topic drawn ∝ α_k: the proposal
				// is ∝ n_dk + α_k without the token (picking the token
				// itself proposes no move), so the document terms cancel.
				num = (nwT + beta) * (nkCur + wbeta)
				den = (nwCur + beta) * (nkT + wbeta)
			} else {
				// q(t) ∝ (n_wt+β)/(n_t+Wβ) as taken up: accept with
				// p(t)q(cur) / (p(cur)q(t)), p(t) ∝ (n_dt+α)(n_wt+β)/(n_t+Wβ).
				num = (ndT + alpha[t]) * (nwT + beta) * (nkCur + wbeta) * (swCur + beta) * s.invDen[cur]
				den = (ndCur + alpha[cur]) * (nwCur + beta) * (nkT + wbeta) * (swT + beta) * s.invDen[t]
			}
			if s.rng.unit()*den < num {
				cur, nwCur, swCur, ndCur, nkCur = t, nwT, swT, ndT, nkT
				z[i] = t
			}
		}
		if cur != s0 {
			s.ndk[s0]--
			s.ndk[cur]++
			s.nk[s0]--
			s.nk[cur]++
			s.table.add(w, s0, -1)
			s.table.add(w, cur, 1)
			s.moved++
		}
	}
	s.sampled += int64(last - first)
	for _, t := range z {
		s.ndk[t] = 0
	}
}
