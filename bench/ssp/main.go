// Command ssp measures the seeds' comparisons of data parallelism on the
// parameter server (issue 26): matrix factorization by SGD under BSP, SSP,
// ESSP and asynchronous consistency, with and without a straggler, on 1 and
// more workers, against the scheduled solvers (the rotation's DSGD, CCD++,
// ALS), whole job against whole job with the built strads binary.
//
// Every variant runs --runs times, interleaved, on the same generated
// ratings (strads gen mf), each for --iters iterations with a metrics CSV.
// The target is a test RMSE within --within of the lowest any run reached;
// the report gives, per variant, the median seconds and iterations to the
// target ("-" when a run never reached it, counted as +∞ in the median), the
// median final test RMSE, and the staleness of the reads.
//
// Usage, from the repository root:
//
//	go build -o /tmp/strads ./cmd/strads
//	go run ./bench/ssp --strads /tmp/strads [flags]
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// variant is one way to train: a --mode (or a scheduled --algo) and its
// settings.
type variant struct {
	name string
	args []string
}

// parseVariant takes bsp, ssp:S, essp:S, async, rotation, ccd or als.
func parseVariant(s string) (variant, error) {
	mode, stale, _ := strings.Cut(s, ":")
	switch mode {
	case "bsp", "async":
		return variant{s, []string{"--mode", mode}}, nil
	case "ssp", "essp":
		if _, err := strconv.Atoi(stale); err != nil {
			return variant{}, fmt.Errorf("variant %q: want %s:STALENESS", s, mode)
		}
		return variant{s, []string{"--mode", mode, "--staleness", stale}}, nil
	case "rotation":
		return variant{s, nil}, nil
	case "ccd", "als":
		return variant{s, []string{"--algo", mode}}, nil
	}
	return variant{}, fmt.Errorf("unknown variant %q (bsp, ssp:S, essp:S, async, rotation, ccd, als)", s)
}

// key names a row of the tables: a variant, its workers and straggler.
type key struct {
	v    string
	w    int
	slow string
}

// String returns the first three columns of the row.
func (k key) String() string { return fmt.Sprintf("%s | %d | %s", k.v, k.w, k.slow) }

// run is one job's result.
type run struct {
	times, iters, rmse []float64 // per evaluation
	stale              string
	err                error
	wall               time.Duration
}

func main() {
	strads := flag.String("strads", "strads", "the strads binary")
	dir := flag.String("dir", "", "directory for the data and the metrics (default: a temporary one)")
	ratings := flag.Int("ratings", 2_000_000, "ratings to generate")
	users := flag.Int("users", 20_000, "users")
	items := flag.Int("items", 4_000, "items")
	variants := flag.String("variants", "bsp,ssp:1,ssp:3,ssp:10,essp:3,async,rotation", "variants, comma-separated")
	workers := flag.String("workers", "1,2", "worker counts, comma-separated")
	slow := flag.String("slow", "1,2,2t", "stragglers, comma-separated: 1 none, F worker 0 F× as slow all along, Ft one worker F× as slow at every clock, in turn (--slow-turns)")
	iters := flag.Int("iters", 20, "iterations of every job")
	runs := flag.Int("runs", 3, "runs of every variant")
	within := flag.Float64("within", 0.01, "the first target: a test RMSE within this fraction of the lowest reached")
	targets := flag.String("targets", "", "more targets, comma-separated test RMSEs (a level the SGD variants reach, say)")
	reuse := flag.Bool("reuse", false, "take the runs whose metrics and time are in --dir already instead of running them again")
	extra := flag.String("args", "", "more strads mf flags for every job, space-separated")
	flag.Parse()
	var more []float64
	for _, f := range strings.Split(*targets, ",") {
		if f == "" {
			continue
		}
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ssp: --targets:", err)
			os.Exit(2)
		}
		more = append(more, x)
	}
	if err := bench(*strads, *dir, *ratings, *users, *items, *variants, *workers, *slow, *iters, *runs, *within, more, *reuse, strings.Fields(*extra)); err != nil {
		fmt.Fprintln(os.Stderr, "ssp:", err)
		os.Exit(1)
	}
}

