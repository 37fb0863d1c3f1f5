package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/strads-go/strads/bench/machine"
)

// relSub returns the relative sub-optimality (f − fstar)/|fstar|.
func relSub(f, fstar float64) float64 { return (f - fstar) / math.Abs(fstar) }

// timeToLevel returns the time and round of the first report of trace
// whose relative sub-optimality is at most level, and false if none is.
func timeToLevel(trace []sample, fstar, level float64) (float64, int64, bool) {
	for _, s := range trace {
		if relSub(s.objective, fstar) <= level {
			return s.time, s.round, true
		}
	}
	return math.Inf(1), -1, false
}

// analyze sets c's F* (the lower of scikit-learn's objective and every
// report's), the certified lower bound on the optimum (the best objective
// less its duality gap, of scikit-learn and of every report), and each
// run's whole-job time and round to each level.
func analyze(c *shapeCase, levels []float64) {
	c.fstar, c.fstarBy, c.lower = math.Inf(1), "", math.Inf(-1)
	if !math.IsNaN(c.fSklearn) {
		c.fstar, c.fstarBy = c.fSklearn, "scikit-learn"
		if !math.IsNaN(c.gapSklearn) {
			c.lower = c.fSklearn - c.gapSklearn
		}
	} else {
		c.fstar, c.fstarBy = c.fRef, "the reference run (`"+referenceFlags+"`)"
		for _, s := range c.refTrace {
			c.lower = max(c.lower, s.objective-s.gap)
		}
	}
	for _, r := range c.runs {
		for _, s := range r.trace {
			if s.objective < c.fstar {
				c.fstar, c.fstarBy = s.objective, fmt.Sprintf("a report of %s, run %d", r.v.name(), r.run)
			}
			if !math.IsNaN(s.gap) && !math.IsInf(s.gap, 0) {
				c.lower = max(c.lower, s.objective-s.gap)
			}
		}
	}
	for _, r := range c.runs {
		r.levelT, r.levelRnd = make([]float64, len(levels)), make([]int64, len(levels))
		for i, l := range levels {
			t, rnd, ok := timeToLevel(r.trace, c.fstar, l)
			if ok {
				t += r.setup
			}
			r.levelT[i], r.levelRnd[i] = t, rnd
		}
	}
}

// median returns the median of x (+Inf counts as a value: the median is
// +Inf when the middle run is); NaN for none.
func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// stats are the medians over a variant's runs on a shape.
type stats struct {
	v        variant
	n        int
	diverged int
	failed   int       // failed or killed
	reached  []int     // runs that reached each level
	t        []float64 // median whole-job time to each level, s (+Inf: not reached)
	rounds   []float64 // median round of that report (+Inf: not reached)
	bound    []float64 // the shortest wall of a run that did not reach the level
	setup    float64
	wall     float64
	upr      float64  // median updates per round
	msRound  float64  // median of elapsed/rounds (reports included), ms
	planMs   float64  // median plan time per round, ms
	stops    []string // "target ×2", "diverged ×1", in order of first appearance
	divRound float64  // median round of divergence
}

// variantStats returns the medians of the runs of v on c.
func variantStats(c *shapeCase, v variant, nLevels int) stats {
	st := stats{v: v, reached: make([]int, nLevels), t: make([]float64, nLevels), rounds: make([]float64, nLevels), bound: make([]float64, nLevels)}
	ts, rs := make([][]float64, nLevels), make([][]float64, nLevels)
	var setup, wall, upr, msr, plan, div []float64
	var stops []string
	count := map[string]int{}
	for i := range st.bound {
		st.bound[i] = math.Inf(1)
	}
	for _, r := range c.runs {
		if r.v != v {
			continue
		}
		st.n++
		wall = append(wall, r.wall)
		switch r.status {
		case "diverged":
			st.diverged++
			div = append(div, float64(r.rounds))
		case "failed", "killed":
			st.failed++
		default:
			setup = append(setup, r.setup)
			if r.rounds > 0 {
				upr = append(upr, float64(r.updates)/float64(r.rounds))
				msr = append(msr, 1000*r.elapsed/float64(r.rounds))
			}
			if !math.IsNaN(r.planMs) {
				plan = append(plan, r.planMs)
			}
		}
		if count[r.status]++; count[r.status] == 1 {
			stops = append(stops, r.status)
		}
		for i := range nLevels {
			t, rnd := math.Inf(1), math.Inf(1)
			if r.levelT != nil && !math.IsInf(r.levelT[i], 1) {
				st.reached[i]++
				t, rnd = r.levelT[i], float64(r.levelRnd[i])
			} else {
				st.bound[i] = min(st.bound[i], r.wall)
			}
			ts[i], rs[i] = append(ts[i], t), append(rs[i], rnd)
		}
	}
	for i := range nLevels {
		st.t[i], st.rounds[i] = median(ts[i]), median(rs[i])
	}
	st.setup, st.wall, st.upr, st.divRound = median(setup), median(wall), median(upr), median(div)
	st.msRound, st.planMs = median(msr), median(plan)
	for _, s := range stops {
		if len(stops) == 1 {
			st.stops = append(st.stops, s)
		} else {
			st.stops = append(st.stops, fmt.Sprintf("%s ×%d", s, count[s]))
		}
	}
	return st
}

