package lasso

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// runColumnsCoord runs a whole Lasso job in the column layout, as
// runColumns does, and returns its coordinator too.
func runColumnsCoord(t *testing.T, cfg Config, workers int, copts coordinator.Options) (*coordinator.Result, *ColCoordinator, string) {
	t.Helper()
	return runColumnsCoordProg(t, ColumnProgram(cfg, workers), cfg, workers, copts)
}

// runColumnsCoordProg is runColumnsCoord for a program whose parts a test
// replaced.
func runColumnsCoordProg(t *testing.T, prog schmp.Program[ColPlan, ColPartial, ColUpdate, ColSummary], cfg Config, workers int, copts coordinator.Options) (*coordinator.Result, *ColCoordinator, string) {
	t.Helper()
	var coord *ColCoordinator
	prog.NewCoordinator = func(context.Context) (schmp.Coordinator[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
		coord = NewColCoordinator(cfg)
		return coord, nil
	}
	res, out, err := runColumnsProg(t, prog, workers, copts)
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	return res, coord, out
}

// column returns the float values of the named column of rows.
func column(t *testing.T, header []string, rows [][]string, name string) []float64 {
	t.Helper()
	k := -1
	for i, h := range header {
		if h == name {
			k = i
		}
	}
	if k < 0 {
		t.Fatalf("no column %q in %q", name, header)
	}
	vs := make([]float64, len(rows))
	for i, r := range rows {
		v, err := strconv.ParseFloat(r[k], 64)
		if err != nil {
			t.Fatalf("row %d, %s: %v", i+1, name, err)
		}
		vs[i] = v
	}
	return vs
}

// testMSE is the mean squared error of b0 + x·β on the test problem,
// computed densely.
func (pr *problem) testMSE(beta []float64, b0 float64) float64 {
	var sum float64
	for i, row := range pr.x {
		r := pr.y[i] - b0 - dot(row, beta)
		sum += r * r
	}
	return sum / float64(pr.n())
}

// TestPath solves regularization paths in the column layout on 1, 2 and 3
// workers and checks every model of the path against the optimality
// conditions at its own λ, the table against the model files evaluated
// independently, and the last model against a direct solve at the last λ,
// both by the sequential solver and by a job of that λ alone.
func TestPath(t *testing.T) {
	cases := []struct {
		name      string
		n, p      int
		intercept bool
		workers   int
		work      int
		test      bool
	}{
		{"p>n", 40, 120, false, 1, 0, false},
		{"p>n/intercept/test", 40, 120, true, 2, 300, true},
		{"n>p/intercept", 150, 30, true, 3, 400, false},
	}
	const k, ratio = 7, 0.02
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/workers=%d", tc.name, tc.workers), func(t *testing.T) {
			pr := newProblem(t, tc.n, tc.p, 42)
			lambdaMax := pr.lambdaMax(tc.intercept)
			last := ratio * lambdaMax
			cfg := Config{Data: pr.path, LambdaRatio: ratio, Intercept: tc.intercept, Schedule: colSchedule(scheduler.Priority),
				Layout: LayoutColumns, RoundWork: tc.work, InnerTol: 1e-14, Path: k}
			var test *problem
			if tc.test {
				test = newProblem(t, 30, tc.p, 43)
				cfg.Test = test.path
			}
			copts := coordinator.Options{Tol: 1e-12, MaxRounds: 50000}
			res, coord, out := runColumnsCoord(t, cfg, tc.workers, copts)
			if res.Reason != "converged" {
				t.Fatalf("stopped by %s after %d rounds, want converged", res.Reason, res.Rounds)
			}
			path := coord.Path()
			prefix := filepath.Join(t.TempDir(), "path")
			if err := path.WriteFiles(prefix); err != nil {
				t.Fatal(err)
			}
			header, rows := testhelper.ReadCSV(t, PathCSV(prefix))
			want := "step,lambda,lambda_ratio,objective,gap,nnz,rounds,time_s,stop"
			if tc.test {
				want += ",test_mse"
			}
			if got := strings.Join(header, ","); got != want {
				t.Fatalf("header %q, want %q", got, want)
			}
			if len(rows) != k {
				t.Fatalf("%d rows, want %d", len(rows), k)
			}
			lambdas := column(t, header, rows, "lambda")
			objectives := column(t, header, rows, "objective")
			nnzs := column(t, header, rows, "nnz")
			rounds := column(t, header, rows, "rounds")
			if rel := math.Abs(lambdas[0]-lambdaMax) / lambdaMax; rel > 1e-12 {
				t.Errorf("first λ %.15g, want λ_max %.15g", lambdas[0], lambdaMax)
			}
			if rel := math.Abs(lambdas[k-1]-last) / last; rel > 1e-12 {
				t.Errorf("last λ %.15g, want %v·λ_max = %.15g", lambdas[k-1], ratio, last)
			}
			var total float64
			for i, row := range rows {
				if row[0] != strconv.Itoa(i+1) || row[8] != "converged" {
					t.Errorf("row %d: step %s, stop %s; want %d, converged", i+1, row[0], row[8], i+1)
				}
				if i > 0 && !(lambdas[i] < lambdas[i-1]) {
					t.Errorf("λ does not decrease from row %d to %d: %v, %v", i, i+1, lambdas[i-1], lambdas[i])
				}
				if i > 0 {
					if r := lambdas[i] / lambdas[i-1]; math.Abs(r-math.Pow(ratio, 1.0/(k-1))) > 1e-12 {
						t.Errorf("row %d: λ ratio %.15g to the previous, want %.15g", i+1, r, math.Pow(ratio, 1.0/(k-1)))
					}
				}
				total += rounds[i]
				beta, b0 := readModel(t, ModelFile(prefix, i+1, k), pr.p())
				pr.checkKKT(t, beta, lambdas[i], tc.intercept, 1e-6)
				f := pr.objective(beta, lambdas[i], tc.intercept)
				if rel := math.Abs(f-objectives[i]) / f; rel > 1e-10 {
					t.Errorf("row %d: objective %.15g, the model file's %.15g", i+1, objectives[i], f)
				}
				nnz := 0
				for _, b := range beta {
					if b != 0 {
						nnz++
					}
				}
				if float64(nnz) != nnzs[i] {
					t.Errorf("row %d: nnz %v, the model file has %d", i+1, nnzs[i], nnz)
				}
				if tc.test {
					got := column(t, header, rows, "test_mse")[i]
					if w := test.testMSE(beta, b0); math.Abs(got-w) > 1e-9*w {
						t.Errorf("row %d: test_mse %.15g, the model file's %.15g", i+1, got, w)
					}
				}
			}
			if total != float64(res.Rounds) {
				t.Errorf("the rows' rounds add up to %v, the job ran %d", total, res.Rounds)
			}
			// The last model is the job's model file, and a direct solve's.
			lastFile, err := os.ReadFile(ModelFile(prefix, k, k))
			if err != nil {
				t.Fatal(err)
			}
			if model, err := os.ReadFile(out); err != nil || !bytes.Equal(model, lastFile) {
				t.Errorf("the last λ's model differs from the job's model file (%v)", err)
			}
			beta, _ := readModel(t, out, pr.p())
			got := pr.objective(beta, last, tc.intercept)
			seq := pr.objective(pr.sequentialCD(last, tc.intercept), last, tc.intercept)
			if rel := math.Abs(got-seq) / seq; rel > 1e-9 {
				t.Errorf("last objective %.15g, sequential CD's %.15g: relative difference %.3g > 1e-9", got, seq, rel)
			}
			direct := cfg
			direct.Path, direct.Test = 0, ""
			dres, _, dout := runColumnsCoord(t, direct, tc.workers, copts)
			dbeta, _ := readModel(t, dout, pr.p())
			if d := pr.objective(dbeta, last, tc.intercept); math.Abs(got-d) > 1e-9*d {
				t.Errorf("last objective %.15g, a direct job's %.15g", got, d)
			}
			t.Logf("path: %d rounds, %d updates; direct: %d rounds, %d updates", res.Rounds, res.Updates, dres.Rounds, dres.Updates)
		})
	}
}

