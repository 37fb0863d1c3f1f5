package lda

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/strads-go/strads/scheduler"
)

var turn0 scheduler.Turn

// BenchmarkSampler measures the sampler alone on one core: tokens
// resampled per second in a sweep over a whole shard held as one block,
// after a few burn-in sweeps (the first sweeps, from random topics, are
// slower: every word's counts are spread over many topics).
//
// LDA_BENCH_DOCWORD names another corpus (a docword file) to measure on,
// and LDA_BENCH_SWEEPS the burn-in sweeps (default 30).
func BenchmarkSampler(b *testing.B) {
	f := &corpusFiles{docword: os.Getenv("LDA_BENCH_DOCWORD")}
	if f.docword == "" {
		f = genCorpus(b, GenConfig{Docs: 2000, Vocab: 5000, Topics: 100, DocLen: 100, Alpha: 0.1, Beta: 0.01, Seed: 5})
	}
	burn := 30
	if s := os.Getenv("LDA_BENCH_SWEEPS"); s != "" {
		burn, _ = strconv.Atoi(s)
	}
	for _, k := range []int{20, 100, 1000} {
		for _, mh := range []int{0, 1, 2} {
			b.Run(fmt.Sprintf("K=%d/mh=%d", k, mh), func(b *testing.B) {
				cfg := f.config(1, 1)
				cfg.Topics, cfg.MHSteps = k, mh
				cfg.Unscheduled = true
				w, err := NewUnscheduledWorker(cfg, 0, 1)
				if err != nil {
					b.Fatal(err)
				}
				d := newDriverFor(b, cfg, w)
				for range burn {
					d.sweep(b)
				}
				sampled, nanos := w.s.sampled, w.sampleNanos
				for b.Loop() {
					d.sweep(b)
				}
				// The sampling time: taking the table up (alias tables
				// included) and the sweep, not the merge.
				b.ReportMetric(float64(w.s.sampled-sampled)/(float64(w.sampleNanos-nanos)/1e9), "tokens/s")
			})
		}
	}
}

// benchDriver sweeps an unscheduled worker against its own table,
// merging its changes as a coordinator would, without the messages.
type benchDriver struct {
	w *UnscheduledWorker
	c *UnscheduledCoordinator
}

func newDriverFor(b testing.TB, cfg Config, w *UnscheduledWorker) *benchDriver {
	c, err := NewUnscheduledCoordinator(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s, err := w.Describe()
	if err != nil {
		b.Fatal(err)
	}
	u, err := c.Start([]Summary{s})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Apply(u); err != nil {
		b.Fatal(err)
	}
	return &benchDriver{w: w, c: c}
}

func (d *benchDriver) sweep(b testing.TB) {
	p, err := d.w.Push(context.Background(), 1, turn0)
	if err != nil {
		b.Fatal(err)
	}
	u, _, err := d.c.Pull(1, turn0, []Partial{p})
	if err != nil {
		b.Fatal(err)
	}
	if err := d.w.Apply(u); err != nil {
		b.Fatal(err)
	}
}