// allDiverged reports whether every run (at least one) diverged.
func (st stats) allDiverged() bool { return st.n > 0 && st.diverged == st.n }

// timeCell writes a median time to a level for the table.
func (st stats) timeCell(i int) string {
	switch {
	case st.allDiverged():
		return fmt.Sprintf("diverged (round %.0f, %.2f s)", st.divRound, st.wall)
	case !math.IsInf(st.t[i], 1) && !math.IsNaN(st.t[i]):
		return fmt.Sprintf("%.2f", st.t[i])
	case st.n == 0:
		return "—"
	}
	return fmt.Sprintf("not reached (> %.1f s)", st.bound[i])
}

// roundsCell writes a median round to a level.
func (st stats) roundsCell(i int) string {
	if math.IsInf(st.rounds[i], 1) || math.IsNaN(st.rounds[i]) {
		return "—"
	}
	return fmt.Sprintf("%.0f", st.rounds[i])
}

// compared reports whether the summary gives the speed-up of pr, a
// priority variant, over v: another schedule of the same layout and block
// size, both with the dependency check or both without, and Shotgun
// against priority with the check (STRADS's comparison).
func compared(pr, v variant) bool {
	if pr.policy() != "priority" || v.policy() == "priority" || pr.group() != v.group() {
		return false
	}
	return pr.checked() == v.checked() || v.schedule == "shotgun" && pr.checked()
}

// fmtOr writes x with format, or "—" for NaN.
func fmtOr(x float64, format string) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf(format, x)
}

// group is what variants must share to be compared: the layout and the
// row layout's block or the column layout's round work.
func (v variant) group() variant {
	return variant{layout: v.layout, block: v.block, work: v.work}
}

// speedup returns other's median time to a level ÷ priority's as text: > 1
// when priority is faster; with a bound where one was not reached.
func speedup(other, pr stats, i int) string {
	to, tp := other.t[i], pr.t[i]
	switch {
	case other.allDiverged() && pr.allDiverged():
		return "n/a (both diverged)"
	case pr.allDiverged():
		return "0 (priority diverged)"
	case other.allDiverged() && math.IsInf(tp, 1):
		return "n/a (" + other.v.schedule + " diverged; priority did not reach it)"
	case other.allDiverged():
		return "∞ (" + other.v.schedule + " diverged)"
	case math.IsInf(to, 1) && math.IsInf(tp, 1):
		return "n/a (neither reached it)"
	case math.IsInf(tp, 1):
		return fmt.Sprintf("< %.2f", to/pr.bound[i])
	case math.IsInf(to, 1):
		return fmt.Sprintf("> %.2f", other.bound[i]/tp)
	}
	return fmt.Sprintf("%.2f", to/tp)
}

// levelLabel writes a level: "1e-3" for 0.001.
func levelLabel(l float64) string {
	if e := math.Log10(l); e == math.Round(e) {
		return fmt.Sprintf("1e%d", int(e))
	}
	return strconv.FormatFloat(l, 'g', -1, 64)
}

