// Command schedules compares the Lasso's schedules per shape of data, whole
// job against whole job: the built strads binary, run as "strads lasso",
// until its objective is within the smallest of --levels (relative
// sub-optimality, default 1e-3 and 1e-6) of the optimum F*, or --time-limit.
//
// The variants (issue 10, goal 2):
//
//   - the row layout (--layout rows, STRADS's setting): priority and uniform
//     random candidates through the dependency check at ρ = --rho, and
//     Shotgun-style random updates without it (--schedule random --rho 1;
//     the scheduler then computes no correlation at all), and priority
//     without it (priority-nocheck), which separates what the schedule
//     gains from what the check costs. A block size can be given as
//     schedule@U ("shotgun@128"): Shotgun with more parallel updates than
//     its safe bound may diverge, and the job then fails with "the model
//     diverged", which is recorded as the run's result;
//   - the column layout (the default), at each --round-works block size,
//     with --cols schedules.
//
// F* is scikit-learn's objective at tol 1e-10 (scripts/fstar.py, when
// python3-sklearn is installed) or the lowest objective of any strads
// report, whichever is lower; the duality gaps of the reports bound it from
// below. The data are bench/peers's shapes a, b and c (b scaled down). See
// bench/README.md ("schedules") for what is measured.
//
// Usage, from the repository root:
//
//	go run ./bench/schedules [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// options are the command-line flags.
type options struct {
	quick       bool
	shapes      []shape
	levels      []float64 // ascending order of difficulty: 1e-3, 1e-6
	runs        int
	repeatUnder time.Duration
	timeLimit   time.Duration
	variants    []variant
	rowWorkers  int
	colWorkers  int
	rho         float64
	block       int
	candidates  int
	rowReport   int // 0: per shape, ⌈p/(4·block)⌉
	colReport   int
	seed        uint64
	sklearnTol  float64
	python      string
	strads      string
	rev         string
	dataDir     string
	out         string
	args        []string
}

// variant is one configuration of strads: a layout, a schedule and, for
// the row layout, the block U, for the column layout the round work.
type variant struct {
	layout string // "rows" or "cols"
	// schedule is priority, random or cyclic; in the row layout also
	// shotgun (random without the dependency check) and priority-nocheck
	// or cyclic-nocheck (without it too).
	schedule string
	block    int // rows: U; 0 means --block
	// work is the column layout's --round-work: 0 for strads's default,
	// below 1 a fraction of a worker's non-zeros, otherwise non-zeros.
	work float64
}

// policy returns strads's --schedule of the variant.
func (v variant) policy() string {
	if v.schedule == "shotgun" {
		return "random"
	}
	return strings.TrimSuffix(v.schedule, "-nocheck")
}

// checked reports whether the variant runs the dependency check: the
// row layout's schedules but shotgun and the -nocheck ones.
func (v variant) checked() bool {
	return v.layout == "rows" && v.schedule != "shotgun" && !strings.HasSuffix(v.schedule, "-nocheck")
}

// rowSchedules are the schedules --rows takes.
var rowSchedules = []string{"priority", "random", "cyclic", "shotgun", "priority-nocheck", "cyclic-nocheck"}

// name returns the variant's name in tables: "rows priority",
// "rows shotgun U=128", "cols cyclic", "cols W=1/4 random".
func (v variant) name() string {
	switch {
	case v.layout == "rows" && v.block > 0:
		return fmt.Sprintf("rows %s U=%d", v.schedule, v.block)
	case v.layout == "rows":
		return "rows " + v.schedule
	case v.work == 0:
		return "cols " + v.schedule
	}
	return fmt.Sprintf("cols W=%s %s", workLabel(v.work), v.schedule)
}

