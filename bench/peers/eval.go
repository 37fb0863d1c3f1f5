package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/strads-go/strads/libsvm"
)

// problem is the kind of fit.
type problem string

const (
	lassoProblem    problem = "lasso"
	logisticProblem problem = "logreg"
)

// dataset is a LIBSVM file held by row (compressed sparse rows), for
// computing λ_max and the objective of any system's coefficients with the
// same code.
type dataset struct {
	rowPtr []int // row i is idx[rowPtr[i]:rowPtr[i+1]]
	idx    []int32
	val    []float64
	y      []float64 // the labels as read
	p      int       // one more than the largest index
}

// loadDataset reads a LIBSVM file with the project's reader.
func loadDataset(path string) (*dataset, error) {
	d := &dataset{rowPtr: []int{0}}
	err := libsvm.Read(path, func(_ int, row libsvm.Row) error {
		d.idx = append(d.idx, row.Index...)
		d.val = append(d.val, row.Value...)
		d.rowPtr = append(d.rowPtr, len(d.idx))
		d.y = append(d.y, row.Label)
		if k := len(row.Index); k > 0 {
			d.p = max(d.p, int(row.Index[k-1])+1)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (d *dataset) n() int   { return len(d.y) }
func (d *dataset) nnz() int { return len(d.idx) }

// sign returns label i as ±1: labels > 0 are the positive class (0/1 and
// −1/+1 files alike, as strads, liblinear and the scripts read them).
func (d *dataset) sign(i int) float64 {
	if d.y[i] > 0 {
		return 1
	}
	return -1
}

// lambdaMax returns the smallest λ whose solution is w = 0:
//   - Lasso: ‖X̃ᵀỹ‖∞/n, X̃ and ỹ centered with an intercept (X̃ᵀỹ = Xᵀỹ,
//     since ỹ sums to zero), X and y as they are without;
//   - L1-logistic without an intercept: ‖Xᵀ(y01 − ½)‖∞/n.
func (d *dataset) lambdaMax(prob problem, intercept bool) float64 {
	r := make([]float64, d.n())
	switch prob {
	case lassoProblem:
		mean := 0.0
		if intercept {
			for _, y := range d.y {
				mean += y
			}
			mean /= float64(d.n())
		}
		for i, y := range d.y {
			r[i] = y - mean
		}
	case logisticProblem:
		if intercept {
			panic("lambdaMax: logistic regression is compared without an intercept")
		}
		for i := range r {
			r[i] = d.sign(i) / 2 // y01 − ½
		}
	}
	g := make([]float64, d.p)
	for i := range r {
		for k := d.rowPtr[i]; k < d.rowPtr[i+1]; k++ {
			g[d.idx[k]] += d.val[k] * r[i]
		}
	}
	m := 0.0
	for _, v := range g {
		m = max(m, math.Abs(v))
	}
	return m / float64(d.n())
}

// model is a fitted linear model: the intercept b (0 without one) and the
// weights w, indexed from 0.
type model struct {
	b float64
	w []float64
}

// nnz returns the non-zero weights (the intercept not counted).
func (m model) nnz() int {
	k := 0
	for _, v := range m.w {
		if v != 0 {
			k++
		}
	}
	return k
}

// objective returns, for the data d and penalty λ,
//   - Lasso: (1/2n)Σ(y_i − x_i·w − b)² + λ‖w‖₁,
//   - logistic: (1/n)Σ log(1 + exp(−y_i(x_i·w + b))) + λ‖w‖₁ (y_i = ±1).
//
// Every system's coefficients go through this one function. Sums are
// compensated (Neumaier), so that objectives that differ in the 10th digit
// are told apart on any size of data.
func (d *dataset) objective(prob problem, m model, lambda float64) float64 {
	if len(m.w) != d.p {
		panic(fmt.Sprintf("objective: %d weights for %d features", len(m.w), d.p))
	}
	var loss kahan
	for i := range d.y {
		z := m.b
		for k := d.rowPtr[i]; k < d.rowPtr[i+1]; k++ {
			z += d.val[k] * m.w[d.idx[k]]
		}
		switch prob {
		case lassoProblem:
			r := d.y[i] - z
			loss.add(r * r / 2)
		case logisticProblem:
			loss.add(logLoss(d.sign(i) * z))
		}
	}
	var l1 kahan
	for _, v := range m.w {
		l1.add(math.Abs(v))
	}
	return loss.sum()/float64(d.n()) + lambda*l1.sum()
}

// logLoss returns log(1 + exp(−m)) without overflow.
func logLoss(m float64) float64 {
	if m > 0 {
		return math.Log1p(math.Exp(-m))
	}
	return -m + math.Log1p(math.Exp(m))
}

// kahan is a compensated sum (Neumaier's variant).
type kahan struct{ s, c float64 }

func (k *kahan) add(x float64) {
	t := k.s + x
	if math.Abs(k.s) >= math.Abs(x) {
		k.c += (k.s - t) + x
	} else {
		k.c += (x - t) + k.s
	}
	k.s = t
}

func (k *kahan) sum() float64 { return k.s + k.c }

// readModelCSV reads a model written as CSV "index,value" (after comment
// lines and a header line, 1-based feature indices; index 0 is the
// intercept): strads' --out (apps/linear), and what the peer scripts write. p is the number of features; an index
// above it is an error.
func readModelCSV(path string, p int) (model, error) {
	f, err := os.Open(path)
	if err != nil {
		return model{}, err
	}
	defer f.Close()
	m := model{w: make([]float64, p)}
	sc := bufio.NewScanner(f)
	line := 0
	seen := map[int]bool{}
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(s, "#") || s == "index,value" {
			continue // strads' header (apps/linear), or the CSV's
		}
		a, b, ok := strings.Cut(s, ",")
		if !ok {
			return model{}, fmt.Errorf("%s:%d: not index,value: %q", path, line, s)
		}
		j, err1 := strconv.Atoi(strings.TrimSpace(a))
		v, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
		if err1 != nil || err2 != nil || j < 0 || j > p || math.IsNaN(v) || math.IsInf(v, 0) {
			return model{}, fmt.Errorf("%s:%d: bad index or value: %q (%d features)", path, line, s, p)
		}
		if seen[j] {
			return model{}, fmt.Errorf("%s:%d: index %d twice", path, line, j)
		}
		seen[j] = true
		if j == 0 {
			m.b = v
		} else {
			m.w[j-1] = v
		}
	}
	if err := sc.Err(); err != nil {
		return model{}, err
	}
	if line == 0 {
		return model{}, fmt.Errorf("%s: empty model file", path)
	}
	return m, nil
}

// readLiblinearModel reads a two-class liblinear model file as the weights
// of the positive class (the label 1), whichever label liblinear put first
// (its w is for the first label of its "label" line). A model with a bias
// is an error: liblinear's bias is penalized, ours is not.
func readLiblinearModel(path string, p int) (model, error) {
	f, err := os.Open(path)
	if err != nil {
		return model{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sign := 0.0
	var w []float64
	inW := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case inW:
			v, err := strconv.ParseFloat(line, 64)
			if err != nil {
				return model{}, fmt.Errorf("%s: weight %q", path, line)
			}
			w = append(w, sign*v)
		case strings.HasPrefix(line, "nr_class "):
			if strings.Fields(line)[1] != "2" {
				return model{}, fmt.Errorf("%s: %s: not two classes", path, line)
			}
		case strings.HasPrefix(line, "label "):
			labels := strings.Fields(line)[1:]
			if len(labels) != 2 {
				return model{}, fmt.Errorf("%s: %q: not two labels", path, line)
			}
			first, err := strconv.ParseFloat(labels[0], 64)
			if err != nil {
				return model{}, fmt.Errorf("%s: %q", path, line)
			}
			if first > 0 {
				sign = 1
			} else {
				sign = -1
			}
		case strings.HasPrefix(line, "bias ") && strings.Fields(line)[1] != "-1":
			return model{}, fmt.Errorf("%s: the model has a bias (%s)", path, line)
		case line == "w":
			inW = true
		}
	}
	if err := sc.Err(); err != nil {
		return model{}, err
	}
	if sign == 0 || len(w) > p {
		return model{}, fmt.Errorf("%s: no label line, or %d weights for %d features", path, len(w), p)
	}
	return model{w: append(w, make([]float64, p-len(w))...)}, nil
}

// median returns the median of xs (the mean of the middle two for an even
// count) and NaN for none. +Inf (a run that did not finish) sorts last.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := len(s) / 2
	if len(s)%2 == 1 {
		return s[k]
	}
	return (s[k-1] + s[k]) / 2
}

// relDiff returns (f − best)/|best|.
func relDiff(f, best float64) float64 {
	return (f - best) / math.Abs(best)
}
