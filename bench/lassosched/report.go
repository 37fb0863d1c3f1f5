package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/bench/machine"
	"github.com/strads-go/strads/scheduler"
)

// analyze sets F* to the lowest objective of any report of any run, and
// each run's time to the target and final sub-optimality. It returns F* and
// the best certified lower bound on the optimum, max(F − gap) over every
// report.
func analyze(runs []*run, target float64) (fstar, lower float64) {
	fstar, lower = math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		for _, s := range r.res.Trace {
			fstar = min(fstar, s.Objective)
			if s.HasGap {
				lower = max(lower, s.Objective-s.Gap)
			}
		}
	}
	for _, r := range runs {
		r.ttt = -1
		for _, s := range r.res.Trace {
			if relSub(s.Objective, fstar) <= target {
				r.ttt = s.Time
				break
			}
		}
		r.finalRS = relSub(r.res.Final.Objective, fstar)
	}
	return fstar, lower
}

// fstarWarning returns a warning if the duality gaps do not certify F* to
// within a tenth of the target: the times to the target then measure how
// close the runs came to the best of them rather than to the optimum.
func fstarWarning(fstar, lower, target float64) string {
	if b := relSub(fstar, lower); math.IsInf(lower, -1) || b > target/10 {
		return fmt.Sprintf("the duality gaps certify F* only to within %.3g of the optimum, relatively, not to within a tenth of the target %g: the times to the target measure how close the runs came to the best of them, not to the optimum. Use a longer --time-limit.", b, target)
	}
	return ""
}

func relSub(f, fstar float64) float64 { return (f - fstar) / math.Abs(fstar) }

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
	return (s[n/2-1] + s[n/2]) / 2 // +Inf if s[n/2] is
}

// stats are the medians over a variant's runs.
type stats struct {
	reached      int
	n            int
	ttt          float64 // seconds; +Inf when the median run did not reach it
	updPerSec    float64
	roundsPerSec float64
	workerBusy   float64 // percent
	schedBusy    float64 // percent
	coordBusy    float64 // percent
	p50, p99     float64 // milliseconds
	finalRS      float64
	maxElapsed   float64 // seconds: the longest run, a lower bound for an unreached time
}

