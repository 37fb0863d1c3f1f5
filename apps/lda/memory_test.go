package lda

import (
	"context"
	"runtime"
	"testing"

	"github.com/strads-go/strads/scheduler"
)

// TestMemoryPerToken checks what a worker keeps per token once it has
// sampled: a token's word and topic, 8 bytes, and nothing else (no
// proposals, no index of the tokens by word). The corpus has 10⁶ tokens
// over 200 words at K = 10, so that the tables (some 30 kB) and the
// documents' offsets (12 bytes a document of 100 tokens) are small
// beside the tokens: the worker's heap, measured after a collection, must
// stay under 9 bytes a token. It was 24 while the sampler drew every
// token's proposals up front and kept them.
func TestMemoryPerToken(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a corpus of 10⁶ tokens")
	}
	f := genCorpus(t, GenConfig{Docs: 10000, Vocab: 200, Topics: 10, DocLen: 100, Alpha: 0.1, Beta: 0.01, Seed: 4})
	cfg := f.config(1, 1)
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	w, err := NewWorker(cfg, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		c, err := NewCoordinator(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := w.Describe()
		if err != nil {
			t.Fatal(err)
		}
		u, err := c.Start([]Summary{s})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Apply(u); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Push(context.Background(), 1, scheduler.Turn{}); err != nil {
			t.Fatal(err)
		}
	}()
	after := heap()
	perToken := float64(int64(after)-int64(before)) / float64(w.sh.tokens)
	t.Logf("%d tokens: the worker keeps %.2f bytes a token", w.sh.tokens, perToken)
	if perToken > 9 {
		t.Errorf("the worker keeps %.2f bytes a token, want at most 9", perToken)
	}
	runtime.KeepAlive(w)
}

// TestRNGSkip checks that skipping n draws lands where n draws do: the
// word proposals' stream (sampler.startBlock) rests on it.
func TestRNGSkip(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 7, 1000} {
		a, b := newRNG(3, 4), newRNG(3, 4)
		for range n {
			a.next()
		}
		b.skip(n)
		if x, y := a.next(), b.next(); x != y {
			t.Errorf("after %d draws: %#x, after skipping %d: %#x", n, x, n, y)
		}
	}
}