// workLabel writes a round work: "1/4" for 0.25, "2^20" for 1048576.
func workLabel(w float64) string {
	if w < 1 {
		if inv := 1 / w; inv == math.Round(inv) {
			return "1/" + strconv.Itoa(int(inv))
		}
		return strconv.FormatFloat(w, 'g', -1, 64)
	}
	if e := math.Log2(w); e == math.Round(e) {
		return "2^" + strconv.Itoa(int(e))
	}
	return strconv.FormatFloat(w, 'f', 0, 64)
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{args: args}
	fs := flag.NewFlagSet("schedules", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.quick, "quick", false, "bench/peers's --quick sizes of the shapes, for trying things out")
	shapeList := fs.String("shapes", "a,b,c", "comma-separated shapes: a (p ≫ n dense, correlated groups), b (p ≫ n sparse), c (n ≫ p sparse)")
	levels := fs.String("levels", "1e-3,1e-6", "comma-separated relative sub-optimalities (F − F*)/F* whose times are measured; a run stops at the smallest")
	fs.IntVar(&o.runs, "runs", 3, "runs of every variant (interleaved: run 1 of all, then run 2, …; run r seeds the scheduler with r); medians are reported")
	fs.DurationVar(&o.repeatUnder, "repeat-under", 25*time.Second, "run a variant again (up to --runs) only if its first run's whole job took less than this")
	fs.DurationVar(&o.timeLimit, "time-limit", 30*time.Second, "strads's --time-limit: a level not reached by then is 'not reached'")
	rows := fs.String("rows", "priority,random,shotgun,priority-nocheck,priority@128,shotgun@128", "row-layout variants: priority, random, cyclic (through the dependency check), shotgun (random, --rho 1), priority-nocheck or cyclic-nocheck (--rho 1), each optionally @U for a block of U (and 2U candidates) instead of --block; empty: none")
	cols := fs.String("cols", "priority,random,cyclic", "column-layout schedules; empty: none")
	works := fs.String("round-works", "0,0.25", "column layout: comma-separated --round-work values; 0 is strads's default (2^24), a value below 1 that fraction of a worker's non-zeros, others non-zeros")
	fs.IntVar(&o.rowWorkers, "row-workers", 2, "workers of the row layout")
	fs.IntVar(&o.colWorkers, "col-workers", 1, "workers of the column layout (1 is its fastest)")
	fs.Float64Var(&o.rho, "rho", 0.1, "row layout: the dependency check's ρ for priority, random and cyclic")
	fs.IntVar(&o.block, "block", 32, "row layout: coordinates U per round")
	fs.IntVar(&o.candidates, "candidates", 64, "row layout: candidates U′ per round")
	fs.IntVar(&o.rowReport, "row-report-every", 0, "row layout: rounds between reports (0: ⌈p/(4·block)⌉, four reports a sweep; a report is a pass over the data)")
	fs.IntVar(&o.colReport, "col-report-every", 1, "column layout: rounds between reports")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the generated data")
	fs.Float64Var(&o.sklearnTol, "sklearn-tol", 1e-10, "scikit-learn Lasso's tol for F*")
	fs.StringVar(&o.python, "python", "/usr/bin/python3", "a Python with python3-sklearn (missing: F* from the strads runs alone)")
	fs.StringVar(&o.strads, "strads", "", "a strads binary to use (default: go build ./cmd/strads into a temporary directory)")
	fs.StringVar(&o.rev, "rev", "", "build strads from this git revision (git archive) instead of the working tree")
	fs.StringVar(&o.dataDir, "data-dir", filepath.Join(os.TempDir(), "strads-schedules-data"), "`directory` that keeps the generated data between invocations")
	fs.StringVar(&o.out, "out", "", "`directory` for summary.md, runs.csv and the plots (default bench/schedules/results; with --quick $TMPDIR/strads-schedules-quick)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, s := range splitList(*shapeList) {
		sh, ok := shapeByName(s)
		if !ok {
			return nil, fmt.Errorf("--shapes: unknown shape %q", s)
		}
		o.shapes = append(o.shapes, sh)
	}
	var err error
	if o.levels, err = parseLevels(*levels); err != nil {
		return nil, err
	}
	if o.variants, err = parseVariants(*rows, *cols, *works); err != nil {
		return nil, err
	}
	switch {
	case len(o.shapes) == 0:
		return nil, errors.New("--shapes: none given")
	case len(o.variants) == 0:
		return nil, errors.New("--rows and --cols: no variant given")
	case o.runs < 1:
		return nil, fmt.Errorf("--runs must be at least 1, got %d", o.runs)
	case o.timeLimit <= 0:
		return nil, fmt.Errorf("--time-limit must be > 0, got %v", o.timeLimit)
	case o.rowWorkers < 1 || o.colWorkers < 1:
		return nil, errors.New("--row-workers and --col-workers must be at least 1")
	case !(o.rho > 0 && o.rho < 1):
		return nil, fmt.Errorf("--rho must be in (0, 1) (shotgun and -nocheck are the variants without the check), got %v", o.rho)
	case o.block < 1 || o.candidates < o.block:
		return nil, fmt.Errorf("--block must be ≥ 1 and --candidates ≥ --block, got %d and %d", o.block, o.candidates)
	case o.rowReport < 0 || o.colReport < 1:
		return nil, errors.New("--row-report-every must be ≥ 0 and --col-report-every ≥ 1")
	case !(o.sklearnTol > 0):
		return nil, fmt.Errorf("--sklearn-tol must be > 0, got %v", o.sklearnTol)
	}
	if o.out == "" {
		o.out = filepath.Join("bench", "schedules", "results")
		if o.quick {
			o.out = filepath.Join(os.TempDir(), "strads-schedules-quick")
		}
	}
	return o, nil
}

