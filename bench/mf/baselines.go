package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/apps/mf"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
)

// The baselines phase compares, on each data set, the test RMSE of
//
//   - the global mean μ of the training ratings;
//   - the bias-only model μ + b_u + c_i, fitted exactly (alternating
//     least squares to convergence) with λ_b = mf.DefaultBiasLambda;
//   - strads mf with the command's default flags (SGD on the rotation,
//     warm-started from the bias-only fit, with the validation stop), and
//     with --algo ccd, --algo als, --cold-start (cold), --lambda auto
//     (auto) or --validate with another λ (val:L) (--base-algos), --workers
//     workers;
//   - a biased SVD peer, Funk's SGD as gorse's SVD and Surprise run it
//     (funkSVD), with their default settings;
//
// every stochastic one --runs times with seeds 1, 2, …, and reports medians.
// All are scored on the same test ratings: those whose user and item are
// both in training.

// dataset is a training file and a test file.
type dataset struct {
	name, source string
	train, test  string
	oracle       float64 // the generator's noise, or NaN
}

// ratings is a ratings file in memory with dense indices.
type ratings struct {
	u, i []int32
	r    []float64
}

// loadPair reads train and test, numbering users and items by training
// order, and keeps the test ratings whose ids training has.
func loadPair(train, test string) (tr, te ratings, users, items int, err error) {
	uix, iix := map[int64]int32{}, map[int64]int32{}
	err = mf.ReadRatings(train, func(_ int, x mf.Rating) error {
		u, ok := uix[x.User]
		if !ok {
			u = int32(len(uix))
			uix[x.User] = u
		}
		i, ok := iix[x.Item]
		if !ok {
			i = int32(len(iix))
			iix[x.Item] = i
		}
		tr.u, tr.i, tr.r = append(tr.u, u), append(tr.i, i), append(tr.r, x.Value)
		return nil
	})
	if err != nil {
		return
	}
	err = mf.ReadRatings(test, func(_ int, x mf.Rating) error {
		u, ok1 := uix[x.User]
		i, ok2 := iix[x.Item]
		if ok1 && ok2 {
			te.u, te.i, te.r = append(te.u, u), append(te.i, i), append(te.r, x.Value)
		}
		return nil
	})
	return tr, te, len(uix), len(iix), err
}

// mean returns the mean rating.
func (d ratings) mean() float64 {
	var s float64
	for _, r := range d.r {
		s += r
	}
	return s / float64(len(d.r))
}

// rmse returns the RMSE of predict over d.
func (d ratings) rmse(predict func(u, i int32) float64) float64 {
	var s float64
	for k, r := range d.r {
		e := r - predict(d.u[k], d.i[k])
		s += e * e
	}
	return math.Sqrt(s / float64(len(d.r)))
}

// fitBiases returns the bias-only model's b and c for λ_b: 50 sweeps of
// b_u = Σ(r − μ − c_i)/(n_u + λ_b), then c_i = Σ(r − μ − b_u)/(n_i + λ_b),
// each the exact minimizer given the other (the changes are below 1e-9 by
// then on both sets).
func fitBiases(d ratings, users, items int, mu, lambdaB float64) (b, c []float64) {
	b, c = make([]float64, users), make([]float64, items)
	nu, ni := make([]float64, users), make([]float64, items)
	for k := range d.r {
		nu[d.u[k]]++
		ni[d.i[k]]++
	}
	sb, sc := make([]float64, users), make([]float64, items)
	for range 50 {
		clear(sb)
		for k, r := range d.r {
			sb[d.u[k]] += r - mu - c[d.i[k]]
		}
		for u := range b {
			b[u] = sb[u] / (nu[u] + lambdaB)
		}
		clear(sc)
		for k, r := range d.r {
			sc[d.i[k]] += r - mu - b[d.u[k]]
		}
		for i := range c {
			c[i] = sc[i] / (ni[i] + lambdaB)
		}
	}
	return b, c
}

// funkSVD is the biased SVD peer: Funk's SGD on μ + b_u + b_i + p_u·q_i,
// with the settings gorse's SVD and Surprise's SVD default to (100
// factors, 20 epochs, step 0.005, regularization 0.02 on every step,
// factors drawn from N(0, 0.1²), the ratings in a new random order every
// epoch), written here from their documented algorithm: gorse itself
// cannot be had here (see RESULTS).
type funkSVD struct {
	factors, epochs int
	lr, reg, std    float64
}

// peerDefaults are gorse's and Surprise's defaults.
var peerDefaults = funkSVD{factors: 100, epochs: 20, lr: 0.005, reg: 0.02, std: 0.1}

