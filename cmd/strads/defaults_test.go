package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/libsvm"
)

// shiftLabels writes a copy of the LIBSVM file data with every label
// moved by d: a regression target whose mean is far from zero.
func shiftLabels(t *testing.T, data string, d float64) string {
	t.Helper()
	var b strings.Builder
	err := libsvm.Read(data, func(_ int, row libsvm.Row) error {
		fmt.Fprintf(&b, "%.17g", row.Label+d)
		for k, j := range row.Index {
			fmt.Fprintf(&b, " %d:%.17g", j+1, row.Value[k])
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shifted.svm")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInterceptDefault checks that the Lasso and logistic regression fit
// an intercept unless told not to, as scikit-learn and glmnet do, and that
// the written intercept is optimal: the derivative of the loss in it,
// Σ(prediction − label)/n, vanishes (it is not penalized).
func TestInterceptDefault(t *testing.T) {
	lasso := shiftLabels(t, genData(t), 3)
	logreg := genLogregData(t, 400, "--bias", "1.5")
	tests := []struct {
		app, data string
		flags     []string
		intercept bool
	}{
		{"lasso", lasso, nil, true},
		{"lasso", lasso, []string{"--intercept=false"}, false},
		{"logreg", logreg, nil, true},
		{"logreg", logreg, []string{"--intercept=false"}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s%v", tt.app, tt.flags), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "model.csv")
			args := append([]string{tt.app, "--data", tt.data, "--lambda-ratio", "0.1", "--tol", "1e-8",
				"--progress", "0", "--out", out}, tt.flags...)
			if code, _, stderr := runCLI(t, args...); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			m, err := linear.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if m.HasIntercept != tt.intercept {
				t.Fatalf("model has an intercept: %v, want %v", m.HasIntercept, tt.intercept)
			}
			if !tt.intercept {
				if m.Intercept != 0 {
					t.Errorf("intercept %v without one", m.Intercept)
				}
				return
			}
			var sum, scale float64
			n := 0
			err = libsvm.Read(tt.data, func(_ int, row libsvm.Row) error {
				p, err := m.Predict(row.Index, row.Value)
				y := row.Label
				if tt.app == "logreg" && y < 0 {
					y = 0
				}
				sum += p - y
				scale += math.Abs(y)
				n++
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if g := sum / float64(n); math.Abs(g) > 1e-4*math.Max(1, scale/float64(n)) {
				t.Errorf("Σ(prediction − label)/n = %g at the written intercept %g, want 0", g, m.Intercept)
			}
		})
	}
}
