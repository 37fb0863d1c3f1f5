package main

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/internal/testhelper"
)

// TestSplitFolds checks the folds of --cv: every row is held out by
// exactly one fold and trains every other, the folds differ in size by at
// most one row, and the deal depends on the seed only.
func TestSplitFolds(t *testing.T) {
	data := genData(t)
	rows := readLines(t, data)
	deal := func(seed uint64) map[string]int {
		dir := t.TempDir()
		sizes, err := splitFolds(data, dir, 4, seed)
		if err != nil {
			t.Fatal(err)
		}
		in := map[string]int{}
		for f := range 4 {
			test, train := readLines(t, foldFile(dir, "test", f)), readLines(t, foldFile(dir, "train", f))
			if len(test) != sizes[f] || len(test)+len(train) != len(rows) || len(test) < len(rows)/4 || len(test) > len(rows)/4+1 {
				t.Fatalf("fold %d: %d test and %d training rows of %d (size %d)", f, len(test), len(train), len(rows), sizes[f])
			}
			for _, r := range test {
				in[r] = f
			}
			for _, r := range train {
				if g, ok := in[r]; ok && g == f {
					t.Fatalf("fold %d trains on a row it holds out: %.40q", f, r)
				}
			}
		}
		return in
	}
	a, b, c := deal(1), deal(1), deal(2)
	if len(a) != len(rows) {
		t.Fatalf("%d distinct rows held out, the data have %d", len(a), len(rows))
	}
	if !mapsEqual(a, b) || mapsEqual(a, c) {
		t.Errorf("the same seed dealt differently (%v), or another seed alike (%v)", !mapsEqual(a, b), mapsEqual(a, c))
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCVChoice checks the averaging and the choices of crossValidate on
// errors given by hand: cv.glmnet's weighted mean and standard error,
// λ_min at the lowest mean, λ_1se the largest λ within a standard error.
func TestCVChoice(t *testing.T) {
	data := genData(t) // 120 rows: folds of 40
	errs := [][]float64{{5, 1.0, 1.00, 1.2}, {5, 1.05, 1.10, 1.0}, {5, 1.0, 0.75, 0.95}}
	calls := 0
	run := func(_ context.Context, train, test string, start, last float64) ([]float64, error) {
		if start != 2 || last != 0.02 {
			t.Errorf("fold at penalties %v to %v, want 2 to 0.02", start, last)
		}
		calls++
		return errs[calls-1], nil
	}
	r, err := crossValidate(context.Background(), data, 3, 1, 2, 0.02, 4, "mse", run, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	// Step 3: mean 0.95, deviations 0.05, 0.15, −0.2: se = √((0.0025 + 0.0225 + 0.04)/3/2).
	wantSE := math.Sqrt((0.0025 + 0.0225 + 0.04) / 3 / 2)
	if calls != 3 || math.Abs(r.mean[2]-0.95) > 1e-12 || math.Abs(r.se[2]-wantSE) > 1e-12 || r.se[0] != 0 {
		t.Errorf("%d folds run; mean %v, se %v; want step 3 at 0.95 ± %v", calls, r.mean, r.se, wantSE)
	}
	// The means are 5, 1.0167, 0.95 and 1.05: min is step 3, and 1se the
	// first step (the largest λ) within 0.95 + se = 1.054: step 2.
	if r.min != 2 || r.oneSE != 1 {
		t.Errorf("min at step %d, 1se at %d; want 3 and 2", r.min+1, r.oneSE+1)
	}
	if lam := lasso.PathLambdas(4, 2, 0.02); !slices.Equal(r.lambdas, lam) {
		t.Errorf("penalties %v, want %v", r.lambdas, lam)
	}
}

// TestCVCommand runs strads lasso and logreg with --cv on real jobs: the
// table marks its choices, PREFIX.cv.csv says the same, and PREFIX.coef.csv
// holds, column by column, the path's model files.
func TestCVCommand(t *testing.T) {
	for _, tc := range []struct{ app, data, measure string }{
		{"lasso", genData(t), "cv_mse"},
		{"logreg", genLogregData(t, 300), "cv_misclassification"},
	} {
		t.Run(tc.app, func(t *testing.T) {
			prefix := filepath.Join(t.TempDir(), "m")
			code, stdout, stderr := runCLI(t, tc.app, "--data", tc.data, "--lambda-ratio", "0.02", "--lambda-path", "8", "--cv", "3",
				"--out", prefix, "--progress", "0")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "cv: 3 folds") || !strings.Contains(stdout, "λ_min ") || !strings.Contains(stdout, "λ_1se ") {
				t.Errorf("output lacks the cross-validation:\n%s", stdout)
			}
			header, cv := testhelper.ReadCSV(t, prefix+".cv.csv")
			if strings.Join(header, ",") != "step,lambda,"+tc.measure+",cv_se,chosen" || len(cv) != 8 {
				t.Fatalf("cv.csv: %q %q", header, cv)
			}
			best, min := math.Inf(1), 0
			for i, r := range cv {
				if v, _ := strconv.ParseFloat(r[2], 64); v < best {
					best, min = v, i
				}
			}
			if !strings.Contains(cv[min][4], "min") {
				t.Errorf("the lowest error is step %d's, which cv.csv does not mark min: %q", min+1, cv)
			}
			_, coef := testhelper.ReadCSV(t, prefix+".coef.csv")
			for step := 1; step <= 8; step++ {
				m, err := linear.ReadFile(lasso.ModelFile(prefix, step, 8))
				if err != nil {
					t.Fatal(err)
				}
				want := map[string]float64{"0": m.Intercept}
				for i, j := range m.Index {
					want[strconv.Itoa(int(j)+1)] = m.Value[i]
				}
				for _, r := range coef {
					v, _ := strconv.ParseFloat(r[step], 64)
					if v != want[r[0]] {
						t.Errorf("coef.csv step %d, coefficient %s: %v; the model file: %v", step, r[0], v, want[r[0]])
					}
					delete(want, r[0])
				}
				for j, v := range want {
					if v != 0 {
						t.Errorf("step %d: coefficient %s = %v is not in coef.csv", step, j, v)
					}
				}
			}
		})
	}
}
