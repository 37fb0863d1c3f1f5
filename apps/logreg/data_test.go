package logreg

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler"
)

func TestCheckData(t *testing.T) {
	cases := []struct {
		name, data string
		line       int    // the line the error names; -1: no error
		want       string // in the message
	}{
		{"plus-minus", "+1 1:1\n-1 2:1\n", -1, ""},
		{"zero-one", "1 1:1\n0 2:1\n1 3:2\n", -1, ""},
		{"label 2", "1 1:1\n2 1:1\n", 2, "label 2 is not a class"},
		{"label 0.5", "0.5 1:1\n0 1:1\n", 1, "label 0.5 is not a class"},
		{"label -2", "1 1:1\n0 1:1\n-2 3:1\n", 3, "label -2"},
		{"mixed conventions", "1 1:1\n0 1:2\n1 1:1\n-1 1:3\n", 4, "mix the 0/1 and -1/+1"},
		{"all positive", "1 1:1\n+1 2:1\n", 0, "all 2 samples are positive"},
		{"all negative", "0 1:1\n0 2:1\n0 1:3\n", 0, "all 3 samples are negative"},
		{"label syntax", "1 1:1\nx 1:1\n", 2, "bad label"},
		{"features unseen", "1 1:1\n0 1:x\n", -1, ""}, // the roles that load them check them
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := testhelper.WriteFile(t, "data.svm", tc.data)
			err := CheckData(path)
			if tc.line < 0 {
				if err != nil {
					t.Fatalf("CheckData: %v", err)
				}
				return
			}
			var pe *libsvm.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("CheckData: %v, want a *libsvm.ParseError", err)
			}
			if pe.File != path || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.want) {
				t.Errorf("error %q at %s:%d, want %q at %s:%d", pe.Msg, pe.File, pe.Line, tc.want, path, tc.line)
			}
		})
	}
}

// TestWorkerBadLabel checks that a worker names the line of a bad label in
// its own shard.
func TestWorkerBadLabel(t *testing.T) {
	path := testhelper.WriteFile(t, "data.svm", "1 1:1\n0 1:2\n1 2:1\n3 1:1\n")
	if _, err := NewWorker(Config{Data: path}, 0, 2); err != nil {
		t.Errorf("shard 0 (lines 1-2): %v", err)
	}
	_, err := NewWorker(Config{Data: path}, 1, 2)
	var pe *libsvm.ParseError
	if !errors.As(err, &pe) || pe.Line != 4 || !strings.Contains(pe.Msg, "label 3") {
		t.Errorf("shard 1 (lines 3-4): %v, want a parse error at line 4", err)
	}
}

