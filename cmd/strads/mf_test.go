package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// genMFData writes a small generated ratings set and returns the paths of
// its training and test files.
func genMFData(t *testing.T) (train, test string) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "ratings")
	if code, _, stderr := runCLI(t, "gen", "mf", "--users", "600", "--items", "200", "--rank", "3",
		"--ratings", "30000", "--noise", "0.1", "--seed", "2", "-o", prefix); code != 0 {
		t.Fatalf("gen mf: exit %d: %s", code, stderr)
	}
	return prefix + ".train.txt", prefix + ".test.txt"
}

func TestMFCommand(t *testing.T) {
	train, test := genMFData(t)
	for _, algo := range [][]string{
		{"--algo", "sgd", "--schedule", "rotation"},
		{"--algo", "sgd", "--schedule", "unscheduled"},
		{"--algo", "ccd"},
	} {
		t.Run(strings.Join(algo, " "), func(t *testing.T) {
			dir := t.TempDir()
			prefix, metrics, pred := filepath.Join(dir, "model"), filepath.Join(dir, "metrics.csv"), filepath.Join(dir, "pred.txt")
			args := append([]string{"mf", "--train", train, "--test", test, "--rank", "3", "--lambda", "0.01",
				"--iters", "8", "--workers", "2", "--tol", "0", "--validate", "0", "--out", prefix, "--metrics", metrics,
				"--predict", test, "--predict-out", pred, "--progress", "1ms"}, algo...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "test RMSE") || !strings.Contains(stderr, "iter 8/8  elapsed") || !strings.Contains(stderr, "  train_rmse ") {
				t.Errorf("no result line or progress: stdout %q, stderr %q", stdout, stderr)
			}
			// The runtime's metrics CSV, mf's figures as its app metrics.
			rows := readLines(t, metrics)
			header := strings.Split(rows[0], ",")
			col := slices.Index(header, "test_rmse")
			if len(rows) != 10 || header[0] != "time_s" || col < 0 || !strings.Contains(rows[0], ",iter,train_rmse,test_rmse,ratings,") {
				t.Fatalf("metrics: %d lines, header %q; want 10 (a header and 9 evaluations) with mf's columns", len(rows), rows[0])
			}
			last := strings.Split(rows[len(rows)-1], ",")
			if rmse, err := strconv.ParseFloat(last[col], 64); err != nil || rmse > 0.3 {
				t.Errorf("final test RMSE %q", last[col])
			}
			if bias := readLines(t, prefix+".bias.txt"); !strings.HasPrefix(bias[0], "mean ") || len(bias) < 100 {
				t.Errorf("%s.bias.txt: %d lines, first %q; want the mean, then the biases", prefix, len(bias), bias[0])
			}
			for _, f := range []string{prefix + ".W.txt", prefix + ".H.txt"} {
				lines := readLines(t, f)
				if len(lines) < 100 || len(strings.Fields(lines[0])) != 4 {
					t.Errorf("%s: %d lines, first %q; want lines \"id v1 v2 v3\"", f, len(lines), lines[0])
				}
			}
			if got, want := len(readLines(t, pred)), len(readLines(t, test)); got != want {
				t.Errorf("%d predictions for %d pairs", got, want)
			}
		})
	}
}

// TestMFDeterministic checks that the command writes the same factors for
// the same seed, bit for bit.
func TestMFDeterministic(t *testing.T) {
	train, _ := genMFData(t)
	var outs [][]byte
	for range 2 {
		prefix := filepath.Join(t.TempDir(), "model")
		if code, _, stderr := runCLI(t, "mf", "--train", train, "--rank", "3", "--iters", "3", "--workers", "1",
			"--seed", "9", "--progress", "0", "--out", prefix); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		w, err := os.ReadFile(prefix + ".W.txt")
		if err != nil {
			t.Fatal(err)
		}
		h, err := os.ReadFile(prefix + ".H.txt")
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, append(w, h...))
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("two runs with the same seed wrote different factors")
	}
}

func TestMFBadInput(t *testing.T) {
	good := "1 10 4\n2 10 3\n2 20 5\n"
	cases := []struct {
		name, train, test, pairs string
		bad                      string // which file the error names
		want                     string
	}{
		{"malformed line", "1 10 4\n2 10\n", "", "", "train", ":2: "},
		{"text rating", "1 10 4\n2 10 high\n", "", "", "train", ":2: "},
		{"NaN rating", "1 10 4\n2 10 NaN\n", "", "", "train", ":2: "},
		{"Inf rating", "1 10 +Inf\n", "", "", "train", ":1: "},
		{"empty train", "", "", "", "train", "empty"},
		{"empty test", good, "", "", "test", "empty"},
		{"bad test line", good, "1 10 4\n1 x 4\n", "", "test", ":2: "},
		{"bad pairs line", good, "", "1 10\n1 10 20 30 40\n", "pairs", ":2: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := map[string]string{}
			args := []string{"mf", "--rank", "2", "--workers", "2", "--progress", "0",
				"--out", filepath.Join(dir, "model"), "--metrics", filepath.Join(dir, "metrics.csv")}
			for _, f := range []struct{ name, text, flag string }{
				{"train", tc.train, "--train"}, {"test", tc.test, "--test"}, {"pairs", tc.pairs, "--predict"},
			} {
				if f.text == "" && f.name != tc.bad {
					continue
				}
				paths[f.name] = filepath.Join(dir, f.name+".txt")
				if err := os.WriteFile(paths[f.name], []byte(f.text), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, f.flag, paths[f.name])
			}
			if tc.pairs != "" {
				args = append(args, "--predict-out", filepath.Join(dir, "pred.txt"))
			}
			code, _, stderr := runCLI(t, args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, paths[tc.bad]) || !strings.Contains(stderr, tc.want) {
				t.Errorf("error %q does not name %s…%s", stderr, paths[tc.bad], tc.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
				t.Errorf("error has %d lines, want one: %q", n+1, stderr)
			}
			assertNoOutput(t, dir, "train.txt", "test.txt", "pairs.txt")
		})
	}
}

