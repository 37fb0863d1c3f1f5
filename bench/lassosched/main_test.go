package main

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func names(o *options) (name, stem []string) {
	for _, v := range o.variants {
		name = append(name, v.name)
		stem = append(stem, v.stem)
	}
	return name, stem
}

func TestVariants(t *testing.T) {
	tests := []struct {
		args        []string
		names       []string
		stems       []string
		axis, fixed string
	}{
		{nil, []string{"priority", "random", "cyclic"}, []string{"priority", "random", "cyclic"}, "schedule", "depth 1, 2 workers, 1 scheduler"},
		{[]string{"--schedules", "random", "--workers", "3"}, []string{"random"}, []string{"random"}, "schedule", "random, depth 1, 3 workers, 1 scheduler"},
		{
			[]string{"--schedules", "priority", "--depths", "1, 2,4,8"},
			[]string{"d=1", "d=2", "d=4", "d=8"},
			[]string{"priority-d1", "priority-d2", "priority-d4", "priority-d8"},
			"variant", "priority, 2 workers, 1 scheduler",
		},
		{
			[]string{"--schedules", "priority,cyclic", "--depths", "4,1", "--workers", "1,2", "--schedulers", "2"},
			[]string{
				"priority d=4 w=1", "priority d=4 w=2", "priority d=1 w=1", "priority d=1 w=2",
				"cyclic d=4 w=1", "cyclic d=4 w=2", "cyclic d=1 w=1", "cyclic d=1 w=2",
			},
			[]string{
				"priority-d4-w1", "priority-d4-w2", "priority-d1-w1", "priority-d1-w2",
				"cyclic-d4-w1", "cyclic-d4-w2", "cyclic-d1-w1", "cyclic-d1-w2",
			},
			"variant", "2 schedulers",
		},
		{
			[]string{"--schedules", "random", "--depths", "2", "--workers", "2", "--schedulers", "1,2"},
			[]string{"s=1", "s=2"}, []string{"random-s1", "random-s2"}, "variant", "random, depth 2, 2 workers",
		},
	}
	for _, tt := range tests {
		o, err := parseFlags(tt.args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		name, stem := names(o)
		if !slices.Equal(name, tt.names) || !slices.Equal(stem, tt.stems) {
			t.Errorf("%q: names %q, stems %q; want %q, %q", tt.args, name, stem, tt.names, tt.stems)
		}
		if a := o.axisName(); a != tt.axis {
			t.Errorf("%q: axis %q, want %q", tt.args, a, tt.axis)
		}
		if f := o.fixedAxes(); f != tt.fixed {
			t.Errorf("%q: fixed axes %q, want %q", tt.args, f, tt.fixed)
		}
		for _, v := range o.variants {
			cfg := o.lassoConfig("x", v, 3)
			copts := o.coordinatorOptions(v, "")
			if cfg.Schedule.Workers != v.workers || cfg.Schedule.Policy != v.policy || cfg.Schedule.Seed != o.gen.Seed+3 ||
				copts.Workers != v.workers || copts.Depth != v.depth || copts.Schedulers != v.schedulers {
				t.Errorf("%q: %s: config %+v, options %+v", tt.args, v.name, cfg.Schedule, copts)
			}
		}
	}
}

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--depths", "0"}, "--depths: 0 is not in [1, 64]"},
		{[]string{"--depths", "65"}, "--depths: 65 is not in [1, 64]"},
		{[]string{"--depths", "1,2,1"}, "--depths: 1 given twice"},
		{[]string{"--workers", ""}, `--workers: "" is not an integer`},
		{[]string{"--workers", "2,x"}, `--workers: "x" is not an integer`},
		{[]string{"--workers", "0"}, "--workers: 0 is not in"},
		{[]string{"--schedulers", "1,,2"}, `--schedulers: "" is not an integer`},
		{[]string{"--schedules", "priority,priority"}, "--schedules: priority given twice"},
		{[]string{"--schedules", "best"}, "--schedules:"},
		{[]string{"--runs", "0"}, "--runs must be at least 1"},
		{[]string{"--time-limit", "0s"}, "--time-limit must be > 0"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one containing %q", tt.args, err, tt.want)
		}
	}
}

func TestRatios(t *testing.T) {
	inf := stats{ttt: math.Inf(1), maxElapsed: 10}
	tests := []struct {
		st, first stats
		want      string
	}{
		{stats{ttt: 3}, stats{ttt: 2}, "1.50"},
		{inf, stats{ttt: 2}, "> 5.00"},
		{stats{ttt: 2}, inf, "< 0.20"},
		{inf, inf, "n/a"},
		{stats{ttt: 1}, stats{ttt: 0}, "n/a"},
	}
	for _, tt := range tests {
		if got := timeRatio(tt.st, tt.first); got != tt.want {
			t.Errorf("timeRatio(%v, %v) = %q, want %q", tt.st.ttt, tt.first.ttt, got, tt.want)
		}
	}
	if got := ratio(3, 2); got != "1.50" {
		t.Errorf("ratio(3, 2) = %q", got)
	}
	if got := ratio(3, 0); got != "n/a" {
		t.Errorf("ratio(3, 0) = %q", got)
	}
}

// TestEndToEnd runs two depths on a tiny problem and checks the outputs.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole jobs")
	}
	out := t.TempDir()
	err := mainErr([]string{
		"--samples", "200", "--features", "400", "--corr-groups", "40", "--true-nnz", "20",
		"--schedules", "priority", "--depths", "1,2", "--runs", "1", "--time-limit", "300ms",
		"--block", "8", "--candidates", "16", "--out", out,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.md", "runs.csv", "objective.png", "objective.svg", "lasso-priority-d1-run1.csv", "lasso-priority-d2-run1.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "d=1,priority,1,2,1,1,") || !strings.HasPrefix(lines[2], "d=2,priority,2,2,1,1,") {
		t.Errorf("runs.csv:\n%s", b)
	}
	s, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Lasso: d=1 vs d=2\n", "| variant | runs reaching 0.001 |", "\n| d=1 | ", "\n| d=2 | ", "worker busy %"} {
		if !strings.Contains(string(s), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, s)
		}
	}
}