// fit trains on d and returns the predictor.
func (f funkSVD) fit(d ratings, users, items int, seed uint64) func(u, i int32) float64 {
	rng := rand.New(rand.NewPCG(seed, 0x70656572))
	k := f.factors
	p, q := make([]float64, users*k), make([]float64, items*k)
	for j := range p {
		p[j] = f.std * rng.NormFloat64()
	}
	for j := range q {
		q[j] = f.std * rng.NormFloat64()
	}
	bu, bi := make([]float64, users), make([]float64, items)
	mu := d.mean()
	order := make([]int, len(d.r))
	for j := range order {
		order[j] = j
	}
	for range f.epochs {
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, j := range order {
			u, i := int(d.u[j]), int(d.i[j])
			pu, qi := p[u*k:(u+1)*k], q[i*k:(i+1)*k]
			var dot float64
			for t := range pu {
				dot += pu[t] * qi[t]
			}
			e := d.r[j] - (mu + bu[u] + bi[i] + dot)
			bu[u] += f.lr * (e - f.reg*bu[u])
			bi[i] += f.lr * (e - f.reg*bi[i])
			for t, pv := range pu {
				qv := qi[t]
				pu[t] += f.lr * (e*qv - f.reg*pv)
				qi[t] += f.lr * (e*pv - f.reg*qv)
			}
		}
	}
	return func(u, i int32) float64 {
		pu, qi := p[int(u)*k:int(u+1)*k], q[int(i)*k:int(i+1)*k]
		var dot float64
		for t := range pu {
			dot += pu[t] * qi[t]
		}
		return mu + bu[u] + bi[i] + dot
	}
}

// baseline is one method's results on a data set, a value per run.
type baseline struct {
	method string
	rmse   []float64
	secs   []float64 // training time
	// traces holds each run's evaluations (strads mf's plain runs), for
	// the time to the peer's test RMSE.
	traces [][]mf.Eval
}

// timeTo returns, for each trace, the training time of its first
// evaluation with a test RMSE at most target (NaN if none).
func timeTo(traces [][]mf.Eval, target float64) []float64 {
	out := make([]float64, len(traces))
	for k, tr := range traces {
		out[k] = math.NaN()
		for _, e := range tr {
			if e.TestRMSE <= target {
				out[k] = e.Time.Seconds()
				break
			}
		}
	}
	return out
}

// strads returns the configuration of strads mf with the command's
// defaults for algo on ds: rank 10, mf.DefaultLambda, SGD on the rotation
// (warm-started from the bias-only fit) with lr 0.05 and decay 0.05, at
// most 20 iterations, an evaluation every iteration, and mf.DefaultValidate
// of the training ratings held out with the validation stop (patience
// mf.DefaultPatience); the job writes the evaluation with the lowest
// validation RMSE.
func (o *options) strads(algo string, ds dataset, seed uint64) mf.Config {
	return mf.Config{
		Train: ds.train, Test: ds.test, Rank: 10, Lambda: mf.DefaultLambda, BiasLambda: mf.DefaultBiasLambda,
		Algo: algo, Schedule: mf.Rotation, LearningRate: 0.05, Decay: 0.05, Inner: 1, Seed: seed,
		Workers: o.workers, Iters: 20, ReportEvery: 1, Holdout: mf.DefaultValidate, Patience: mf.DefaultPatience,
	}
}

