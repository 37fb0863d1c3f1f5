package logreg

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// problem is a small data set held densely, for the reference solver.
type problem struct {
	cols [][]float64 // p columns of n
	y    []float64   // ±1
	path string
}

// newProblem generates c into a file and reads it back densely.
func newProblem(t testing.TB, c GenConfig) *problem {
	t.Helper()
	var buf strings.Builder
	if _, err := Generate(&buf, c); err != nil {
		t.Fatal(err)
	}
	pr := &problem{path: testhelper.WriteFile(t, "data.svm", buf.String()), cols: make([][]float64, c.Features)}
	for j := range pr.cols {
		pr.cols[j] = make([]float64, c.Samples)
	}
	err := libsvm.Read(pr.path, func(line int, row libsvm.Row) error {
		for k, j := range row.Index {
			pr.cols[j][line-1] = row.Value[k]
		}
		y, ok := label(row.Label)
		if !ok {
			return fmt.Errorf("label %v", row.Label)
		}
		pr.y = append(pr.y, y)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

func (pr *problem) n() int { return len(pr.y) }

// margins returns X·w + b.
func (pr *problem) margins(w []float64, b float64) []float64 {
	z := make([]float64, pr.n())
	for i := range z {
		z[i] = b
	}
	for j, c := range pr.cols {
		for i, v := range c {
			z[i] += v * w[j]
		}
	}
	return z
}

// objective computes F(w, b) from scratch, plainly.
func (pr *problem) objective(w []float64, b, lambda float64) float64 {
	var loss, l1 float64
	for i, z := range pr.margins(w, b) {
		loss += math.Log(1 + math.Exp(-pr.y[i]*z))
	}
	for _, v := range w {
		l1 += math.Abs(v)
	}
	return loss/float64(pr.n()) + lambda*l1
}

// gradient returns the gradient of the loss at (w, b): one entry per
// column, and the intercept's last.
func (pr *problem) gradient(w []float64, b float64) []float64 {
	z := pr.margins(w, b)
	g := make([]float64, len(pr.cols)+1)
	n := float64(pr.n())
	for i, zi := range z {
		r := -pr.y[i] / (1 + math.Exp(pr.y[i]*zi))
		for j, c := range pr.cols {
			g[j] += c[i] * r / n
		}
		g[len(pr.cols)] += r / n
	}
	return g
}

// lambdaMax is the smallest λ whose solution is w = 0, computed from its
// definition: the gradient at w = 0 with the best intercept (or b = 0).
func (pr *problem) lambdaMax(intercept bool) float64 {
	b := 0.0
	if intercept {
		pos := 0.0
		for _, y := range pr.y {
			if y > 0 {
				pos++
			}
		}
		b = math.Log(pos / (float64(pr.n()) - pos))
	}
	g := pr.gradient(make([]float64, len(pr.cols)), b)
	lm := 0.0
	for _, v := range g[:len(pr.cols)] {
		lm = math.Max(lm, math.Abs(v))
	}
	return lm
}

// reference is a plain sequential solver: cyclic coordinate descent with
// exact Newton directions and an Armijo line search on each coordinate
// (CDN), the intercept being one more coordinate, run until a sweep moves
// nothing more than 1e-13.
func (pr *problem) reference(t *testing.T, lambda float64, intercept bool) (w []float64, b float64) {
	n := float64(pr.n())
	w = make([]float64, len(pr.cols))
	z := make([]float64, pr.n())
	ones := make([]float64, pr.n())
	for i := range ones {
		ones[i] = 1
	}
	lossAlong := func(c []float64, step float64) float64 {
		var s float64
		for i := range z {
			s += math.Log1p(math.Exp(-pr.y[i] * (z[i] + step*c[i])))
		}
		return s / n
	}
	for sweep := 0; sweep < 5000; sweep++ {
		moved := 0.0
		for j := 0; j <= len(pr.cols); j++ {
			c, l, v := ones, 0.0, b
			if j < len(pr.cols) {
				c, l, v = pr.cols[j], lambda, w[j]
			} else if !intercept {
				continue
			}
			var g, h float64
			for i, x := range c {
				if x == 0 {
					continue
				}
				s := 1 / (1 + math.Exp(-z[i]))
				g += x * -pr.y[i] / (1 + math.Exp(pr.y[i]*z[i])) / n
				h += x * x * s * (1 - s) / n
			}
			if h < 1e-300 {
				continue
			}
			d := proxStep(v, g, h, l)
			if d == 0 {
				continue
			}
			// Armijo: F(v + s·d) − F(v) ≤ 0.01·s·(g·d + λ(|v+d| − |v|)).
			base := lossAlong(c, 0) + l*math.Abs(v)
			pred := g*d + l*(math.Abs(v+d)-math.Abs(v))
			s := 1.0
			for k := 0; k < 60 && lossAlong(c, s*d)+l*math.Abs(v+s*d)-base > 0.01*s*pred; k++ {
				s /= 2
			}
			for i, x := range c {
				z[i] += s * d * x
			}
			if j < len(pr.cols) {
				w[j] += s * d
			} else {
				b += s * d
			}
			moved = math.Max(moved, math.Abs(s*d))
		}
		if moved < 1e-13 {
			return w, b
		}
	}
	t.Fatalf("reference solver did not converge")
	return nil, 0
}

// checkKKT checks the optimality conditions at (w, b) to tol: |∇_j| ≤ λ
// where w_j = 0, ∇_j = −λ·sign(w_j) elsewhere, and ∇_b = 0 with an
// intercept.
func (pr *problem) checkKKT(t *testing.T, w []float64, b, lambda float64, intercept bool, tol float64) {
	t.Helper()
	g := pr.gradient(w, b)
	bad := 0
	for j, wj := range w {
		switch {
		case wj == 0 && math.Abs(g[j]) > lambda+tol:
			t.Errorf("KKT: w_%d = 0 but |∇_j| = %.12g > λ = %.12g", j, math.Abs(g[j]), lambda)
			bad++
		case wj != 0 && math.Abs(g[j]+lambda*math.Copysign(1, wj)) > tol:
			t.Errorf("KKT: w_%d = %.6g but ∇_j = %.12g, want %.12g", j, wj, g[j], -lambda*math.Copysign(1, wj))
			bad++
		}
		if bad > 5 {
			t.FailNow()
		}
	}
	if gb := g[len(w)]; intercept && math.Abs(gb) > tol {
		t.Errorf("KKT: ∇_b = %.3g, want 0", gb)
	}
}

// checkSolution checks the model file out of a job that ended with res,
// at λ lambda: the optimality conditions, the objective against want, the
// sequential solver's, and the reported one against the model's, the
// stop, and that every report's gap brackets want. It returns the model's
// weights and objective.
func (pr *problem) checkSolution(t *testing.T, res *coordinator.Result, out string, lambda float64, intercept bool, want float64) (w []float64, got float64) {
	t.Helper()
	w, b := readModel(t, out, len(pr.cols))
	pr.checkKKT(t, w, b, lambda, intercept, 1e-6)
	got = pr.objective(w, b, lambda)
	if rel := math.Abs(got-want) / want; rel > 1e-9 {
		t.Errorf("objective %.15g, sequential solver %.15g: relative difference %.3g > 1e-9", got, want, rel)
	}
	if rel := math.Abs(res.Final.Objective-got) / got; rel > 1e-12 {
		t.Errorf("reported objective %.15g, recomputed %.15g", res.Final.Objective, got)
	}
	if res.Reason != "converged" {
		t.Errorf("stopped by %s, want converged (gap %.3g)", res.Reason, res.Final.Gap)
	}
	for _, s := range res.Trace {
		if s.Objective < want*(1-1e-12) || s.Objective-s.Gap > want*(1+1e-12) {
			t.Errorf("round %d: objective %.15g, gap %.3g: does not bracket F* = %.15g", s.Round, s.Objective, s.Gap, want)
		}
	}
	return w, got
}

// readModel reads a model file written by WriteModel, of p features.
func readModel(t *testing.T, path string, p int) (w []float64, b float64) {
	t.Helper()
	m, err := linear.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.App != linear.Logreg || m.Features != p {
		t.Fatalf("%s: a model of app %q with %d features, want logreg with %d", path, m.App, m.Features, p)
	}
	return m.Dense(), m.Intercept
}

func schedule(policy scheduler.Policy, workers int) scheduler.Config {
	return scheduler.Config{
		Policy: policy, Gamma: 2, Eta: 1e-6, Candidates: 16, Block: 8,
		Warmup: 5, Rho: 0.1, Workers: workers, Seed: 1,
	}
}

// runJob runs a whole job on an embedded nats-server and returns its
// result, its coordinator and the path of the model.
func runJob(t *testing.T, cfg Config, workers int, copts coordinator.Options) (*coordinator.Result, *Coordinator, string) {
	t.Helper()
	copts.Workers = workers
	if copts.ReportEvery == 0 {
		copts.ReportEvery = 10
	}
	prog := Program(cfg)
	var coord *Coordinator
	prog.NewCoordinator = func(context.Context) (schmp.Coordinator[Plan, Partial, Update, Summary], error) {
		c, err := NewCoordinator(cfg)
		coord = c
		return c, err
	}
	res, out, err := testhelper.RunJob(t, prog, copts, time.Minute)
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	return res, coord, out
}

// genConfig is a problem with p > n and groups of correlated columns.
func genConfig(samples, features, groups int, seed uint64) GenConfig {
	return GenConfig{GenConfig: lasso.GenConfig{
		Samples: samples, Features: features, Density: 0.15, CorrGroups: groups, Corr: 0.5,
		TrueNNZ: features / 10, Noise: 0, Seed: seed,
	}}
}

// TestKKT solves generated problems with p > n and n > p, with and without
// an intercept, on 1, 2 and 4 workers, and checks the solution against the
// optimality conditions and a sequential solver's objective. Each problem
// runs under each of the three schedules (priority, random, cyclic), which
// must therefore all reach the same optimum. Every report's duality gap
// must certify the optimum: F − gap ≤ F* ≤ F.
func TestKKT(t *testing.T) {
	wide := genConfig(50, 120, 24, 1)
	tall := genConfig(200, 30, 10, 2)
	tall.Bias, tall.ZeroOne = 0.8, true
	policies := []scheduler.Policy{scheduler.Priority, scheduler.Random, scheduler.Cyclic}
	cases := []struct {
		name      string
		gen       GenConfig
		intercept bool
	}{
		{"p>n", wide, false},
		{"p>n/intercept", wide, true},
		{"n>p", tall, false},
		{"n>p/intercept", tall, true},
	}
	for c, tc := range cases {
		pr := newProblem(t, tc.gen)
		lambda := 0.1 * pr.lambdaMax(tc.intercept)
		rw, rb := pr.reference(t, lambda, tc.intercept)
		want := pr.objective(rw, rb, lambda)
		for i, workers := range []int{1, 2, 4} {
			policy := policies[(c+i)%len(policies)]
			t.Run(fmt.Sprintf("%s/workers=%d/%v", tc.name, workers, policy), func(t *testing.T) {
				cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: tc.intercept, Schedule: schedule(policy, workers)}
				res, coord, out := runJob(t, cfg, workers, coordinator.Options{Tol: 1e-11, MaxRounds: 50000})
				if rel := math.Abs(coord.Lambda()-lambda) / lambda; rel > 1e-12 {
					t.Errorf("λ = %.15g, want 0.1·λ_max = %.15g", coord.Lambda(), lambda)
				}
				_, got := pr.checkSolution(t, res, out, lambda, tc.intercept, want)
				g := coord.Safeguard()
				t.Logf("%d rounds, %d updates, objective %.12g, nnz %d, %d/%d rounds raised F, θ ≥ %.3g",
					res.Rounds, res.Updates, got, res.Final.NNZ, g.Rose, g.Rounds, g.MinTheta)
			})
		}
	}
}

// TestSafeguard runs a problem built to make parallel steps fight (groups of
// ten columns with correlation 0.95, and blocks of 16) with the dependency
// check off, so that only the joint-step safeguard stands between the
// parallel Newton steps and divergence, at depth 1 (fresh margins) and depth
// 4 (margins up to three rounds old). With the safeguard the job must reach
// the optimum and few rounds may raise the objective; with θ fixed at 1 the
// steps must overshoot, which shows that the test can tell. With the
// dependency check on, rounds at depth 1 must not raise the objective at
// all (with it, few coordinates of these columns can share a round, so the
// job is slow and is not asked to converge).
func TestSafeguard(t *testing.T) {
	g := genConfig(100, 80, 8, 3)
	g.Corr, g.Density = 0.95, 0.3
	pr := newProblem(t, g)
	lambda := 0.05 * pr.lambdaMax(false)
	rw, rb := pr.reference(t, lambda, false)
	want := pr.objective(rw, rb, lambda)
	cases := []struct {
		name     string
		rho      float64
		depth    int
		fixed    float64 // θ, or 0 for the adaptive safeguard
		maxRose  float64 // the most rounds that may raise F, as a fraction
		converge bool    // whether the job must reach the optimum (1e-6 relative)
	}{
		{"no check/depth=1", 1, 1, 0, 0.05, true},
		{"no check/depth=4", 1, 4, 0, 0.15, true},
		{"no check/depth=4/θ=1", 1, 4, 1, 1, false},
		{"check/depth=1", 0.1, 1, 0, 0, false},
		{"check/depth=4", 0.1, 4, 0, 0.15, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := schedule(scheduler.Priority, 2)
			sc.Block, sc.Candidates, sc.Rho = 16, 32, tc.rho
			cfg := Config{Data: pr.path, LambdaRatio: 0.05, Schedule: sc, fixedTheta: tc.fixed}
			res, coord, _ := runJob(t, cfg, 2, coordinator.Options{Tol: 1e-10, MaxRounds: 3000, ReportEvery: 20, Depth: tc.depth})
			sg := coord.Safeguard()
			sub := (res.Final.Objective - want) / want
			t.Logf("%d rounds: (F − F*)/F* = %.3g; %d of %d rounds raised F (at most by %.3g·F(0)); θ ≥ %.3g",
				res.Rounds, sub, sg.Rose, sg.Rounds, sg.MaxRise, sg.MinTheta)
			if sg.Rounds == 0 {
				t.Fatal("no round's change of F was measured")
			}
			if frac := float64(sg.Rose) / float64(sg.Rounds); frac > tc.maxRose {
				t.Errorf("%.1f%% of the rounds raised F, want at most %.1f%%", 100*frac, 100*tc.maxRose)
			}
			switch {
			case tc.converge && sub > 1e-6:
				t.Errorf("(F − F*)/F* = %.3g after %d rounds, want ≤ 1e-6", sub, res.Rounds)
			case tc.fixed == 1 && (sub < 1e-2 || float64(sg.Rose) < 0.2*float64(sg.Rounds)):
				t.Errorf("without the safeguard: (F − F*)/F* = %.3g and %d of %d rounds raised F; want the steps to overshoot", sub, sg.Rose, sg.Rounds)
			}
		})
	}
}

// TestNewtonStep checks the safeguarded step on one coordinate of random
// small problems: it never raises the objective, its model bounds the
// objective's change from above, and near the optimum it is Newton's step.
func TestNewtonStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := range 2000 {
		n := 1 + rng.IntN(20)
		x, y, z := make([]float64, n), make([]float64, n), make([]float64, n)
		scale := math.Pow(10, 2*rng.Float64()-1)
		for i := range x {
			x[i] = scale * rng.NormFloat64()
			y[i] = float64(2*rng.IntN(2) - 1)
			z[i] = 8 * rng.NormFloat64()
		}
		w := 0.0
		if rng.IntN(2) == 0 {
			w = rng.NormFloat64()
		}
		lambda := 0.1 * rng.Float64()
		f := func(d float64) float64 {
			var s float64
			for i := range x {
				s += math.Log1p(math.Exp(-y[i] * (z[i] + d*x[i])))
			}
			return s/float64(n) + lambda*math.Abs(w+d)
		}
		var g, h, a, c float64
		for i := range x {
			_, q, curv := row(y[i], z[i])
			g += x[i] * -y[i] * q / float64(n)
			h += x[i] * x[i] * curv / float64(n)
			a += x[i] * x[i] / (4 * float64(n))
			c = math.Max(c, math.Abs(x[i]))
		}
		d, m := newtonStep(w, g, h, a, c, lambda)
		model := g*d + 0.5*m*d*d + lambda*(math.Abs(w+d)-math.Abs(w))
		change := f(d) - f(0)
		if change > 1e-12*f(0) || model > 1e-15 {
			t.Fatalf("trial %d: step %.6g raised F by %.3g (model %.3g)", trial, d, change, model)
		}
		if change > model+1e-12*f(0) {
			t.Fatalf("trial %d: step %.6g changed F by %.6g, more than its model %.6g", trial, d, change, model)
		}
		if nd := proxStep(w, g, h, lambda); c*math.Abs(nd) < 1e-4 && math.Abs(d-nd) > 1e-3*math.Abs(nd) {
			t.Fatalf("trial %d: short Newton step %.6g, but the safeguarded step is %.6g", trial, nd, d)
		}
	}
	if d, m := newtonStep(1, 0.3, 0, 0, 0, 0.1); d != 0 || m != 0 {
		t.Errorf("empty column: step %v, curvature %v, want 0, 0", d, m)
	}
}

