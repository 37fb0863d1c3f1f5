package coordinator_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/schmp"
)

// halving is a toy program: the model is one number x that every round
// halves; each worker pushes its share of x.
type halving struct {
	hangShard int     // this shard stops answering…
	hangRound uint64  // …from this round on (0: never)
	vars      []int32 // the variables every plan claims to update
	zeroGap   bool    // the objective comes with a certified gap of 0
	metrics   bool    // reports carry app metrics "x" and "none" (NaN)
	// appStop, if > 0, makes the reports of x ≤ appStop ask to stop
	// (schmp.Progress.Stop), saying "x at most appStop".
	appStop float64
	// slowLoad, if > 0, is how long worker 0 takes to read its data.
	slowLoad time.Duration
	// script, if set, gives the progress of report k (0 the first) in
	// place of the objective 1 + x. With depth 1 and a report every round,
	// report k shows the state after k rounds.
	script func(k int) schmp.Progress
}

// halvingScheduler is scheduler part of parts. Its plan is the round
// number; it fails when asked for a round that is not its turn, or when the
// feedback of its rounds comes out of order.
type halvingScheduler struct {
	part, parts int
	vars        []int32 // PlanInfo.Vars of every plan
	fed         uint64  // the last round fed back
}

func (s *halvingScheduler) Schedule(round uint64, fb []schmp.Feedback) (int, schmp.PlanInfo, error) {
	if want := int((round - 1) % uint64(s.parts)); want != s.part {
		return 0, schmp.PlanInfo{}, fmt.Errorf("part %d asked for round %d, which is part %d's", s.part, round, want)
	}
	for _, f := range fb {
		if f.Round <= s.fed || int((f.Round-1)%uint64(s.parts)) != s.part {
			return 0, schmp.PlanInfo{}, fmt.Errorf("part %d fed round %d after round %d", s.part, f.Round, s.fed)
		}
		s.fed = f.Round
	}
	return int(round), schmp.PlanInfo{Vars: s.vars, Candidates: 1, Selected: 1}, nil
}

type halvingWorker struct {
	h      halving
	shard  int
	shards int
	x      float64
}

func (w *halvingWorker) Describe() (float64, error) { return float64(w.shard), nil }
func (w *halvingWorker) Apply(u float64) error      { w.x = u; return nil }
func (w *halvingWorker) Report() (float64, error)   { return w.x / float64(w.shards), nil }
func (w *halvingWorker) Push(ctx context.Context, round uint64, _ int) (float64, error) {
	if w.h.hangRound > 0 && w.shard == w.h.hangShard && round >= w.h.hangRound {
		<-ctx.Done() // stops answering
		return 0, ctx.Err()
	}
	return w.x / float64(w.shards), nil
}

type halvingCoordinator struct {
	vars    []int32 // every plan's, which the feedback names
	x       float64
	zeroGap bool
	metrics bool
	appStop float64
	script  func(k int) schmp.Progress
	reports int // the reports so far
}

func (c *halvingCoordinator) Start(shards []float64) (float64, error) {
	for i, s := range shards {
		if s != float64(i) {
			return 0, fmt.Errorf("summary of shard %d is %v", i, s)
		}
	}
	c.x = 1
	return c.x, nil
}

func (c *halvingCoordinator) Pull(_ uint64, _ int, partials []float64) (float64, schmp.Feedback, error) {
	var sum float64
	for _, p := range partials {
		sum += p
	}
	c.x = sum / 2
	return c.x, schmp.Feedback{Vars: c.vars, Delta: make([]float64, len(c.vars))}, nil
}

func (c *halvingCoordinator) Objective(reports []float64) (schmp.Progress, error) {
	var sum float64
	for _, r := range reports {
		sum += r
	}
	if c.script != nil {
		c.reports++
		return c.script(c.reports - 1), nil
	}
	p := schmp.Progress{Objective: 1 + sum, HasGap: c.zeroGap}
	if c.metrics {
		p.Metrics = []schmp.Metric{{Name: "x", Value: sum}, {Name: "none", Value: math.NaN()}}
	}
	if c.appStop > 0 && sum <= c.appStop {
		p.Stop = fmt.Sprintf("x at most %g", c.appStop)
	}
	return p, nil
}

func (c *halvingCoordinator) WriteModel(w io.Writer) error {
	_, err := fmt.Fprintln(w, c.x)
	return err
}

