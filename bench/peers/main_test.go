package main

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/strads-go/strads/bench/proc"
	"github.com/strads-go/strads/internal/testhelper"
)

// The tests cover the pure parts: the objectives, λ_max, the readers and
// the medians. They run no peer and no strads.

// tiny is X = [[1, 0], [0, 2], [3, 1]] with labels 1, 2, 3 (for the Lasso)
// or 1, 0, 1 (for logistic regression).
func tiny(t *testing.T, labels [3]string) *dataset {
	t.Helper()
	path := testhelper.WriteFile(t, "tiny.svm", labels[0]+" 1:1\n"+labels[1]+" 2:2\n"+labels[2]+" 1:3 2:1\n")
	d, err := loadDataset(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.n() != 3 || d.p != 2 || d.nnz() != 4 {
		t.Fatalf("n %d p %d nnz %d, want 3 2 4", d.n(), d.p, d.nnz())
	}
	return d
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-14*max(1, math.Abs(b)) }

func TestLassoObjective(t *testing.T) {
	d := tiny(t, [3]string{"1", "2", "3"})
	m := model{b: 0.25, w: []float64{0.5, -1}}
	// Residuals y − Xw − b: 1 − 0.75, 2 − (−1.75), 3 − 0.75 = 0.25, 3.75, 2.25.
	// (0.0625 + 14.0625 + 5.0625)/(2·3) + 0.1·(0.5 + 1).
	want := 19.1875/6 + 0.15
	if got := d.objective(lassoProblem, m, 0.1); !near(got, want) {
		t.Errorf("Lasso objective %.17g, want %.17g", got, want)
	}
	if got := d.objective(lassoProblem, model{w: []float64{0, 0}}, 0.1); !near(got, (1+4+9)/6.0) {
		t.Errorf("Lasso objective at 0: %g, want %g", got, 14/6.0)
	}
}

func TestLogisticObjective(t *testing.T) {
	d := tiny(t, [3]string{"1", "0", "1"})
	m := model{w: []float64{0.5, -1}}
	// Margins y·x·w with y = +1, −1, +1: 0.5, 2, 0.5.
	want := (2*math.Log(1+math.Exp(-0.5))+math.Log(1+math.Exp(-2)))/3 + 0.1*1.5
	if got := d.objective(logisticProblem, m, 0.1); !near(got, want) {
		t.Errorf("logistic objective %.17g, want %.17g", got, want)
	}
	// The labels −1/+1 give the same.
	d2 := tiny(t, [3]string{"+1", "-1", "+1"})
	if got := d2.objective(logisticProblem, m, 0.1); !near(got, want) {
		t.Errorf("logistic objective with ±1 labels %.17g, want %.17g", got, want)
	}
	if got := d.objective(logisticProblem, model{w: []float64{0, 0}}, 1); !near(got, math.Log(2)) {
		t.Errorf("logistic objective at 0: %g, want log 2", got)
	}
}

func TestLogLossExtremes(t *testing.T) {
	if got := logLoss(-1000); got != 1000 {
		t.Errorf("logLoss(−1000) = %g, want 1000", got)
	}
	if got := logLoss(1000); got != 0 || math.IsNaN(got) {
		t.Errorf("logLoss(1000) = %g, want 0", got)
	}
	if got := logLoss(0); !near(got, math.Log(2)) {
		t.Errorf("logLoss(0) = %g", got)
	}
}

func TestLambdaMax(t *testing.T) {
	d := tiny(t, [3]string{"1", "2", "3"})
	// Centered y = −1, 0, 1: Xᵀỹ = (2, 1), /3.
	if got := d.lambdaMax(lassoProblem, true); !near(got, 2.0/3) {
		t.Errorf("Lasso λ_max with intercept %g, want 2/3", got)
	}
	// Xᵀy = (10, 7), /3.
	if got := d.lambdaMax(lassoProblem, false); !near(got, 10.0/3) {
		t.Errorf("Lasso λ_max %g, want 10/3", got)
	}
	// y01 − ½ = ½, −½, ½: Xᵀ(y01 − ½) = (2, −0.5), /3.
	dl := tiny(t, [3]string{"1", "0", "1"})
	if got := dl.lambdaMax(logisticProblem, false); !near(got, 2.0/3) {
		t.Errorf("logistic λ_max %g, want 2/3", got)
	}
}

func TestKahan(t *testing.T) {
	var k kahan
	k.add(1)
	for range 1000 {
		k.add(1e-16)
	}
	if got := k.sum(); !near(got, 1+1e-13) {
		t.Errorf("compensated sum %.17g, want 1.0000000000001", got)
	}
}

func TestReadModelCSV(t *testing.T) {
	m, err := readModelCSV(testhelper.WriteFile(t, "m.csv", "index,value\n0,0.5\n3,-2.25\n1,1e-3\n"), 3)
	if err != nil {
		t.Fatal(err)
	}
	if m.b != 0.5 || m.w[0] != 1e-3 || m.w[1] != 0 || m.w[2] != -2.25 || m.nnz() != 2 {
		t.Errorf("got %+v", m)
	}
	// Without a header, and no intercept.
	m, err = readModelCSV(testhelper.WriteFile(t, "m.csv", "2,7\n"), 2)
	if err != nil || m.b != 0 || m.w[1] != 7 {
		t.Errorf("got %+v, %v", m, err)
	}
	for _, bad := range []string{"index,value\n4,1\n", "index,value\n1,1\n1,2\n", "index,value\n-1,1\n", "index,value\n1,x\n", "index,value\n1;2\n", "", "index,value\n1,NaN\n"} {
		if _, err := readModelCSV(testhelper.WriteFile(t, "bad.csv", bad), 3); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestReadLiblinearModel(t *testing.T) {
	head := "solver_type L1R_LR\nnr_class 2\n"
	m, err := readLiblinearModel(testhelper.WriteFile(t, "m", head+"label 1 -1\nnr_feature 2\nbias -1\nw\n0.5 \n-0 \n"), 3)
	if err != nil {
		t.Fatal(err)
	}
	if m.b != 0 || len(m.w) != 3 || m.w[0] != 0.5 || m.w[1] != 0 || m.w[2] != 0 || m.nnz() != 1 {
		t.Errorf("got %+v", m)
	}
	// The negative class first: liblinear's w is for it, so it is negated.
	m, err = readLiblinearModel(testhelper.WriteFile(t, "m", head+"label -1 1\nnr_feature 2\nbias -1\nw\n0.5 \n-2 \n"), 2)
	if err != nil || m.w[0] != -0.5 || m.w[1] != 2 {
		t.Errorf("got %+v, %v", m, err)
	}
	m, err = readLiblinearModel(testhelper.WriteFile(t, "m", head+"label 0 1\nnr_feature 1\nbias -1\nw\n0.5\n"), 1)
	if err != nil || m.w[0] != -0.5 {
		t.Errorf("labels 0 1: got %+v, %v", m, err)
	}
	for _, bad := range []string{
		head + "label 1 -1\nnr_feature 2\nbias 1\nw\n0.5\n0\n0\n",
		head + "label 1 -1\nnr_feature 4\nbias -1\nw\n1\n2\n3\n4\n",
		"solver_type L1R_LR\nnr_class 3\nlabel 1 2 3\nw\n1\n",
		head + "nr_feature 1\nbias -1\nw\n1\n",
		head + "label 1 -1\nnr_feature 1\nbias -1\nw\nx\n",
	} {
		if _, err := readLiblinearModel(testhelper.WriteFile(t, "bad", bad), 3); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{1, math.Inf(1), 2}, 2},
		{[]float64{1, math.Inf(1), math.Inf(1)}, math.Inf(1)},
	} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %g, want %g", c.xs, got, c.want)
		}
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %g, want NaN", got)
	}
	xs := []float64{3, 1, 2}
	median(xs)
	if xs[0] != 3 {
		t.Error("median sorted its argument")
	}
}

