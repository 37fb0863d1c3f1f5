// Command peers compares strads, whole job against whole job, with one
// thread of established single-machine solvers of the same problems:
//
//   - Lasso, (1/2n)‖y − Xβ − b‖² + λ‖β‖₁ (b an unpenalized intercept, or 0):
//     scikit-learn's Lasso and R's glmnet (family "gaussian");
//   - L1-regularized logistic regression without an intercept,
//     (1/n)Σ log(1 + exp(−y_i x_i·w)) + λ‖w‖₁: liblinear's train -s 6 and
//     glmnet (family "binomial").
//
// Every peer runs as a whole process (start, imports, reading the LIBSVM
// file with its own reader, the fit, writing the coefficients); the wall
// time of the process is measured, and the scripts print the time of the
// fit alone. The objective of every system's coefficients is then computed
// by the same Go code from the data file (eval.go). strads runs as the
// "strads lasso" / "strads logreg" command at its default flags, until its
// objective is within --target-rel of the best peer's.
//
// The data: three generated shapes (p ≫ n dense with correlated groups,
// p ≫ n sparse, n ≫ p), and data sets shipped by Debian packages. See
// bench/README.md ("Peers") for what is measured and how to run it.
//
// Usage, from the repository root:
//
//	go run ./bench/peers [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/scheduler"
)

// options are the command-line flags.
type options struct {
	quick        bool
	noStrads     bool
	skipPeers    map[string]bool
	shapes       []string
	problems     []problem
	runs         int
	workers      []int
	schedules    []string
	timeLimit    time.Duration
	targetRel    float64
	seed         uint64
	sklearnTol   float64
	sklearnIter  int
	glmnetThresh float64
	glmnetPath   int
	liblinearEps float64
	python       string
	rscript      string
	liblinear    string
	strads       string
	rev          string
	dataDir      string
	out          string
	args         []string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{args: args}
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.quick, "quick", false, "small sizes of the generated shapes, for trying things out")
	fs.BoolVar(&o.noStrads, "no-strads", false, "run the peers only (to check their accuracy settings)")
	skip := fs.String("skip-peers", "", "comma-separated peers not to run (scikit-learn, glmnet, liblinear), e.g. glmnet on a shape where its read alone takes minutes; F_best is then the others'")
	shapes := fs.String("shapes", "a,b,c,real", "comma-separated shapes: a (p ≫ n dense, correlated groups), b (p ≫ n sparse), c (n ≫ p), d (p ≫ n sparse, correlated groups, 20,000 × 500,000), e (n ≫ p, 1,000,000 × 20,000), f (Lasso only, as d at 20,000 × 2,000,000, 10⁸ non-zeros), h (Lasso only, n ≫ p, 2,000,000 × 20,000, 10⁸ non-zeros), g (logistic only, 90,000 × 100,000, C = 1), bladder, diabetes, breast_cancer; real = the last three")
	problems := fs.String("problems", "lasso,logreg", "comma-separated problems: lasso, logreg")
	fs.IntVar(&o.runs, "runs", 3, "runs of every system (interleaved: run 1 of all, then run 2, …); medians are reported")
	workers := fs.String("workers", "1,2", "comma-separated numbers of strads workers")
	schedules := fs.String("schedules", defaultSchedule, "comma-separated strads --schedule values to run side by side: priority (the default), random, cyclic, shotgun")
	fs.DurationVar(&o.timeLimit, "time-limit", 300*time.Second, "longest run of any system; a strads run still above the target then is recorded as not reached")
	fs.Float64Var(&o.targetRel, "target-rel", 1e-6, "strads stops at F ≤ F_best·(1 + target-rel), F_best the lowest objective of the peers")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the generated data")
	fs.Float64Var(&o.sklearnTol, "sklearn-tol", 1e-10, "scikit-learn Lasso's tol (it stops when the duality gap ≤ tol·‖ỹ‖²/n)")
	fs.IntVar(&o.sklearnIter, "sklearn-max-iter", 1000000, "scikit-learn Lasso's max_iter")
	fs.Float64Var(&o.glmnetThresh, "glmnet-thresh", 1e-14, "glmnet's thresh (relative to the null deviance)")
	fs.IntVar(&o.glmnetPath, "glmnet-path", 30, "glmnet fits a path of this many penalties from λ_max down to λ (evenly in log: warm starts, as its documentation advises) and keeps the last; 1: the single λ")
	fs.Float64Var(&o.liblinearEps, "liblinear-eps", 1e-8, "liblinear's -e (its stopping tolerance on the gradient, relative to the one at w = 0)")
	fs.StringVar(&o.python, "python", "/usr/bin/python3", "the Python with Debian's python3-sklearn")
	fs.StringVar(&o.rscript, "rscript", "Rscript", "R's Rscript, with r-cran-glmnet (and r-bioc-bladderbatch for the bladder data)")
	fs.StringVar(&o.liblinear, "liblinear", "liblinear-train", "liblinear's train command (Debian liblinear-tools)")
	fs.StringVar(&o.strads, "strads", "", "a strads binary to use (default: go build ./cmd/strads into a temporary directory)")
	fs.StringVar(&o.rev, "rev", "", "build strads from this git revision (git archive, into a temporary directory) instead of the working tree")
	fs.StringVar(&o.dataDir, "data-dir", filepath.Join(os.TempDir(), "strads-peers-data"), "`directory` that keeps the generated and exported data between invocations")
	fs.StringVar(&o.out, "out", "", "`directory` for summary.md, runs.csv, the plots and the strads metrics (default bench/peers/results; with --quick $TMPDIR/strads-peers-quick)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, s := range splitList(*shapes) {
		if s == "real" {
			o.shapes = append(o.shapes, realShapes...)
			continue
		}
		if _, ok := shapeByName(s); !ok {
			return nil, fmt.Errorf("--shapes: unknown shape %q", s)
		}
		o.shapes = append(o.shapes, s)
	}
	for _, s := range splitList(*problems) {
		p := problem(s)
		if p != lassoProblem && p != logisticProblem {
			return nil, fmt.Errorf("--problems: unknown problem %q", s)
		}
		o.problems = append(o.problems, p)
	}
	for _, s := range splitList(*skip) {
		if s != "scikit-learn" && s != "glmnet" && s != "liblinear" {
			return nil, fmt.Errorf("--skip-peers: unknown peer %q", s)
		}
		if o.skipPeers == nil {
			o.skipPeers = map[string]bool{}
		}
		o.skipPeers[s] = true
	}
	for _, s := range splitList(*schedules) {
		if _, err := scheduler.ParsePolicy(s); err != nil {
			return nil, fmt.Errorf("--schedules: %w", err)
		}
		o.schedules = append(o.schedules, s)
	}
	if len(o.schedules) == 0 {
		o.schedules = []string{defaultSchedule}
	}
	for _, s := range splitList(*workers) {
		w, err := strconv.Atoi(s)
		if err != nil || w < 1 {
			return nil, fmt.Errorf("--workers: bad number %q", s)
		}
		o.workers = append(o.workers, w)
	}
	if o.out == "" {
		o.out = "bench/peers/results"
		if o.quick {
			o.out = filepath.Join(os.TempDir(), "strads-peers-quick")
		}
	}
	if o.glmnetPath < 1 {
		return nil, errors.New("--glmnet-path must be ≥ 1")
	}
	if o.runs < 1 || o.timeLimit <= 0 || o.targetRel <= 0 {
		return nil, errors.New("--runs, --time-limit and --target-rel must be > 0")
	}
	return o, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peers bench:", err)
		os.Exit(1)
	}
}
