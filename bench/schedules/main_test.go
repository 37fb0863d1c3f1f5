package main

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func variantNames(vs []variant) []string {
	var names []string
	for _, v := range vs {
		names = append(names, v.name())
	}
	return names
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"rows priority", "rows random", "rows shotgun", "rows priority-nocheck", "rows priority U=128", "rows shotgun U=128",
		"cols priority", "cols random", "cols cyclic",
		"cols W=1/4 priority", "cols W=1/4 random", "cols W=1/4 cyclic",
	}
	if got := variantNames(o.variants); !slices.Equal(got, want) {
		t.Errorf("default variants %q, want %q", got, want)
	}
	if !slices.Equal(o.levels, []float64{1e-3, 1e-6}) || len(o.shapes) != 3 || o.out != filepath.Join("bench", "schedules", "results") {
		t.Errorf("defaults: levels %v, %d shapes, out %q", o.levels, len(o.shapes), o.out)
	}

	o, err = parseFlags([]string{"--shapes", "c, a", "--levels", "1e-6,1e-2,1e-4", "--rows", "cyclic@16,priority",
		"--cols", "random", "--round-works", "1048576,0.125", "--quick"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"rows cyclic U=16", "rows priority", "cols W=2^20 random", "cols W=1/8 random"}
	if got := variantNames(o.variants); !slices.Equal(got, want) {
		t.Errorf("variants %q, want %q", got, want)
	}
	if !slices.Equal(o.levels, []float64{1e-2, 1e-4, 1e-6}) {
		t.Errorf("levels %v, want from the largest down", o.levels)
	}
	if len(o.shapes) != 2 || o.shapes[0].name != "c" || o.shapes[1].name != "a" || !strings.Contains(o.out, "strads-schedules-quick") {
		t.Errorf("shapes %v, out %q", o.shapes, o.out)
	}

	o, err = parseFlags([]string{"--cols", ""}, io.Discard)
	if err != nil || len(o.variants) != 6 || o.variants[5].name() != "rows shotgun U=128" {
		t.Errorf("--cols '': %v, %v", err, variantNames(o.variants))
	}
}

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--shapes", "d"}, `unknown shape "d"`},
		{[]string{"--shapes", ","}, "--shapes: none given"},
		{[]string{"--levels", "1e-3,2"}, `--levels: "2" is not a number in (0, 1)`},
		{[]string{"--levels", "x"}, `--levels: "x"`},
		{[]string{"--rows", "best"}, `--rows: unknown schedule "best"`},
		{[]string{"--rows", "random-nocheck"}, `--rows: unknown schedule "random-nocheck"`},
		{[]string{"--rows", "cyclic-nocheck@8"}, ""},
		{[]string{"--rows", "shotgun@0"}, "the block after @ must be an integer ≥ 1"},
		{[]string{"--rows", "shotgun@x"}, "the block after @ must be an integer ≥ 1"},
		{[]string{"--rows", "shotgun,shotgun@32"}, ""}, // different variants: accepted
		{[]string{"--rows", "shotgun@32,shotgun@32 "}, ""},
		{[]string{"--cols", "shotgun"}, `--cols: unknown schedule "shotgun"`},
		{[]string{"--round-works", "1.5"}, `--round-works: "1.5"`},
		{[]string{"--round-works", "-1"}, `--round-works: "-1"`},
		{[]string{"--round-works", ""}, "--round-works: none given"},
		{[]string{"--round-works", "0,0.0"}, "given twice"},
		{[]string{"--rows", "", "--cols", ""}, "no variant given"},
		{[]string{"--runs", "0"}, "--runs must be at least 1"},
		{[]string{"--time-limit", "0s"}, "--time-limit must be > 0"},
		{[]string{"--rho", "1"}, "--rho must be in (0, 1)"},
		{[]string{"--block", "8", "--candidates", "4"}, "--candidates ≥ --block"},
		{[]string{"--col-report-every", "0"}, "--col-report-every ≥ 1"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args, io.Discard)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: error %v, want one containing %q", tt.args, err, tt.want)
		}
	}
}

