package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/internal/testhelper"
)

// genLogregData writes a small generated classification data set and
// returns its path.
func genLogregData(t *testing.T, samples int, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.svm")
	args := append([]string{"gen", "logreg", "--samples", strconv.Itoa(samples), "--features", "200", "--density", "0.05",
		"--corr-groups", "20", "--corr", "0.5", "--true-nnz", "20", "--seed", "3", "-o", path}, extra...)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	return path
}

func TestLogregCommand(t *testing.T) {
	data := genLogregData(t, 300, "--labels", "01", "--bias", "0.5")
	test := genLogregData(t, 100, "--labels", "01", "--bias", "0.5", "--seed", "4")
	for _, tc := range []struct{ layout, want string }{
		{"rows", "safeguard: 0 of"},
		{"cols", "column layout: "},
		{"auto", "column layout: "}, // 300 samples, 200 features
	} {
		t.Run(tc.layout, func(t *testing.T) {
			testLogregCommand(t, data, test, tc.layout, tc.want)
		})
	}
}

// testLogregCommand runs a logistic regression job with a test set in the
// given layout and checks its outputs; want is in what it prints.
func testLogregCommand(t *testing.T, data, test, layout, want string) {
	dir := t.TempDir()
	out := filepath.Join(dir, "model.csv")
	metrics := filepath.Join(dir, "metrics.csv")
	pred := filepath.Join(dir, "pred.csv")
	code, stdout, stderr := runCLI(t, "logreg", "--data", data, "--test", test, "--workers", "2", "--lambda-ratio", "0.1",
		"--intercept", "--tol", "1e-6", "--out", out, "--metrics", metrics, "--predict", pred, "--progress", "0", "--layout", layout)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"(converged)", "train accuracy", "test accuracy", want} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output %q: want %q", stdout, want)
		}
	}
	if m, err := linear.ReadFile(out); err != nil || m.App != linear.Logreg || !m.HasIntercept || m.NNZ() == 0 {
		t.Errorf("model %s (%v): want a logistic regression model with an intercept and weights", out, err)
	}
	rows := readLines(t, metrics)
	if !strings.HasPrefix(rows[0], "time_s,round,objective,nnz,updates,gap,") || !strings.HasSuffix(rows[0], ",train_accuracy,test_accuracy") || len(rows) < 3 {
		t.Errorf("metrics %q", rows)
	}
	for _, r := range rows[1:] {
		f := strings.Split(r, ",")
		train, err1 := strconv.ParseFloat(f[len(f)-2], 64)
		acc, err2 := strconv.ParseFloat(f[len(f)-1], 64)
		if err1 != nil || err2 != nil || train < 0 || train > 1 || acc < 0 || acc > 1 {
			t.Fatalf("metrics row %q: want accuracies in [0,1] last", r)
		}
	}
	p := readLines(t, pred)
	if p[0] != "label,probability" || len(p) != 101 {
		t.Fatalf("predictions: %d lines starting %q, want a header and 100 rows", len(p), p[0])
	}
	for _, l := range p[1:] {
		label, prob, _ := strings.Cut(l, ",")
		v, err := strconv.ParseFloat(prob, 64)
		if (label != "0" && label != "1") || err != nil || v <= 0 || v >= 1 {
			t.Fatalf("prediction %q", l)
		}
	}
	assertNoOutput(t, dir, "model.csv", "metrics.csv", "pred.csv")
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("strads-logreg-%d-*", os.Getpid()))); len(left) > 0 {
		t.Errorf("temporary metrics left behind: %v", left)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestLogregBadInput checks that bad training or test data stop the job
// before it starts: exit status 2, one line naming the file and line, and
// no output.
func TestLogregBadInput(t *testing.T) {
	good := "1 1:0.5\n0 2:1\n"
	cases := []struct {
		name, data, test, want string
	}{
		{"non-numeric value", "1 1:0.5\n0 2:abc\n", "", ":2:"},
		{"non-numeric label", "x 1:0.5\n", "", ":1:"},
		{"index zero", "1 1:1\n0 0:1\n", "", ":2:"},
		{"duplicate index", "0 1:1\n1 2:1 2:3\n", "", ":2:"},
		{"unsorted indices", "1 1:1\n0 1:2\n1 3:1 2:1\n", "", ":3:"},
		{"NaN", "1 1:1\n0 1:NaN\n", "", ":2:"},
		{"missing label", "1 1:1\n2:1 3:1\n", "", ":2:"},
		{"empty file", "", "", "no samples"},
		{"blank line", "1 1:1\n\n0 2:1\n", "", ":2:"},
		{"CRLF line", "1 1:1\r\n0 2:1\r\n", "", ":1:"},
		{"label 2", "1 1:1\n0 2:1\n2 1:1\n", "", ":3: label 2 is not a class"},
		{"label 0.5", "0.5 1:1\n1 2:1\n", "", ":1: label 0.5"},
		{"mixed conventions", "1 1:1\n0 2:1\n-1 1:2\n", "", ":3: labels mix"},
		{"single class", "1 1:1\n+1 2:1\n1 1:2\n", "", "all 3 samples are positive"},
		{"bad test label", good, "1 1:1\n3 2:1\n", ":2: label 3"},
		{"bad test syntax", good, "1 1:x\n", ":1:"},
	}
	// One worker loads the data unchecked (the worker finds bad features);
	// two read it first to choose the layout.
	for _, workers := range []string{"1", "2"} {
		for _, tc := range cases {
			t.Run(tc.name+"/workers="+workers, func(t *testing.T) {
				dir := t.TempDir()
				data := filepath.Join(dir, "bad.svm")
				if err := os.WriteFile(data, []byte(tc.data), 0o644); err != nil {
					t.Fatal(err)
				}
				args := []string{"logreg", "--data", data, "--lambda", "0.1", "--workers", workers, "--progress", "0",
					"--out", filepath.Join(dir, "model.csv"), "--metrics", filepath.Join(dir, "metrics.csv"),
					"--predict", filepath.Join(dir, "pred.csv")}
				named, keep := data, []string{"bad.svm"}
				if tc.test != "" {
					named = filepath.Join(dir, "test.svm")
					if err := os.WriteFile(named, []byte(tc.test), 0o644); err != nil {
						t.Fatal(err)
					}
					args = append(args, "--test", named)
					keep = append(keep, "test.svm")
				}
				code, _, stderr := runCLI(t, args...)
				if code != 2 {
					t.Errorf("exit status %d, want 2", code)
				}
				if !strings.Contains(stderr, named) || !strings.Contains(stderr, tc.want) {
					t.Errorf("error %q does not name %s%s", stderr, named, tc.want)
				}
				if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
					t.Errorf("error has %d lines, want one: %q", n+1, stderr)
				}
				assertNoOutput(t, dir, keep...)
			})
		}
	}
}