// shapeTable returns the markdown table of the medians of every variant
// on c, and the speed-ups of priority over the other schedules of the same
// layout and block size.
func shapeTable(c *shapeCase, o *options) string {
	var b strings.Builder
	b.WriteString("| variant | runs |")
	for _, l := range o.levels {
		fmt.Fprintf(&b, " time to %s (s) |", levelLabel(l))
	}
	for _, l := range o.levels {
		fmt.Fprintf(&b, " rounds to %s |", levelLabel(l))
	}
	b.WriteString(" updates/round | ms/round | plan (ms/round) | setup (s) | stop |\n|---|---|")
	b.WriteString(strings.Repeat("---|", 2*len(o.levels)+5) + "\n")
	all := map[variant]stats{}
	for _, v := range o.variants {
		st := variantStats(c, v, len(o.levels))
		all[v] = st
		fmt.Fprintf(&b, "| %s | %d |", v.name(), st.n)
		for i := range o.levels {
			b.WriteString(" " + st.timeCell(i) + " |")
		}
		for i := range o.levels {
			b.WriteString(" " + st.roundsCell(i) + " |")
		}
		fmt.Fprintf(&b, " %s | %s | %s | %s | %s |\n", fmtOr(st.upr, "%.1f"), fmtOr(st.msRound, "%.3g"), fmtOr(st.planMs, "%.3g"),
			fmtOr(st.setup, "%.2f"), strings.Join(st.stops, ", "))
	}
	var lines []string
	for _, pr := range o.variants {
		for _, v := range o.variants {
			if !compared(pr, v) {
				continue
			}
			var parts []string
			for k, l := range o.levels {
				parts = append(parts, fmt.Sprintf("%s at %s", speedup(all[v], all[pr], k), levelLabel(l)))
			}
			lines = append(lines, fmt.Sprintf("- %s over %s: %s\n", pr.name(), v.name(), strings.Join(parts, ", ")))
		}
	}
	if len(lines) > 0 {
		b.WriteString("\nSpeed-up of priority (median time of the other ÷ that of priority; > 1: priority is faster):\n\n")
		b.WriteString(strings.Join(lines, ""))
	}
	return b.String()
}

