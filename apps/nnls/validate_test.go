package nnls

import (
	"context"
	"math"
	"testing"

	"github.com/strads-go/strads/codec"
)

// TestValidates checks that the worker and the coordinator refuse, with an
// error and without a panic, updates, plans, partials and summaries that
// no job of theirs sends: they come over the network.
func TestValidates(t *testing.T) {
	cfg := Config{Rows: 10, Cols: 4, Seed: 1}
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		call func(w *Worker, c *Coordinator, s Summary) error
	}{
		{"update of variable -1", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Vars: codec.Int32s{-1}, Delta: codec.Float64s{1}})
		}},
		{"update of variable 2^31-1", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Vars: codec.Int32s{math.MaxInt32}, Delta: codec.Float64s{1}})
		}},
		{"update by NaN", func(w *Worker, _ *Coordinator, _ Summary) error {
			return w.Apply(Update{Vars: codec.Int32s{0}, Delta: codec.Float64s{nan}})
		}},
		{"plan of variable 2^31-1", func(w *Worker, _ *Coordinator, _ Summary) error {
			_, err := w.Push(context.Background(), 1, Plan{Vars: codec.Int32s{math.MaxInt32}})
			return err
		}},
		{"pull of a NaN partial", func(_ *Worker, c *Coordinator, _ Summary) error {
			_, _, err := c.Pull(1, Plan{Vars: codec.Int32s{0}}, []Partial{{Dot: codec.Float64s{nan}}})
			return err
		}},
		{"pull of variable 2^31-1", func(_ *Worker, c *Coordinator, _ Summary) error {
			_, _, err := c.Pull(1, Plan{Vars: codec.Int32s{math.MaxInt32}}, []Partial{{Dot: codec.Float64s{1}}})
			return err
		}},
		{"summary of negative norms", func(_ *Worker, _ *Coordinator, s Summary) error {
			s.ColSq[0] = -1
			c, _ := NewCoordinator(cfg)
			_, err := c.Start([]Summary{s})
			return err
		}},
		{"summary of no rows", func(_ *Worker, _ *Coordinator, s Summary) error {
			s.Rows = 0
			c, _ := NewCoordinator(cfg)
			_, err := c.Start([]Summary{s})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWorker(cfg, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := w.Describe()
			c, _ := NewCoordinator(cfg)
			if _, err := c.Start([]Summary{s}); err != nil {
				t.Fatal(err)
			}
			if err := tc.call(w, c, s); err == nil {
				t.Error("no error")
			}
		})
	}
}
