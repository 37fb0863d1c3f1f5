package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/strads-go/strads/apps/lda"
)

// The SCVB0 peer: stochastic collapsed variational Bayes, zero order
// (Foulds, Boyles, DuBois, Smyth and Welling, "Stochastic Collapsed
// Variational Bayesian Inference for Latent Dirichlet Allocation", KDD
// 2013), written here because the Go module that issue 29 names for it,
// github.com/james-bowman/nlp, is not served by this machine's module
// proxy. It takes that module's defaults: α = 0.1, η = 0.01, minibatches
// of 100 documents in file order, one burn-in pass over each document
// before the pass that collects its statistics, step sizes
// ρφ_t = 10/(1000 + t)^0.9 per minibatch and ρθ = 1/(10 + 1 + pass)^0.9,
// and a word's occurrences in a document updated at once ("clumping":
// N^θ ← (1−ρ)^c·N^θ + (1 − (1−ρ)^c)·C_j·γ for c occurrences). The
// minibatch's statistics are the paper's, C/|M| times the sum of the γ of
// its |M| tokens (a clump counting c times), so that they sum to the
// corpus's C tokens; the module divides by the minibatch's documents and
// counts a clump once, which scales N^Φ up by the words of a document.
//
// The minibatch update N^Φ ← (1−ρ)·N^Φ + ρ·N̂^Φ is kept lazily, as
// N^Φ = s·P: the decay multiplies s and only the rows the minibatch
// touched change, which gives the same numbers as the dense update at a
// fraction of its cost. One thread.

// scvb0Config is a fit's settings.
type scvb0Config struct {
	topics, epochs, batch, burnIn int
	alpha, eta                    float64
	seed                          uint64
}

// defaultSCVB0 returns james-bowman/nlp's defaults for k topics and the
// given epochs.
func defaultSCVB0(k, epochs int, seed uint64) scvb0Config {
	return scvb0Config{topics: k, epochs: epochs, batch: 100, burnIn: 1, alpha: 0.1, eta: 0.01, seed: seed}
}

// rho is s/(τ + t)^κ.
func rho(s, tau, kappa, t float64) float64 { return s / math.Pow(tau+t, kappa) }

// rhoTheta is ρθ of a document's burn-in pass b (from 1), and of the pass
// that collects its statistics after B burn-in passes, rhoTheta(B), as
// the module counts them.
func rhoTheta(b int) float64 { return rho(1, 10, 0.9, 1+float64(b)) }

// clump is a word's occurrences in a document.
type clump struct {
	word  int32
	count float64
}

// clumps returns every document's words with their counts, in word order.
func clumps(docs [][]int32) [][]clump {
	out := make([][]clump, len(docs))
	for d, doc := range docs {
		s := slices.Clone(doc)
		slices.Sort(s)
		for i := 0; i < len(s); {
			j := i
			for j < len(s) && s[j] == s[i] {
				j++
			}
			out[d] = append(out[d], clump{word: s[i], count: float64(j - i)})
			i = j
		}
	}
	return out
}

// scvb0 is the state of a fit.
type scvb0 struct {
	cfg       scvb0Config
	k, w      int
	docs      [][]clump
	lens      []float64 // C_j
	tokens    float64   // C
	p         []float64 // N^Φ = s·p, word-major: p[w·K + k]
	s         float64
	nz        []float64 // N^Z
	theta     []float64 // N^θ, document-major
	t         float64   // minibatches done
	gamma     []float64
	slot      []int32   // a word's row in hat, −1 if the minibatch has not touched it
	touched   []int32   // the words the minibatch touched, in order
	hat, hatZ []float64 // N̂^Φ of the touched words, N̂^Z
	floor     float64   // the scale below which p is rebased
}

func newSCVB0(cfg scvb0Config, docs [][]int32, words int) *scvb0 {
	m := &scvb0{cfg: cfg, k: cfg.topics, w: words, docs: clumps(docs), s: 1, floor: 1e-150}
	k := m.k
	r := rand.New(rand.NewPCG(cfg.seed, 0x5cfb0))
	m.p = make([]float64, words*k)
	m.nz = make([]float64, k)
	for i := range m.p {
		m.p[i] = r.Float64()
		m.nz[i%k] += m.p[i]
	}
	m.theta = make([]float64, len(docs)*k)
	for i := range m.theta {
		m.theta[i] = r.Float64()
	}
	m.lens = make([]float64, len(docs))
	for d, doc := range docs {
		m.lens[d] = float64(len(doc))
		m.tokens += float64(len(doc))
	}
	m.gamma = make([]float64, k)
	m.slot = make([]int32, words)
	for i := range m.slot {
		m.slot[i] = -1
	}
	m.hatZ = make([]float64, k)
	return m
}

