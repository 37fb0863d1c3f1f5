package logaxis

import (
	"slices"
	"testing"
)

// TestTicks checks the labels over many decades, a few, and less than one.
func TestTicks(t *testing.T) {
	cases := []struct {
		min, max float64
		want     []string // the labels, in order
	}{
		{-6, 0, []string{"1e-6", "1e-5", "1e-4", "1e-3", "0.01", "0.1", "1"}},
		{-0.5, 1.2, []string{"0.5", "1", "2", "5", "10"}},
		{0.1, 0.9, []string{"2", "5"}},
		{-30, 0, []string{"1e-30", "1e-27", "1e-24", "1e-21", "1e-18", "1e-15", "1e-12", "1e-9", "1e-6", "1e-3", "1"}},
	}
	for _, tc := range cases {
		var got []string
		for _, tk := range Ticks(tc.min, tc.max) {
			if tk.Value < tc.min || tk.Value > tc.max {
				t.Errorf("[%g, %g]: tick at %g outside", tc.min, tc.max, tk.Value)
			}
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("[%g, %g]: labels %q, want %q", tc.min, tc.max, got, tc.want)
		}
	}
}
