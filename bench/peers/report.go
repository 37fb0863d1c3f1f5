package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/strads-go/strads/bench/machine"
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	e, err := setup(ctx, o, stdout)
	if err != nil {
		return err
	}
	defer os.RemoveAll(e.tmp)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	start := time.Now()
	var cases []*theCase
	var skipped []string
	for _, name := range o.shapes {
		s, _ := shapeByName(name)
		for _, prob := range o.problems {
			if _, ok := s.fits[prob]; !ok {
				continue
			}
			c, err := e.prepare(ctx, s, prob)
			if err != nil && s.real != "" && ctx.Err() == nil {
				// A real data set whose package is missing is skipped.
				fmt.Fprintf(stdout, "skipping %s: %v\n", s.name, err)
				skipped = append(skipped, fmt.Sprintf("%s (%s): %s", s.name, s.source, firstLine(err.Error())))
				break
			}
			if err != nil {
				return err
			}
			if err := e.bench(ctx, c); err != nil {
				return err
			}
			c.d = nil
			cases = append(cases, c)
			if err := write(e, cases, skipped, time.Since(start)); err != nil {
				return err
			}
		}
	}
	if err := write(e, cases, skipped, time.Since(start)); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(o.out, "summary.md"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n%s", b)
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// stats are the medians of one system's runs on a case.
type stats struct {
	label          string
	system         string
	workers        int
	schedule       string  // strads's
	runs, ok, hits int     // runs, runs that wrote a model, strads runs that reached the target
	time           float64 // whole job (peers) or whole job to the target (strads; +Inf: not reached), median
	tmin, tmax     float64
	fit, cpu       float64 // medians
	obj            float64 // median
	nnz            int     // of the median-objective run
	notes          []string
	statuses       []string
}

// summarize returns the medians of every system of c, peers first.
func summarize(c *theCase) []stats {
	var out []stats
	var labels []string
	for _, r := range c.runs {
		if !slices.Contains(labels, r.label()) {
			labels = append(labels, r.label())
		}
	}
	for _, l := range labels {
		s := stats{label: l}
		var times, fits, cpus, objs []float64
		var mine []runResult
		for _, r := range c.runs {
			if r.label() != l {
				continue
			}
			s.system, s.workers, s.schedule = r.system, r.workers, r.schedule
			s.runs++
			t := r.wall
			if r.system == "strads" {
				t = r.toTarget
				if r.reached {
					s.hits++
				}
			} else if !r.ok {
				t = math.Inf(1)
			}
			times = append(times, t)
			fits = append(fits, r.fit)
			cpus = append(cpus, r.cpu)
			if r.ok {
				s.ok++
				objs = append(objs, r.obj)
				mine = append(mine, r)
			}
			if r.note != "" && !slices.Contains(s.notes, r.note) {
				s.notes = append(s.notes, r.note)
			}
			if !slices.Contains(s.statuses, r.status) {
				s.statuses = append(s.statuses, r.status)
			}
		}
		s.time, s.tmin, s.tmax = median(times), slices.Min(times), slices.Max(times)
		s.fit, s.cpu = median(fits), median(cpus)
		s.obj = math.NaN()
		if len(objs) > 0 {
			s.obj = median(objs)
			// The nnz of the run closest to the median objective.
			slices.SortFunc(mine, func(a, b runResult) int { return cmpFloat(math.Abs(a.obj-s.obj), math.Abs(b.obj-s.obj)) })
			s.nnz = mine[0].nnz
		}
		out = append(out, s)
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fmtSec formats a time in seconds; +Inf is "not reached".
func fmtSec(t float64) string {
	switch {
	case math.IsInf(t, 1):
		return "not reached"
	case math.IsNaN(t):
		return "—"
	case t < 10:
		return fmt.Sprintf("%.2f", t)
	}
	return fmt.Sprintf("%.1f", t)
}

// ratio formats a/b for the speed ratio strads ÷ peer; a not reached is a
// lower bound (the time limit).
func ratio(a, b, limit float64) string {
	switch {
	case math.IsNaN(a) || math.IsNaN(b) || math.IsInf(b, 1) || b <= 0:
		return "—"
	case math.IsInf(a, 1):
		return fmt.Sprintf("> %.3g", limit/b)
	}
	return fmt.Sprintf("%.3g", a/b)
}

// fmtRel formats a relative difference.
func fmtRel(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case x == 0:
		return "0"
	}
	return fmt.Sprintf("%+.2e", x)
}

// write writes summary.md, runs.csv and the plots of the cases so far.
func write(e *env, cases []*theCase, skipped []string, took time.Duration) error {
	o := e.o
	var csv strings.Builder
	csv.WriteString("shape,problem,system,workers,run,wall_s,cpu_s,fit_s,status,objective,rel_diff,nnz,reached,to_target_s,note\n")
	for _, c := range cases {
		for _, r := range c.runs {
			reached := ""
			if r.system == "strads" {
				reached = fmt.Sprint(r.reached)
			}
			fmt.Fprintf(&csv, "%s,%s,%s,%d,%d,%.3f,%.3f,%.3f,%s,%.17g,%.3e,%d,%s,%.3f,%q\n", c.shape.name, c.prob, r.system, r.workers, r.run,
				r.wall, r.cpu, r.fit, r.status, r.obj, relDiff(r.obj, c.best), r.nnz, reached, r.toTarget, r.note)
		}
	}
	if err := os.WriteFile(filepath.Join(o.out, "runs.csv"), []byte(csv.String()), 0o644); err != nil {
		return err
	}

	var s strings.Builder
	fmt.Fprintf(&s, "# strads against single-threaded peers, whole job against whole job\n\n")
	fmt.Fprintf(&s, "Command: `go run ./bench/peers %s` (%s in all).\n\n", strings.Join(o.args, " "), took.Round(time.Second))
	fmt.Fprintf(&s, "Machine: %d CPUs, %s; load average %s at the start, %s at the end; %s.\n\n", runtime.NumCPU(), machine.CPUModel(), e.loadStart, machine.LoadAverage(), runtime.Version())
	fmt.Fprintf(&s, "Peers: %s. They run with OMP/OPENBLAS/MKL_NUM_THREADS=1.\n\n", strings.Join(e.versions, "; "))
	fmt.Fprintf(&s, "strads: built from %s.\n\n", e.provenance)
	if e.hasTarget {
		fmt.Fprintf(&s, "strads: default flags, `--target F_best·(1 + %g) --tol 0`: it stops at the first report at or below the target.\n\n", o.targetRel)
	} else {
		fmt.Fprintf(&s, "strads: default flags; this strads has **no `--target` flag**, so it ran with `--tol 1e-9` and its time to the target is estimated from its metrics (the wall time less the time after the first report at or below F_best·(1 + %g)).\n\n", o.targetRel)
	}
	fmt.Fprintf(&s, "Times are medians of %d interleaved runs (min–max in brackets), whole processes: start, imports, reading the LIBSVM file, the fit, writing the model. "+
		"*Fit only* is the fit as the peer's script timed it; for liblinear, which does not time it, the run less the same run stopped after its first pass (`-e 1e30`: start, read, one gradient, write); for strads the time from its first round to the end. "+
		"Every objective F is computed by the same Go code from the data file and the written coefficients. "+
		"*strads ÷ peer* divides strads's median whole-job time to the target by the peer's median whole-job time (> 1: strads is slower). "+
		"A strads run not at the target after %s counts as not reached.\n\n", o.runs, o.timeLimit)
	if len(skipped) > 0 {
		s.WriteString("Skipped: " + strings.Join(skipped, "; ") + ".\n\n")
	}

	// The overview: one line per case.
	s.WriteString("## Overview\n\n| problem | shape | n × p | F_best (by) | fastest peer, whole job (s) |")
	for _, w := range o.workers {
		fmt.Fprintf(&s, " strads w=%d to target (s) | ÷ fastest peer |", w)
	}
	s.WriteString("\n|---|---|---|---|---|" + strings.Repeat("---|---|", len(o.workers)) + "\n")
	for _, c := range cases {
		st := summarize(c)
		fastest := stats{time: math.Inf(1)}
		for _, x := range st {
			if x.system != "strads" && x.time < fastest.time {
				fastest = x
			}
		}
		fmt.Fprintf(&s, "| %s | %s | %d × %d | %.10g (%s) | %s: %s |", c.prob, c.shape.name, c.n, c.p, c.best, c.bestBy, fastest.label, fmtSec(fastest.time))
		for _, w := range o.workers {
			x := findStats(st, fmt.Sprintf("strads w=%d", w))
			fmt.Fprintf(&s, " %s | %s |", fmtSec(x.time), ratio(x.time, fastest.time, o.timeLimit.Seconds()))
		}
		s.WriteString("\n")
	}
	s.WriteString("\n")

	for _, c := range cases {
		if err := writeCurves(filepath.Join(o.out, fmt.Sprintf("%s-%s-curves.csv", c.shape.name, c.prob)), c); err != nil {
			return err
		}
		writeCase(&s, e, c)
		if err := plotCase(filepath.Join(o.out, fmt.Sprintf("%s-%s.png", c.shape.name, c.prob)), c, summarize(c), o); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(o.out, "summary.md"), []byte(s.String()), 0o644)
}

func findStats(st []stats, label string) stats {
	for _, x := range st {
		if x.label == label {
			return x
		}
	}
	return stats{time: math.NaN(), obj: math.NaN()}
}

// writeCase writes the section of one case.
func writeCase(s *strings.Builder, e *env, c *theCase) {
	o := e.o
	fmt.Fprintf(s, "## %s, shape %s: %s\n\n", c.prob, c.shape.name, c.shape.desc)
	if c.shape.real != "" {
		fmt.Fprintf(s, "Data: %s, exported by `bench/peers/scripts/%s`: ", c.shape.source, c.shape.export[1])
	} else {
		fmt.Fprintf(s, "Data: `strads gen %s` %s, seed %d: ", c.prob, c.shape.spec(o.quick).describe(), o.seed)
	}
	fmt.Fprintf(s, "%d samples × %d features, %d non-zeros (density %.3g).\n\n", c.n, c.p, c.nnz, float64(c.nnz)/float64(c.n)/float64(c.p))
	icpt := "no intercept"
	if c.fit.intercept {
		icpt = "an unpenalized intercept"
	}
	fmt.Fprintf(s, "λ = %g·λ_max = %.10g (λ_max = %.10g), %s", c.fit.ratio, c.lambda, c.lambdaMax, icpt)
	if c.prob == logisticProblem {
		fmt.Fprintf(s, "; liblinear's C = 1/(λn) = %.10g", c.c)
	}
	fmt.Fprintf(s, ". F_best = %.12g (%s); strads's target F_best·(1 + %g) = %.12g.\n\n", c.best, c.bestBy, o.targetRel, c.target)
	for _, cmd := range c.commands {
		fmt.Fprintf(s, "- %s\n", cmd)
	}
	s.WriteString("\n")
	st := summarize(c)
	s.WriteString("| system | workers | runs | whole job (s), median (min–max) | fit only (s) | CPU (s) | F | (F − F_best)/F_best | nnz |")
	for _, w := range o.workers {
		fmt.Fprintf(s, " strads w=%d ÷ this |", w)
	}
	s.WriteString(" notes |\n|---|---|---|---|---|---|---|---|---|" + strings.Repeat("---|", len(o.workers)) + "---|\n")
	for _, x := range st {
		workers, runs := "1 thread", fmt.Sprintf("%d/%d ok", x.ok, x.runs)
		if x.system == "strads" {
			workers = fmt.Sprint(x.workers)
			runs = fmt.Sprintf("%d/%d reached", x.hits, x.runs)
		}
		spread := fmt.Sprintf(" (%s–%s)", fmtSec(x.tmin), fmtSec(x.tmax))
		if math.IsInf(x.tmin, 1) {
			spread = ""
		}
		system := x.system
		if x.system == "strads" && x.schedule != defaultSchedule {
			system = "strads, " + x.schedule + " schedule"
		}
		fmt.Fprintf(s, "| %s | %s | %s | %s%s | %s | %s | %.12g | %s | %d |", system, workers, runs, fmtSec(x.time), spread,
			fmtSec(x.fit), fmtSec(x.cpu), x.obj, fmtRel(relDiff(x.obj, c.best)), x.nnz)
		for _, w := range o.workers {
			if x.system == "strads" && x.schedule == defaultSchedule {
				s.WriteString(" — |")
				continue
			}
			y := findStats(st, fmt.Sprintf("strads w=%d", w))
			fmt.Fprintf(s, " %s |", ratio(y.time, x.time, o.timeLimit.Seconds()))
		}
		notes := slices.Clone(x.notes)
		if x.system == "strads" {
			notes = append([]string{"stop: " + strings.Join(x.statuses, ", ")}, notes...)
		}
		fmt.Fprintf(s, " %s |\n", strings.Join(notes, "; "))
	}
	fmt.Fprintf(s, "\n![%s %s](%s-%s.png)\n\n", c.prob, c.shape.name, c.shape.name, c.prob)
}

// curvePoints is the most rows of a strads run that the curves CSV keeps.
const curvePoints = 100

// writeCurves writes strads's reports of every run of c (thinned to about
// curvePoints each, evenly in log time) as CSV
// schedule,workers,run,time_s,objective,rel_subopt, the time since the
// process started (the metrics' time since the first round plus the setup).
func writeCurves(path string, c *theCase) error {
	var b strings.Builder
	b.WriteString("schedule,workers,run,time_s,objective,rel_subopt\n")
	for _, r := range c.runs {
		if r.system != "strads" {
			continue
		}
		shift := r.wall - r.elapsed
		for _, s := range thin(r.trace, curvePoints) {
			fmt.Fprintf(&b, "%s,%d,%d,%.4f,%.15g,%.4e\n", r.schedule, r.workers, r.run, s[0]+shift, s[1], relDiff(s[1], c.best))
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// thin returns about k of the (time, value) rows of tr, evenly spaced in
// log time, and always the first and the last.
func thin(tr [][2]float64, k int) [][2]float64 {
	if len(tr) <= k {
		return tr
	}
	lo := math.Log10(max(tr[0][0], 1e-4))
	step := (math.Log10(max(tr[len(tr)-1][0], 1e-4)) - lo) / float64(k)
	out := [][2]float64{tr[0]}
	next := lo + step
	for _, s := range tr[1 : len(tr)-1] {
		if math.Log10(max(s[0], 1e-4)) >= next {
			out = append(out, s)
			next = math.Log10(max(s[0], 1e-4)) + step
		}
	}
	return append(out, tr[len(tr)-1])
}
