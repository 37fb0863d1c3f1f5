package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/linear"
)

// finalObjective returns the objective of a job's final line on stdout.
func finalObjective(t *testing.T, stdout string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^objective (\S+) `).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no objective line in %q", stdout)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestLambdaPath runs --lambda-path through the command, on the embedded
// NATS server, for the Lasso and logistic regression: with auto on tall
// data (samples > 10·features) and several workers, and with a test set. It checks the files (a model per λ,
// the table with K rows of decreasing λ and the test error, the metrics
// with a λ column), what the command prints, and that the last λ's
// objective is a direct solve's at that λ.
func TestLambdaPath(t *testing.T) {
	tall := filepath.Join(t.TempDir(), "tall.svm")
	if code, _, stderr := runCLI(t, "gen", "lasso", "--samples", "400", "--features", "30", "--density", "0.3", "--true-nnz", "8", "--seed", "5", "-o", tall); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	cases := []struct {
		name, app, data, test string
		testCol               string
		extra                 []string
	}{
		{"lasso/test", "lasso", genData(t), genData(t, "--seed", "4"), "test_mse", []string{"--intercept"}},
		{"lasso/n>10p", "lasso", tall, "", "", nil},
		{"logreg/test", "logreg", genLogregData(t, 300, "--labels", "01"), genLogregData(t, 100, "--labels", "01", "--seed", "4"), "test_accuracy", []string{"--intercept"}},
	}
	const k = 8
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			prefix := filepath.Join(dir, "path")
			args := append([]string{tc.app, "--data", tc.data, "--workers", "2", "--lambda-ratio", "0.05", "--tol", "1e-10", "--progress", "0"}, tc.extra...)
			if tc.test != "" {
				args = append(args, "--test", tc.test)
			}
			pathArgs := append(args, "--lambda-path", strconv.Itoa(k), "--out", prefix, "--metrics", filepath.Join(dir, "metrics.csv"))
			code, stdout, stderr := runCLI(t, pathArgs...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "(converged)") || !strings.Contains(stdout, fmt.Sprintf("path: %d λ from λ_max ", k)) {
				t.Errorf("output %q: want a converged run and the path's table", stdout)
			}
			keep := []string{"path.path.csv", "metrics.csv"}
			for s := 1; s <= k; s++ {
				keep = append(keep, fmt.Sprintf("path.lambda-%d.csv", s))
			}
			assertNoOutput(t, dir, keep...)
			rows := readLines(t, prefix+".path.csv")
			header := "step,lambda,lambda_ratio,objective,gap,nnz,rounds,time_s,stop"
			switch tc.app {
			case "lasso":
				if tc.test != "" {
					header += ",test_mse"
				}
			case "logreg":
				header += ",train_accuracy,test_accuracy"
			}
			if rows[0] != header || len(rows) != k+1 {
				t.Fatalf("table %q: want the header %q and %d rows", rows, header, k)
			}
			prev := 0.0
			for i, r := range rows[1:] {
				f := strings.Split(r, ",")
				lambda, err := strconv.ParseFloat(f[1], 64)
				if err != nil || f[0] != strconv.Itoa(i+1) || f[8] != "converged" || (i > 0 && !(lambda < prev)) {
					t.Errorf("row %q: want step %d, λ below %v, converged", r, i+1, prev)
				}
				prev = lambda
				if tc.testCol != "" {
					if v, err := strconv.ParseFloat(f[len(f)-1], 64); err != nil || !(v >= 0) {
						t.Errorf("row %q: want a test error last", r)
					}
				}
				if m, err := linear.ReadFile(fmt.Sprintf("%s.lambda-%d.csv", prefix, i+1)); err != nil || abs(m.Lambda-lambda) > 1e-12*lambda {
					t.Errorf("model of step %d: %v, λ %v, want %v", i+1, err, m.Lambda, lambda)
				}
			}
			if ratio, err := strconv.ParseFloat(strings.Split(rows[k], ",")[2], 64); err != nil || abs(ratio-0.05) > 1e-12 {
				t.Errorf("last λ/λ_max %v (%v), want 0.05", ratio, err)
			}
			if m := readLines(t, filepath.Join(dir, "metrics.csv")); !strings.HasSuffix(m[0], ",lambda") {
				t.Errorf("metrics header %q: want a λ column last", m[0])
			}
			pathF, err := strconv.ParseFloat(strings.Split(rows[k], ",")[3], 64)
			if err != nil {
				t.Fatal(err)
			}
			if got := finalObjective(t, stdout); !(abs(got-pathF) <= 1e-11*pathF) {
				t.Errorf("final line's objective %v, the table's last %v", got, pathF)
			}
			// A direct solve at the last λ.
			code, stdout, stderr = runCLI(t, append(args, "--layout", "cols")...)
			if code != 0 {
				t.Fatalf("direct: exit %d: %s", code, stderr)
			}
			if d := finalObjective(t, stdout); !(abs(pathF-d) <= 1e-9*d) {
				t.Errorf("the path's last objective %.15g, a direct solve's %.15g", pathF, d)
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestLambdaPathBadFlags checks the flag combinations a path refuses: exit
// status 2, one line naming the culprit, no output. A last λ above λ_max,
// known only once the job starts, fails it: exit status 1, no output.
func TestLambdaPathBadFlags(t *testing.T) {
	data := map[string]string{"lasso": genData(t), "logreg": genLogregData(t, 300)}
	cases := []struct {
		app  string
		args []string
		code int
		want string
	}{
		{"lasso", []string{"--lambda-path", "1"}, 2, "--lambda-path must be 0 (off) or at least 2"},
		{"logreg", []string{"--lambda-path", "-3"}, 2, "--lambda-path must be 0 (off) or at least 2"},
		{"lasso", []string{"--lambda-path", "5", "--layout", "rows"}, 2, "--lambda-path runs in the column layout only"},
		{"logreg", []string{"--lambda-path", "5", "--layout", "rows"}, 2, "--lambda-path runs in the column layout only"},
		{"lasso", []string{"--lambda-path", "5", "--depth", "2"}, 2, "--depth 2"},
		{"logreg", []string{"--lambda-path", "5", "--schedulers", "2"}, 2, "--schedulers 2"},
		{"lasso", []string{"--lambda-path", "5", "--tol", "0"}, 2, "--lambda-path needs --tol > 0"},
		{"logreg", []string{"--lambda-path", "5", "--tol", "0"}, 2, "--lambda-path needs --tol > 0"},
		{"lasso", []string{"--lambda-path", "5", "--lambda-ratio", "0"}, 2, "--lambda-path needs the path's last λ"},
		{"lasso", []string{"--lambda-path", "5", "--lambda-ratio", "1.5"}, 2, "--lambda-ratio must be below 1"},
		{"logreg", []string{"--lambda-path", "5", "--lambda-ratio", "1"}, 2, "--lambda-ratio must be below 1"},
		{"lasso", []string{"--lambda-path", "5", "--lambda-ratio", "0", "--lambda", "1e6"}, 1, "must be in (0, λ_max"},
		{"logreg", []string{"--lambda-path", "5", "--lambda-ratio", "0", "--lambda", "1e6"}, 1, "must be in (0, λ_max"},
		{"lasso", []string{"--test", "nope.svm"}, 2, "nope.svm"},
	}
	for _, tc := range cases {
		t.Run(tc.app+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{tc.app, "--data", data[tc.app], "--lambda-ratio", "0.1", "--workers", "1", "--progress", "0",
				"--out", filepath.Join(dir, "p"), "--metrics", filepath.Join(dir, "m.csv")}, tc.args...)
			code, _, stderr := runCLI(t, args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want %d and one line saying %q", code, stderr, tc.code, tc.want)
			}
			assertNoOutput(t, dir)
		})
	}
}
