// Command floor measures how close any estimator can come to the noise
// floor of a generated ratings set (issue 13: "within 5% of the noise
// floor at rank equal to the true rank"). It draws the generator's true
// model (mf.GenConfig.Truth) for the same flags as `strads gen mf`, reads
// the set that command wrote, and scores on the test ratings:
//
//   - the oracle: μ + b_u + c_i + w_u·h_i of the truth (the noise's RMSE);
//   - the users refitted from the training ratings with the true H, c and μ
//     known, per user: by least squares (a ridge of 1e-9), and by the
//     posterior mean under the generator's own priors (w ~ N(0, K^-½ I),
//     b_u ~ N(0, user-bias²)), the best any estimator can do knowing H;
//   - the items refitted likewise with the true W, b and μ known;
//   - ALS on strads mf's objective (count-weighted λ, λ_b, μ the training
//     mean), started from the truth: after one pass (users given the true
//     H, then items) and after --passes passes, at each --lambdas λ.
//
// Usage, from the repository root:
//
//	strads gen mf --users 10000 --items 2000 --rank 10 --ratings 1000000 --noise 0.5 \
//	    --mean 3.5 --user-bias 0.4 --item-bias 0.6 --alpha 1 --seed 1 -o /tmp/g1m
//	go run ./bench/mf/floor --data /tmp/g1m (the same generator flags)
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/strads-go/strads/apps/mf"
)

type ratings struct {
	u, i []int32
	r    []float64
}

func load(path string, users, items int) (ratings, error) {
	var d ratings
	err := mf.ReadRatings(path, func(line int, x mf.Rating) error {
		if x.User < 1 || x.User > int64(users) || x.Item < 1 || x.Item > int64(items) {
			return fmt.Errorf("%s:%d: id out of the generator's range", path, line)
		}
		d.u = append(d.u, int32(x.User-1))
		d.i = append(d.i, int32(x.Item-1))
		d.r = append(d.r, x.Value)
		return nil
	})
	return d, err
}

// model is μ + b_u + c_i + w_u·h_i.
type model struct {
	k    int
	mu   float64
	w, h []float64
	b, c []float64
}

func (m *model) predict(u, i int32) float64 {
	k := m.k
	p := m.mu + m.b[u] + m.c[i]
	wu, hi := m.w[int(u)*k:int(u+1)*k], m.h[int(i)*k:int(i+1)*k]
	for t := range k {
		p += wu[t] * hi[t]
	}
	return p
}

func (m *model) rmse(d ratings) float64 {
	var s float64
	for j, r := range d.r {
		e := r - m.predict(d.u[j], d.i[j])
		s += e * e
	}
	return math.Sqrt(s / float64(len(d.r)))
}

func (m *model) clone() *model {
	c := *m
	c.w = append([]float64(nil), m.w...)
	c.h = append([]float64(nil), m.h...)
	c.b = append([]float64(nil), m.b...)
	c.c = append([]float64(nil), m.c...)
	return &c
}

// byRow indexes the ratings of d by row (users when side is 0, items when 1).
func byRow(d ratings, n int, side int) [][]int32 {
	rows := make([][]int32, n)
	for j := range d.r {
		x := d.u[j]
		if side == 1 {
			x = d.i[j]
		}
		rows[x] = append(rows[x], int32(j))
	}
	return rows
}

// refit solves, for every row of one side (0: users, 1: items), the
// (K+1)-vector (factor, bias) minimizing
//
//	Σ (r − μ − other bias − x·y − bias)² + facPen(n)‖x‖² + biasPen·bias²
//
// with the other side's factors y fixed.
func refit(m *model, d ratings, rows [][]int32, side int, facPen func(n int) float64, biasPen float64) {
	k := m.k
	p := k + 1
	a := make([]float64, p*p)
	rhs := make([]float64, p)
	z := make([]float64, p)
	for x, js := range rows {
		clear(a)
		clear(rhs)
		for _, j := range js {
			var y []float64
			var other float64
			if side == 0 {
				i := d.i[j]
				y, other = m.h[int(i)*k:int(i+1)*k], m.c[i]
			} else {
				u := d.u[j]
				y, other = m.w[int(u)*k:int(u+1)*k], m.b[u]
			}
			copy(z, y)
			z[k] = 1
			t := d.r[j] - m.mu - other
			for s := range p {
				rhs[s] += z[s] * t
				for q := 0; q <= s; q++ {
					a[s*p+q] += z[s] * z[q]
				}
			}
		}
		fp := facPen(len(js))
		for s := range k {
			a[s*p+s] += fp
		}
		a[k*p+k] += biasPen
		sol := cholSolve(a, rhs, p)
		if side == 0 {
			copy(m.w[x*k:(x+1)*k], sol[:k])
			m.b[x] = sol[k]
		} else {
			copy(m.h[x*k:(x+1)*k], sol[:k])
			m.c[x] = sol[k]
		}
	}
}

// cholSolve solves A x = b for the symmetric positive definite A whose lower
// triangle a holds (overwritten).
func cholSolve(a, b []float64, p int) []float64 {
	for j := range p {
		s := a[j*p+j]
		for q := range j {
			s -= a[j*p+q] * a[j*p+q]
		}
		d := math.Sqrt(s)
		a[j*p+j] = d
		for i := j + 1; i < p; i++ {
			s := a[i*p+j]
			for q := range j {
				s -= a[i*p+q] * a[j*p+q]
			}
			a[i*p+j] = s / d
		}
	}
	x := append([]float64(nil), b...)
	for i := range p {
		for q := range i {
			x[i] -= a[i*p+q] * x[q]
		}
		x[i] /= a[i*p+i]
	}
	for i := p - 1; i >= 0; i-- {
		for q := i + 1; q < p; q++ {
			x[i] -= a[q*p+i] * x[q]
		}
		x[i] /= a[i*p+i]
	}
	return x
}

