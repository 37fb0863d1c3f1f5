package logreg

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/internal/testhelper"
)

// TestRowLayoutValidates checks that the row layout's worker and
// coordinator refuse, with an error and without a panic or a large
// allocation, updates, plans, partials and summaries that no job of theirs
// sends: they come over the network (DESIGN "Hostile traffic").
func TestRowLayoutValidates(t *testing.T) {
	cfg := Config{Data: testhelper.WriteFile(t, "data.svm", "+1 1:1 3:2\n-1 2:1\n+1 1:0.5 2:1 3:1\n-1 3:1\n"), Lambda: 0.01}
	start := func(t *testing.T) (*Worker, *Coordinator, Summary) {
		w, err := NewWorker(cfg, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := w.Describe()
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewCoordinator(cfg)
		if err != nil {
			t.Fatal(err)
		}
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
	partial := func(g float64) []Partial {
		return []Partial{{Grad: codec.Float64s{g}, Curv: codec.Float64s{1}}}
	}
	for _, tc := range []struct {
		name string
		call func(w *Worker, c *Coordinator, s Summary) error
	}{
		{"update of variable -1", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Round: 1, Vars: codec.Int32s{-1}, Delta: codec.Float64s{1}})
		}},
		{"update of variable 2^31-1", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Round: 1, Vars: codec.Int32s{math.MaxInt32}, Delta: codec.Float64s{1}})
		}},
		{"update by NaN", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Round: 1, Vars: codec.Int32s{0}, Delta: codec.Float64s{nan}})
		}},
		{"plan of variable 2^31-1", func(w *Worker, _ *Coordinator, _ Summary) error {
			_, err := w.Push(context.Background(), 1, Plan{Vars: codec.Int32s{math.MaxInt32}})
			return err
		}},
		{"pull of variable -1", func(_ *Worker, c *Coordinator, _ Summary) error {
			_, _, err := c.Pull(1, Plan{Vars: codec.Int32s{-1}}, partial(1))
			return err
		}},
		{"pull of a NaN partial", func(_ *Worker, c *Coordinator, _ Summary) error {
			_, _, err := c.Pull(1, Plan{Vars: codec.Int32s{0}}, partial(nan))
			return err
		}},
		{"summary of 2^40 features", func(_ *Worker, _ *Coordinator, s Summary) error {
			s.Features = 1 << 40
			c, err := NewCoordinator(cfg)
			if err == nil {
				_, err = c.Start([]Summary{s})
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, s := start(t)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := tc.call(w, c, s)
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Errorf("%d bytes allocated", n)
			}
			if err == nil {
				t.Error("no error")
			}
		})
	}
}
