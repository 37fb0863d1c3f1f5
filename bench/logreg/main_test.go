package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestLiblinearModel checks that a liblinear model is read as the weights
// of the +1 class whatever order its labels are in, and that the objective
// of the data is computed in our convention.
func TestLiblinearModel(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, model string
		want        []float64
	}{
		{"label 1 -1", "solver_type L1R_LR\nnr_class 2\nlabel 1 -1\nnr_feature 3\nbias -1\nw\n0.5 \n0 \n-2 \n", []float64{0.5, 0, -2}},
		{"label -1 1", "solver_type L1R_LR\nnr_class 2\nlabel -1 1\nnr_feature 3\nbias -1\nw\n0.5 \n0 \n-2 \n", []float64{-0.5, 0, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "model")
			if err := os.WriteFile(path, []byte(tc.model), 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := readLiblinearModel(path, 4)
			if err != nil {
				t.Fatal(err)
			}
			for j, v := range append(tc.want, 0) {
				if w[j] != v {
					t.Fatalf("w = %v, want %v and a trailing 0", w, tc.want)
				}
			}
		})
	}
	biased := filepath.Join(dir, "biased")
	os.WriteFile(biased, []byte("label 1 -1\nbias 1\nw\n1\n"), 0o644)
	if _, err := readLiblinearModel(biased, 1); err == nil {
		t.Error("a model with a bias was accepted")
	}

	// Rows (y, x): (1, [1 0]), (0, [0 2]); with w = (1, −0.5) the margins
	// are y·x·w = 1 and 1, so F = log(1 + e^{−1}) + λ·1.5.
	data := filepath.Join(dir, "data.svm")
	os.WriteFile(data, []byte("1 1:1\n0 2:2\n"), 0o644)
	d, err := load(data)
	if err != nil {
		t.Fatal(err)
	}
	f, nnz := d.objective([]float64{1, -0.5}, 0.1)
	if want := math.Log1p(math.Exp(-1)) + 0.15; math.Abs(f-want) > 1e-15 || nnz != 2 {
		t.Errorf("objective %v with %d non-zeros, want %v with 2", f, nnz, want)
	}
	// λ_max = ‖Xᵀ(y01 − ½)‖∞/n = max(|1·½|, |2·(−½)|)/2 = 0.5.
	if lm := d.lambdaMax(); lm != 0.5 {
		t.Errorf("λ_max %v, want 0.5", lm)
	}
	ll := filepath.Join(dir, "data.ll")
	if err := convert(data, ll); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(ll); string(b) != "+1 1:1\n-1 2:2\n" {
		t.Errorf("converted %q", b)
	}
}