func TestLogregBadFlags(t *testing.T) {
	data := genLogregData(t, 100)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no penalty", nil, "--lambda"},
		{"two penalties", []string{"--lambda", "0.1", "--C", "1"}, "only one"},
		{"negative C", []string{"--C", "-1"}, "--C"},
		{"negative ratio", []string{"--lambda-ratio", "-0.5"}, "--lambda-ratio"},
		{"unknown schedule", []string{"--C", "1", "--schedule", "fastest"}, "--schedule"},
		{"predict dir missing", []string{"--C", "1", "--predict", filepath.Join(t.TempDir(), "no", "p.csv")}, "--predict"},
		{"zero workers", []string{"--C", "1", "--workers", "0"}, "--workers"},
		{"unknown layout", []string{"--C", "1", "--layout", "diagonal"}, "--layout"},
		{"negative round work", []string{"--C", "1", "--round-work", "-1"}, "--round-work"},
		{"cols with depth", []string{"--C", "1", "--layout", "cols", "--depth", "2"}, "--depth"},
		{"cols with schedulers", []string{"--C", "1", "--layout", "cols", "--schedulers", "2"}, "--schedulers"},
		{"shotgun in the column layout", []string{"--C", "1", "--schedule", "shotgun"}, "--schedule shotgun is a baseline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"logreg", "--data", data, "--progress", "0"}, tc.args...)
			code, _, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("exit %d, error %q: want 2 and one line naming %s", code, stderr, tc.want)
			}
		})
	}
	gen := []string{"gen", "logreg", "--labels", "yes", "-o", filepath.Join(t.TempDir(), "x.svm")}
	if code, _, stderr := runCLI(t, gen...); code != 2 || !strings.Contains(stderr, "--labels") {
		t.Errorf("gen --labels yes: exit %d, %q", code, stderr)
	}
	if code, stdout, _ := runCLI(t, "logreg", "--help"); code != 0 || !strings.Contains(stdout, "-C float") || !strings.Contains(stdout, "-predict file") {
		t.Errorf("--help: exit %d, output %q", code, stdout)
	}
}

// TestLogregSeparateProcesses runs a logistic regression job as four OS
// processes, in each layout, and checks that they find the same model, bit
// for bit, and the same metrics columns as the all-in-one command.
func TestLogregSeparateProcesses(t *testing.T) {
	data := genLogregData(t, 200)
	for _, tc := range []struct {
		layout, rounds string
	}{
		{"rows", "300"},
		{"cols", "20"},
	} {
		t.Run(tc.layout, func(t *testing.T) {
			testLogregSeparateProcesses(t, data, "--layout", tc.layout, "--max-rounds", tc.rounds, "--job", "logreg-proc-"+tc.layout)
		})
	}
}

// testLogregSeparateProcesses runs a job on data with the extra flags as
// one process and as four, and compares their outputs.
func testLogregSeparateProcesses(t *testing.T, data string, extra ...string) {
	dir := t.TempDir()
	common := append([]string{"--data", data, "--workers", "2", "--C", "2", "--intercept", "--seed", "7",
		"--tol", "0", "--progress", "0"}, extra...)
	allInOne := filepath.Join(dir, "all-in-one.csv")
	if code, _, stderr := runCLI(t, append([]string{"logreg", "--out", allInOne}, common...)...); code != 0 {
		t.Fatalf("all-in-one: exit %d: %s", code, stderr)
	}
	url := testhelper.ServerURL(t)
	distributed := filepath.Join(dir, "distributed.csv")
	metrics := filepath.Join(dir, "metrics.csv")
	roles := append([]string{"--app", "logreg", "--nats", url}, common...)
	w1 := startProcess(t, "worker 1", append([]string{"worker"}, roles...)...)
	w2 := startProcess(t, "worker 2", append([]string{"worker"}, roles...)...)
	coord := startProcess(t, "coordinator", append([]string{"coordinator", "--out", distributed, "--metrics", metrics}, roles...)...)
	sched := startProcess(t, "scheduler", append([]string{"scheduler"}, roles...)...)
	waitAll(t, coord, sched, w1, w2)
	want := sameFiles(t, distributed, allInOne)
	if strings.Count(string(want), "\n") < 3 {
		t.Errorf("model has no weights: %q", want)
	}
	if rows := readLines(t, metrics); !strings.HasSuffix(rows[0], ",train_accuracy,test_accuracy") || len(rows) < 3 {
		t.Errorf("coordinator's metrics %q", rows)
	}
}
