package logreg

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

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
)

// pathTable is a path's CSV: its header, and its columns by name.
type pathTable struct {
	header []string
	rows   [][]string
}

// readPathTable reads the CSV at path.
func readPathTable(t *testing.T, path string) pathTable {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	tb := pathTable{header: strings.Split(lines[0], ",")}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != len(tb.header) {
			t.Fatalf("%s: row %q has %d fields, the header %d", path, l, len(f), len(tb.header))
		}
		tb.rows = append(tb.rows, f)
	}
	return tb
}

// float returns the value of column name in row i.
func (tb pathTable) float(t *testing.T, i int, name string) float64 {
	t.Helper()
	for k, h := range tb.header {
		if h == name {
			v, err := strconv.ParseFloat(tb.rows[i][k], 64)
			if err != nil {
				t.Fatalf("row %d, %s: %v", i+1, name, err)
			}
			return v
		}
	}
	t.Fatalf("no column %q in %q", name, tb.header)
	return 0
}

// accuracy returns the fraction of the problem's samples whose label has
// the sign of the margin (a margin of 0 counts as +1).
func (pr *problem) accuracy(w []float64, b float64) float64 {
	correct := 0
	for i, z := range pr.margins(w, b) {
		if (z >= 0) == (pr.y[i] > 0) {
			correct++
		}
	}
	return float64(correct) / float64(pr.n())
}