// pass updates document d's N^θ with one pass over its words and, if
// collect, adds its statistics to the minibatch's (scaled by C/|M|).
func (m *scvb0) pass(d int, r float64, collect bool, scale float64) {
	k := m.k
	th := m.theta[d*k : (d+1)*k]
	wEta := float64(m.w) * m.cfg.eta
	for _, c := range m.docs[d] {
		row := m.p[int(c.word)*k : int(c.word+1)*k]
		var sum float64
		for t := range k {
			g := (m.s*row[t] + m.cfg.eta) * (th[t] + m.cfg.alpha) / (m.nz[t] + wEta)
			m.gamma[t] = g
			sum += g
		}
		keep := math.Pow(1-r, c.count)
		add := (1 - keep) * m.lens[d] / sum
		for t := range k {
			th[t] = keep*th[t] + add*m.gamma[t]
		}
		if !collect {
			continue
		}
		i := m.slot[c.word]
		if i < 0 {
			i = int32(len(m.touched))
			m.slot[c.word] = i
			m.touched = append(m.touched, c.word)
			m.hat = append(m.hat, make([]float64, k)...)
		}
		h := m.hat[int(i)*k : int(i+1)*k]
		f := c.count * scale / sum
		for t := range k {
			h[t] += f * m.gamma[t]
			m.hatZ[t] += f * m.gamma[t]
		}
	}
}

// minibatch fits documents [lo, hi).
func (m *scvb0) minibatch(lo, hi int) {
	var batch float64
	for d := lo; d < hi; d++ {
		batch += m.lens[d]
	}
	scale := m.tokens / batch
	for d := lo; d < hi; d++ {
		for b := 1; b <= m.cfg.burnIn; b++ {
			m.pass(d, rhoTheta(b), false, 0)
		}
		m.pass(d, rhoTheta(m.cfg.burnIn), true, scale)
	}
	m.t++
	r := rho(10, 1000, 0.9, m.t)
	m.s *= 1 - r
	k := m.k
	for i, w := range m.touched {
		row := m.p[int(w)*k : int(w+1)*k]
		h := m.hat[i*k : (i+1)*k]
		for t := range k {
			row[t] += r * h[t] / m.s
		}
		m.slot[w] = -1
	}
	for t := range k {
		m.nz[t] = (1-r)*m.nz[t] + r*m.hatZ[t]
	}
	m.touched, m.hat = m.touched[:0], m.hat[:0]
	clear(m.hatZ)
	if m.s < m.floor {
		for i := range m.p {
			m.p[i] *= m.s
		}
		m.s = 1
	}
}

// epoch fits every document once, minibatch by minibatch.
func (m *scvb0) epoch(ctx context.Context) error {
	for lo := 0; lo < len(m.docs); lo += m.cfg.batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.minibatch(lo, min(lo+m.cfg.batch, len(m.docs)))
	}
	return nil
}

// model returns the fit's topics, φ_kw = (N^Φ_wk + η)/(Σ_w N^Φ_wk + Wη),
// the posterior mean, with α as the prior of the documents' proportions.
func (m *scvb0) model() (*lda.Model, error) {
	k := m.k
	phi := make([][]float64, k)
	for t := range phi {
		phi[t] = make([]float64, m.w)
	}
	sums := make([]float64, k)
	for w := range m.w {
		for t := range k {
			v := m.s*m.p[w*k+t] + m.cfg.eta
			phi[t][w] = v
			sums[t] += v
		}
	}
	for t := range phi {
		for w := range phi[t] {
			phi[t][w] /= sums[t]
		}
	}
	alpha := make([]float64, k)
	for t := range alpha {
		alpha[t] = m.cfg.alpha
	}
	return lda.NewModelPhi(phi, alpha, nil)
}

// SCVB0's stopping rule, james-bowman/nlp's: every scvb0CheckEvery epochs,
// stop once the perplexity has changed by less than scvb0Tolerance of
// itself since the last check. The module checks the training documents'
// perplexity; here the held-out one of the common evaluator is checked.
const (
	scvb0CheckEvery = 30
	scvb0Tolerance  = 1e-2
)

// fitSCVB0 fits SCVB0 to the corpus's training documents for pr, at most
// o.scvb0Epochs epochs, with a held-out curve at the first epoch, every
// o.scvb0Every and at the end (evaluations not timed), and returns the
// final model. The time is the fit's alone, reading the file not
// included, as for the other peers.
func (o *options) fitSCVB0(ctx context.Context, c *peerCorpus, pr *peerRun) (*lda.Model, error) {
	docs, err := lda.ReadDocword(c.train, c.words)
	if err != nil {
		return nil, err
	}
	cfg := defaultSCVB0(pr.topics, o.scvb0Epochs, uint64(pr.run))
	t0 := time.Now()
	m := newSCVB0(cfg, docs, c.words)
	fmt.Fprintf(os.Stderr, "scvb0 K = %d run %d:", cfg.topics, pr.run)
	defer fmt.Fprintln(os.Stderr)
	var fit time.Duration
	checked := math.NaN()
	for e := 1; e <= cfg.epochs; e++ {
		if err := m.epoch(ctx); err != nil {
			return nil, err
		}
		check := e%scvb0CheckEvery == 0
		if !(e == 1 || e == cfg.epochs || check || e%o.scvb0Every == 0) {
			continue
		}
		fit += time.Since(t0)
		mod, err := m.model()
		if err != nil {
			return nil, err
		}
		p, _, err := c.evaluate(mod)
		if err != nil {
			return nil, err
		}
		pr.curve = append(pr.curve, curvePoint{t: fit, iter: float64(e), perplexity: p})
		fmt.Fprintf(os.Stderr, " %d: %.1f (%.1fs)", e, p, fit.Seconds())
		if check {
			if math.Abs(checked-p) < scvb0Tolerance*checked {
				break
			}
			checked = p
		}
		t0 = time.Now()
	}
	pr.fit = fit
	return m.model()
}
