package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEndToEnd runs every experiment on a tiny corpus and checks the
// files it writes.
func TestEndToEnd(t *testing.T) {
	out := t.TempDir()
	err := mainErr([]string{"--docs", "200", "--vocab", "300", "--doc-len", "30", "--gen-topics", "5", "--topics", "5,20",
		"--throughput-iters", "4", "--compare-iters", "4", "--staleness-iters", "4", "--staleness-workers", "1,2", "--seeds", "1", "--out", out})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"summary.md", "runs.csv", "loglik-time.png", "loglik-iter.svg", "lda-compare-unscheduled-seed1.csv", "lda-staleness-P=2-seed1.csv"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	summary, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	for _, want := range []string{"## Throughput", "## Rotation vs unscheduled", "## Staleness"} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	runs, _ := os.ReadFile(filepath.Join(out, "runs.csv"))
	if n := strings.Count(string(runs), "\n"); n != 1+2+2+2 {
		t.Errorf("runs.csv has %d lines, want 7:\n%s", n, runs)
	}
}

func TestParseFlagsErrors(t *testing.T) {
	for _, args := range [][]string{{"--experiments", "speed"}, {"--topics", "0"}, {"--seeds", "0"}, {"--docs", "0"}, {"extra"}} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