// TestRow checks the per-row quantities against their plain formulas, and
// the loss changes summed by logRatio against a plain sum of logarithms.
func TestRow(t *testing.T) {
	for _, y := range []float64{-1, 1} {
		for _, z := range []float64{-700, -40, -3, -0.5, 0, 1e-9, 0.7, 5, 36, 700} {
			s, q, curv := row(y, z)
			m := y * z
			wantQ := 1 / (1 + math.Exp(m))
			wantLoss := math.Log1p(math.Exp(-m))
			if m < -30 {
				wantLoss = -m + math.Log1p(math.Exp(m))
			}
			wantCurv := 1 / (2 + math.Exp(m) + math.Exp(-m))
			if got := rowLoss(y, z, s); math.Abs(got-wantLoss) > 1e-15*math.Max(1, wantLoss) {
				t.Errorf("y %v z %v: loss %.17g, want %.17g", y, z, got, wantLoss)
			}
			if math.Abs(q-wantQ) > 1e-15*wantQ || (wantCurv > 1e-300 && math.Abs(curv-wantCurv) > 1e-12*wantCurv) {
				t.Errorf("y %v z %v: q %.17g curvature %.17g, want %.17g and %.17g", y, z, q, curv, wantQ, wantCurv)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	r, want := newLogRatio(), 0.0
	for range 100000 {
		a, b := 1+rng.Float64(), 1+rng.Float64()
		r.add(a, b)
		want += math.Log(a) - math.Log(b)
	}
	if got := r.value(); math.Abs(got-want) > 1e-9 {
		t.Errorf("logRatio: %.15g, plain sum %.15g", got, want)
	}
}
