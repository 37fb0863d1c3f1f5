package coordinator

import (
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/schmp"
)

// TestPosition checks the start of the progress line: the round (or the
// iteration, for a schmp.Iterated app) of the job's last where that is known,
// the elapsed time, and an ETA only where the job has a known end.
func TestPosition(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		p    position
		want string
	}{
		{"no end", position{Rounds: 12, Elapsed: 1234 * time.Millisecond}, "round 12  elapsed 1.23s"},
		{"max-rounds", position{Rounds: 25, MaxRounds: 100, Elapsed: 5 * s}, "round 25/100  elapsed 5s  eta 15s"},
		{"short eta", position{Rounds: 9, MaxRounds: 10, Elapsed: 900 * time.Millisecond}, "round 9/10  elapsed 900ms  eta 100ms"},
		{"long eta", position{Rounds: 1, MaxRounds: 1000, Elapsed: 7 * s}, "round 1/1000  elapsed 7s  eta 1h57m0s"},
		{"minutes", position{Rounds: 30, MaxRounds: 100, Elapsed: 40 * s}, "round 30/100  elapsed 40s  eta 1m33s"},
		{"no round yet", position{MaxRounds: 100, Elapsed: s}, "round 0/100  elapsed 1s"},
		{"under a second", position{Rounds: 30, MaxRounds: 40, Elapsed: 100 * time.Millisecond}, "round 30/40  elapsed 100ms  eta 30ms"},
		{"seconds", position{Rounds: 30, MaxRounds: 40, Elapsed: 12345 * time.Millisecond}, "round 30/40  elapsed 12.35s  eta 4.1s"},
		{"done", position{Rounds: 100, MaxRounds: 100, Elapsed: 3 * s}, "round 100/100  elapsed 3s  eta 0s"},
		{"iterations", position{Rounds: 6, MaxRounds: 40, Period: 2, Elapsed: 3 * s}, "iter 3/20  elapsed 3s  eta 17s"},
		{"within an iteration", position{Rounds: 7, MaxRounds: 30, Period: 3, Elapsed: 7 * s}, "iter 2.33/10  elapsed 7s  eta 23s"},
		{"iterations, no end", position{Rounds: 5, Period: 2, Elapsed: 2 * s}, "iter 2.5  elapsed 2s"},
		{"time limit", position{Rounds: 5, Elapsed: 2 * s, TimeLimit: 10 * s}, "round 5  elapsed 2s  eta 8s"},
		{"time limit first", position{Rounds: 5, MaxRounds: 100, Elapsed: 2 * s, TimeLimit: 10 * s}, "round 5/100  elapsed 2s  eta 8s"},
		{"max-rounds first", position{Rounds: 50, MaxRounds: 60, Elapsed: 5 * s, TimeLimit: time.Minute}, "round 50/60  elapsed 5s  eta 1s"},
		{"ended", position{Rounds: 11, MaxRounds: 100, Elapsed: 2 * s, TimeLimit: 10 * s, Ended: true}, "round 11/100  elapsed 2s"},
		{"time limit passed", position{Rounds: 5, Elapsed: 12 * s, TimeLimit: 10 * s}, "round 5  elapsed 12s  eta 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.String(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestPlanFill checks the plan counts of the metrics rows and the
// summary: means per round since the previous row, and the warning of
// plans that run mostly empty, only where the plans have a capacity.
func TestPlanFill(t *testing.T) {
	var c planCounts
	for range 10 {
		c.add(schmp.PlanInfo{Selected: 3, Rejected: 1, Deferred: 5, Capacity: 8})
	}
	prev := c
	for range 4 {
		c.add(schmp.PlanInfo{Selected: 6, Deferred: 1, Capacity: 8})
	}
	if m := c.since(prev, 4); m != (planMeans{selected: 6, deferred: 1, capacity: 8}) || m.mostlyEmpty() {
		t.Errorf("since the 10th round: %+v (mostly empty %t)", m, m.mostlyEmpty())
	}
	if m := c.since(planCounts{}, 14); !m.mostlyEmpty() {
		t.Errorf("all rounds: %+v, want mostly empty", m)
	}
	if m := (planCounts{selected: 5}).since(planCounts{}, 5); m.mostlyEmpty() {
		t.Error("plans without a capacity reported mostly empty")
	}
	for _, tc := range []struct {
		r    Result
		want []string
		not  []string
	}{
		{Result{Rounds: 10, Updates: 30, Capacity: 80, Deferred: 50, Rejected: 10},
			[]string{"plans: 3 of 8 variables a round (38%); 5 put off (in flight), 1 rejected", "warning: the plans ran mostly empty"}, nil},
		{Result{Rounds: 10, Updates: 60, Capacity: 80}, []string{"plans: 6 of 8"}, []string{"warning"}},
		{Result{Rounds: 10, Updates: 60}, nil, []string{"plans:", "warning"}},
	} {
		var b strings.Builder
		tc.r.WriteSummary(&b)
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("summary of %+v lacks %q:\n%s", tc.r, w, b.String())
			}
		}
		for _, w := range tc.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("summary of %+v has %q:\n%s", tc.r, w, b.String())
			}
		}
	}
}
