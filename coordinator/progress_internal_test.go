package coordinator

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/schmp"
)

// TestProgressLine drives the progress lines of a run: the rate of updates
// since the line before (from the run's start, whose count a resume
// carries), no NaN metric, no app iteration where the position gives it,
// nnz once a report had one, and the warning of empty plans once.
func TestProgressLine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := progress{at: t0, updates: 1_000_000} // resumed after a million updates
	final := schmp.Progress{Objective: 2, Metrics: []schmp.Metric{{Name: "iter", Value: 1}, {Name: "test_perplexity", Value: math.NaN()}, {Name: "acc", Value: 0.5}}}
	pos := position{Rounds: 30, Period: 2}
	tests := []struct {
		s          lineState
		want, miss []string
		warn       bool
	}{
		{lineState{now: t0.Add(2 * time.Second), pos: pos, final: final, updates: 1_000_200, pulled: 30,
			plans: planCounts{selected: 30, capacity: 300}},
			[]string{"iter 15  elapsed", "objective 2  updates/s 100  acc 0.5  plan 1/10"}, []string{"nnz", "NaN", "perplexity", "  iter 1  "}, true},
		{lineState{now: t0.Add(3 * time.Second), pos: pos, final: schmp.Progress{Objective: 1, NNZ: 7}, updates: 1_000_500, pulled: 60,
			plans: planCounts{selected: 60, capacity: 600}, reconnects: 1, stage: "λ 2/5"},
			[]string{"objective 1  nnz 7  updates/s 300", "reconnects 1  plan 1/10  λ 2/5"}, nil, false},
		{lineState{now: t0.Add(4 * time.Second), pos: pos, final: schmp.Progress{Objective: 1}, updates: 1_000_500, pulled: 60},
			[]string{"nnz 0  updates/s 0"}, []string{"plan"}, false},
	}
	for i, tt := range tests {
		line, empty := p.line(tt.s)
		for _, w := range tt.want {
			if !strings.Contains(line, w) {
				t.Errorf("line %d %q: want %q", i+1, line, w)
			}
		}
		for _, m := range tt.miss {
			if strings.Contains(line, m) {
				t.Errorf("line %d %q: has %q", i+1, line, m)
			}
		}
		if (empty != nil) != tt.warn {
			t.Errorf("line %d: warned of empty plans %v, want %v", i+1, empty != nil, tt.warn)
		}
	}
}