func TestWorkLabelAndRoundWork(t *testing.T) {
	for w, want := range map[float64]string{0.25: "1/4", 0.3: "0.3", 1 << 20: "2^20", 1000: "1000"} {
		if got := workLabel(w); got != want {
			t.Errorf("workLabel(%v) = %q, want %q", w, got, want)
		}
	}
	tests := []struct {
		work    float64
		nnz     int64
		workers int
		want    int64
	}{
		{0, 1000, 1, 0},
		{0.25, 1000, 1, 250},
		{0.25, 1000, 2, 125},
		{1e-9, 1000, 1, 1},
		{4096, 1000, 2, 4096},
	}
	for _, tt := range tests {
		if got := roundWork(tt.work, tt.nnz, tt.workers); got != tt.want {
			t.Errorf("roundWork(%v, %d, %d) = %d, want %d", tt.work, tt.nnz, tt.workers, got, tt.want)
		}
	}
}

func TestStradsArgs(t *testing.T) {
	o, err := parseFlags([]string{"--rows", "priority,shotgun,shotgun@128,priority-nocheck@16", "--round-works", "0,0.25", "--cols", "cyclic"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{o: o}
	c := &shapeCase{shape: shapes[0], data: "D", nnz: 4000, rowReport: 7}
	flagValue := func(args []string, name string) string {
		i := slices.Index(args, name)
		if i < 0 || i+1 >= len(args) {
			return "(absent)"
		}
		return args[i+1]
	}
	tests := []struct {
		v    variant
		want map[string]string
	}{
		{o.variants[0], map[string]string{"--layout": "rows", "--schedule": "priority", "--rho": "0.1", "--block": "32", "--candidates": "64", "--workers": "2", "--report-every": "7", "--round-work": "(absent)"}},
		{o.variants[1], map[string]string{"--schedule": "random", "--rho": "1", "--block": "32"}},
		{o.variants[2], map[string]string{"--schedule": "random", "--rho": "1", "--block": "128", "--candidates": "256"}},
		{o.variants[3], map[string]string{"--schedule": "priority", "--rho": "1", "--block": "16", "--candidates": "32"}},
		{o.variants[4], map[string]string{"--layout": "cols", "--schedule": "cyclic", "--workers": "1", "--round-work": "(absent)", "--rho": "(absent)", "--report-every": "1"}},
		{o.variants[5], map[string]string{"--layout": "cols", "--round-work": "1000"}},
	}
	for _, tt := range tests {
		args := e.stradsArgs(c, tt.v, 3, "0.5", "M")
		if args[0] != "lasso" || !slices.Contains(args, "--intercept=true") {
			t.Errorf("%s: %q", tt.v.name(), args)
		}
		tt.want["--seed"], tt.want["--target"], tt.want["--metrics"], tt.want["--tol"] = "3", "0.5", "M", "0"
		for name, want := range tt.want {
			if got := flagValue(args, name); got != want {
				t.Errorf("%s: %s %q, want %q (%q)", tt.v.name(), name, got, want, args)
			}
		}
	}
}

func TestMedian(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		x    []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{1, inf, 2}, 2},
		{[]float64{inf, 1, inf}, inf},
		{[]float64{1, inf}, inf},
		{[]float64{5}, 5},
	}
	for _, tt := range tests {
		if got := median(tt.x); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.x, got, tt.want)
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing is not NaN")
	}
	x := []float64{3, 1, 2}
	median(x)
	if !slices.Equal(x, []float64{3, 1, 2}) {
		t.Error("median sorted its argument")
	}
}

