package main

import (
	"bufio"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/strads-go/strads/apps/lda"
)

// denseSCVB0 is SCVB0 as the paper writes it: N^Φ a dense table that
// every minibatch decays and adds to, token by token (a clump of c
// occurrences as c tokens with the step (1−ρ)^c), without the lazy scale.
func denseSCVB0(cfg scvb0Config, docs [][]clump, words int, lens []float64, init *scvb0, epochs int) []float64 {
	k := cfg.topics
	nphi := make([]float64, words*k)
	copy(nphi, init.p)
	nz := append([]float64(nil), init.nz...)
	theta := append([]float64(nil), init.theta...)
	var tokens float64
	for _, l := range lens {
		tokens += l
	}
	gamma := make([]float64, k)
	update := func(d int, c clump, r float64) {
		th := theta[d*k : (d+1)*k]
		var sum float64
		for t := range k {
			gamma[t] = (nphi[int(c.word)*k+t] + cfg.eta) * (th[t] + cfg.alpha) / (nz[t] + float64(words)*cfg.eta)
			sum += gamma[t]
		}
		for t := range k {
			gamma[t] /= sum
			keep := math.Pow(1-r, c.count)
			th[t] = keep*th[t] + (1-keep)*lens[d]*gamma[t]
		}
	}
	step := 0
	var batches [][2]int
	for range epochs {
		for lo := 0; lo < len(docs); lo += cfg.batch {
			batches = append(batches, [2]int{lo, min(lo+cfg.batch, len(docs))})
		}
	}
	for _, b := range batches {
		lo, hi := b[0], b[1]
		var batchTokens float64
		for d := lo; d < hi; d++ {
			batchTokens += lens[d]
		}
		hat := make([]float64, words*k)
		hatZ := make([]float64, k)
		for d := lo; d < hi; d++ {
			for b := 1; b <= cfg.burnIn; b++ {
				for _, c := range docs[d] {
					update(d, c, rho(1, 10, 0.9, 1+float64(b)))
				}
			}
			for _, c := range docs[d] {
				update(d, c, rho(1, 10, 0.9, 1+float64(cfg.burnIn)))
				for t := range k {
					v := c.count * tokens / batchTokens * gamma[t]
					hat[int(c.word)*k+t] += v
					hatZ[t] += v
				}
			}
		}
		step++
		r := rho(10, 1000, 0.9, float64(step))
		for i := range nphi {
			nphi[i] = (1-r)*nphi[i] + r*hat[i]
		}
		for t := range nz {
			nz[t] = (1-r)*nz[t] + r*hatZ[t]
		}
	}
	return nphi
}

// TestSCVB0Lazy checks that the lazily scaled table is the paper's dense
// one, after enough minibatches for the scale to be rebased.
func TestSCVB0Lazy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const words, k = 30, 4
	docs := make([][]int32, 25)
	for d := range docs {
		for range 5 + r.IntN(20) {
			docs[d] = append(docs[d], int32(r.IntN(words)))
		}
	}
	cfg := scvb0Config{topics: k, batch: 7, burnIn: 2, alpha: 0.1, eta: 0.01, seed: 5}
	m := newSCVB0(cfg, docs, words)
	m.floor = 0.5 // 240 minibatches decay s to about 0.013: it must be rebased
	init := &scvb0{p: append([]float64(nil), m.p...), nz: append([]float64(nil), m.nz...), theta: append([]float64(nil), m.theta...)}
	const epochs = 60
	for range epochs {
		if err := m.epoch(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if m.s < 0.25 {
		t.Fatalf("the scale was never rebased (s = %g): the test does not cover it", m.s)
	}
	want := denseSCVB0(cfg, m.docs, words, m.lens, init, epochs)
	for i, w := range want {
		if got := m.s * m.p[i]; math.Abs(got-w) > 1e-9*math.Max(1, math.Abs(w)) {
			t.Fatalf("N^Φ[%d] = %v, dense %v", i, got, w)
		}
	}
	// Every minibatch's statistics sum to C: Σ N^Z is C but for the share
	// of the random start that the steps have left.
	var nz, nz0, c float64
	for i := range k {
		nz, nz0 = nz+m.nz[i], nz0+init.nz[i]
	}
	for _, l := range m.lens {
		c += l
	}
	left := 1.0
	for step := range int(m.t) {
		left *= 1 - rho(10, 1000, 0.9, float64(step+1))
	}
	if want := c*(1-left) + nz0*left; math.Abs(nz-want) > 1e-9*want {
		t.Errorf("Σ N^Z = %v, want %v (C = %v)", nz, want, c)
	}
}

// TestSCVB0Recovers fits SCVB0 to a corpus drawn from a known model and
// checks that its held-out perplexity approaches the true topics'.
func TestSCVB0Recovers(t *testing.T) {
	dir := t.TempDir()
	paths := []string{"train.docword.txt", "vocab.txt", "phi.csv", "test.docword.txt"}
	var ws []*bufio.Writer
	var fs []*os.File
	for _, name := range paths {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fs, ws = append(fs, f), append(ws, bufio.NewWriter(f))
	}
	gen, err := lda.Generate(ws[0], ws[1], ws[2], ws[3], lda.GenConfig{Docs: 400, Vocab: 200, Topics: 5, DocLen: 60, TestDocs: 100, Alpha: 0.1, Beta: 0.02, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		w.Flush()
		fs[i].Close()
	}
	c, err := openPeerCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := lda.NewModelPhi(gen.Phi, []float64{0.1, 0.1, 0.1, 0.1, 0.1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := c.evaluate(truth)
	if err != nil {
		t.Fatal(err)
	}
	o := &options{scvb0Epochs: 60, scvb0Every: 5}
	pr := &peerRun{system: "scvb0", topics: 5, run: 1}
	m, err := o.fitSCVB0(context.Background(), c, pr)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := c.evaluate(m)
	if err != nil {
		t.Fatal(err)
	}
	if first := pr.curve[0].perplexity; !(got < first) {
		t.Errorf("held-out perplexity %v after 60 epochs, %v after 1: no progress", got, first)
	}
	if got > 1.05*want {
		t.Errorf("held-out perplexity %v, the true topics' %v", got, want)
	}
}
