package mf

import (
	"math"
	"testing"
)

// TestKeptAfterStop drives the coordinator's evaluations through a
// validation stop: an evaluation that comes after the stop (a round
// already under way) and is a new lowest is kept, not thrown away; one
// that is not is left to the metrics.
func TestKeptAfterStop(t *testing.T) {
	tests := []struct {
		name string
		val  []float64 // validation RMSE after rounds 0, 1, …
		// best is the index of the evaluation kept, n the evaluations
		// recorded; stopped, whether the validation stopped the job.
		best, n int
		stopped bool
	}{
		{"kept before the stop", []float64{1.0, 1.1, 1.2, 1.3}, 0, 3, true},
		{"lower after the stop", []float64{1.0, 1.1, 1.2, 0.9, 1.3}, 3, 4, true},
		{"lower twice after", []float64{1.0, 1.1, 1.2, 0.9, 0.8}, 4, 5, true},
		{"falling to the end", []float64{1.0, 0.9, 0.8}, 2, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBase(Config{Algo: ALS, Workers: 1, Holdout: 0.2, Patience: 2})
			b.m.Users, b.m.Train, b.m.Val = [][]int64{{1}}, 10, 10
			for r, v := range tt.val {
				b.pulled = uint64(r)
				p, err := b.evaluate([]Summary{{Round: uint64(r), Exact: true, SSE: 1, ValSSE: v * v * 10}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if stop := p.Stop != ""; stop != (tt.stopped && r >= 2) {
					t.Errorf("round %d: stop %q", r, p.Stop)
				}
			}
			m := b.m
			if m.Stopped != tt.stopped || len(m.Trace) != tt.n || m.BestAt != tt.best || math.Abs(m.Best().ValRMSE-tt.val[tt.best]) > 1e-12 {
				t.Fatalf("stopped %v, %d evaluations recorded, best at %d (%v); want %v, %d, best at %d",
					m.Stopped, len(m.Trace), m.BestAt, m.Best().ValRMSE, tt.stopped, tt.n, tt.best)
			}
			if round, ok := b.KeptRound(); !ok || round != uint64(tt.best) {
				t.Errorf("KeptRound %d, %v; want %d", round, ok, tt.best)
			}
		})
	}
}