func TestReadMetricsAndResult(t *testing.T) {
	csv := "time_s,round,objective,nnz,updates,gap,plan_ms\n0.000000,0,2,0,0,1.5,0\n0.5,50,1.001,3,100,0.01,0.2\n1.25,100,1.0000005,3,200,1e-06,0.2\n"
	tr, err := readMetrics(strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	want := []sample{{0, 0, 2, 1.5}, {0.5, 50, 1.001, 0.01}, {1.25, 100, 1.0000005, 1e-6}}
	if !slices.Equal(tr, want) {
		t.Errorf("readMetrics = %v, want %v", tr, want)
	}
	for _, bad := range []string{"", "time_s,round,objective\n", "time_s,round,objective,gap\n1,2,x,4\n", "time_s,round,objective,gap\n1,2\n"} {
		if _, err := readMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("readMetrics(%q): no error", bad)
		}
	}

	out := "objective 11.0022128622  gap 0.00418  nnz 61  rounds 40951  updates 1310432  time 4.311s  (target)\n" +
		"round latency p50 0.053 ms  p99 0.554 ms; in flight at most 1 rounds, 32 variables\n" +
		"per round: plan 0.021 ms  dispatch 0.010 ms  push 0.020 ms (slowest worker)\n"
	var r runResult
	if err := parseResult(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.final != 11.0022128622 || r.rounds != 40951 || r.updates != 1310432 || r.elapsed != 4.311 || r.status != "target" || r.planMs != 0.021 || r.p50Ms != 0.053 {
		t.Errorf("parseResult = %+v", r)
	}
	if err := parseResult("objective 1  gap 0  nnz 1  rounds 2  updates 3  time 4s  (time-limit)\n", &r); err != nil || !math.IsNaN(r.planMs) || !math.IsNaN(r.p50Ms) || r.status != "time-limit" {
		t.Errorf("parseResult without the summary: %v, %+v", err, r)
	}
	if err := parseResult("round latency p50 0.053 ms\n", &r); err == nil {
		t.Error("parseResult without the line: no error")
	}
	msg := "strads lasso: coordinator: round 300: the objective is not finite (+Inf): the model diverged\n"
	if m := divergedLine.FindStringSubmatch(msg); m == nil || m[1] != "300" {
		t.Errorf("divergedLine on %q: %q", msg, m)
	}
	if m := divergedLine.FindStringSubmatch("round 3: worker 1 stopped answering"); m != nil {
		t.Errorf("divergedLine matched a failure that is not a divergence: %q", m)
	}
}

// testCase is a shape with F_sklearn = 1 and three variants' runs.
func testCase() (*shapeCase, *options) {
	o := &options{levels: []float64{1e-3, 1e-6}, variants: []variant{
		{layout: "rows", schedule: "priority"}, {layout: "rows", schedule: "shotgun"}, {layout: "rows", schedule: "shotgun", block: 128},
	}}
	trace := func(pts ...float64) []sample { // time, objective pairs
		var tr []sample
		for i := 0; i < len(pts); i += 2 {
			tr = append(tr, sample{time: pts[i], round: int64(10 * i), objective: pts[i+1], gap: pts[i+1] - 1 + 1e-3})
		}
		return tr
	}
	pr, sg, div := o.variants[0], o.variants[1], o.variants[2]
	c := &shapeCase{shape: shapes[0], fSklearn: 1, gapSklearn: 1e-9, fRef: 1, lambda: math.NaN(), lambdaMax: math.NaN(), runs: []*runResult{
		// priority: reaches 1e-3 at 1 s (+0.5 s setup), 1e-6 only in run 2.
		{v: pr, run: 1, wall: 10.5, setup: 0.5, status: "time-limit", rounds: 100, updates: 800, final: 1.00001, trace: trace(0, 2, 1, 1.0005, 2, 1.00001)},
		{v: pr, run: 2, wall: 3.6, setup: 0.6, status: "target", rounds: 100, updates: 800, final: 1 + 5e-7, trace: trace(0, 2, 2, 1.0009, 3, 1+5e-7)},
		{v: pr, run: 3, wall: 11, setup: 0.4, status: "time-limit", rounds: 100, updates: 800, final: 1.0001, trace: trace(0, 2, 1.5, 1.0001)},
		// shotgun: one run, reaches both; its last report is below F_sklearn.
		{v: sg, run: 1, wall: 2.5, setup: 0.5, status: "target", rounds: 200, updates: 6400, final: 1 - 1e-12, trace: trace(0, 2, 0.5, 1.0002, 2, 1-1e-12)},
		{v: div, run: 1, wall: 0.4, status: "diverged", note: "round 300", rounds: 300, final: math.NaN(), setup: math.NaN(), elapsed: math.NaN()},
	}}
	for _, r := range c.runs {
		r.planMs, r.p50Ms = math.NaN(), math.NaN()
		if r.status != "diverged" {
			r.elapsed = r.wall - r.setup
			r.planMs, r.p50Ms = 0.25, 0.5
		}
	}
	return c, o
}

func TestAnalyzeAndStats(t *testing.T) {
	c, o := testCase()
	analyze(c, o.levels)
	if c.fstar != 1-1e-12 || !strings.Contains(c.fstarBy, "rows shotgun, run 1") {
		t.Errorf("F* = %v from %q, want the shotgun report's", c.fstar, c.fstarBy)
	}
	if c.lower != 1-1e-9 {
		t.Errorf("lower bound %v, want scikit-learn's F − gap", c.lower)
	}
	inf := math.Inf(1)
	wantT := [][]float64{{1.5, inf}, {2.6, 3.6}, {1.9, inf}, {1, 2.5}, {inf, inf}}
	for i, r := range c.runs {
		for k := range o.levels {
			if math.Abs(r.levelT[k]-wantT[i][k]) > 1e-12 && r.levelT[k] != wantT[i][k] {
				t.Errorf("run %d of %s: time to level %d = %v, want %v", r.run, r.v.name(), k, r.levelT[k], wantT[i][k])
			}
		}
	}
	if r := c.runs[1]; r.levelRnd[0] != 20 || r.levelRnd[1] != 40 {
		t.Errorf("rounds to the levels %v, want [20 40]", r.levelRnd)
	}

	pr := variantStats(c, o.variants[0], 2)
	if pr.n != 3 || pr.reached[0] != 3 || pr.reached[1] != 1 || pr.t[0] != 1.9 || !math.IsInf(pr.t[1], 1) || pr.bound[1] != 10.5 || pr.rounds[0] != 20 ||
		pr.upr != 8 || pr.setup != 0.5 || pr.msRound != 100 || pr.planMs != 0.25 || !slices.Equal(pr.stops, []string{"time-limit ×2", "target ×1"}) {
		t.Errorf("priority's stats %+v", pr)
	}
	if got := pr.timeCell(1); got != "not reached (> 10.5 s)" {
		t.Errorf("priority's 1e-6 cell %q", got)
	}
	if got := pr.timeCell(0); got != "1.90" {
		t.Errorf("priority's 1e-3 cell %q", got)
	}
	sg := variantStats(c, o.variants[1], 2)
	dv := variantStats(c, o.variants[2], 2)
	if got := dv.timeCell(0); got != "diverged (round 300, 0.40 s)" {
		t.Errorf("diverged cell %q", got)
	}
	for _, tt := range []struct {
		other, pr stats
		level     int
		want      string
	}{
		{sg, pr, 0, "0.53"},
		{sg, pr, 1, "< 0.24"},
		{pr, sg, 1, "> 4.20"},
		{dv, pr, 0, "∞ (shotgun diverged)"},
		{dv, pr, 1, "n/a (shotgun diverged; priority did not reach it)"},
		{pr, dv, 0, "0 (priority diverged)"},
		{dv, dv, 0, "n/a (both diverged)"},
		{stats{t: []float64{inf}}, stats{t: []float64{inf}}, 0, "n/a (neither reached it)"},
	} {
		if got := speedup(tt.other, tt.pr, tt.level); got != tt.want {
			t.Errorf("speedup(%s, %s, %d) = %q, want %q", tt.other.v.name(), tt.pr.v.name(), tt.level, got, tt.want)
		}
	}
}

func TestCompared(t *testing.T) {
	v := func(layout, sched string, block int, work float64) variant {
		return variant{layout: layout, schedule: sched, block: block, work: work}
	}
	pr, prn := v("rows", "priority", 0, 0), v("rows", "priority-nocheck", 0, 0)
	if pr.policy() != "priority" || prn.policy() != "priority" || v("rows", "shotgun", 0, 0).policy() != "random" ||
		!pr.checked() || prn.checked() || v("rows", "shotgun", 0, 0).checked() || v("cols", "priority", 0, 0).checked() {
		t.Error("policy or checked")
	}
	tests := []struct {
		pr, v variant
		want  bool
	}{
		{pr, v("rows", "random", 0, 0), true},
		{pr, v("rows", "shotgun", 0, 0), true}, // STRADS's comparison
		{prn, v("rows", "shotgun", 0, 0), true},
		{prn, v("rows", "random", 0, 0), false},   // the check on one side only
		{pr, v("rows", "shotgun", 128, 0), false}, // another block
		{pr, prn, false},                          // both priority
		{v("rows", "random", 0, 0), pr, false},    // not priority first
		{v("cols", "priority", 0, 0.25), v("cols", "cyclic", 0, 0.25), true},
		{v("cols", "priority", 0, 0), v("cols", "cyclic", 0, 0.25), false},
		{v("cols", "priority", 0, 0), v("rows", "random", 0, 0), false},
	}
	for _, tt := range tests {
		if got := compared(tt.pr, tt.v); got != tt.want {
			t.Errorf("compared(%s, %s) = %v", tt.pr.name(), tt.v.name(), got)
		}
	}
}

func TestRepeat(t *testing.T) {
	if !repeat(3, 25*time.Second) || repeat(25, 25*time.Second) || repeat(31, 25*time.Second) {
		t.Error("repeat: want a repeat only below the bound")
	}
}

// TestOutputs writes the summary, the CSV and the plot of a synthetic case.
func TestOutputs(t *testing.T) {
	c, o := testCase()
	analyze(c, o.levels)
	out := t.TempDir()
	e := &env{o: o, provenance: "test", sklearn: "test"}
	if err := writeSummary(filepath.Join(out, "summary.md"), e, []*shapeCase{c}); err != nil {
		t.Fatal(err)
	}
	if err := writeRunsCSV(filepath.Join(out, "runs.csv"), o, []*shapeCase{c}); err != nil {
		t.Fatal(err)
	}
	if err := plotShape(filepath.Join(out, "shape-a.png"), c, o); err != nil {
		t.Fatal(err)
	}
	s, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| variant | runs | time to 1e-3 (s) | time to 1e-6 (s) | rounds to 1e-3 | rounds to 1e-6 |",
		"| rows priority | 3 | 1.90 | not reached (> 10.5 s) | 20 | — | 8.0 | 100 | 0.25 | 0.50 | time-limit ×2, target ×1 |",
		"| rows shotgun | 1 | 1.00 | 2.50 |",
		"| rows shotgun U=128 | 1 | diverged (round 300, 0.40 s) | diverged (round 300, 0.40 s) | — | — | — | — | — | — | diverged |",
		"- rows priority over rows shotgun: 0.53 at 1e-3, < 0.24 at 1e-6\n",
	} {
		if !strings.Contains(string(s), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(string(s), "over rows shotgun U=128") {
		t.Error("summary.md compares shotgun U=128 with priority at another block size")
	}
	b, err := os.ReadFile(filepath.Join(out, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 6 || !strings.HasSuffix(lines[0], ",time_to_1e-3_s,round_to_1e-3,time_to_1e-6_s,round_to_1e-6") ||
		!strings.HasPrefix(lines[2], "a,rows priority,rows,priority,0,0,2,target,3.600,3,0.6,100,800,0.25,0.5,1.0000005,0.999999999999,") || !strings.HasSuffix(lines[2], ",2.600,20,3.600,40") ||
		!strings.HasSuffix(lines[5], ",diverged,0.400,,,300,0,,,,0.999999999999,,,,") {
		t.Errorf("runs.csv:\n%s", b)
	}
}
