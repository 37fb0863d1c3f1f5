package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/lda"
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
	for _, args := range [][]string{{"--experiments", "speed"}, {"--topics", "0"}, {"--seeds", "0"}, {"--docs", "0"}, {"extra"},
		{"--experiments", "peers"}, {"--peers", "mallet"}, {"--peer-runs", "0"}} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestPeersStrads runs the peers experiment with strads' two systems only
// (the others need Python) on a small generated corpus split into training
// and test files, and checks its table and files.
func TestPeersStrads(t *testing.T) {
	dir := t.TempDir()
	var ws []*bufio.Writer
	var fs []*os.File
	for _, name := range []string{"train.docword.txt", "vocab.txt", "phi.csv", "test.docword.txt"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fs, ws = append(fs, f), append(ws, bufio.NewWriter(f))
	}
	if _, err := lda.Generate(ws[0], ws[1], ws[2], ws[3], lda.GenConfig{Docs: 200, Vocab: 150, Topics: 4, DocLen: 40, TestDocs: 40, Alpha: 0.1, Beta: 0.02, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		w.Flush()
		fs[i].Close()
	}
	out := t.TempDir()
	err := mainErr([]string{"--experiments", "peers", "--corpus", dir, "--peers", "strads,strads-learned", "--peer-topics", "4",
		"--peer-iters", "12", "--peer-test-every", "4", "--peer-runs", "1", "--out", out})
	if err != nil {
		t.Fatal(err)
	}
	summary, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	for _, want := range []string{"| 4 | strads |", "| 4 | strads-learned |"} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	curves, _ := os.ReadFile(filepath.Join(out, "peers-curves.csv"))
	if n := strings.Count(string(curves), "\n"); n != 1+2*4 { // iterations 0, 4, 8, 12 of two runs
		t.Errorf("peers-curves.csv has %d lines, want 9:\n%s", n, curves)
	}
}