func (h halving) program() schmp.Program[int, float64, float64, float64] {
	return schmp.Program[int, float64, float64, float64]{
		Name: "halving",
		NewScheduler: func(_ context.Context, part, parts int) (schmp.Scheduler[int], error) {
			return &halvingScheduler{part: part, parts: parts, vars: h.vars}, nil
		},
		NewWorker: func(_ context.Context, shard, shards int) (schmp.Worker[int, float64, float64, float64], error) {
			if shard == 0 {
				time.Sleep(h.slowLoad)
			}
			return &halvingWorker{h: h, shard: shard, shards: shards}, nil
		},
		NewCoordinator: func(context.Context) (schmp.Coordinator[int, float64, float64, float64], error) {
			return &halvingCoordinator{vars: h.vars, zeroGap: h.zeroGap, metrics: h.metrics, appStop: h.appStop, script: h.script}, nil
		},
	}
}

func run(t *testing.T, h halving, o coordinator.Options) (*coordinator.Result, error) {
	t.Helper()
	o.JoinTimeout = 10 * time.Second
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return job.Run(ctx, h.program(), job.Options{Job: "halving", Coordinator: o, Timeout: o.Timeout})
}

func TestStops(t *testing.T) {
	cases := []struct {
		name   string
		h      halving
		opts   coordinator.Options
		reason schmp.Reason
		rounds uint64
		why    string // Result.Why, if not the reason
	}{
		{"max-rounds", halving{}, coordinator.Options{Workers: 3, MaxRounds: 7, ReportEvery: 1}, "max-rounds", 7, ""},
		// --tol 0 is off, even when the gap is exactly 0.
		{"tol off", halving{zeroGap: true}, coordinator.Options{Workers: 1, MaxRounds: 6, ReportEvery: 1}, "max-rounds", 6, ""},
		{"zero gap", halving{zeroGap: true}, coordinator.Options{Workers: 1, MaxRounds: 6, ReportEvery: 1, Tol: 1e-9}, "converged", 1, ""},
		// The report of round r shows 1 + 2^-(r-1): its relative change
		// first falls below 1e-3 in round 11.
		{"tol", halving{}, coordinator.Options{Workers: 2, Tol: 1e-3, ReportEvery: 1}, "converged", 11, ""},
		{"time-limit", halving{}, coordinator.Options{Workers: 1, TimeLimit: 50 * time.Millisecond, ReportEvery: 5}, "time-limit", 0, ""},
		// The report of round r+1 shows 1 + 2^-r: the first at most
		// 1 + 2^-5 comes with round 6.
		{"target", halving{}, coordinator.Options{Workers: 2, ReportEvery: 1, Target: 1 + 0x1p-5, HasTarget: true}, "target", 6, ""},
		// Reports with rounds 1, 5, 9 show 1 + 2^-0, 2^-4, 2^-8: the stop
		// is decided at a report.
		{"target between reports", halving{}, coordinator.Options{Workers: 2, ReportEvery: 4, Target: 1 + 0x1p-5, HasTarget: true}, "target", 9, ""},
		{"target unmet", halving{}, coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 5, Target: 0.5, HasTarget: true}, "max-rounds", 5, ""},
		// Target 0 is a target like any other; without HasTarget there is
		// none.
		{"target unset", halving{}, coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 5, Target: 2}, "max-rounds", 5, ""},
		// A report that meets both stops is "target".
		{"target and converged", halving{zeroGap: true}, coordinator.Options{Workers: 1, MaxRounds: 6, ReportEvery: 1, Tol: 1e-9, Target: 2, HasTarget: true}, "target", 1, ""},
		// The app asks to stop from the report of x = 2^-5 on, which comes
		// with round 6; the check's report of the state after round 6
		// asks too, and certifies the stop.
		{"app", halving{appStop: 0x1p-5}, coordinator.Options{Workers: 2, ReportEvery: 1}, "app", 6, "x at most 0.03125"},
		// Tol comes first.
		{"converged and app", halving{zeroGap: true, appStop: 2}, coordinator.Options{Workers: 1, ReportEvery: 1, Tol: 1e-9}, "converged", 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := run(t, tc.h, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tc.reason || (tc.rounds > 0 && res.Rounds != tc.rounds) {
				t.Errorf("stopped after %d rounds (%s), want %d (%s)", res.Rounds, res.Reason, tc.rounds, tc.reason)
			}
			if why := cmp.Or(tc.why, string(tc.reason)); res.Why() != why {
				t.Errorf("stopped because %q, want %q", res.Why(), why)
			}
			want := 1 + math.Pow(2, -float64(res.Rounds))
			if got := res.Final.Objective; got != want {
				t.Errorf("final objective %v, want %v", got, want)
			}
			if len(res.RoundTimes) != int(res.Rounds) || res.MedianRound() <= 0 {
				t.Errorf("%d round times for %d rounds", len(res.RoundTimes), res.Rounds)
			}
		})
	}
}