// TestSingleClassJob checks that the runtime refuses a single-class file
// (whose shards each look fine) with a clear error.
func TestSingleClassJob(t *testing.T) {
	path := testhelper.WriteFile(t, "data.svm", "1 1:1\n1 2:1\n1 1:3 2:1\n1 2:2\n")
	cfg := Config{Data: path, Lambda: 0.01, Schedule: schedule(scheduler.Priority, 2)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := job.Run(ctx, Program(cfg), job.Options{Job: "single", Timeout: 10 * time.Second, Coordinator: coordinator.Options{
		Workers: 2, ReportEvery: 10, JoinTimeout: 10 * time.Second, Timeout: 10 * time.Second}})
	if err == nil || !strings.Contains(err.Error(), "needs both classes") {
		t.Errorf("job: %v, want an error saying that both classes are needed", err)
	}
}

func TestConfigValidate(t *testing.T) {
	sched := schedule(scheduler.Priority, 1)
	cases := []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"lambda", Config{Data: "d", Lambda: 0.1, Schedule: sched}, ""},
		{"ratio", Config{Data: "d", LambdaRatio: 0.1, Schedule: sched}, ""},
		{"C", Config{Data: "d", C: 10, Schedule: sched}, ""},
		{"no data", Config{Lambda: 0.1, Schedule: sched}, "Data"},
		{"no penalty", Config{Data: "d", Schedule: sched}, "one of Lambda, LambdaRatio or C"},
		{"two penalties", Config{Data: "d", Lambda: 0.1, C: 1, Schedule: sched}, "only one"},
		{"negative C", Config{Data: "d", C: -1, Schedule: sched}, "C"},
		{"NaN lambda", Config{Data: "d", Lambda: math.NaN(), Schedule: sched}, "Lambda"},
		{"bad schedule", Config{Data: "d", Lambda: 0.1, Schedule: scheduler.Config{Block: -1}}, "Schedule."},
		{"shotgun, rows", Config{Data: "d", Lambda: 0.1, Schedule: schedule(scheduler.Shotgun, 1)}, ""},
		{"shotgun, columns", Config{Data: "d", Lambda: 0.1, Layout: lasso.LayoutColumns, Schedule: schedule(scheduler.Shotgun, 1)}, "Schedule.Policy shotgun is a baseline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestPenalty checks the three ways of giving λ against their definitions.
func TestPenalty(t *testing.T) {
	path := testhelper.WriteFile(t, "data.svm", "1 1:1 2:-2\n0 1:0.5\n0 2:1\n1 1:2 2:1\n1 2:-1\n")
	n := 5.0
	// Without an intercept λ_max = ‖Xᵀ(y01 − ½)‖∞/n: column 1 gives
	// (0.5·1 − 0.5·0.5 + 0.5·2)/5 = 0.25, column 2 (−1 − 0.5 + 0.5 − 0.5)/5 = −0.3.
	cases := []struct {
		name string
		cfg  Config
		want float64
	}{
		{"lambda", Config{Lambda: 0.02}, 0.02},
		{"ratio", Config{LambdaRatio: 0.5}, 0.5 * 0.3},
		{"C", Config{C: 4}, 1 / (4 * n)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Data = path
			w, err := NewWorker(tc.cfg, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			s, err := w.Describe()
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewCoordinator(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Start([]Summary{s}); err != nil {
				t.Fatal(err)
			}
			if math.Abs(c.Lambda()-tc.want) > 1e-15 || math.Abs(c.LambdaMax()-0.3) > 1e-15 {
				t.Errorf("λ = %v, λ_max = %v; want %v, 0.3", c.Lambda(), c.LambdaMax(), tc.want)
			}
		})
	}
}

// TestPredictions runs a job with the training file as its test set, and
// checks the accuracy records and the predicted probabilities against the
// model.
func TestPredictions(t *testing.T) {
	g := genConfig(200, 30, 10, 4)
	g.Bias, g.ZeroOne = -0.5, true
	pr := newProblem(t, g)
	cfg := Config{Data: pr.path, Test: pr.path, LambdaRatio: 0.05, Intercept: true, Schedule: schedule(scheduler.Priority, 2)}
	_, coord, _ := runJob(t, cfg, 2, coordinator.Options{Tol: 1e-8, MaxRounds: 20000})
	recs := coord.Records()
	if len(recs) < 2 {
		t.Fatalf("%d records", len(recs))
	}
	z := pr.margins(coord.Weights(), coord.Intercept())
	correct := 0
	for i, zi := range z {
		if (zi >= 0) == (pr.y[i] > 0) {
			correct++
		}
	}
	acc := float64(correct) / float64(len(z))
	if last := recs[len(recs)-1]; last.Train != acc || last.Test != acc {
		t.Errorf("last record %+v, want train and test accuracy %v", last, acc)
	}
	if acc < 0.6 {
		t.Errorf("accuracy %v: the model learned nothing", acc)
	}
	var buf bytes.Buffer
	if err := coord.WritePredictions(&buf, pr.path); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if lines[0] != "label,probability" || len(lines) != len(z)+1 {
		t.Fatalf("predictions: header %q and %d lines, want %d", lines[0], len(lines), len(z)+1)
	}
	for i, l := range lines[1:] {
		lab, p, _ := strings.Cut(l, ",")
		v, err := strconv.ParseFloat(p, 64)
		want := 1 / (1 + math.Exp(-z[i]))
		if err != nil || math.Abs(v-want) > 1e-12 || lab != map[bool]string{true: "1", false: "0"}[want >= 0.5] {
			t.Fatalf("prediction %d: %q, want the predicted label and probability %v", i+1, l, want)
		}
	}

	// The model file, read back, predicts the same probabilities, and the
	// labels as the training data writes them (0/1).
	var file bytes.Buffer
	if err := coord.WriteModel(&file); err != nil {
		t.Fatal(err)
	}
	m, err := linear.Read(&file, "model.csv")
	if err != nil {
		t.Fatal(err)
	}
	if m.Labels != linear.Labels01 {
		t.Errorf("model labels %q, want %q", m.Labels, linear.Labels01)
	}
	buf.Reset()
	if err := m.WritePredictions(&buf, pr.path); err != nil {
		t.Fatal(err)
	}
	again := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(again) != len(lines) {
		t.Fatalf("%d predictions from the model file, want %d", len(again)-1, len(lines)-1)
	}
	for i, l := range again[1:] {
		lab, p, _ := strings.Cut(l, ",")
		_, want, _ := strings.Cut(lines[i+1], ",")
		v, err := strconv.ParseFloat(p, 64)
		w, _ := strconv.ParseFloat(want, 64)
		if err != nil || math.Abs(v-w) > 1e-12 || lab != map[bool]string{true: "1", false: "0"}[w >= 0.5] {
			t.Fatalf("prediction %d from the model file: %q, want probability %s", i+1, l, want)
		}
	}
}

func TestGenerate(t *testing.T) {
	base := GenConfig{GenConfig: lasso.GenConfig{
		Samples: 3000, Features: 40, Density: 0.2, CorrGroups: 0, TrueNNZ: 8, Seed: 9,
	}}
	gen := func(c GenConfig) (string, []float64) {
		var buf bytes.Buffer
		truth, err := Generate(&buf, c)
		if err != nil {
			t.Fatal(err)
		}
		return buf.String(), truth
	}
	out, truth := gen(base)
	if again, _ := gen(base); again != out {
		t.Error("the same config gave different output")
	}
	// The design matrix is the Lasso generator's.
	var lb bytes.Buffer
	if _, err := lasso.Generate(&lb, base.GenConfig); err != nil {
		t.Fatal(err)
	}
	ours, theirs := strings.Split(out, "\n"), strings.Split(lb.String(), "\n")
	if len(ours) != len(theirs) {
		t.Fatalf("%d lines, the Lasso generator %d", len(ours), len(theirs))
	}
	for i := range ours {
		_, a, _ := strings.Cut(ours[i], " ")
		_, b, _ := strings.Cut(theirs[i], " ")
		if a != b {
			t.Fatalf("line %d: features %q, the Lasso generator's %q", i+1, a, b)
		}
	}
	nnz := 0
	for _, v := range truth {
		if v != 0 {
			nnz++
		}
	}
	if nnz != base.TrueNNZ {
		t.Errorf("%d true non-zeros, want %d", nnz, base.TrueNNZ)
	}
	// Labels are ±1, and follow the true model: the sign of x·w* predicts
	// them far better than chance.
	path := testhelper.WriteFile(t, "data.svm", out)
	agree, rows := 0, 0
	err := libsvm.Read(path, func(_ int, row libsvm.Row) error {
		if row.Label != 1 && row.Label != -1 {
			t.Fatalf("label %v", row.Label)
		}
		var m float64
		for k, j := range row.Index {
			m += truth[j] * row.Value[k]
		}
		if (m >= 0) == (row.Label > 0) {
			agree++
		}
		rows++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if frac := float64(agree) / float64(rows); frac < 0.75 {
		t.Errorf("the true model predicts %.2f of the labels, want ≥ 0.75", frac)
	}
	zo := base
	zo.ZeroOne, zo.Bias = true, 3
	out01, _ := gen(zo)
	ones := strings.Count(out01, "\n1 ") + map[bool]int{true: 1}[strings.HasPrefix(out01, "1 ")]
	if strings.Contains(out01, "-1 ") || strings.Contains(out01, "+1 ") || ones < rows*3/4 {
		t.Errorf("0/1 labels with bias 3: %d of %d positive, want most and no ±1", ones, rows)
	}
	bad := base
	bad.Bias = math.Inf(1)
	if _, err := Generate(&bytes.Buffer{}, bad); err == nil || !strings.Contains(err.Error(), "Bias") {
		t.Errorf("infinite bias: %v, want an error naming Bias", err)
	}
}
