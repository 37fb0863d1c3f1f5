package nnls

import (
	"bufio"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
)

var testConfig = Config{Rows: 300, Cols: 20, Seed: 7, Block: 1}

// runJob runs a whole job on an embedded nats-server and returns its result
// and β read back from the model file.
func runJob(t *testing.T, cfg Config, workers int) (*coordinator.Result, []float64) {
	t.Helper()
	copts := coordinator.Options{Workers: workers, Tol: 1e-14, MaxRounds: 20000, ReportEvery: cfg.Cols}
	res, out, err := testhelper.RunJob(t, Program(cfg), copts, time.Minute)
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	return res, readModel(t, out, cfg.Cols)
}

// readModel reads a model CSV into a dense β.
func readModel(t *testing.T, path string, cols int) []float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	beta := make([]float64, cols)
	sc := bufio.NewScanner(f)
	if !sc.Scan() || sc.Text() != "index,value" {
		t.Fatalf("model header %q", sc.Text())
	}
	for sc.Scan() {
		idx, val, ok := strings.Cut(sc.Text(), ",")
		j, err1 := strconv.Atoi(idx)
		v, err2 := strconv.ParseFloat(val, 64)
		if !ok || err1 != nil || err2 != nil || j < 1 || j > cols || v <= 0 {
			t.Fatalf("model line %q", sc.Text())
		}
		beta[j-1] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return beta
}

// gradient returns g = Xᵀ(y − Xβ)/n, from the data regenerated row by row.
func gradient(cfg Config, beta []float64) []float64 {
	g := make([]float64, cfg.Cols)
	x := make([]float64, cfg.Cols)
	for i := range cfg.Rows {
		r := cfg.Row(i, x)
		for j, v := range x {
			r -= v * beta[j]
		}
		for j, v := range x {
			g[j] += v * r / float64(cfg.Rows)
		}
	}
	return g
}

// TestKKT solves the problem on 1 and 3 workers, and with blocks of 4
// coordinates, checks the optimality conditions of NNLS (β ≥ 0; g_j = 0
// where β_j > 0; g_j ≤ 0 where β_j = 0), and that 1 and 3 workers find the
// same β.
func TestKKT(t *testing.T) {
	var betas [][]float64
	for _, tc := range []struct{ workers, block int }{{1, 1}, {3, 1}, {3, 4}} {
		cfg := testConfig
		cfg.Block = tc.block
		res, beta := runJob(t, cfg, tc.workers)
		t.Logf("%+v: %s after %d rounds, objective %.12g, nnz %d", tc, res.Reason, res.Rounds, res.Final.Objective, res.Final.NNZ)
		if res.Reason != "converged" {
			t.Errorf("%+v: stopped by %s", tc, res.Reason)
		}
		active, worst := 0, 0.0
		for j, g := range gradient(cfg, beta) {
			switch {
			case beta[j] < 0:
				t.Errorf("%+v: β_%d = %g < 0", tc, j, beta[j])
			case beta[j] > 0 && math.Abs(g) > 1e-6:
				t.Errorf("%+v: β_%d = %g > 0 but g_%d = %g", tc, j, beta[j], j, g)
			case beta[j] == 0 && g > 1e-6:
				t.Errorf("%+v: β_%d = 0 but g_%d = %g > 0", tc, j, j, g)
			case beta[j] == 0:
				active++
			}
			if beta[j] > 0 || g > 0 {
				worst = max(worst, math.Abs(g))
			}
		}
		t.Logf("%+v: %d active constraints, largest KKT violation %.3g", tc, active, worst)
		if active == 0 {
			t.Errorf("%+v: no constraint is active; the test problem is too easy", tc)
		}
		if tc.block == 1 {
			betas = append(betas, beta)
		}
	}
	for j := range betas[0] {
		if d := math.Abs(betas[0][j] - betas[1][j]); d > 1e-9 {
			t.Errorf("β_%d: %.15g on 1 worker, %.15g on 3: differ by %.3g", j, betas[0][j], betas[1][j], d)
		}
	}
}

// TestSchedule checks that blocks cycle through each part's coordinates.
func TestSchedule(t *testing.T) {
	tests := []struct {
		part, parts int
		want        []int32
	}{
		{0, 1, []int32{0, 1, 2, 3, 4, 0, 1, 2}},
		{0, 2, []int32{0, 1, 0, 1, 0, 1, 0, 1}},
		{1, 2, []int32{2, 3, 4, 2, 3, 4, 2, 3}},
	}
	for _, tt := range tests {
		s, err := NewScheduler(Config{Rows: 1, Cols: 5, Block: 2}, tt.part, tt.parts)
		if err != nil {
			t.Fatal(err)
		}
		var got []int32
		for round := uint64(1); round <= 4; round++ {
			p, info, err := s.Schedule(round, nil)
			if err != nil || info.Selected != 2 || !slices.Equal(info.Vars, p.Vars) {
				t.Fatalf("part %d/%d round %d: %v, %+v", tt.part, tt.parts, round, err, info)
			}
			got = append(got, p.Vars...)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("part %d/%d: plans %v, want %v", tt.part, tt.parts, got, tt.want)
		}
	}
}