// objectives returns a script whose report k has objective fs[k] (the last
// of fs after that) and no gap.
func objectives(fs ...float64) func(int) schmp.Progress {
	return func(k int) schmp.Progress {
		return schmp.Progress{Objective: fs[min(k, len(fs)-1)]}
	}
}

// from returns a script whose report k has objective 1 + 2^-k and gap 2^-k
// before report k0, and progress bad from then on.
func from(k0 int, bad schmp.Progress) func(int) schmp.Progress {
	return func(k int) schmp.Progress {
		if k >= k0 {
			return bad
		}
		g := math.Pow(2, -float64(k))
		return schmp.Progress{Objective: 1 + g, Gap: g, HasGap: true}
	}
}

// TestDiverged checks that a report whose objective or gap is not finite,
// or whose objective rose by more than RiseTol, fails the job with an
// error wrapping ErrDiverged that names the round (whose state the report
// shows) and the cause, and leaves no output; and that the reports that
// show no such thing do not.
func TestDiverged(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name string
		h    halving
		opts coordinator.Options
		want string // a regexp of the error; "": none, a run to --max-rounds
	}{
		// Inf ≤ tol·Inf: once, a diverged run stopped here as converged.
		{"+Inf objective and gap", halving{script: from(4, schmp.Progress{Objective: inf, Gap: inf, HasGap: true})},
			coordinator.Options{Workers: 2, ReportEvery: 1, Tol: 1e-4},
			`^coordinator: round 4: the objective is not finite \(\+Inf\): the model diverged$`},
		{"NaN objective", halving{script: from(3, schmp.Progress{Objective: nan})},
			coordinator.Options{Workers: 2, ReportEvery: 1, MaxRounds: 20},
			`round 3: the objective is not finite \(NaN\)`},
		{"-Inf objective", halving{script: from(2, schmp.Progress{Objective: -inf})},
			coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 20, Tol: 1e-4},
			`round 2: the objective is not finite \(-Inf\)`},
		// Reports lag the depth: the error names the round whose state
		// the report shows, as the metrics CSV does. Report 4 comes with
		// round 5 and shows the state after round 2.
		{"depth 3", halving{script: from(4, schmp.Progress{Objective: inf})},
			coordinator.Options{Workers: 2, Depth: 3, ReportEvery: 1, MaxRounds: 20},
			`round 2: the objective is not finite \(\+Inf\)`},
		// Report 1 comes with round 6 and shows the state after round 5.
		{"between reports", halving{script: from(1, schmp.Progress{Objective: inf})},
			coordinator.Options{Workers: 2, ReportEvery: 5, MaxRounds: 20},
			`round 5: the objective is not finite \(\+Inf\)`},
		// The final report, after the last round, counts too: report 0
		// comes with round 1, report 1 is the final one.
		{"final report", halving{script: from(1, schmp.Progress{Objective: nan})},
			coordinator.Options{Workers: 2, ReportEvery: 100, MaxRounds: 6},
			`round 6: the objective is not finite \(NaN\)`},
		{"NaN gap", halving{script: from(3, schmp.Progress{Objective: 0.5, Gap: nan, HasGap: true})},
			coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 20, Tol: 1e-4},
			`^coordinator: round 3: the gap is not finite \(NaN; objective 0.5\): the model diverged$`},
		{"negative NaN gap", halving{script: from(3, schmp.Progress{Objective: 0.5, Gap: math.Copysign(nan, -1), HasGap: true})},
			coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 20},
			`round 3: the gap is not finite \(NaN`},
		{"-Inf gap", halving{script: from(3, schmp.Progress{Objective: 0.5, Gap: -inf, HasGap: true})},
			coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 20, Tol: 1e-4},
			`round 3: the gap is not finite \(-Inf`},
		{"rise", halving{script: objectives(0.5, 0.3, 0.2813, 0.2911)},
			coordinator.Options{Workers: 2, ReportEvery: 1, MaxRounds: 20, RiseTol: 1e-9},
			`^coordinator: round 3: the objective rose from 0.2813 \(round 2\) to 0.2911, more than the tolerance 1e-09 allows: the model diverged$`},
		// Each step rises by less than 1% of the lowest, 0.5; the second
		// takes the objective 1.6% above it.
		{"rise from the lowest", halving{script: objectives(1, 0.5, 0.504, 0.508)},
			coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 20, RiseTol: 0.01},
			`round 3: the objective rose from 0.5 \(round 1\) to 0.508, more than the tolerance 0.01 allows`},
		{"rise from zero", halving{script: objectives(1, 0, 1e-300)},
			coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 20, RiseTol: 1e-9},
			`round 2: the objective rose from 0 \(round 1\) to 1e-300`},
		{"rise within the tolerance", halving{script: objectives(1, 0.5, 0.504)},
			coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 5, RiseTol: 0.01}, ""},
		{"rise allowed", halving{script: objectives(1, 0.5, 2, 3)},
			coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 5}, ""},
		// A gap is only a gap with HasGap; metrics may be NaN (see
		// TestAppMetrics).
		{"no gap", halving{script: from(0, schmp.Progress{Objective: 0.5, Gap: nan})},
			coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 5}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.opts.Out, tc.opts.Metrics = filepath.Join(dir, "model.txt"), filepath.Join(dir, "metrics.csv")
			res, err := run(t, tc.h, tc.opts)
			if tc.want == "" {
				if err != nil || res.Reason != "max-rounds" {
					t.Fatalf("result %+v, error %v; want a run to --max-rounds", res, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("stopped after %d rounds (%s) at objective %v; want an error matching %s", res.Rounds, res.Reason, res.Final.Objective, tc.want)
			}
			if !errors.Is(err, coordinator.ErrDiverged) || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Errorf("error %q: want one wrapping ErrDiverged matching %s", err, tc.want)
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
				t.Errorf("left behind %v (%v)", entries, err)
			}
		})
	}
}