func TestKeyValuesAndResultLine(t *testing.T) {
	kv := proc.KeyValues("import_s 0.5\nfit_s 1.25\n\nconverged 1\n")
	if kv["fit_s"] != "1.25" || kv["converged"] != "1" || len(kv) != 3 {
		t.Errorf("got %v", kv)
	}
	out := "objective 3.05649431934  gap 1.2e-07  nnz 32  rounds 410  updates 5000  time 0.031s  (target)\nround p50 …\n"
	m := resultLine.FindStringSubmatch(out)
	if m == nil || m[1] != "0.031" || m[2] != "target" {
		t.Errorf("result line: %q", m)
	}
}

func TestReadTrace(t *testing.T) {
	tr, err := readTrace(testhelper.WriteFile(t, "m.csv", "time_s,round,objective,nnz\n0.01,10,5,3\n0.02,20,4.5,3\n"))
	if err != nil || len(tr) != 2 || tr[1] != [2]float64{0.02, 4.5} {
		t.Errorf("got %v, %v", tr, err)
	}
	if _, err := readTrace(testhelper.WriteFile(t, "m.csv", "round,nnz\n1,2\n")); err == nil {
		t.Error("no error without the columns")
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--quick", "--shapes", "a,real", "--workers", "2"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.shapes, ",") != "a,bladder,diabetes,breast_cancer" || len(o.workers) != 1 || !strings.Contains(o.out, "strads-peers-quick") ||
		!slices.Equal(o.schedules, []string{"priority"}) || o.skipPeers["glmnet"] {
		t.Errorf("got %+v", o)
	}
	o, err = parseFlags([]string{"--schedules", "priority,random,cyclic,shotgun", "--skip-peers", "glmnet"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.schedules, []string{"priority", "random", "cyclic", "shotgun"}) || !o.skipPeers["glmnet"] || o.skipPeers["liblinear"] {
		t.Errorf("got schedules %v, skipped peers %v", o.schedules, o.skipPeers)
	}
	for _, bad := range [][]string{{"--shapes", "z"}, {"--problems", "svm"}, {"--workers", "0"}, {"--runs", "0"}, {"extra"},
		{"--schedules", "hogwild"}, {"--skip-peers", "sklearn"}} {
		if _, err := parseFlags(bad, &strings.Builder{}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestThin(t *testing.T) {
	var tr [][2]float64
	for i := 1; i <= 10000; i++ {
		tr = append(tr, [2]float64{float64(i) / 100, float64(i)})
	}
	got := thin(tr, 100)
	if len(got) < 50 || len(got) > 102 || got[0] != tr[0] || got[len(got)-1] != tr[len(tr)-1] {
		t.Errorf("thin kept %d rows, first %v, last %v", len(got), got[0], got[len(got)-1])
	}
	for i := 1; i < len(got); i++ {
		if got[i][0] <= got[i-1][0] {
			t.Fatalf("not increasing at %d", i)
		}
	}
	if short := tr[:5]; len(thin(short, 100)) != 5 {
		t.Error("a short trace was thinned")
	}
}
