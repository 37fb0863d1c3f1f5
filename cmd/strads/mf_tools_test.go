package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/mf"
)

// TestMFPredictRecommend checks strads mf predict and recommend against
// the job's own predictions (--predict during training): the saved model
// predicts the same bytes, and recommend ranks the user's unrated items
// by them.
func TestMFPredictRecommend(t *testing.T) {
	train, test := genMFData(t)
	dir := t.TempDir()
	prefix, inJob, saved := filepath.Join(dir, "model"), filepath.Join(dir, "job.txt"), filepath.Join(dir, "saved.txt")
	if code, _, stderr := runCLI(t, "mf", "--train", train, "--rank", "3", "--iters", "4", "--out", prefix,
		"--predict", test, "--predict-out", inJob); code != 0 {
		t.Fatalf("mf: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr := runCLI(t, "mf", "predict", "--model", prefix, "--pairs", test, "--out", saved); code != 0 || !strings.Contains(stdout, "wrote "+saved) {
		t.Fatalf("mf predict: exit %d: %s %s", code, stdout, stderr)
	}
	want, got := readLines(t, inJob), readLines(t, saved)
	if len(want) == 0 || strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Fatalf("mf predict wrote %d lines unlike the job's %d", len(got), len(want))
	}
	// Recommend for the user of the test file's first line.
	user := strings.Fields(want[0])[0]
	code, stdout, stderr := runCLI(t, "mf", "recommend", "--model", prefix, "--user", user, "--top", "5", "--train", train)
	if code != 0 {
		t.Fatalf("mf recommend: exit %d: %s", code, stderr)
	}
	recs := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(recs) != 5 {
		t.Fatalf("%d recommendations: %q", len(recs), stdout)
	}
	rated := map[string]bool{}
	for _, l := range readLines(t, train) {
		if f := strings.Fields(l); f[0] == user {
			rated[f[1]] = true
		}
	}
	for k, r := range recs {
		f := strings.Fields(r)
		if rated[f[0]] {
			t.Errorf("recommends item %s, which user %s rated", f[0], user)
		}
		prev, _ := strconv.ParseFloat(strings.Fields(recs[max(k-1, 0)])[1], 64)
		if score, err := strconv.ParseFloat(f[1], 64); err != nil || score > prev {
			t.Errorf("not best first: %q", recs)
		}
	}
}

