package lasso

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// problem is a small Lasso data set held densely, for the reference solver.
type problem struct {
	x    [][]float64 // n rows of p
	y    []float64
	path string
}

// newProblem writes a random sparse problem with pairs of correlated
// columns to a LIBSVM file.
func newProblem(t testing.TB, n, p int, seed uint64) *problem {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	pr := &problem{x: make([][]float64, n), y: make([]float64, n)}
	truth := make([]float64, p)
	for j := 0; j < p; j += 5 {
		truth[j] = rng.NormFloat64() * 2
	}
	var sb strings.Builder
	for i := range n {
		row := make([]float64, p)
		for j := range p {
			if rng.Float64() < 0.3 {
				row[j] = rng.NormFloat64()
			}
			if j%7 == 1 && row[j-1] != 0 { // correlated neighbours
				row[j] = 0.9*row[j-1] + 0.1*rng.NormFloat64()
			}
		}
		var y float64
		for j, v := range row {
			y += v * truth[j]
		}
		y += 0.5*rng.NormFloat64() + 1.5
		pr.x[i], pr.y[i] = row, y
		sb.WriteString(strconv.FormatFloat(y, 'g', -1, 64))
		for j, v := range row {
			if v != 0 {
				fmt.Fprintf(&sb, " %d:%s", j+1, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		sb.WriteByte('\n')
	}
	pr.path = testhelper.WriteFile(t, "data.svm", sb.String())
	return pr
}

func (pr *problem) n() int { return len(pr.y) }
func (pr *problem) p() int { return len(pr.x[0]) }

// centered returns the columns of X and y, centered if intercept.
func (pr *problem) centered(intercept bool) (cols [][]float64, y []float64, meanX []float64, meanY float64) {
	n, p := pr.n(), pr.p()
	cols = make([][]float64, p)
	meanX = make([]float64, p)
	for j := range p {
		cols[j] = make([]float64, n)
		for i := range n {
			cols[j][i] = pr.x[i][j]
			meanX[j] += pr.x[i][j] / float64(n)
		}
	}
	y = append([]float64(nil), pr.y...)
	if !intercept {
		return cols, y, make([]float64, p), 0
	}
	for i := range n {
		meanY += pr.y[i] / float64(n)
	}
	for j := range p {
		for i := range n {
			cols[j][i] -= meanX[j]
		}
	}
	for i := range y {
		y[i] -= meanY
	}
	return cols, y, meanX, meanY
}

func (pr *problem) lambdaMax(intercept bool) float64 {
	cols, y, _, _ := pr.centered(intercept)
	lm := 0.0
	for _, c := range cols {
		lm = math.Max(lm, math.Abs(dot(c, y))/float64(pr.n()))
	}
	return lm
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// residual returns y − Xβ on the (centered) data.
func residual(cols [][]float64, y, beta []float64) []float64 {
	r := append([]float64(nil), y...)
	for j, c := range cols {
		if beta[j] == 0 {
			continue
		}
		for i := range r {
			r[i] -= c[i] * beta[j]
		}
	}
	return r
}

// objective computes (1/2n)‖r‖² + λ‖β‖₁ from scratch.
func (pr *problem) objective(beta []float64, lambda float64, intercept bool) float64 {
	cols, y, _, _ := pr.centered(intercept)
	r := residual(cols, y, beta)
	var l1 float64
	for _, b := range beta {
		l1 += math.Abs(b)
	}
	return dot(r, r)/(2*float64(pr.n())) + lambda*l1
}

// sequentialCD is a plain cyclic coordinate-descent Lasso solver.
func (pr *problem) sequentialCD(lambda float64, intercept bool) []float64 {
	cols, y, _, _ := pr.centered(intercept)
	n := float64(pr.n())
	beta := make([]float64, pr.p())
	r := append([]float64(nil), y...)
	for sweep := 0; sweep < 100000; sweep++ {
		maxd := 0.0
		for j, c := range cols {
			a := dot(c, c) / n
			if a == 0 {
				continue
			}
			z := dot(c, r)/n + a*beta[j]
			nw := softThreshold(z, lambda) / a
			if d := nw - beta[j]; d != 0 {
				for i := range r {
					r[i] -= c[i] * d
				}
				beta[j] = nw
				maxd = math.Max(maxd, math.Abs(d))
			}
		}
		if maxd < 1e-14 {
			break
		}
	}
	return beta
}

// checkKKT checks the Lasso optimality conditions at beta to tol:
// |x_jᵀr|/n ≤ λ where β_j = 0 and x_jᵀr/n = λ·sign(β_j) where β_j ≠ 0.
func (pr *problem) checkKKT(t *testing.T, beta []float64, lambda float64, intercept bool, tol float64) {
	t.Helper()
	cols, y, _, _ := pr.centered(intercept)
	r := residual(cols, y, beta)
	bad := 0
	for j, c := range cols {
		g := dot(c, r) / float64(pr.n())
		switch {
		case beta[j] == 0 && math.Abs(g) > lambda+tol:
			t.Errorf("KKT: β_%d = 0 but |x_jᵀr|/n = %.12g > λ = %.12g", j, math.Abs(g), lambda)
			bad++
		case beta[j] != 0 && math.Abs(g-lambda*math.Copysign(1, beta[j])) > tol:
			t.Errorf("KKT: β_%d = %.6g but x_jᵀr/n = %.12g, want %.12g", j, beta[j], g, lambda*math.Copysign(1, beta[j]))
			bad++
		}
		if bad > 5 {
			t.FailNow()
		}
	}
}

// readModel reads a model file written by WriteModel, of p features.
func readModel(t *testing.T, path string, p int) (beta []float64, intercept float64) {
	t.Helper()
	m, err := linear.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.App != linear.Lasso || m.Features != p {
		t.Fatalf("%s: a model of app %q with %d features, want lasso with %d", path, m.App, m.Features, p)
	}
	return m.Dense(), m.Intercept
}

func schedule(policy scheduler.Policy, workers int) scheduler.Config {
	return scheduler.Config{
		Policy: policy, Gamma: 2, Eta: 1e-6, Candidates: 16, Block: 8,
		Warmup: 5, Rho: 0.1, Workers: workers, Seed: 1,
	}
}

// runJob runs a whole Lasso job on an embedded nats-server and returns its
// result and the path of the model.
func runJob(t *testing.T, cfg Config, workers int, copts coordinator.Options) (*coordinator.Result, string) {
	t.Helper()
	return runProgram(t, Program(cfg), workers, copts)
}

// runProgram is runJob for a program whose parts a test replaced.
func runProgram(t *testing.T, prog schmp.Program[Plan, Partial, Update, Summary], workers int, copts coordinator.Options) (*coordinator.Result, string) {
	t.Helper()
	copts.Workers = workers
	if copts.ReportEvery == 0 {
		copts.ReportEvery = 10
	}
	res, out, err := testhelper.RunJob(t, prog, copts, 2*time.Minute)
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	return res, out
}

// checkSolution checks the model file out of a job that ended with res,
// at λ lambda: the optimality conditions, the objective against want, the
// sequential solver's, and the non-zeros against the final report's. It
// returns the model's objective.
func (pr *problem) checkSolution(t *testing.T, res *coordinator.Result, out string, lambda float64, intercept bool, want float64) float64 {
	t.Helper()
	beta, _ := readModel(t, out, pr.p())
	pr.checkKKT(t, beta, lambda, intercept, 1e-6)
	got := pr.objective(beta, lambda, intercept)
	if rel := math.Abs(got-want) / want; rel > 1e-9 {
		t.Errorf("objective %.15g, sequential CD %.15g: relative difference %.3g > 1e-9", got, want, rel)
	}
	nnz := 0
	for _, b := range beta {
		if b != 0 {
			nnz++
		}
	}
	if nnz != res.Final.NNZ {
		t.Errorf("the model file has %d non-zeros, the final report %d", nnz, res.Final.NNZ)
	}
	return got
}

// TestKKT solves generated problems with p > n and n > p on 1, 2 and 4
// workers and checks the solution against the optimality conditions and a
// sequential solver's objective.
func TestKKT(t *testing.T) {
	cases := []struct {
		name      string
		n, p      int
		intercept bool
		policy    scheduler.Policy
	}{
		{"p>n", 40, 120, false, scheduler.Priority},
		{"p>n/intercept", 40, 120, true, scheduler.Random},
		{"n>p", 150, 30, false, scheduler.Cyclic},
		{"n>p/intercept", 150, 30, true, scheduler.Priority},
	}
	for _, tc := range cases {
		pr := newProblem(t, tc.n, tc.p, 42)
		lambda := 0.1 * pr.lambdaMax(tc.intercept)
		want := pr.objective(pr.sequentialCD(lambda, tc.intercept), lambda, tc.intercept)
		for _, workers := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", tc.name, workers), func(t *testing.T) {
				cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: tc.intercept, Schedule: schedule(tc.policy, workers)}
				res, out := runJob(t, cfg, workers, coordinator.Options{Tol: 1e-12, MaxRounds: 100000})
				// The workers' copies of β are the coordinator's values, not
				// running sums of deltas: a coordinate set back to 0 is 0.
				got := pr.checkSolution(t, res, out, lambda, tc.intercept, want)
				t.Logf("%d rounds, %d updates, reason %s, objective %.12g", res.Rounds, res.Updates, res.Reason, got)
			})
		}
	}
}
