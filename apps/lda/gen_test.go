package lda

import (
	"bufio"
	"io"
	"math"
	"testing"
)

// TestGenZipf checks that GenConfig.Zipf gives word frequencies by Zipf's
// law: with s = 1 over 1,000 words, word w has a share 1/(w·H) of the
// tokens, H = Σ 1/w ≈ 7.49. The shares of words 1, 10 and 100 must be
// within 25% of theirs (2·10⁵ tokens; 50 topics drawn around π with a
// concentration W·β = 1,000, as the corpora of bench/RESULTS.md's memory
// runs have 1,410: a small one makes every topic a few words).
func TestGenZipf(t *testing.T) {
	c := GenConfig{Docs: 2000, Vocab: 1000, Topics: 50, DocLen: 100, Alpha: 0.1, Beta: 1, Zipf: 1, Seed: 1}
	w := bufio.NewWriter(io.Discard)
	m, err := Generate(w, w, w, nil, c)
	if err != nil {
		t.Fatal(err)
	}
	var h float64
	for i := range c.Vocab {
		h += 1 / float64(i+1)
	}
	for _, word := range []int{1, 10, 100} {
		var n int64
		for k := range m.Counts {
			n += int64(m.Counts[k][word-1])
		}
		got, want := float64(n)/float64(m.Tokens), 1/(float64(word)*h)
		t.Logf("word %d: share %.5f, Zipf's law %.5f", word, got, want)
		if math.Abs(got/want-1) > 0.25 {
			t.Errorf("word %d has a share %.5f of the tokens, want %.5f ± 25%%", word, got, want)
		}
	}
	c.Zipf = -1
	if err := c.Validate(); err == nil {
		t.Error("Zipf -1 passes Validate")
	}
}
