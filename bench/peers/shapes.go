package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// genSpec is a generated data set: the flags of "strads gen lasso" and
// "strads gen logreg".
type genSpec struct {
	samples, features int
	density           float64
	groups            int
	corr              float64
	trueNNZ           int
}

// fit is one problem on a shape: the penalty as a fraction of λ_max, or as
// liblinear's and scikit-learn's C (λ = 1/(C·n)) where c is set, and
// whether the Lasso fits an intercept (logistic regression never does, so
// that liblinear, which has no unpenalized bias, solves the same problem).
type fit struct {
	ratio     float64
	c         float64
	intercept bool
}

// shape is a kind of data: generated (gen, one file per problem, from
// "strads gen <problem>") or real (one file, exported by a script from a
// Debian package, used by every problem it has a fit for).
type shape struct {
	name   string
	desc   string
	gen    genSpec // full size
	quick  genSpec // --quick size
	fits   map[problem]fit
	real   string // the exported file's name in the data directory
	source string // the Debian package and data set
	export []string
}

// realShapes are the real data sets, in order.
var realShapes = []string{"bladder", "diabetes", "breast_cancer"}

var shapes = []shape{
	{
		name:  "a",
		desc:  "p ≫ n, dense, correlated groups (gene-expression-like)",
		gen:   genSpec{samples: 120, features: 12000, density: 1, groups: 200, corr: 0.9, trueNNZ: 20},
		quick: genSpec{samples: 60, features: 2000, density: 1, groups: 40, corr: 0.9, trueNNZ: 10},
		fits:  map[problem]fit{lassoProblem: {ratio: 0.1, intercept: true}, logisticProblem: {ratio: 0.1, intercept: false}},
	},
	{
		name:  "b",
		desc:  "p ≫ n, sparse",
		gen:   genSpec{samples: 5000, features: 50000, density: 0.018, trueNNZ: 500},
		quick: genSpec{samples: 1000, features: 10000, density: 0.01, trueNNZ: 100},
		fits:  map[problem]fit{lassoProblem: {ratio: 0.01, intercept: false}, logisticProblem: {ratio: 0.01, intercept: false}},
	},
	{
		name:  "c",
		desc:  "n ≫ p, sparse",
		gen:   genSpec{samples: 100000, features: 1000, density: 0.02, trueNNZ: 100},
		quick: genSpec{samples: 20000, features: 200, density: 0.05, trueNNZ: 20},
		fits:  map[problem]fit{lassoProblem: {ratio: 0.01, intercept: true}, logisticProblem: {ratio: 0.01, intercept: false}},
	},
	{
		name:  "d",
		desc:  "p ≫ n, sparse, correlated groups, large (issue 24)",
		gen:   genSpec{samples: 20000, features: 500000, density: 0.0025, groups: 5000, corr: 0.8, trueNNZ: 1000},
		quick: genSpec{samples: 2000, features: 50000, density: 0.0025, groups: 500, corr: 0.8, trueNNZ: 100},
		fits:  map[problem]fit{lassoProblem: {ratio: 0.01, intercept: false}, logisticProblem: {ratio: 0.01, intercept: false}},
	},
	{
		name:  "e",
		desc:  "n ≫ p, sparse, large (issue 24)",
		gen:   genSpec{samples: 1000000, features: 20000, density: 0.0025, trueNNZ: 200},
		quick: genSpec{samples: 100000, features: 2000, density: 0.0025, trueNNZ: 20},
		fits:  map[problem]fit{lassoProblem: {ratio: 0.01, intercept: true}, logisticProblem: {ratio: 0.01, intercept: false}},
	},
	{
		name:  "f",
		desc:  "p ≫ n, sparse, correlated groups, 10⁸ non-zeros (issue 24)",
		gen:   genSpec{samples: 20000, features: 2000000, density: 0.0025, groups: 20000, corr: 0.8, trueNNZ: 4000},
		quick: genSpec{samples: 2000, features: 200000, density: 0.0025, groups: 2000, corr: 0.8, trueNNZ: 400},
		fits:  map[problem]fit{lassoProblem: {ratio: 0.01, intercept: false}},
	},
	{
		name:  "h",
		desc:  "n ≫ p, sparse, 10⁸ non-zeros (issue 24)",
		gen:   genSpec{samples: 2000000, features: 20000, density: 0.0025, trueNNZ: 200},
		quick: genSpec{samples: 200000, features: 2000, density: 0.0025, trueNNZ: 20},
		fits:  map[problem]fit{lassoProblem: {ratio: 0.01, intercept: true}},
	},
	{
		name:  "g",
		desc:  "sparse, n ≈ p, C = 1 (issue 24's logistic regression against liblinear)",
		gen:   genSpec{samples: 90000, features: 100000, density: 0.001, trueNNZ: 1000},
		quick: genSpec{samples: 9000, features: 10000, density: 0.001, trueNNZ: 100},
		fits:  map[problem]fit{logisticProblem: {c: 1}},
	},
	{
		name:   "bladder",
		desc:   "real, p ≫ n, dense: 57 bladder samples × 22,283 genes (log2 expression, centered), label cancer (40) or not (17)",
		fits:   map[problem]fit{lassoProblem: {ratio: 0.1, intercept: true}, logisticProblem: {ratio: 0.1, intercept: false}},
		real:   "bladder.svm",
		source: "Debian r-bioc-bladderbatch (Bioconductor bladderbatch, bladderEset)",
		export: []string{"rscript", "export_bladder.R"},
	},
	{
		name:   "diabetes",
		desc:   "real, n ≫ p, dense: 442 patients × 10 features, response disease progression",
		fits:   map[problem]fit{lassoProblem: {ratio: 0.01, intercept: true}},
		real:   "diabetes.svm",
		source: "Debian python3-sklearn (sklearn.datasets.load_diabetes)",
		export: []string{"python", "export_sklearn.py"},
	},
	{
		name:   "breast_cancer",
		desc:   "real, n ≫ p, dense: 569 tumours × 30 features (standardized), malignant or benign",
		fits:   map[problem]fit{logisticProblem: {ratio: 0.01, intercept: false}},
		real:   "breast_cancer.svm",
		source: "Debian python3-sklearn (sklearn.datasets.load_breast_cancer)",
		export: []string{"python", "export_sklearn.py"},
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

// describe returns the shape's sizes as a phrase.
func (g genSpec) describe() string {
	return fmt.Sprintf("%d × %d, density %g, %d correlated groups (corr %g), %d true non-zeros",
		g.samples, g.features, g.density, g.groups, g.corr, g.trueNNZ)
}

// dataFile returns the data file of shape s for problem prob, generating or
// exporting it into the data directory if it is not there yet.
func (e *env) dataFile(ctx context.Context, s shape, prob problem) (string, error) {
	if err := os.MkdirAll(e.o.dataDir, 0o755); err != nil {
		return "", err
	}
	if s.real != "" {
		path := filepath.Join(e.o.dataDir, s.real)
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
		cmd := e.o.python
		if s.export[0] == "rscript" {
			cmd = e.o.rscript
		}
		script := filepath.Join(e.scripts, s.export[1])
		fmt.Fprintf(e.stdout, "exporting %s: %s %s %s\n", s.name, cmd, script, e.o.dataDir)
		if out, err := exec.CommandContext(ctx, cmd, script, e.o.dataDir).CombinedOutput(); err != nil {
			return "", fmt.Errorf("exporting %s (%s): %v\n%s", s.name, s.source, err, out)
		}
		return path, nil
	}
	g := s.spec(e.o.quick)
	name := fmt.Sprintf("%s-%dx%d-d%g-g%d-c%g-k%d-s%d.svm", prob, g.samples, g.features, g.density, g.groups, g.corr, g.trueNNZ, e.o.seed)
	path := filepath.Join(e.o.dataDir, name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	args := []string{"gen", string(prob), "--samples", strconv.Itoa(g.samples), "--features", strconv.Itoa(g.features),
		"--density", strconv.FormatFloat(g.density, 'g', -1, 64), "--corr-groups", strconv.Itoa(g.groups),
		"--corr", strconv.FormatFloat(g.corr, 'g', -1, 64), "--true-nnz", strconv.Itoa(g.trueNNZ),
		"--seed", strconv.FormatUint(e.o.seed, 10), "-o", path}
	if prob == logisticProblem {
		args = append(args, "--labels", "pm1")
	}
	fmt.Fprintf(e.stdout, "strads %s\n", joinArgs(args))
	if out, err := exec.CommandContext(ctx, e.strads, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("strads gen: %v\n%s", err, out)
	}
	return path, nil
}