// TestPathLambdas checks the penalties of a path: geometric, from λ_max
// down to the last, both exact.
func TestPathLambdas(t *testing.T) {
	for _, tc := range []struct {
		k          int
		max, ratio float64
	}{{2, 1, 0.5}, {20, 3.7, 1e-3}, {100, 0.02, 1e-4}} {
		ls := PathLambdas(tc.k, tc.max, tc.ratio*tc.max)
		if len(ls) != tc.k || ls[0] != tc.max || ls[tc.k-1] != tc.ratio*tc.max {
			t.Errorf("k=%d: %d penalties from %v to %v, want %d from %v to %v", tc.k, len(ls), ls[0], ls[len(ls)-1], tc.k, tc.max, tc.ratio*tc.max)
		}
		step := math.Pow(tc.ratio, 1/float64(tc.k-1))
		for i := 1; i < len(ls); i++ {
			if r := ls[i] / ls[i-1]; math.Abs(r-step) > 1e-12 {
				t.Errorf("k=%d: λ_%d/λ_%d = %.15g, want %.15g", tc.k, i+1, i, r, step)
			}
		}
	}
}

// TestNewPathErrors checks the paths that NewPath refuses.
func TestNewPathErrors(t *testing.T) {
	cases := []struct {
		name            string
		k               int
		lambdaMax, last float64
		want            string
	}{
		{"one penalty", 1, 1, 0.1, "at least 2"},
		{"λ_max 0", 5, 0, 0.1, "λ_max is 0"},
		{"last at λ_max", 5, 1, 1, "must be in (0, λ_max"},
		{"last above λ_max", 5, 1, 2, "must be in (0, λ_max"},
		{"last 0", 5, 1, 0, "must be in (0, λ_max"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewPath(tc.k, tc.lambdaMax, tc.last, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestModelFile checks the names of a path's model files.
func TestModelFile(t *testing.T) {
	for _, tc := range []struct {
		step, k int
		want    string
	}{{1, 2, "p.lambda-1.csv"}, {7, 20, "p.lambda-07.csv"}, {100, 100, "p.lambda-100.csv"}, {3, 100, "p.lambda-003.csv"}} {
		if got := ModelFile("p", tc.step, tc.k); got != tc.want {
			t.Errorf("ModelFile(p, %d, %d) = %q, want %q", tc.step, tc.k, got, tc.want)
		}
	}
}

// TestPathRowsRefused checks that the row layout refuses a path.
func TestPathRowsRefused(t *testing.T) {
	pr := newProblem(t, 40, 30, 1)
	cfg := Config{Data: pr.path, LambdaRatio: 0.1, Schedule: schedule(scheduler.Priority, 1), Path: 5}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	copts := coordinator.Options{Workers: 1, Tol: 1e-6, ReportEvery: 1, JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}
	_, err := job.Run(ctx, Program(cfg), job.Options{Job: "test", Coordinator: copts, Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "column layout only") {
		t.Fatalf("a path in the row layout: err = %v, want one saying it runs in the column layout only", err)
	}
}