// TestPipeline runs several scheduler parts and rounds in flight: every
// round is planned by its part in turn, fed back in order, and the pipeline
// fills up to the depth.
func TestPipeline(t *testing.T) {
	for _, tc := range []struct{ schedulers, depth int }{{1, 1}, {1, 4}, {3, 1}, {3, 2}, {2, 8}} {
		t.Run(fmt.Sprintf("S=%d,D=%d", tc.schedulers, tc.depth), func(t *testing.T) {
			res, err := run(t, halving{}, coordinator.Options{Workers: 2, Schedulers: tc.schedulers, Depth: tc.depth, MaxRounds: 40, ReportEvery: 3})
			if err != nil {
				t.Fatal(err)
			}
			// How full the pipeline gets over a network depends on when
			// plans and partials arrive (a busy machine answers rounds
			// before later plans arrive); that it fills to the depth when
			// plans come first is the core's rule, which
			// pipeline.TestRules and local's tests check deterministically.
			if res.Rounds != 40 || res.MaxInFlight < 1 || res.MaxInFlight > tc.depth {
				t.Errorf("%d rounds, at most %d in flight; want 40, between 1 and %d", res.Rounds, res.MaxInFlight, tc.depth)
			}
			if len(res.Timing.Workers) != 2 || len(res.Timing.Schedulers) != tc.schedulers || res.Timing.Msgs == 0 {
				t.Errorf("timing %+v", res.Timing)
			}
			// A report shows the state after its Round, D rounds before
			// the round it came with: its updates and time are that
			// round's (one update a round here).
			for i, smp := range res.Trace {
				if smp.Updates != int64(smp.Round) || (i > 0 && (smp.Time < res.Trace[i-1].Time || smp.Round < res.Trace[i-1].Round)) {
					t.Fatalf("report %d: round %d, %d updates, at %s (previous %+v)", i, smp.Round, smp.Updates, smp.Time, res.Trace[max(i-1, 0)])
				}
			}
		})
	}
}