// TestPath solves regularization paths in the column layout on 1, 2 and 3
// workers and checks every model of the path against the optimality
// conditions at its own λ, the table against the model files evaluated
// independently (objective and accuracies), and the last model against a
// direct solve at the last λ, both by the reference solver and by a job of
// that λ alone.
func TestPath(t *testing.T) {
	wide := genConfig(50, 120, 24, 1)
	tall := genConfig(200, 30, 10, 2)
	tall.Bias, tall.ZeroOne = 0.8, true
	cases := []struct {
		name      string
		gen       GenConfig
		intercept bool
		workers   int
		work      int
		test      bool
	}{
		{"p>n", wide, false, 1, 0, false},
		{"p>n/intercept/test", wide, true, 2, 150, true},
		{"n>p/intercept", tall, true, 3, 0, false},
	}
	const k, ratio = 6, 0.05
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/workers=%d", tc.name, tc.workers), func(t *testing.T) {
			pr := newProblem(t, tc.gen)
			lambdaMax := pr.lambdaMax(tc.intercept)
			last := ratio * lambdaMax
			cfg := Config{Data: pr.path, LambdaRatio: ratio, Intercept: tc.intercept, Schedule: colSchedule(scheduler.Priority), RoundWork: tc.work, Path: k}
			var test *problem
			if tc.test {
				g := tc.gen
				g.Samples, g.Seed = 80, 9
				test = newProblem(t, g)
				cfg.Test = test.path
			}
			opts := coordinator.Options{Tol: 1e-10, MaxRounds: 20000, ReportEvery: 1, RiseTol: 1e-9}
			res, coord, out, err := runColJob(t, colJob{cfg: cfg, workers: tc.workers, opts: opts})
			if err != nil {
				t.Fatalf("job: %v", err)
			}
			if res.Reason != "converged" {
				t.Fatalf("stopped by %s after %d rounds, want converged", res.Reason, res.Rounds)
			}
			prefix := filepath.Join(t.TempDir(), "path")
			if err := coord.Path().WriteFiles(prefix); err != nil {
				t.Fatal(err)
			}
			tb := readPathTable(t, lasso.PathCSV(prefix))
			want := "step,lambda,lambda_ratio,objective,gap,nnz,rounds,time_s,stop,train_accuracy"
			if tc.test {
				want += ",test_accuracy"
			}
			if got := strings.Join(tb.header, ","); got != want {
				t.Fatalf("header %q, want %q", got, want)
			}
			if len(tb.rows) != k {
				t.Fatalf("%d rows, want %d", len(tb.rows), k)
			}
			if l := tb.float(t, 0, "lambda"); math.Abs(l-lambdaMax) > 1e-12*lambdaMax {
				t.Errorf("first λ %.15g, want λ_max %.15g", l, lambdaMax)
			}
			if l := tb.float(t, k-1, "lambda"); math.Abs(l-last) > 1e-12*last {
				t.Errorf("last λ %.15g, want %v·λ_max = %.15g", l, ratio, last)
			}
			var rounds float64
			for i, row := range tb.rows {
				lambda := tb.float(t, i, "lambda")
				if row[0] != strconv.Itoa(i+1) || row[8] != "converged" {
					t.Errorf("row %d: step %s, stop %s; want %d, converged", i+1, row[0], row[8], i+1)
				}
				if i > 0 && !(lambda < tb.float(t, i-1, "lambda")) {
					t.Errorf("λ does not decrease at row %d", i+1)
				}
				rounds += tb.float(t, i, "rounds")
				w, b := readModel(t, lasso.ModelFile(prefix, i+1, k), len(pr.cols))
				pr.checkKKT(t, w, b, lambda, tc.intercept, 1e-6)
				if f, got := pr.objective(w, b, lambda), tb.float(t, i, "objective"); math.Abs(f-got) > 1e-10*f {
					t.Errorf("row %d: objective %.15g, the model file's %.15g", i+1, got, f)
				}
				nnz := 0
				for _, v := range w {
					if v != 0 {
						nnz++
					}
				}
				if got := tb.float(t, i, "nnz"); got != float64(nnz) {
					t.Errorf("row %d: nnz %v, the model file has %d", i+1, got, nnz)
				}
				if got, want := tb.float(t, i, "train_accuracy"), pr.accuracy(w, b); got != want {
					t.Errorf("row %d: train accuracy %v, the model file's %v", i+1, got, want)
				}
				if tc.test {
					if got, want := tb.float(t, i, "test_accuracy"), test.accuracy(w, b); got != want {
						t.Errorf("row %d: test accuracy %v, the model file's %v", i+1, got, want)
					}
				}
			}
			if rounds != float64(res.Rounds) {
				t.Errorf("the rows' rounds add up to %v, the job ran %d", rounds, res.Rounds)
			}
			// The last model is the job's model file, and a direct solve's.
			lastFile, err := os.ReadFile(lasso.ModelFile(prefix, k, k))
			if err != nil {
				t.Fatal(err)
			}
			if model, err := os.ReadFile(out); err != nil || !bytes.Equal(model, lastFile) {
				t.Errorf("the last λ's model differs from the job's model file (%v)", err)
			}
			w, b := readModel(t, out, len(pr.cols))
			got := pr.objective(w, b, last)
			rw, rb := pr.reference(t, last, tc.intercept)
			if ref := pr.objective(rw, rb, last); math.Abs(got-ref) > 1e-9*ref {
				t.Errorf("last objective %.15g, the reference solver's %.15g", got, ref)
			}
			direct := cfg
			direct.Path, direct.Test = 0, ""
			dres, _, dout, err := runColJob(t, colJob{cfg: direct, workers: tc.workers, opts: opts})
			if err != nil {
				t.Fatalf("direct job: %v", err)
			}
			dw, db := readModel(t, dout, len(pr.cols))
			if d := pr.objective(dw, db, last); math.Abs(got-d) > 1e-9*d {
				t.Errorf("last objective %.15g, a direct job's %.15g", got, d)
			}
			t.Logf("path: %d rounds, %d updates; direct: %d rounds, %d updates", res.Rounds, res.Updates, dres.Rounds, dres.Updates)
		})
	}
}

// TestPathRowsRefused checks that the row layout refuses a path.
func TestPathRowsRefused(t *testing.T) {
	pr := newProblem(t, genConfig(40, 30, 6, 1))
	cfg := Config{Data: pr.path, LambdaRatio: 0.1, Schedule: schedule(scheduler.Priority, 1), Path: 5}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	copts := coordinator.Options{Workers: 1, Tol: 1e-6, ReportEvery: 1, JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}
	_, err := job.Run(ctx, Program(cfg), job.Options{Job: "test", Coordinator: copts, Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "column layout only") {
		t.Fatalf("a path in the row layout: err = %v, want one saying it runs in the column layout only", err)
	}
}