// TestMFToolsBadInput checks that bad input exits 2 with one line naming
// the file and line.
func TestMFToolsBadInput(t *testing.T) {
	train, test := genMFData(t)
	dir := t.TempDir()
	prefix := filepath.Join(dir, "model")
	if code, _, stderr := runCLI(t, "mf", "--train", train, "--rank", "2", "--iters", "1", "--out", prefix); code != 0 {
		t.Fatalf("mf: exit %d: %s", code, stderr)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("1 2\n3 x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken")
	for _, ext := range []string{".W.txt", ".bias.txt"} {
		b, err := os.ReadFile(prefix + ext)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(broken+ext, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(broken+".H.txt", []byte("1 0.5 0.5\n2 0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"pairs", []string{"mf", "predict", "--model", prefix, "--pairs", bad}, regexp.QuoteMeta(bad) + `:2: `},
		{"model", []string{"mf", "predict", "--model", broken, "--pairs", test}, regexp.QuoteMeta(broken) + `\.H\.txt:2: 1 factor values, want 2`},
		{"missing model", []string{"mf", "recommend", "--model", filepath.Join(dir, "none"), "--user", "1"}, `none\.W\.txt: no such file`},
		{"unknown user", []string{"mf", "recommend", "--model", prefix, "--user", "-12345"}, `--user -12345 is not in`},
		{"no user", []string{"mf", "recommend", "--model", prefix}, `--user U is required`},
		{"top", []string{"mf", "recommend", "--model", prefix, "--user", "1", "--top", "0"}, `--top must be at least 1`},
		{"auto in a role", []string{"worker", "--app", "mf", "--nats", "nats://127.0.0.1:1", "--train", train, "--lambda", "auto"}, `--lambda auto and --rank auto run their fits as whole jobs in one process`},
		{"rank auto in a role", []string{"worker", "--app", "mf", "--nats", "nats://127.0.0.1:1", "--train", train, "--rank", "auto"}, `run their fits as whole jobs in one process`},
		{"bad rank", []string{"mf", "--train", train, "--rank", "ten"}, `want a whole number or auto`},
		{"lambda", []string{"mf", "--train", train, "--lambda", "big"}, `want a number or auto`},
		{"validate", []string{"mf", "--train", train, "--validate", "1"}, `--validate must be a fraction in \[0, 1\)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != 2 || !regexp.MustCompile(tc.want).MatchString(stderr) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("exit %d, stderr %q; want 2 and one line matching %q", code, stderr, tc.want)
			}
		})
	}
}

// TestMFValidateAndAuto checks the command's reports of --validate and
// --lambda auto: the validation line, the grid with a validation RMSE per
// λ, the choice, and the bias-only baseline.
func TestMFValidateAndAuto(t *testing.T) {
	train, test := genMFData(t)
	code, stdout, stderr := runCLI(t, "mf", "--train", train, "--test", test, "--rank", "3", "--validate", "0.1", "--iters", "30")
	if code != 0 || !regexp.MustCompile(`validation RMSE 0\.\d+ at iteration \d+`).MatchString(stdout) ||
		!strings.Contains(stdout, "bias-only μ + b_u + c_i (λ_b 5): validation RMSE") || !strings.Contains(stderr, "val_rmse") {
		t.Fatalf("--validate: exit %d: %s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "mf", "--train", train, "--test", test, "--rank", "3", "--lambda", "auto", "--iters", "10")
	if code != 0 {
		t.Fatalf("--lambda auto: exit %d: %s", code, stderr)
	}
	if n := len(regexp.MustCompile(`(?m)^  λ \S+ +rank 3 +validation RMSE \d\.\d+`).FindAllString(stdout, -1)); n != 5 {
		t.Errorf("%d grid lines, want 5: %s", n, stdout)
	}
	if !regexp.MustCompile(`chose λ \S+, rank 3; refitting on all the training ratings for \d+ iterations`).MatchString(stdout) ||
		!strings.Contains(stdout, "bias-only μ + b_u + c_i (λ_b 5): test RMSE") {
		t.Errorf("no choice or baseline: %s", stdout)
	}
}

// TestMFRankAuto checks --rank auto: a fit per rank of the grid, a
// choice, and the refit's factors of the rank chosen.
func TestMFRankAuto(t *testing.T) {
	train, test := genMFData(t)
	prefix := filepath.Join(t.TempDir(), "m")
	code, stdout, stderr := runCLI(t, "mf", "--train", train, "--test", test, "--rank", "auto", "--iters", "10", "--out", prefix, "--progress", "0")
	if code != 0 {
		t.Fatalf("--rank auto: exit %d: %s", code, stderr)
	}
	if n := len(regexp.MustCompile(`(?m)^  λ 0\.01 +rank (5|10|20|40) +validation RMSE \d\.\d+`).FindAllString(stdout, -1)); n != 4 {
		t.Errorf("%d grid lines, want 4: %s", n, stdout)
	}
	m := regexp.MustCompile(`--rank auto: chose λ 0\.01, rank (\d+);`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no choice: %s", stdout)
	}
	if w := readLines(t, prefix+".W.txt"); strconv.Itoa(len(strings.Fields(w[0]))-1) != m[1] {
		t.Errorf("chose rank %s, the written factors are %q", m[1], w[0])
	}
}

// TestMFWarnsBelowBiasOnly checks that a run whose model does worse than
// the bias-only baseline says so on stderr: a rank-20 fit with almost no
// regularization of noisy ratings (noise 3) and no validation (which would
// keep iteration 0, the bias-only model) overfits; the same fit of ratings
// with little noise (0.1) does not, and says nothing.
func TestMFWarnsBelowBiasOnly(t *testing.T) {
	noisy := filepath.Join(t.TempDir(), "noisy")
	if code, _, stderr := runCLI(t, "gen", "mf", "--users", "600", "--items", "200", "--rank", "3", "--ratings", "30000",
		"--noise", "3", "--mean", "3", "--user-bias", "1", "--item-bias", "1", "--seed", "2", "-o", noisy); code != 0 {
		t.Fatalf("gen mf: exit %d: %s", code, stderr)
	}
	clean, cleanTest := genMFData(t)
	for _, tc := range []struct {
		name, train, test string
		args              []string
		warn, kept        bool
	}{
		{"noisy", noisy + ".train.txt", noisy + ".test.txt", []string{"--validate", "0"}, true, false},
		{"clean", clean, cleanTest, []string{"--validate", "0"}, false, false},
		// With the default validation the noisy fit keeps iteration 0,
		// the bias-only model, and says so instead of warning.
		{"noisy/validated", noisy + ".train.txt", noisy + ".test.txt", []string{"--validate", "0.05"}, false, true},
		{"clean/bsp", clean, cleanTest, []string{"--mode", "bsp", "--workers", "2"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"mf", "--train", tc.train, "--test", tc.test, "--rank", "20",
				"--lambda", "0.0001", "--iters", "30", "--tol", "0", "--progress", "0"}, tc.args...)...)
			warned := strings.Contains(stderr, "mf: warning: the model's test RMSE")
			kept := strings.Contains(stdout, "the job kept iteration 0, the bias-only model")
			if code != 0 || warned != tc.warn || kept != tc.kept || !strings.Contains(stdout, "bias-only μ + b_u + c_i (λ_b 5): test RMSE") {
				t.Errorf("exit %d, warned %v (want %v), kept iteration 0 %v (want %v): %s\n%s", code, warned, tc.warn, kept, tc.kept, stdout, stderr)
			}
			// The baseline printed is the job's iteration 0, two sweeps of
			// the bias-only fit: within 0.1% of the converged fit's RMSE.
			var printed float64
			for _, line := range strings.Split(stdout, "\n") {
				if rest, ok := strings.CutPrefix(line, "bias-only μ + b_u + c_i (λ_b 5): test RMSE "); ok {
					fmt.Sscanf(rest, "%g;", &printed)
				}
			}
			b, err := mf.FitBiasOnly(mf.Config{Train: tc.train, BiasLambda: mf.DefaultBiasLambda}, 20)
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := b.RMSE(tc.test, nil)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(printed-want) > 1e-3*want {
				t.Errorf("printed the bias-only baseline's test RMSE %v, the fit's is %v", printed, want)
			}
		})
	}
}