// baselines runs the phase on every data set and writes baselines.md.
func (o *options) baselines(ctx context.Context, sets []dataset, log io.Writer) error {
	var report []struct {
		ds  dataset
		res []*baseline
	}
	for _, ds := range sets {
		tr, te, users, items, err := loadPair(ds.train, ds.test)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "%s: %d train, %d test ratings (with seen ids), %d users, %d items\n", ds.name, len(tr.r), len(te.r), users, items)
		mu := tr.mean()
		res := []*baseline{{method: "global mean"}, {method: fmt.Sprintf("bias only (λ_b = %g)", float64(mf.DefaultBiasLambda))}}
		t0 := time.Now()
		res[0].rmse = []float64{te.rmse(func(int32, int32) float64 { return mu })}
		res[0].secs = []float64{time.Since(t0).Seconds()}
		t0 = time.Now()
		b, c := fitBiases(tr, users, items, mu, mf.DefaultBiasLambda)
		res[1].secs = []float64{time.Since(t0).Seconds()}
		res[1].rmse = []float64{te.rmse(func(u, i int32) float64 { return mu + b[u] + c[i] })}
		algos := o.baseAlgos
		names := map[string]string{mf.SGD: "strads mf, defaults (SGD, rotation)", mf.CCD: "strads mf --algo ccd", mf.ALS: "strads mf --algo als", auto: "strads mf --lambda auto (SGD, rotation)",
			cold: "strads mf --cold-start (SGD, rotation, from biases of 0 and random factors)"}
		var chosen []string
		ours := map[string]*baseline{}
		for _, a := range algos {
			if lambda, ok := valLambda(a); ok {
				names[a] = fmt.Sprintf("strads mf --validate %g --lambda %g (SGD, rotation; the best evaluation's test RMSE; time: until the stop)", o.baseValidate, lambda)
			}
			ours[a] = &baseline{method: names[a] + fmt.Sprintf(", %d workers", o.workers)}
			res = append(res, ours[a])
		}
		peer := &baseline{method: "biased SVD peer (Funk SGD, gorse's and Surprise's defaults)"}
		if o.peer {
			res = append(res, peer)
		}
		for n := 1; n <= o.runs; n++ {
			for _, a := range algos {
				if a == auto {
					f, lambda, secs, err := o.lambdaAuto(ctx, ds, uint64(n), log)
					if err != nil {
						return fmt.Errorf("%s --lambda auto run %d: %w", ds.name, n, err)
					}
					ours[a].rmse = append(ours[a].rmse, f.TestRMSE)
					ours[a].secs = append(ours[a].secs, secs)
					chosen = append(chosen, strconv.FormatFloat(lambda, 'g', 3, 64))
					continue
				}
				if lambda, ok := valLambda(a); ok {
					f, err := o.validated(ctx, ds, lambda, uint64(n), log)
					if err != nil {
						return fmt.Errorf("%s %s run %d: %w", ds.name, a, n, err)
					}
					ours[a].rmse = append(ours[a].rmse, f.TestRMSE)
					ours[a].secs = append(ours[a].secs, f.Time.Seconds())
					continue
				}
				algo := a
				if a == cold {
					algo = mf.SGD
				}
				cfg := o.strads(algo, ds, uint64(n))
				cfg.ColdStart = a == cold
				t0 := time.Now()
				res, err := runJob(ctx, cfg, job.Options{Job: "mfbase", Timeout: 5 * time.Minute,
					Coordinator: coordinator.Options{Timeout: 5 * time.Minute, JoinTimeout: 5 * time.Minute}})
				if err != nil {
					return fmt.Errorf("%s %s run %d: %w", ds.name, a, n, err)
				}
				m := mf.ModelOf(res.App)
				f := m.Best() // what the job writes: with validation, the evaluation with the lowest validation RMSE
				secs := m.Final().Time.Seconds()
				ours[a].rmse = append(ours[a].rmse, f.TestRMSE)
				ours[a].secs = append(ours[a].secs, secs)
				ours[a].traces = append(ours[a].traces, m.Trace)
				fmt.Fprintf(log, "%s %s run %d: test RMSE %.4f (validation %.4f) at iteration %g of %d, %.2fs (job %.2fs)\n",
					ds.name, a, n, f.TestRMSE, f.ValRMSE, f.Iter, len(m.Trace)-1, secs, time.Since(t0).Seconds())
			}
			if !o.peer {
				continue
			}
			t0 := time.Now()
			predict := peerDefaults.fit(tr, users, items, uint64(n))
			secs := time.Since(t0).Seconds()
			peer.rmse = append(peer.rmse, te.rmse(predict))
			peer.secs = append(peer.secs, secs)
			fmt.Fprintf(log, "%s peer run %d: test RMSE %.4f, %.2fs\n", ds.name, n, peer.rmse[len(peer.rmse)-1], secs)
		}
		if o.peer && len(peer.rmse) > 0 {
			target := median(peer.rmse)
			for _, a := range algos {
				if b := ours[a]; len(b.traces) > 0 {
					ts := timeTo(b.traces, target)
					b.method += fmt.Sprintf(" (time to the peer's median test RMSE %.4f: %s s, median %.2f s; the peer's whole fit: median %.2f s)",
						target, runsOf(ts), median(ts), median(peer.secs))
				}
			}
		}
		if b := ours[auto]; b != nil {
			b.method += fmt.Sprintf(" (λ chosen: %s; time: the 5 fits and the refit, loading included)", strings.Join(chosen, ", "))
		}
		report = append(report, struct {
			ds  dataset
			res []*baseline
		}{ds, res})
	}
	path := filepath.Join(o.out, "baselines.md")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, r := range report {
		fmt.Fprintf(w, "**%s** (%s)\n\n| method | test RMSE, median | (runs) | training time, median (s) |\n|---|---|---|---|\n", r.ds.name, r.ds.source)
		if !math.IsNaN(r.ds.oracle) {
			fmt.Fprintf(w, "| the generator's noise (oracle) | %.4f | | |\n", r.ds.oracle)
		}
		for _, b := range r.res {
			fmt.Fprintf(w, "| %s | %.4f | %s | %.2f |\n", b.method, median(b.rmse), runsOf(b.rmse), median(b.secs))
		}
		w.WriteString("\n")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s\n", path)
	return f.Close()
}

