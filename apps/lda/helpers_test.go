package lda

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// corpusFiles are the files of a generated corpus.
type corpusFiles struct {
	docword, vocab, phi, test string
	model                     *GenModel
	gen                       GenConfig
}

// genCorpus writes the corpus of c to a temporary directory.
func genCorpus(t testing.TB, c GenConfig) *corpusFiles {
	t.Helper()
	dir := t.TempDir()
	f := &corpusFiles{
		docword: filepath.Join(dir, "docword.txt"), vocab: filepath.Join(dir, "vocab.txt"),
		phi: filepath.Join(dir, "phi.csv"), test: filepath.Join(dir, "test.txt"), gen: c,
	}
	var ws []*bufio.Writer
	var fs []*os.File
	for _, p := range []string{f.docword, f.vocab, f.phi, f.test} {
		h, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, h)
		ws = append(ws, bufio.NewWriter(h))
	}
	m, err := Generate(ws[0], ws[1], ws[2], ws[3], c)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		fs[i].Close()
	}
	f.model = m
	return f
}

// config returns a job's config on the corpus.
func (f *corpusFiles) config(workers, iters int) Config {
	return Config{
		Docword: f.docword, Vocab: f.vocab, Topics: f.gen.Topics, Alpha: 0.1, Beta: 0.01,
		Seed: 7, Iters: iters, ReportEvery: 1, Workers: workers, MHSteps: 2, TopWords: 10,
	}
}

// tv returns the total-variation distance between two distributions.
func tv(p, q []float64) float64 {
	var d float64
	for i := range p {
		d += math.Abs(p[i] - q[i])
	}
	return d / 2
}

// bestMatch returns, for every true topic, the estimated topic nearest in
// total variation, and the distances.
func bestMatch(truth, est [][]float64) (match []int, dist []float64) {
	for _, p := range truth {
		best, bd := -1, math.Inf(1)
		for j, q := range est {
			if d := tv(p, q); d < bd {
				best, bd = j, d
			}
		}
		match, dist = append(match, best), append(dist, bd)
	}
	return match, dist
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// smoothed returns the distributions (n_kw + β)/(n_k + Wβ) of counts.
func smoothed(counts [][]int32, beta float64) [][]float64 {
	out := make([][]float64, len(counts))
	for k, row := range counts {
		var n float64
		for _, c := range row {
			n += float64(c)
		}
		out[k] = make([]float64, len(row))
		for w, c := range row {
			out[k][w] = (float64(c) + beta) / (n + float64(len(row))*beta)
		}
	}
	return out
}
