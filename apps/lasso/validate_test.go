package lasso

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/internal/testhelper"
)

// allocated returns the bytes that f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRowLayoutValidates checks that the row layout's worker and
// coordinator refuse, with an error and without a panic or a large
// allocation, updates, plans, partials and summaries that no job of theirs
// sends: they come over the network (DESIGN "Hostile traffic").
func TestRowLayoutValidates(t *testing.T) {
	path := testhelper.WriteFile(t, "data.svm", "1 1:1 3:2\n-1 2:1\n0.5 1:0.5 2:1 3:1\n")
	cfg := Config{Data: path, Lambda: 0.01}
	start := func(t *testing.T) (*Worker, *Coordinator, Summary) {
		w, err := NewWorker(cfg, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := w.Describe()
		if err != nil {
			t.Fatal(err)
		}
		c := NewCoordinator(cfg)
		u, err := c.Start([]Summary{s})
		if err == nil {
			err = w.Apply(u)
		}
		if err != nil {
			t.Fatal(err)
		}
		return w, c, s
	}
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		call func(w *Worker, c *Coordinator, s Summary) error
	}{
		{"update of variable -1", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Vars: codec.Int32s{-1}, Delta: codec.Float64s{1}, Value: codec.Float64s{1}})
		}},
		{"update of variable 2^31-1", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Vars: codec.Int32s{math.MaxInt32}, Delta: codec.Float64s{1}, Value: codec.Float64s{1}})
		}},
		{"update by NaN", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Vars: codec.Int32s{0}, Delta: codec.Float64s{nan}, Value: codec.Float64s{1}})
		}},
		{"update of lengths that differ", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Vars: codec.Int32s{0, 1}, Delta: codec.Float64s{1}, Value: codec.Float64s{1}})
		}},
		{"centering of NaN", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Center: &Center{MeanY: nan, Features: 3}})
		}},
		{"plan of variable -1", func(w *Worker, _ *Coordinator, _ Summary) error {
			_, err := w.Push(context.Background(), 1, Plan{Vars: codec.Int32s{-1}})
			return err
		}},
		{"plan of variable 2^31-1", func(w *Worker, _ *Coordinator, _ Summary) error {
			_, err := w.Push(context.Background(), 1, Plan{Vars: codec.Int32s{math.MaxInt32}})
			return err
		}},
		{"pull of variable -1", func(_ *Worker, c *Coordinator, _ Summary) error {
			_, _, err := c.Pull(1, Plan{Vars: codec.Int32s{-1}}, []Partial{{Dot: codec.Float64s{1}}})
			return err
		}},
		{"pull of a NaN partial", func(_ *Worker, c *Coordinator, _ Summary) error {
			_, _, err := c.Pull(1, Plan{Vars: codec.Int32s{0}}, []Partial{{Dot: codec.Float64s{nan}}})
			return err
		}},
		{"pull of a short partial", func(_ *Worker, c *Coordinator, _ Summary) error {
			_, _, err := c.Pull(1, Plan{Vars: codec.Int32s{0, 1}}, []Partial{{Dot: codec.Float64s{1}}})
			return err
		}},
		{"summary of 2^40 features", func(_ *Worker, _ *Coordinator, s Summary) error {
			s.Features = 1 << 40
			_, err := NewCoordinator(cfg).Start([]Summary{s})
			return err
		}},
		{"summary of NaN sums", func(_ *Worker, _ *Coordinator, s Summary) error {
			s.ColSq = codec.Float64s{nan, 1, 1}
			_, err := NewCoordinator(cfg).Start([]Summary{s})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, s := start(t)
			var err error
			if n := allocated(func() { err = tc.call(w, c, s) }); n > 1<<20 {
				t.Errorf("%d bytes allocated", n)
			}
			if err == nil {
				t.Error("no error")
			}
		})
	}
}