func variantStats(runs []*run, v *variant) stats {
	var st stats
	var ttt, ups, rps, wb, sb, cb, p50, p99, frs []float64
	for _, r := range runs {
		if r.v != v {
			continue
		}
		st.n++
		t := math.Inf(1)
		if r.reached() {
			st.reached++
			t = r.ttt.Seconds()
		}
		ttt = append(ttt, t)
		ups = append(ups, r.updatesPerSec())
		rps = append(rps, r.roundsPerSec())
		wb = append(wb, r.workerBusy())
		sb = append(sb, r.schedulerBusy())
		cb = append(cb, r.coordinatorBusy())
		p50 = append(p50, ms(r.res.RoundQuantile(0.5)))
		p99 = append(p99, ms(r.res.RoundQuantile(0.99)))
		frs = append(frs, r.finalRS)
		st.maxElapsed = max(st.maxElapsed, r.res.Elapsed.Seconds())
	}
	st.ttt, st.updPerSec, st.roundsPerSec = median(ttt), median(ups), median(rps)
	st.workerBusy, st.schedBusy, st.coordBusy = median(wb), median(sb), median(cb)
	st.p50, st.p99, st.finalRS = median(p50), median(p99), median(frs)
	return st
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// axisName is the header of the table's first column: "schedule" when the
// variants differ in their schedule only, as in the plain comparison of
// schedules, "variant" otherwise.
func (o *options) axisName() string {
	if len(o.depths) == 1 && len(o.workers) == 1 && len(o.schedulers) == 1 {
		return "schedule"
	}
	return "variant"
}

// summaryTable returns the markdown table of the medians over the runs of
// every variant, with ratios to the first variant, and the speed-ups of
// priority over the other schedules at the same depth, workers and
// schedulers.
func summaryTable(runs []*run, o *options) string {
	var b strings.Builder
	tgt := strconv.FormatFloat(o.target, 'g', -1, 64)
	fmt.Fprintf(&b, "| %s | runs reaching %s | time to %s (s) | time ÷ first's | updates/s | updates/s ÷ first's | rounds/s | worker busy %% | scheduler busy %% | coordinator busy %% | round p50 (ms) | round p99 (ms) | final (F − F*)/F* |\n",
		o.axisName(), tgt, tgt)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	all := map[*variant]stats{}
	first := variantStats(runs, o.variants[0])
	for _, v := range o.variants {
		st := variantStats(runs, v)
		all[v] = st
		t := "not reached"
		if !math.IsInf(st.ttt, 1) {
			t = fmt.Sprintf("%.3f", st.ttt)
		}
		fmt.Fprintf(&b, "| %s | %d/%d | %s | %s | %.0f | %s | %.0f | %.1f | %.1f | %.1f | %.3f | %.3f | %.3g |\n",
			v.name, st.reached, st.n, t, timeRatio(st, first), st.updPerSec, ratio(st.updPerSec, first.updPerSec),
			st.roundsPerSec, st.workerBusy, st.schedBusy, st.coordBusy, st.p50, st.p99, st.finalRS)
	}
	fmt.Fprintf(&b, "\nMedians over the runs of each %s. Ratios are to the first %s, %s. Busy %% are means over the workers and over the scheduler parts.\n",
		o.axisName(), o.axisName(), o.variants[0].name)
	var lines []string
	for _, q := range o.variants {
		if q.policy == scheduler.Priority {
			continue
		}
		i := slices.IndexFunc(o.variants, func(p *variant) bool {
			return p.policy == scheduler.Priority && p.depth == q.depth && p.workers == q.workers && p.schedulers == q.schedulers
		})
		if i < 0 {
			continue
		}
		pr := o.variants[i]
		lines = append(lines, fmt.Sprintf("- speed-up of %s over %s (median time to %s of %s ÷ that of %s; > 1: priority is faster): %s\n",
			pr.name, q.name, tgt, q.name, pr.name, speedup(all[q], all[pr], pr.name)))
	}
	if len(lines) > 0 {
		b.WriteString("\n")
		b.WriteString(strings.Join(lines, ""))
	}
	return b.String()
}

// ratio returns a/b as text.
func ratio(a, b float64) string {
	if !(b > 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// timeRatio returns the ratio of the median times to the target of st and
// of first as text, with a bound where one of them was not reached.
func timeRatio(st, first stats) string {
	switch {
	case math.IsInf(st.ttt, 1) && math.IsInf(first.ttt, 1):
		return "n/a"
	case math.IsInf(first.ttt, 1):
		return fmt.Sprintf("< %.2f", st.ttt/first.maxElapsed)
	case math.IsInf(st.ttt, 1):
		return fmt.Sprintf("> %.2f", st.maxElapsed/first.ttt)
	case first.ttt == 0:
		return "n/a"
	}
	return fmt.Sprintf("%.2f", st.ttt/first.ttt)
}

// speedup returns t_other / t_priority of the median times as text, with a
// bound where one of them was not reached; name names the priority variant.
func speedup(other, pr stats, name string) string {
	switch {
	case math.IsInf(other.ttt, 1) && math.IsInf(pr.ttt, 1):
		return "n/a (neither reached the target)"
	case math.IsInf(pr.ttt, 1):
		return fmt.Sprintf("< %.3g (%s did not reach the target within %.3gs)", other.ttt/pr.maxElapsed, name, pr.maxElapsed)
	case math.IsInf(other.ttt, 1):
		return fmt.Sprintf("> %.3g (the other did not reach the target within %.3gs)", other.maxElapsed/pr.ttt, other.maxElapsed)
	case pr.ttt == 0:
		return fmt.Sprintf("n/a (%s's time is 0)", name)
	}
	return fmt.Sprintf("%.2f", other.ttt/pr.ttt)
}

// title returns the title of the comparison: "priority vs random vs
// cyclic scheduling", or the variants' names.
func (o *options) title() string {
	names := make([]string, len(o.variants))
	for i, v := range o.variants {
		names[i] = v.name
	}
	t := strings.Join(names, " vs ")
	if o.axisName() == "schedule" {
		t += " scheduling"
	}
	return t
}

func joinInts(x []int) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}

func writeSummary(path string, o *options, args []string, nnz int64, fstar, lower float64, runs []*run, table string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Lasso: %s\n\n", o.title())
	b.WriteString("Command (from the repository root):\n\n```\n")
	b.WriteString(commandLine(args))
	b.WriteString("\n```\n\n")
	b.WriteString("## Setup\n\n")
	fmt.Fprintf(&b, "- data (lasso.Generate): %d samples × %d features, density %g, %d correlated groups with correlation %g, %d true non-zeros, noise %g, seed %d; %d non-zeros in X\n",
		o.gen.Samples, o.gen.Features, o.gen.Density, o.gen.CorrGroups, o.gen.Corr, o.gen.TrueNNZ, o.gen.Noise, o.gen.Seed, nnz)
	fmt.Fprintf(&b, "- Lasso: λ = %g·λ_max, intercept %v\n", o.lambdaRatio, o.intercept)
	fmt.Fprintf(&b, "- scheduler: U = %d (--block), U′ = %d (--candidates), ρ = %g, γ = %g, η = %g, warm-up %d (-1: one sweep); run r seeds the scheduler with %d+r\n",
		o.block, o.candidates, o.rho, o.gamma, o.eta, o.warmup, o.gen.Seed)
	fmt.Fprintf(&b, "- variants: schedules %s × depths %s × workers %s × schedulers %s\n",
		strings.Join(policyNames(o.schedules), ", "), joinInts(o.depths), joinInts(o.workers), joinInts(o.schedulers))
	fmt.Fprintf(&b, "- runtime: job.Run on the embedded NATS server, runs per variant: %d (interleaved), time limit %v per run, stop when gap ≤ %g·F, objective reported every %d rounds\n",
		o.runs, o.timeLimit, o.tol, o.reportEvery)
	fmt.Fprintf(&b, "- machine: %s, %s/%s, %d CPUs (GOMAXPROCS %d), %s\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), machine.CPUModel())
	b.WriteString("\n## Results\n\n")
	fmt.Fprintf(&b, "F* = %.15g is the lowest objective reported by any run of any %s. ", fstar, o.axisName())
	if !math.IsInf(lower, -1) {
		fmt.Fprintf(&b, "The best duality gap of all the reports bounds the optimum from below by %.15g, so F* is within %.3g of the optimum, relatively. ",
			lower, max(relSub(fstar, lower), 0))
	}
	if w := fstarWarning(fstar, lower, o.target); w != "" {
		b.WriteString("\n\n**Warning:** " + w + "\n\n")
	}
	fmt.Fprintf(&b, "The time to %g is the time since the first round of the first report with (F − F*)/F* ≤ %g (reports every %d rounds, so it is rounded up to a report; with depth D a report reflects the state D rounds before the round it comes with). "+
		"Updates/s and rounds/s are the run's coordinate updates and rounds over its elapsed time. Busy %% is a role's compute time over the elapsed time (coordinator.Result.Timing): for the workers, applying updates, pushing and reporting, mean over the workers; for the schedulers, planning, mean over the parts; for the coordinator, all but waiting for messages. "+
		"The round latencies are each run's median and 99th percentile, from sending a round to the workers to the end of its Pull. Every column is the median over the runs of a %s.\n\n",
		o.target, o.target, o.reportEvery, o.axisName())
	b.WriteString(table)
	b.WriteString("\n### Runs\n\n")
	fmt.Fprintf(&b, "| %s | run | seed | stop | elapsed (s) | rounds | updates | final F | final gap | nnz | time to %g (s) | updates/s | rounds/s | worker busy %% | scheduler busy %% | coordinator busy %% | plan (ms/round) | push (ms/round) | round p50 (ms) | round p99 (ms) | rounds in flight, max |\n", o.axisName(), o.target)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		t := "not reached"
		if r.reached() {
			t = fmt.Sprintf("%.3f", r.ttt.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %.3f | %d | %d | %.12g | %.3g | %d | %s | %.0f | %.0f | %.1f | %.1f | %.1f | %.3f | %.3f | %.3f | %.3f | %d |\n",
			r.v.name, r.r, r.seed, r.res.Reason, r.res.Elapsed.Seconds(), r.res.Rounds, r.res.Updates,
			r.res.Final.Objective, r.res.Final.Gap, r.res.Final.NNZ, t, r.updatesPerSec(), r.roundsPerSec(),
			r.workerBusy(), r.schedulerBusy(), r.coordinatorBusy(), r.perRound(r.res.Timing.Plan), r.perRound(r.res.Timing.Push),
			ms(r.res.RoundQuantile(0.5)), ms(r.res.RoundQuantile(0.99)), r.res.MaxInFlight)
	}
	b.WriteString("\nPlan is the schedulers' compute per round, push the slowest worker's compute per round. ")
	b.WriteString("Per-run traces: `lasso-<variant>-run<r>.csv` (the coordinator's metrics: time_s,round,objective,nnz,updates,gap, then per-round means). Plot: `objective.png` / `objective.svg`.\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func policyNames(ps []scheduler.Policy) []string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return s
}

// commandLine returns the command that reproduces this run, shell-quoted.
func commandLine(args []string) string {
	parts := []string{"go", "run", "./bench/lassosched"}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=.,/:+@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func writeRunsCSV(path string, runs []*run) error {
	var b strings.Builder
	b.WriteString("variant,schedule,depth,workers,schedulers,run,seed,reason,elapsed_s,rounds,updates,final_objective,final_gap,nnz,time_to_target_s," +
		"updates_per_s,rounds_per_s,worker_busy_pct,scheduler_busy_pct,coordinator_busy_pct,plan_ms_per_round,push_ms_per_round,round_p50_ms,round_p99_ms,max_in_flight\n")
	for _, r := range runs {
		t := ""
		if r.reached() {
			t = strconv.FormatFloat(r.ttt.Seconds(), 'f', 6, 64)
		}
		fmt.Fprintf(&b, "%s,%s,%d,%d,%d,%d,%d,%s,%.6f,%d,%d,%.17g,%.6g,%d,%s,%.1f,%.1f,%.2f,%.2f,%.2f,%.4f,%.4f,%.4f,%.4f,%d\n",
			r.v.name, r.v.policy, r.v.depth, r.v.workers, r.v.schedulers, r.r, r.seed, r.res.Reason, r.res.Elapsed.Seconds(), r.res.Rounds, r.res.Updates,
			r.res.Final.Objective, r.res.Final.Gap, r.res.Final.NNZ, t, r.updatesPerSec(), r.roundsPerSec(),
			r.workerBusy(), r.schedulerBusy(), r.coordinatorBusy(), r.perRound(r.res.Timing.Plan), r.perRound(r.res.Timing.Push),
			ms(r.res.RoundQuantile(0.5)), ms(r.res.RoundQuantile(0.99)), r.res.MaxInFlight)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