// splitList splits a comma-separated list, dropping blanks and repeats.
func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// parseLevels parses the levels, which must be in (0, 1), and sorts them
// from the largest (the easiest) down.
func parseLevels(s string) ([]float64, error) {
	var ls []float64
	for _, f := range splitList(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0 && v < 1) {
			return nil, fmt.Errorf("--levels: %q is not a number in (0, 1)", f)
		}
		if !slices.Contains(ls, v) {
			ls = append(ls, v)
		}
	}
	if len(ls) == 0 {
		return nil, errors.New("--levels: none given")
	}
	slices.Sort(ls)
	slices.Reverse(ls)
	return ls, nil
}

// parseVariants returns the row-layout variants of rows, then the
// column-layout ones: for each round work of works, every schedule of cols.
func parseVariants(rows, cols, works string) ([]variant, error) {
	var vs []variant
	add := func(v variant) error {
		if slices.Contains(vs, v) {
			return fmt.Errorf("variant %q given twice", v.name())
		}
		vs = append(vs, v)
		return nil
	}
	for _, f := range splitList(rows) {
		sched, u, hasU := strings.Cut(f, "@")
		v := variant{layout: "rows", schedule: sched}
		if !slices.Contains(rowSchedules, sched) {
			return nil, fmt.Errorf("--rows: unknown schedule %q (want one of %s, optionally @U)", sched, strings.Join(rowSchedules, ", "))
		}
		if hasU {
			n, err := strconv.Atoi(u)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--rows: %q: the block after @ must be an integer ≥ 1", f)
			}
			v.block = n
		}
		if err := add(v); err != nil {
			return nil, fmt.Errorf("--rows: %w", err)
		}
	}
	schedules := splitList(cols)
	for _, s := range schedules {
		if !slices.Contains([]string{"priority", "random", "cyclic"}, s) {
			return nil, fmt.Errorf("--cols: unknown schedule %q (want priority, random or cyclic)", s)
		}
	}
	if len(schedules) == 0 {
		return vs, nil
	}
	ws := splitList(works)
	if len(ws) == 0 {
		return nil, errors.New("--round-works: none given")
	}
	for _, f := range ws {
		w, err := strconv.ParseFloat(f, 64)
		if err != nil || w < 0 || math.IsInf(w, 0) || (w >= 1 && w != math.Trunc(w)) {
			return nil, fmt.Errorf("--round-works: %q is not 0, a fraction below 1 or a whole number of non-zeros", f)
		}
		for _, s := range schedules {
			if err := add(variant{layout: "cols", schedule: s, work: w}); err != nil {
				return nil, fmt.Errorf("--cols: %w", err)
			}
		}
	}
	return vs, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "schedules bench:", err)
		os.Exit(1)
	}
}

// run parses the flags, runs every variant on every shape and writes the
// results.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	e, err := setup(ctx, o, stdout)
	if err != nil {
		return err
	}
	defer os.RemoveAll(e.tmp)
	var cases []*shapeCase
	for _, s := range o.shapes {
		c, err := e.benchShape(ctx, s)
		if err != nil {
			return fmt.Errorf("shape %s: %w", s.name, err)
		}
		cases = append(cases, c)
	}
	e.loadEnd = loadAverage()
	if err := writeSummary(filepath.Join(o.out, "summary.md"), e, cases); err != nil {
		return err
	}
	if err := writeRunsCSV(filepath.Join(o.out, "runs.csv"), o, cases); err != nil {
		return err
	}
	for _, c := range cases {
		if err := plotShape(filepath.Join(o.out, "shape-"+c.shape.name+".png"), c, o); err != nil {
			return fmt.Errorf("plot of shape %s: %w", c.shape.name, err)
		}
	}
	fmt.Fprintf(stdout, "\nwrote %s, %s and shape-<s>.png in %s\n", "summary.md", "runs.csv", o.out)
	return nil
}