// ints parses a comma-separated list of integers.
func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func bench(strads, dir string, ratings, users, items int, variantList, workerList, slowList string, iters, runs int, within float64, more []float64, reuse bool, extra []string) error {
	var vs []variant
	for _, s := range strings.Split(variantList, ",") {
		v, err := parseVariant(s)
		if err != nil {
			return err
		}
		vs = append(vs, v)
	}
	ws, err := ints(workerList)
	if err != nil {
		return err
	}
	slows := strings.Split(slowList, ",")
	for _, sl := range slows {
		if _, err := strconv.Atoi(strings.TrimSuffix(sl, "t")); err != nil {
			return fmt.Errorf("--slow %q: %w", sl, err)
		}
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ssp-bench"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data := filepath.Join(dir, "ratings")
	if _, err := os.Stat(data + ".test.txt"); !reuse || err != nil {
		gen := exec.Command(strads, "gen", "mf", "-o", data, "--ratings", strconv.Itoa(ratings), "--users", strconv.Itoa(users), "--items", strconv.Itoa(items))
		if out, err := gen.CombinedOutput(); err != nil {
			return fmt.Errorf("strads gen mf: %w: %s", err, out)
		}
	}
	results := map[key][]run{}
	var keys []key
	for r := range runs {
		for _, w := range ws {
			for _, sl := range slows {
				for _, v := range vs {
					if sl != "1" && (w == 1 || !strings.Contains(strings.Join(v.args, " "), "--mode")) {
						continue // the straggler knob is the parameter server's, for several workers
					}
					k := key{v: v.name, w: w, slow: sl}
					if r == 0 {
						keys = append(keys, k)
					}
					metrics := filepath.Join(dir, fmt.Sprintf("%s-w%d-s%s-r%d.csv", strings.ReplaceAll(v.name, ":", ""), w, sl, r))
					args := append([]string{"mf", "--train", data + ".train.txt", "--test", data + ".test.txt",
						"--workers", strconv.Itoa(w), "--iters", strconv.Itoa(iters), "--seed", strconv.Itoa(r + 1),
						"--progress", "0", "--metrics", metrics}, v.args...)
					if sl != "1" {
						args = append(args, "--slow-worker", strings.TrimSuffix(sl, "t"))
						if strings.HasSuffix(sl, "t") {
							args = append(args, "--slow-turns")
						}
					}
					args = append(args, extra...)
					wallFile := metrics + ".wall"
					if b, err := os.ReadFile(wallFile); reuse && err == nil {
						if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil {
							results[k] = append(results[k], readMetrics(metrics, d))
							continue
						}
					}
					start := time.Now()
					cmd := exec.Command(strads, args...)
					out, err := cmd.CombinedOutput()
					res := run{wall: time.Since(start)}
					if err != nil {
						res.err = fmt.Errorf("%w: %s", err, lastLine(out))
					} else {
						res = readMetrics(metrics, res.wall)
						if err := os.WriteFile(wallFile, []byte(res.wall.String()), 0o644); err != nil {
							return err
						}
					}
					fmt.Fprintf(os.Stderr, "%s workers %d slow %s run %d: %.1f s %v\n", v.name, w, sl, r+1, res.wall.Seconds(), res.err)
					results[k] = append(results[k], res)
				}
			}
		}
	}
	best := math.Inf(1)
	for _, rs := range results {
		for _, r := range rs {
			for _, x := range r.rmse {
				best = min(best, x)
			}
		}
	}
	fmt.Printf("ratings: strads gen mf --ratings %d --users %d --items %d (rank 10, noise 0.1, 10%% held out); every job %d iterations at default flags but those named\n\n", ratings, users, items, iters)
	for _, target := range append([]float64{best * (1 + within)}, more...) {
		fmt.Printf("### target test RMSE %.4f (lowest reached %.4f); %d runs each, medians\n\n", target, best, runs)
		table(keys, results, target)
	}
	return nil
}

// table prints a variant's medians per row, to target.
func table(keys []key, results map[key][]run, target float64) {
	fmt.Println("| variant | workers | straggler | s to target | iters to target | final test RMSE | whole job s | staleness mean/var/max |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, k := range keys {
		var ts, is, fin, wall []float64
		stale := ""
		failed := 0
		for _, r := range results[k] {
			if r.err != nil {
				failed++
				continue
			}
			t, i := math.Inf(1), math.Inf(1)
			for e, x := range r.rmse {
				if x <= target {
					t, i = r.times[e], r.iters[e]
					break
				}
			}
			ts, is = append(ts, t), append(is, i)
			fin = append(fin, r.rmse[len(r.rmse)-1])
			wall = append(wall, r.wall.Seconds())
			stale = r.stale
		}
		name := k.String()
		if failed > 0 {
			fmt.Printf("| %s | %d of %d runs failed | | | | |\n", name, failed, len(results[k]))
			continue
		}
		fmt.Printf("| %s | %s | %s | %.4f | %.1f | %s |\n", name, fmtMedian(ts, "%.2f"), fmtMedian(is, "%.0f"), median(fin), median(wall), stale)
	}
	fmt.Println()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func fmtMedian(xs []float64, f string) string {
	m := median(xs)
	if math.IsInf(m, 1) || math.IsNaN(m) {
		return "-"
	}
	return fmt.Sprintf(f, m)
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// readMetrics takes time_s, iter and test_rmse of every row, and the
// staleness columns of the last, if any.
func readMetrics(path string, wall time.Duration) run {
	res := run{wall: wall}
	f, err := os.Open(path)
	if err != nil {
		res.err = err
		return res
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		res.err = fmt.Errorf("%s: %w", path, err)
		return res
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, c := range []string{"time_s", "iter", "test_rmse"} {
		if _, ok := col[c]; !ok {
			res.err = fmt.Errorf("%s: no column %s", path, c)
			return res
		}
	}
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			res.err = fmt.Errorf("%s: %w", path, err)
			return res
		}
		num := func(c string) float64 {
			x, err := strconv.ParseFloat(row[col[c]], 64)
			if err != nil {
				return math.NaN()
			}
			return x
		}
		if x := num("test_rmse"); !math.IsNaN(x) {
			res.times = append(res.times, num("time_s"))
			res.iters = append(res.iters, num("iter"))
			res.rmse = append(res.rmse, x)
		}
		var st []string
		for _, c := range []string{"staleness_mean", "staleness_var", "staleness_max"} {
			if i, ok := col[c]; ok {
				st = append(st, row[i])
			}
		}
		res.stale = strings.Join(st, "/")
	}
	if len(res.rmse) == 0 {
		res.err = fmt.Errorf("%s: no test RMSE", path)
	}
	return res
}