// commandLine returns the command that reproduces the results.
func commandLine(args []string) string {
	parts := []string{"go", "run", "./bench/schedules"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$*?;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// writeSummary writes summary.md.
func writeSummary(path string, e *env, cases []*shapeCase) error {
	o := e.o
	var b strings.Builder
	var lv []string
	for _, l := range o.levels {
		lv = append(lv, levelLabel(l))
	}
	b.WriteString("# Lasso: priority vs random vs Shotgun, per shape\n\n")
	b.WriteString("Command (from the repository root):\n\n```\n" + commandLine(o.args) + "\n```\n\n")
	b.WriteString("## Setup\n\n")
	fmt.Fprintf(&b, "- strads: %s\n", e.provenance)
	fmt.Fprintf(&b, "- machine: %s, %s/%s, %d CPUs, %s; load average (1, 5, 15 min) %s at the start, %s at the end\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), machine.CPUModel(), e.loadStart, e.loadEnd)
	fmt.Fprintf(&b, "- scikit-learn: %s\n", e.sklearn)
	fmt.Fprintf(&b, "- row layout (`--layout rows`): %d workers, U = %d (`--block`), U′ = %d (`--candidates`), ρ = %g for priority, random and cyclic; shotgun is `--schedule random --rho 1` and priority-nocheck `--schedule priority --rho 1` (no dependency check); `schedule U=N` is `--block N --candidates 2N`; a report every ⌈p/(4U)⌉ rounds unless `--row-report-every`\n",
		o.rowWorkers, o.block, o.candidates, o.rho)
	fmt.Fprintf(&b, "- column layout (`--layout cols`): %d worker(s), a report every %d round(s); `cols` is the default `--round-work` (2^24), `cols W=1/k` a block of 1/k of a worker's non-zeros\n", o.colWorkers, o.colReport)
	fmt.Fprintf(&b, "- every run: `--tol 0 --target F_ref·(1 + %s/2) --time-limit %v --seed r` (run r), the other flags at strads's defaults; %d run(s) of every variant, interleaved, runs after the first only where the first took less than %v\n",
		lv[len(lv)-1], o.timeLimit, o.runs, o.repeatUnder)
	b.WriteString("\n**Definitions.** F* is the lower of scikit-learn's objective (tol " + fmtFloat(o.sklearnTol) +
		") and every report of every run; the duality gaps (scikit-learn's, computed by scripts/fstar.py, and the reports') bound the optimum from below. " +
		"A run reaches a level L at its first report with (F − F*)/F* ≤ L. **Time to L** is the whole job up to that report: " +
		"the process's start, reading the data, the join (the **setup**: the process's wall time less strads's own time from its first round to its end) " +
		"plus the report's time since the first round; reports come every few rounds, so it is rounded up to a report. " +
		"**Rounds to L** is that report's round. Every cell is the median over the runs of a variant; a run that did not reach L counts as infinitely slow, " +
		"and `not reached (> T s)` gives the shortest whole job that did not reach it. A run whose model diverged fails (exit 1, \"the model diverged\"): " +
		"`diverged (round N, T s)` gives its round and whole-job time. **updates/round** is the coordinate updates over the rounds of the whole run, **ms/round** strads's time from the first round to the end over the rounds (reports included), **plan** the scheduler's compute per round as strads prints it.\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "\n## Shape %s: %s\n\n", c.shape.name, c.shape.desc)
		scaled := ""
		if c.shape.scaled != "" && !o.quick {
			scaled = " (" + c.shape.scaled + ")"
		}
		fmt.Fprintf(&b, "- data (`strads gen lasso`, seed %d): %s, %d non-zeros%s\n", o.seed, c.spec.describe(), c.nnz, scaled)
		fmt.Fprintf(&b, "- λ = %g·λ_max", c.shape.ratio)
		if !math.IsNaN(c.lambda) {
			fmt.Fprintf(&b, " = %.6g (λ_max %.6g)", c.lambda, c.lambdaMax)
		}
		fmt.Fprintf(&b, ", intercept %v; row-layout reports every %d rounds\n", c.shape.intercept, c.rowReport)
		fmt.Fprintf(&b, "- F* = %.15g, from %s", c.fstar, c.fstarBy)
		if !math.IsNaN(c.fSklearn) {
			fmt.Fprintf(&b, "; scikit-learn's F = %.15g (%s)", c.fSklearn, c.sklearnNote)
		} else if c.sklearnNote != "" {
			fmt.Fprintf(&b, "; scikit-learn %s", c.sklearnNote)
		}
		if !math.IsInf(c.lower, -1) {
			within := fmt.Sprintf("%.2g", relSub(c.fstar, c.lower))
			if relSub(c.fstar, c.lower) < 1e-15 {
				within = "rounding"
			}
			fmt.Fprintf(&b, "; the duality gaps prove the optimum ≥ %.15g (the best F − gap of scikit-learn and the reports), so F* is within %s of it, relatively", c.lower, within)
		}
		b.WriteString("\n\n")
		b.WriteString(shapeTable(c, o))
		fmt.Fprintf(&b, "\nPlot: [shape-%s.png](shape-%s.png).\n", c.shape.name, c.shape.name)
	}
	b.WriteString("\n## Runs\n\n| shape | variant | run | stop | whole job (s) | setup (s) | rounds | updates | final (F − F*)/F* |")
	for _, l := range lv {
		fmt.Fprintf(&b, " time to %s (s) |", l)
	}
	b.WriteString("\n|---|---|---|---|---|---|---|---|---|" + strings.Repeat("---|", len(lv)) + "\n")
	for _, c := range cases {
		for _, r := range c.runs {
			stop := r.status
			if r.note != "" {
				stop += " (" + r.note + ")"
			}
			final := "—"
			if !math.IsNaN(r.final) {
				final = fmt.Sprintf("%.2g", relSub(r.final, c.fstar))
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %.2f | %s | %d | %d | %s |", c.shape.name, r.v.name(), r.run, stop, r.wall, fmtSeconds(r.setup), r.rounds, r.updates, final)
			for i := range lv {
				t := "—"
				if r.levelT != nil {
					t = fmtSeconds(r.levelT[i])
				}
				b.WriteString(" " + t + " |")
			}
			b.WriteString("\n")
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// fmtSeconds writes a time, or "—" for NaN and +Inf.
func fmtSeconds(t float64) string {
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f", t)
}

// writeRunsCSV writes one line per run.
func writeRunsCSV(path string, o *options, cases []*shapeCase) error {
	var b strings.Builder
	b.WriteString("shape,variant,layout,schedule,block,round_work,run,status,wall_s,elapsed_s,setup_s,rounds,updates,plan_ms_per_round,round_p50_ms,final_objective,fstar")
	for _, l := range o.levels {
		fmt.Fprintf(&b, ",time_to_%s_s,round_to_%s", levelLabel(l), levelLabel(l))
	}
	b.WriteString("\n")
	for _, c := range cases {
		for _, r := range c.runs {
			fmt.Fprintf(&b, "%s,%s,%s,%s,%d,%g,%d,%s,%.3f,%s,%s,%d,%d,%s,%s,%s,%s", c.shape.name, r.v.name(), r.v.layout, r.v.schedule, r.v.block, r.v.work,
				r.run, r.status, r.wall, csvFloat(r.elapsed), csvFloat(r.setup), r.rounds, r.updates, csvFloat(r.planMs), csvFloat(r.p50Ms), csvFloat(r.final), fmtFloat(c.fstar))
			for i := range o.levels {
				t, rnd := "", ""
				if r.levelT != nil && !math.IsInf(r.levelT[i], 1) {
					t, rnd = strconv.FormatFloat(r.levelT[i], 'f', 3, 64), strconv.FormatInt(r.levelRnd[i], 10)
				}
				b.WriteString("," + t + "," + rnd)
			}
			b.WriteString("\n")
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// csvFloat writes x, or nothing for NaN.
func csvFloat(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return fmtFloat(x)
}
