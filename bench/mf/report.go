package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/strads-go/strads/bench/machine"
)

// bufioWriter is what atomicfile.Write hands out.
type bufioWriter = bufio.Writer

// timeToTarget returns the time of the first evaluation of r with a test
// RMSE at or below target, or NaN.
func (r *run) timeToTarget(target float64) float64 {
	for _, e := range r.model.Trace {
		if e.TestRMSE <= target {
			return e.Time.Seconds()
		}
	}
	return math.NaN()
}

// wallRate returns the ratings processed per second of wall-clock time over
// the rounds after the first (whose task carries the first evaluation):
// the work of those rounds, taken as the same in every round, over the sum
// of their latencies.
func (r *run) wallRate() float64 {
	rt := r.res.RoundTimes
	if len(rt) < 2 {
		return math.NaN()
	}
	var d time.Duration
	for _, x := range rt[1:] {
		d += x
	}
	work := r.model.Final().Ratings * float64(len(rt)-1) / float64(len(rt))
	return work / d.Seconds()
}

func writeRuns(w *bufio.Writer, runs []*run, o *options) error {
	w.WriteString("phase,algo,rank,workers,lr,decay,run,iters,time_s,job_s,train_rmse,test_rmse,time_to_target_s,ratings_per_core_s,ratings_per_s_wall\n")
	for _, r := range runs {
		f := r.model.Final()
		fmt.Fprintf(w, "%s,%s,%d,%d,%g,%g,%d,%g,%.3f,%.3f,%.6f,%.6f,%s,%.4g,%.4g\n",
			r.phase, r.v.algo, r.v.rank, r.v.workers, r.v.lr, r.v.decay, r.n, f.Iter, f.Time.Seconds(), r.wall.Seconds(),
			f.TrainRMSE, f.TestRMSE, num(r.timeToTarget(o.target*o.gen.Noise)), f.RatingsPerCoreSec, r.wallRate())
	}
	return nil
}

// num formats v, empty for NaN.
func num(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return fmt.Sprintf("%.3f", v)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	// NaN (not reached) sorts last: it counts as slower than any time.
	slices.SortFunc(s, func(a, b float64) int {
		switch {
		case math.IsNaN(a) && math.IsNaN(b):
			return 0
		case math.IsNaN(a):
			return 1
		case math.IsNaN(b) || a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2]
}

// group returns the runs of phase, by variant, in first-seen order.
func group(runs []*run, phase string) ([]variant, map[variant][]*run) {
	var order []variant
	by := map[variant][]*run{}
	for _, r := range runs {
		if r.phase != phase {
			continue
		}
		if _, ok := by[r.v]; !ok {
			order = append(order, r.v)
		}
		by[r.v] = append(by[r.v], r)
	}
	return order, by
}

func (o *options) summary(w *bufio.Writer, runs []*run, train, test string) error {
	fmt.Fprintf(w, "# Matrix factorization: rotation vs unscheduled vs CCD++\n\n")
	fmt.Fprintf(w, "Command: `go run ./bench/mf %s`\n\n", strings.Join(os.Args[1:], " "))
	if o.data != "" {
		fmt.Fprintf(w, "Data: %s, %s\n\n", train, test)
	} else {
		g := o.gen
		fmt.Fprintf(w, "Data: `mf.Generate`, %d users, %d items, rank %d, %d ratings (%.0f%% test), noise %g, item popularity ∝ j^-%g, seed %d.\n\n",
			g.Users, g.Items, g.Rank, g.Ratings, 100*g.TestFraction, g.Noise, g.Alpha, g.Seed)
	}
	fmt.Fprintf(w, "Jobs: λ = %g, an embedded NATS server with in-process connections, all roles in this process. Machine: %d CPUs (%s), %s, load average %s at the end.\n\n",
		o.lambda, runtime.NumCPU(), machine.CPUModel(), runtime.Version(), machine.LoadAverage())

	if order, by := group(runs, "tune"); len(order) > 0 {
		fmt.Fprintf(w, "## Tuning (%d iterations, %d workers)\n\n| schedule | rank | lr | decay | test RMSE |\n|---|---|---|---|---|\n", o.tuneIters, o.workers)
		for _, v := range order {
			fmt.Fprintf(w, "| %s | %d | %g | %g | %.5f |\n", v.algo, v.rank, v.lr, v.decay, by[v][0].model.Final().TestRMSE)
		}
		w.WriteString("\n")
	}
	target := o.target * o.gen.Noise
	if order, by := group(runs, "curve"); len(order) > 0 {
		fmt.Fprintf(w, "## Test RMSE against time (%d workers, %d iterations, medians of %d runs)\n\n", o.workers, o.iters, o.runs)
		fmt.Fprintf(w, "| variant | time to test RMSE %.3g (s) | runs reaching it | test RMSE after 5 iterations | final test RMSE | final train RMSE | s per iteration | ratings/s per core |\n|---|---|---|---|---|---|---|---|\n", target)
		for _, v := range order {
			var tt, at5, fin, tr, per, rate []float64
			reached := 0
			for _, r := range by[v] {
				t := r.timeToTarget(target)
				if !math.IsNaN(t) {
					reached++
				}
				f := r.model.Final()
				tt = append(tt, t)
				at5 = append(at5, testAt(r, 5))
				fin = append(fin, f.TestRMSE)
				tr = append(tr, f.TrainRMSE)
				per = append(per, f.Time.Seconds()/f.Iter)
				rate = append(rate, f.RatingsPerCoreSec)
			}
			t := "not reached"
			if m := median(tt); !math.IsNaN(m) {
				t = fmt.Sprintf("%.2f", m)
			}
			fmt.Fprintf(w, "| %s | %s | %d/%d | %.4f | %.4f | %.4f | %.3f | %.3g |\n",
				v, t, reached, len(by[v]), median(at5), median(fin), median(tr), median(per), median(rate))
		}
		w.WriteString("\nTimes are from the job's start (after loading), and include an evaluation (a pass over all training and test ratings) after every iteration.\n\n")
	}
	if order, by := group(runs, "throughput"); len(order) > 0 {
		fmt.Fprintf(w, "## Throughput (%d iterations, one run each)\n\n| variant | ratings/s per core (compute) | ratings/s (wall, rounds 2…) | job time (s), loading included |\n|---|---|---|---|\n", o.tpIters)
		for _, v := range order {
			r := by[v][0]
			fmt.Fprintf(w, "| %s | %.3g | %.3g | %.1f |\n", v, r.model.Final().RatingsPerCoreSec, r.wallRate(), r.wall.Seconds())
		}
		w.WriteString("\nPer core: ratings processed over the workers' summed compute time (Push). Wall: over the summed latency of the rounds after the first. A CCD++ iteration (one pass per feature) counts as one pass over the ratings.\n")
	}
	return nil
}

// testAt returns the test RMSE of r after it iterations (NaN if none).
func testAt(r *run, it float64) float64 {
	for _, e := range r.model.Trace {
		if e.Iter == it {
			return e.TestRMSE
		}
	}
	return math.NaN()
}
