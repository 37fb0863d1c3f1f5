package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/schmp"
)

// stagedCoordinator is the halving program's coordinator run in stages
// (schmp.Staged), recording what the runtime told it.
type stagedCoordinator struct {
	*halvingCoordinator
	stages, stage int   // the stage running, 0-based
	failAt        int   // EndStage fails in this stage (1-based; 0: never)
	ends          []end // every EndStage, in order
	pulls         []int // the stage (1-based) at every Pull, in round order
}

// end is a call of EndStage: the round of its report, its stop and the
// stage (1-based) it ended.
type end struct {
	round uint64
	stop  string
	stage int
}

func (c *stagedCoordinator) Stage() string    { return fmt.Sprintf("stage %d/%d", c.stage+1, c.stages) }
func (c *stagedCoordinator) FinalStage() bool { return c.stage == c.stages-1 }

func (c *stagedCoordinator) EndStage(s schmp.Sample, stop string) error {
	c.ends = append(c.ends, end{s.Round, stop, c.stage + 1})
	if c.failAt == c.stage+1 {
		return errors.New("boom")
	}
	if stop == "converged" && !c.FinalStage() {
		c.stage++
	}
	return nil
}

func (c *stagedCoordinator) Pull(round uint64, p int, partials []float64) (float64, schmp.Feedback, error) {
	c.pulls = append(c.pulls, c.stage+1)
	return c.halvingCoordinator.Pull(round, p, partials)
}

var _ schmp.Staged = (*stagedCoordinator)(nil)

// TestStaged runs the halving program in stages and checks when the runtime
// ends a stage (at a report that meets the stop test, before the Pull of
// its round), that the other stops end the whole job, that Target counts
// in the final stage only, that the objectives of two stages are not
// compared, and that the progress lines name the stage.
func TestStaged(t *testing.T) {
	// Report k has objective k+1 up to 3, and gap 0.
	rising := func(k int) schmp.Progress { return schmp.Progress{Objective: float64(min(k+1, 3)), HasGap: true} }
	cases := []struct {
		name   string
		stages int
		h      halving
		opts   coordinator.Options
		reason schmp.Reason
		rounds uint64
		ends   []end
		pulls  []int
		failAt int    // the stage whose end fails (0: none)
		err    string // a regexp of the job's error; "": none
	}{
		// Every report has gap 0: the report of round r (the state after
		// round r−1) ends stage r, and the final one stops the job.
		{"each report ends a stage", 3, halving{zeroGap: true}, coordinator.Options{Workers: 2, ReportEvery: 1, Tol: 1e-9},
			"converged", 3, []end{{0, "converged", 1}, {1, "converged", 2}, {3, "converged", 3}}, []int{2, 3, 3}, 0, ""},
		{"reports every other round", 3, halving{zeroGap: true}, coordinator.Options{Workers: 1, ReportEvery: 2, Tol: 1e-9},
			"converged", 5, []end{{0, "converged", 1}, {2, "converged", 2}, {5, "converged", 3}}, []int{2, 2, 3, 3, 3}, 0, ""},
		// Tol 0: no stage ends, and the target, met by every report, does
		// not count before the final stage.
		{"target before the final stage", 3, halving{}, coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 5, Target: 2, HasTarget: true},
			"max-rounds", 5, []end{{5, "max-rounds", 1}}, []int{1, 1, 1, 1, 1}, 0, ""},
		{"target in the final stage", 2, halving{zeroGap: true}, coordinator.Options{Workers: 1, ReportEvery: 1, Tol: 1e-9, Target: 2, HasTarget: true},
			"target", 2, []end{{0, "converged", 1}, {2, "target", 2}}, []int{2, 2}, 0, ""},
		{"time limit in a stage", 3, halving{}, coordinator.Options{Workers: 1, ReportEvery: 1, TimeLimit: time.Millisecond, Tol: 1e-9},
			"time-limit", 0, nil, nil, 0, ""},
		// The first three reports' objectives rise: a rise across stages
		// is no divergence.
		{"rise across stages", 3, halving{script: rising}, coordinator.Options{Workers: 1, ReportEvery: 1, Tol: 1e-9, RiseTol: 1e-9},
			"converged", 3, []end{{0, "converged", 1}, {1, "converged", 2}, {3, "converged", 3}}, []int{2, 3, 3}, 0, ""},
		{"rise in a stage", 1, halving{script: rising}, coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 5, RiseTol: 1e-9},
			"", 0, nil, nil, 0, `round 1: the objective rose from 1 \(round 0\) to 2`},
		{"end of stage fails", 3, halving{zeroGap: true}, coordinator.Options{Workers: 1, ReportEvery: 1, Tol: 1e-9},
			"", 0, nil, nil, 2, `^coordinator: round 2: end of stage: boom$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c *stagedCoordinator
			prog := tc.h.program()
			prog.NewCoordinator = func(context.Context) (schmp.Coordinator[int, float64, float64, float64], error) {
				c = &stagedCoordinator{halvingCoordinator: &halvingCoordinator{zeroGap: tc.h.zeroGap, script: tc.h.script}, stages: tc.stages, failAt: tc.failAt}
				return c, nil
			}
			var progress bytes.Buffer
			o := tc.opts
			o.JoinTimeout, o.Timeout = 10*time.Second, 10*time.Second
			o.Progress, o.ProgressEvery = &progress, time.Nanosecond
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := job.Run(ctx, prog, job.Options{Job: "staged", Coordinator: o, Timeout: o.Timeout})
			if tc.err != "" {
				if err == nil || !regexp.MustCompile(tc.err).MatchString(err.Error()) {
					t.Fatalf("err = %v, want one matching %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tc.reason || (tc.rounds > 0 && res.Rounds != tc.rounds) {
				t.Errorf("stopped after %d rounds (%s), want %d (%s)", res.Rounds, res.Reason, tc.rounds, tc.reason)
			}
			if tc.ends != nil && !slices.Equal(c.ends, tc.ends) {
				t.Errorf("EndStage calls %v, want %v", c.ends, tc.ends)
			}
			if last := c.ends[len(c.ends)-1]; last.stop != string(res.Reason) || last.round != res.Rounds {
				t.Errorf("the last EndStage is %+v, want the job's reason %s after round %d", last, res.Reason, res.Rounds)
			}
			if tc.pulls != nil && !slices.Equal(c.pulls, tc.pulls) {
				t.Errorf("stages at the pulls %v, want %v", c.pulls, tc.pulls)
			}
			lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
			want := fmt.Sprintf("  stage %d/%d", c.stage+1, tc.stages)
			if stop := lines[len(lines)-1]; !strings.HasPrefix(stop, "stopped: ") || !strings.HasSuffix(stop, want) {
				t.Errorf("last progress line %q: want the stop, ending with %q", stop, want)
			}
			if first := fmt.Sprintf("  stage 1/%d\n", tc.stages); !strings.HasPrefix(lines[0], "round ") || !strings.HasSuffix(lines[0]+"\n", first) {
				t.Errorf("first progress line %q: want one ending with %q", lines[0], first)
			}
		})
	}
}
