package mf

import (
	"bytes"
	"io"
	"runtime"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// TestBiasRatings checks the chunked store of FitBiasOnly across a chunk's
// end: every rating back in order, and the memory given back.
func TestBiasRatings(t *testing.T) {
	base := mappedNow.now.Load()
	var rs biasRatings
	n := biasChunk + 5
	for k := range n {
		if err := rs.add(biasRating{int32(k), int32(-k), float64(k) / 2}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := mappedNow.now.Load()-base, int64(2*biasChunk*16); got != want {
		t.Errorf("%d bytes mapped for %d ratings, want %d", got, n, want)
	}
	k := 0
	rs.each(func(x biasRating) {
		if x != (biasRating{int32(k), int32(-k), float64(k) / 2}) && k < n {
			t.Fatalf("rating %d is %v", k, x)
		}
		k++
	})
	if k != n {
		t.Errorf("%d ratings back, want %d", k, n)
	}
	rs.free()
	if got := mappedNow.now.Load() - base; got != 0 {
		t.Errorf("%d bytes still mapped after free", got)
	}
}

// TestFitBiasOnlyMemory checks that FitBiasOnly allocates on Go's heap
// about the two maps of ids and nothing a rating: the ratings are outside
// it (biasRatings), not in a slice that grows by copies.
func TestFitBiasOnlyMemory(t *testing.T) {
	var tr bytes.Buffer
	if _, err := Generate(&tr, io.Discard, GenConfig{Users: 1000, Items: 200, Rank: 2, Ratings: 100_000, Noise: 0.1, Alpha: 1, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Train: testhelper.WriteFile(t, "train.txt", tr.String()), BiasLambda: 5}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := FitBiasOnly(cfg, 2); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// The maps of 1,000 users and 200 items twice (indices, then the
	// biases), the read's buffer, and the slices of the biases.
	const fixed = 512 << 10
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes on the heap", got)
	if got > fixed {
		t.Errorf("FitBiasOnly allocated %d bytes on the heap for 100,000 ratings, want at most %d", got, fixed)
	}
}