func TestMFBadFlags(t *testing.T) {
	train, _ := genMFData(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"rank zero", []string{"--rank", "0"}, "--rank"},
		{"negative rank", []string{"--rank", "-3"}, "--rank"},
		{"negative lambda", []string{"--lambda", "-1"}, "--lambda"},
		{"zero lr", []string{"--lr", "0"}, "--lr"},
		{"unknown algo", []string{"--algo", "newton"}, "--algo"},
		{"unknown schedule", []string{"--schedule", "random"}, "--schedule"},
		{"ccd unscheduled", []string{"--algo", "ccd", "--schedule", "unscheduled"}, "unscheduled"},
		{"depth 2", []string{"--depth", "2"}, "--depth"},
		{"two schedulers", []string{"--schedulers", "2"}, "--schedulers"},
		{"zero workers", []string{"--workers", "0"}, "--workers"},
		{"missing train", []string{"--train", ""}, "--train"},
		{"train not there", []string{"--train", filepath.Join(t.TempDir(), "nope.txt")}, "nope.txt"},
		{"predict alone", []string{"--predict", train}, "--predict-out"},
		{"out dir missing", []string{"--out", filepath.Join(t.TempDir(), "no", "model")}, "--out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"mf", "--train", train, "--progress", "0", "--metrics", filepath.Join(dir, "m.csv")}, tc.args...)
			code, _, stderr := runCLI(t, args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("error %q does not mention %s", stderr, tc.want)
			}
			assertNoOutput(t, dir)
		})
	}
}

// TestMFUnseen checks a test file with ids that training does not have:
// the job runs, and says how many test ratings it left out.
func TestMFUnseen(t *testing.T) {
	dir := t.TempDir()
	train := filepath.Join(dir, "train.txt")
	test := filepath.Join(dir, "test.txt")
	if err := os.WriteFile(train, []byte("1 10 4\n2 10 3\n2 20 5\n3 20 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(test, []byte("1 20 4\n9 10 3\n3 99 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "mf", "--train", train, "--test", test, "--rank", "1", "--iters", "2", "--workers", "2", "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "2 of 3 test ratings") || !strings.Contains(stdout, "test RMSE") {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
}

// TestMFSeparateProcesses runs the roles as separate processes and checks
// that they write the factors of the all-in-one command, bit for bit.
func TestMFSeparateProcesses(t *testing.T) {
	train, test := genMFData(t)
	dir := t.TempDir()
	common := []string{"--train", train, "--test", test, "--rank", "3", "--workers", "2", "--iters", "3",
		"--progress", "0", "--job", "mfproc"}
	allInOne := filepath.Join(dir, "all")
	if code, _, stderr := runCLI(t, append([]string{"mf", "--out", allInOne}, common...)...); code != 0 {
		t.Fatalf("all-in-one: exit %d: %s", code, stderr)
	}
	url := testhelper.ServerURL(t)
	distributed := filepath.Join(dir, "dist")
	roles := append([]string{"--app", "mf", "--nats", url}, common...)
	procs := []*process{
		startProcess(t, "worker 1", append([]string{"worker"}, roles...)...),
		startProcess(t, "worker 2", append([]string{"worker"}, roles...)...),
		startProcess(t, "coordinator", append([]string{"coordinator", "--out", distributed}, roles...)...),
		startProcess(t, "scheduler", append([]string{"scheduler"}, roles...)...),
	}
	waitAll(t, procs...)
	for _, suffix := range []string{".W.txt", ".H.txt"} {
		sameFiles(t, distributed+suffix, allInOne+suffix)
	}
}

// TestMFStops checks the other stops: --time-limit, and --tol on the
// relative change of the objective between evaluations.
func TestMFStops(t *testing.T) {
	train, test := genMFData(t)
	for _, tc := range []struct {
		args   []string
		reason string
	}{
		{[]string{"--iters", "0", "--tol", "0", "--time-limit", "300ms"}, "(time-limit)"},
		{[]string{"--iters", "0", "--tol", "1e-3"}, "(converged)"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			prefix := filepath.Join(t.TempDir(), "model")
			args := append([]string{"mf", "--train", train, "--test", test, "--rank", "3", "--lambda", "0.01", "--progress", "0", "--out", prefix}, tc.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 || !strings.Contains(stdout, tc.reason) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %s", code, stdout, stderr, tc.reason)
			}
			if len(readLines(t, prefix+".H.txt")) < 100 {
				t.Error("no item factors written")
			}
		})
	}
}

// TestMFStillFalling checks that a job whose validation RMSE was still
// falling at its last evaluation says so, and names --iters.
func TestMFStillFalling(t *testing.T) {
	train, test := genMFData(t)
	code, stdout, stderr := runCLI(t, "mf", "--train", train, "--test", test, "--rank", "3", "--iters", "3", "--workers", "1", "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "validation RMSE was still falling at the last evaluation: more --iters (now 3)") {
		t.Errorf("no word that the validation RMSE still falls:\n%s", stdout)
	}
}
