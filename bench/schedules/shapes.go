package main

import "fmt"

// genSpec is a generated data set: the flags of "strads gen lasso".
type genSpec struct {
	samples, features int
	density           float64
	groups            int
	corr              float64
	trueNNZ           int
}

// shape is one of bench/peers's generated shapes, with the size this
// comparison runs it at.
type shape struct {
	name      string
	desc      string
	gen       genSpec // default size
	quick     genSpec // --quick size
	ratio     float64 // λ / λ_max
	intercept bool
	scaled    string // how gen differs from bench/peers's size, if it does
}

// shapes are bench/peers's shapes a, b and c (same kinds of data, same λ and
// intercepts). a and c are at bench/peers's sizes; b is scaled down from
// 5,000 × 50,000 at density 0.018 (4.5M non-zeros) so that the row layout's
// runs, which take some 15 s at this size, fit the time budget. The --quick
// sizes are bench/peers's.
var shapes = []shape{
	{
		name:      "a",
		desc:      "p ≫ n, dense, correlated groups (gene-expression-like)",
		gen:       genSpec{samples: 120, features: 12000, density: 1, groups: 200, corr: 0.9, trueNNZ: 20},
		quick:     genSpec{samples: 60, features: 2000, density: 1, groups: 40, corr: 0.9, trueNNZ: 10},
		ratio:     0.1,
		intercept: true,
	},
	{
		name:   "b",
		desc:   "p ≫ n, sparse",
		gen:    genSpec{samples: 2000, features: 20000, density: 0.01, trueNNZ: 200},
		quick:  genSpec{samples: 1000, features: 10000, density: 0.01, trueNNZ: 100},
		ratio:  0.01,
		scaled: "scaled down from bench/peers's 5,000 × 50,000 at density 0.018 (4.5M non-zeros, 500 true non-zeros)",
	},
	{
		name:      "c",
		desc:      "n ≫ p, sparse",
		gen:       genSpec{samples: 100000, features: 1000, density: 0.02, trueNNZ: 100},
		quick:     genSpec{samples: 20000, features: 200, density: 0.05, trueNNZ: 20},
		ratio:     0.01,
		intercept: true,
	},
}

// shapeByName returns the shape called name.
func shapeByName(name string) (shape, bool) {
	for _, s := range shapes {
		if s.name == name {
			return s, true
		}
	}
	return shape{}, false
}

// spec returns the generated size of s in this mode.
func (s shape) spec(quick bool) genSpec {
	if quick {
		return s.quick
	}
	return s.gen
}

// describe returns the sizes as a phrase.
func (g genSpec) describe() string {
	groups := "independent features"
	if g.groups > 0 {
		groups = fmt.Sprintf("%d correlated groups (corr %g)", g.groups, g.corr)
	}
	return fmt.Sprintf("%d × %d, density %g, %s, %d true non-zeros", g.samples, g.features, g.density, groups, g.trueNNZ)
}