func main() {
	var g mf.GenConfig
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	data := fs.String("data", "", "PREFIX of PREFIX.train.txt and PREFIX.test.txt, as `strads gen mf -o PREFIX` wrote them")
	fs.IntVar(&g.Users, "users", 10000, "generator: users")
	fs.IntVar(&g.Items, "items", 2000, "generator: items")
	fs.IntVar(&g.Rank, "rank", 10, "generator: rank")
	fs.IntVar(&g.Ratings, "ratings", 1000000, "generator: ratings")
	fs.Float64Var(&g.Noise, "noise", 0.5, "generator: noise")
	fs.Float64Var(&g.Mean, "mean", 3.5, "generator: mean")
	fs.Float64Var(&g.UserBias, "user-bias", 0.4, "generator: user bias sd")
	fs.Float64Var(&g.ItemBias, "item-bias", 0.6, "generator: item bias sd")
	fs.Float64Var(&g.Alpha, "alpha", 1, "generator: popularity exponent")
	fs.Float64Var(&g.TestFraction, "test-fraction", 0.1, "generator: test fraction")
	fs.Uint64Var(&g.Seed, "seed", 1, "generator: seed")
	lambdas := fs.String("lambdas", "0.003,0.01,0.03", "count-weighted λ of the ALS refits")
	biasLambda := fs.Float64("bias-lambda", mf.DefaultBiasLambda, "λ_b of the ALS refits")
	passes := fs.Int("passes", 30, "ALS passes from the truth")
	fs.Parse(os.Args[1:])
	if err := g.Validate(); err != nil || *data == "" {
		fmt.Fprintln(os.Stderr, "floor: --data is required;", err)
		os.Exit(2)
	}
	tr, err := load(*data+".train.txt", g.Users, g.Items)
	if err == nil {
		var te ratings
		te, err = load(*data+".test.txt", g.Users, g.Items)
		if err == nil {
			err = report(g, tr, te, *lambdas, *biasLambda, *passes)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func report(g mf.GenConfig, tr, te ratings, lambdas string, lb float64, passes int) error {
	t := g.Truth()
	k := g.Rank
	truth := &model{k: k, mu: g.Mean, w: t.W, h: t.H, b: t.B, c: t.C}
	line := func(name string, m *model) {
		r := m.rmse(te)
		fmt.Printf("| %s | %.4f | %+.1f%% | %.4f |\n", name, r, 100*(r/g.Noise-1), m.rmse(tr))
	}
	fmt.Printf("train %d, test %d ratings; %d users, %d items, rank %d, noise %g\n", len(tr.r), len(te.r), g.Users, g.Items, k, g.Noise)
	fmt.Printf("ratings per user %.1f, per item %.1f (train); σ·√(1 + (K+1)(users+items)/train) = %.4f\n",
		float64(len(tr.r))/float64(g.Users), float64(len(tr.r))/float64(g.Items),
		g.Noise*math.Sqrt(1+float64((k+1)*(g.Users+g.Items))/float64(len(tr.r))))
	fmt.Println("| estimator | test RMSE | above the noise | train RMSE |")
	fmt.Println("|---|---|---|---|")
	line("oracle: the true μ, b, c, W, H", truth)

	users, items := byRow(tr, g.Users, 0), byRow(tr, g.Items, 1)
	s2 := g.Noise * g.Noise
	prior := 1 / math.Sqrt(float64(k)) // variance of a true factor entry
	for _, c := range []struct {
		name     string
		side     int
		fac, bia float64
	}{
		{"users by least squares, true μ, c, H known", 0, 1e-9, 1e-9},
		{"users by posterior mean (true priors), true μ, c, H known", 0, s2 / prior, s2 / (g.UserBias * g.UserBias)},
		{"items by least squares, true μ, b, W known", 1, 1e-9, 1e-9},
		{"items by posterior mean (true priors), true μ, b, W known", 1, s2 / prior, s2 / (g.ItemBias * g.ItemBias)},
	} {
		m := truth.clone()
		rows := users
		if c.side == 1 {
			rows = items
		}
		fac := c.fac
		refit(m, tr, rows, c.side, func(int) float64 { return fac }, c.bia)
		line(c.name, m)
	}
	{ // both sides by posterior mean, each from the truth of the other
		mu := truth.clone()
		refit(mu, tr, users, 0, func(int) float64 { return s2 / prior }, s2/(g.UserBias*g.UserBias))
		mi := truth.clone()
		refit(mi, tr, items, 1, func(int) float64 { return s2 / prior }, s2/(g.ItemBias*g.ItemBias))
		mu.h, mu.c = mi.h, mi.c
		line("users and items by posterior mean, each given the other's truth", mu)
	}

	var mean float64
	for _, r := range tr.r {
		mean += r
	}
	mean /= float64(len(tr.r))
	for f := range strings.SplitSeq(lambdas, ",") {
		l, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return fmt.Errorf("--lambdas: %v", err)
		}
		m := truth.clone()
		m.mu = mean
		pen := func(n int) float64 { return l * float64(n) }
		refit(m, tr, users, 0, pen, lb)
		line(fmt.Sprintf("ALS λ %g (weighted), λ_b %g, from the truth: users given the true H", l, lb), m)
		refit(m, tr, items, 1, pen, lb)
		line(fmt.Sprintf("ALS λ %g, from the truth: then items (one pass)", l), m)
		for range passes - 1 {
			refit(m, tr, users, 0, pen, lb)
			refit(m, tr, items, 1, pen, lb)
		}
		line(fmt.Sprintf("ALS λ %g, from the truth: %d passes", l, passes), m)
	}
	return nil
}