// TestCollidingPlanRefused checks that the coordinator refuses a plan that
// would update a variable already in flight.
func TestCollidingPlanRefused(t *testing.T) {
	_, err := run(t, halving{vars: []int32{7}}, coordinator.Options{Workers: 1, Depth: 2, MaxRounds: 10, ReportEvery: 1})
	if err == nil || !regexp.MustCompile(`the plan of round (\d+) updates variable 7, which round \d+ in flight updates too`).MatchString(err.Error()) {
		t.Fatalf("error %v, want a refused plan", err)
	}
	// With strict rounds the same plans are fine.
	if _, err := run(t, halving{vars: []int32{7}}, coordinator.Options{Workers: 1, Depth: 1, MaxRounds: 10, ReportEvery: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestWorkerStopsAnswering checks that a worker that stops answering fails
// the round within the timeout, with an error naming its shard.
func TestWorkerStopsAnswering(t *testing.T) {
	start := time.Now()
	_, err := run(t, halving{hangShard: 1, hangRound: 3}, coordinator.Options{Workers: 2, ReportEvery: 1, Timeout: 300 * time.Millisecond})
	host, _ := os.Hostname()
	want := fmt.Sprintf("round 3: no answer from worker shard 1 (host %s, pid %d) within 300ms", host, os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, coordinator.ErrTimeout) {
		t.Fatalf("error %v, want a timeout: %s", err, want)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("took %s to notice", el)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		opts coordinator.Options
		want string
	}{
		{coordinator.Options{Workers: 0, ReportEvery: 1}, "Workers "},
		{coordinator.Options{Workers: 1, ReportEvery: 0}, "ReportEvery "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, Tol: -1}, "Tol "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, Tol: math.NaN()}, "Tol "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, TimeLimit: -time.Second}, "TimeLimit "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, Depth: -1}, "Depth "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, Depth: coordinator.MaxDepth + 1}, "Depth "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, Schedulers: -2}, "Schedulers "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, RiseTol: -1e-9}, "RiseTol "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, RiseTol: math.NaN()}, "RiseTol "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, RiseTol: math.Inf(1)}, "RiseTol "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, Target: math.NaN(), HasTarget: true}, "Target "},
		{coordinator.Options{Workers: 1, ReportEvery: 1, Target: math.Inf(-1), HasTarget: true}, "Target "},
	}
	for _, tc := range cases {
		// The error names the Go field, first.
		if err := tc.opts.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", tc.opts, err, tc.want)
		}
	}
	for _, o := range []coordinator.Options{
		{Workers: 1, ReportEvery: 1, RiseTol: 1e-9, Target: 0, HasTarget: true},
		{Workers: 1, ReportEvery: 1, Target: math.NaN()}, // no target
	} {
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", o, err)
		}
	}
}

// TestAppMetrics checks that an app's metrics follow the runtime's columns
// of the metrics CSV, a NaN an empty cell, and that the written column
// marks the last row, whose state the model is; the progress line leaves
// a NaN out.
func TestAppMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.csv")
	var progress strings.Builder
	if _, err := run(t, halving{metrics: true}, coordinator.Options{Workers: 2, MaxRounds: 4, ReportEvery: 1, Metrics: path,
		Progress: &progress, ProgressEvery: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	// The progress lines give x, not "none", which is never computed.
	if p := progress.String(); !strings.Contains(p, "  x ") || strings.Contains(p, "none") || strings.Contains(p, "NaN") {
		t.Errorf("progress lines:\n%s", p)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")
	if !strings.HasPrefix(rows[0], "time_s,round,objective,") || !strings.HasSuffix(rows[0], ",bytes,selected,rejected,deferred,written,x,none") || len(rows) != 6 {
		t.Fatalf("metrics:\n%s", data)
	}
	// The report after round r shows x = 2^-r (the halving), with an
	// empty cell for "none".
	for r, row := range rows[1:] {
		cells := strings.Split(row, ",")
		written := "0"
		if r == len(rows)-2 {
			written = "1"
		}
		if want := strconv.FormatFloat(math.Pow(2, -float64(r)), 'g', -1, 64); len(cells) != 20 || cells[17] != written || cells[18] != want || cells[19] != "" {
			t.Errorf("row %d: %q, want x = %s, an empty cell and written %s", r+1, row, want, written)
		}
	}
}

// TestLoadingProgress checks that while a worker reads its data the
// progress line says how many nodes are ready, instead of nothing, once a
// second however often the lines come after.
func TestLoadingProgress(t *testing.T) {
	var progress strings.Builder
	if _, err := run(t, halving{slowLoad: 1200 * time.Millisecond}, coordinator.Options{Workers: 2, MaxRounds: 3, ReportEvery: 1,
		Progress: &progress, ProgressEvery: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	if p := progress.String(); strings.Count(p, "loading  elapsed ") != 1 || !strings.Contains(p, "ready: workers 1/2, schedulers 1/1 (the nodes read their data)") {
		t.Errorf("progress while loading:\n%s", p)
	}
}