// auto is the --base-algos name of strads mf --lambda auto, and cold of
// strads mf --cold-start (the defaults without the warm start).
const (
	auto = "auto"
	cold = "cold"
)

// valLambda returns λ of a --base-algos name val:L, the command's defaults
// with --validate and --lambda L.
func valLambda(a string) (float64, bool) {
	l, ok := strings.CutPrefix(a, "val:")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(l, 64)
	return v, err == nil
}

// validated runs strads mf with the command's other defaults, --lambda
// lambda and --validate o.baseValidate (patience mf.DefaultPatience,
// evaluations every iteration, at most 20 iterations): the job writes the
// evaluation with the lowest validation RMSE, which it returns, with the
// training time of the whole job (to its stop) as its Time.
func (o *options) validated(ctx context.Context, ds dataset, lambda float64, seed uint64, log io.Writer) (mf.Eval, error) {
	cfg := o.strads(mf.SGD, ds, seed)
	cfg.Lambda, cfg.Holdout, cfg.Patience, cfg.ReportEvery = lambda, o.baseValidate, mf.DefaultPatience, 1
	res, err := runJob(ctx, cfg, job.Options{Job: "mfval", Timeout: 5 * time.Minute,
		Coordinator: coordinator.Options{Timeout: 5 * time.Minute, JoinTimeout: 5 * time.Minute}})
	if err != nil {
		return mf.Eval{}, err
	}
	m := mf.ModelOf(res.App)
	b := m.Best()
	b.Time = m.Final().Time
	fmt.Fprintf(log, "%s val λ %g run %d: best validation RMSE %.4f at iteration %g of %d (stopped %v): test RMSE %.4f, %.2fs\n",
		ds.name, lambda, seed, b.ValRMSE, b.Iter, len(m.Trace)-1, m.Stopped, b.TestRMSE, b.Time.Seconds())
	return b, nil
}

// lambdaAuto runs what strads mf --lambda auto does with the command's
// other defaults (SGD on the rotation, rank 10, 20 iterations at most,
// evaluations every iteration): a fit per λ of mf.LambdaGrid on the
// training ratings less mf.DefaultHoldout of them, each with the
// validation stop, then the refit on all of them with the best λ. It
// returns the refit's final evaluation, the λ chosen and the wall time of
// it all (the jobs' loading included).
func (o *options) lambdaAuto(ctx context.Context, ds dataset, seed uint64, log io.Writer) (mf.Eval, float64, float64, error) {
	cfg := o.strads(mf.SGD, ds, seed)
	cfg.ReportEvery, cfg.Patience = 1, mf.DefaultPatience
	opts := func() job.Options {
		return job.Options{Job: "mfauto", Timeout: 5 * time.Minute,
			Coordinator: coordinator.Options{Timeout: 5 * time.Minute, JoinTimeout: 5 * time.Minute}}
	}
	t0 := time.Now()
	fit := func(ctx context.Context, c mf.Config) (*mf.Model, error) {
		res, err := runJob(ctx, c, opts())
		if err != nil {
			return nil, err
		}
		return mf.ModelOf(res.App), nil
	}
	points, best, err := mf.Tune(ctx, cfg, mf.Grid{Lambdas: mf.LambdaGrid}, fit)
	if err != nil {
		return mf.Eval{}, 0, 0, err
	}
	for _, p := range points {
		fmt.Fprintf(log, "%s auto run %d: λ %.4g validation RMSE %.4f at iteration %g (test RMSE %.4f)\n", ds.name, seed, p.Lambda, p.Best.ValRMSE, p.Best.Iter, p.Best.TestRMSE)
	}
	r := mf.Refit(cfg, points[best])
	res, err := runJob(ctx, r, opts())
	if err != nil {
		return mf.Eval{}, 0, 0, err
	}
	secs := time.Since(t0).Seconds()
	f := mf.ModelOf(res.App).Best() // the model written (the last evaluation without validation)
	fmt.Fprintf(log, "%s auto run %d: chose λ %.4g, refit %d iterations (validation %g): test RMSE %.4f at iteration %g, %.2fs in all\n",
		ds.name, seed, r.Lambda, r.Iters, r.Holdout, f.TestRMSE, f.Iter, secs)
	return f, r.Lambda, secs, nil
}

func runsOf(v []float64) string {
	if len(v) < 2 {
		return ""
	}
	s := ""
	for k, x := range v {
		if k > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.4f", x)
	}
	return s
}
