package monitor

import (
	"encoding/json"
	"math"
	"testing"
)

func TestNumberJSON(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{1.5, "1.5"}, {0, "0"}, {-2e-9, "-2e-09"}, {math.NaN(), "null"}, {math.Inf(1), "null"}, {math.Inf(-1), "null"},
	}
	for _, tt := range tests {
		got, err := json.Marshal(Number(tt.v))
		if err != nil || string(got) != tt.want {
			t.Errorf("Number(%v) = %s, %v; want %s", tt.v, got, err, tt.want)
		}
		var back Number
		if err := json.Unmarshal(got, &back); err != nil || !(float64(back) == tt.v || math.IsNaN(float64(back)) && tt.want == "null") {
			t.Errorf("%s decodes to %v, %v", got, back, err)
		}
	}
}

// TestHistoryBounded adds many samples, one a second, to histories of a few
// capacities, and checks that each holds at most its capacity (and one
// over while it thins), spans the whole run from its first sample to its
// last, keeps its samples in time order at one stride apart but for the
// last, and computes the update rate from the sample before.
func TestHistoryBounded(t *testing.T) {
	tests := []struct {
		capacity, samples int
		stride            float64
	}{
		{8, 5, 1},
		{8, 8, 1},
		{8, 9, 2},
		{8, 100, 16},
		{64, 10000, 256},
		{Capacity, 24 * 3600, 64},
	}
	for _, tt := range tests {
		h := newHistory(tt.capacity)
		for i := range tt.samples {
			h.add(Sample{T: float64(i), Updates: 10 * float64(i)}, true)
			if i%3 == 0 {
				// A request between two samples: replaced by the next.
				h.add(Sample{T: float64(i) + 0.7, Updates: 10*float64(i) + 7}, false)
			}
			if len(h.samples) > tt.capacity {
				t.Fatalf("capacity %d: %d samples after %d", tt.capacity, len(h.samples), i+1)
			}
		}
		got, stride := h.since(math.Inf(-1))
		if stride != tt.stride {
			t.Errorf("capacity %d, %d samples: stride %v, want %v", tt.capacity, tt.samples, stride, tt.stride)
		}
		end := float64(tt.samples - 1)
		if (tt.samples-1)%3 == 0 {
			end += 0.7
		}
		if got[0].T != 0 || got[len(got)-1].T != end {
			t.Errorf("capacity %d, %d samples: span %v to %v", tt.capacity, tt.samples, got[0].T, got[len(got)-1].T)
		}
		for i := 1; i < len(got); i++ {
			dt := got[i].T - got[i-1].T
			if dt <= 0 || dt > stride || (dt != stride && i < len(got)-1) {
				t.Errorf("capacity %d, %d samples: samples %d and %d are %v apart, stride %v", tt.capacity, tt.samples, i-1, i, dt, stride)
			}
			if math.Abs(float64(got[i].UpdatesPerSecond)-10) > 1e-9 {
				t.Errorf("updates/s %v at %v, want 10", got[i].UpdatesPerSecond, got[i].T)
			}
		}
		if tail, _ := h.since(got[len(got)-2].T); len(tail) != 1 || tail[0].T != got[len(got)-1].T {
			t.Errorf("since the one but last: %v", tail)
		}
	}
}
