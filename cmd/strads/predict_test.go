package main

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// TestPredictLogreg checks that strads predict, given the model file of a
// logistic regression job and its test set, reproduces the probabilities
// that the job itself wrote for that set (--predict) to 1e-12, with the
// labels as the training data wrote them.
func TestPredictLogreg(t *testing.T) {
	data := genLogregData(t, 300, "--labels", "01", "--bias", "0.5")
	test := genLogregData(t, 100, "--labels", "01", "--bias", "0.5", "--seed", "4")
	dir := t.TempDir()
	model, inJob, pred := filepath.Join(dir, "w.csv"), filepath.Join(dir, "job.csv"), filepath.Join(dir, "pred.csv")
	metrics := filepath.Join(dir, "m.csv")
	if code, _, stderr := runCLI(t, "logreg", "--data", data, "--test", test, "--lambda-ratio", "0.1",
		"--progress", "0", "--out", model, "--predict", inJob, "--metrics", metrics); code != 0 {
		t.Fatalf("logreg: exit %d: %s", code, stderr)
	}
	if code, stdout, stderr := runCLI(t, "predict", "--model", model, "--data", test, "--out", pred); code != 0 || !strings.Contains(stdout, "logreg model") {
		t.Fatalf("predict: exit %d: %s%s", code, stdout, stderr)
	}
	want, got := readLines(t, inJob), readLines(t, pred)
	if got[0] != "label,probability" || len(got) != len(want) || len(got) != 101 {
		t.Fatalf("predictions: header %q, %d lines; the job's: %d", got[0], len(got), len(want))
	}
	labels := readLines(t, test)
	right := 0
	for i := 1; i < len(got); i++ {
		lab, p, _ := strings.Cut(got[i], ",")
		if lab == strings.Fields(labels[i-1])[0] {
			right++
		}
		_, q, _ := strings.Cut(want[i], ",")
		pv, err1 := strconv.ParseFloat(p, 64)
		qv, err2 := strconv.ParseFloat(q, 64)
		wantLab := "0"
		if qv >= 0.5 {
			wantLab = "1"
		}
		if err1 != nil || err2 != nil || math.Abs(pv-qv) > 1e-12 || lab != wantLab {
			t.Fatalf("sample %d: predicted %q, the job wrote probability %s (want label %s)", i, got[i], q, wantLab)
		}
	}
	if acc, reported := float64(right)/float64(len(labels)), testhelper.WrittenRow(t, metrics)["test_accuracy"]; acc != reported {
		t.Errorf("accuracy of the predictions %v, the job reported test_accuracy %v in the metrics' written row", acc, reported)
	}
}

// TestPredictLasso checks strads predict on a Lasso model: the mean squared
// error of its predictions on the test set equals the test_mse that the job
// reported for the model it wrote.
func TestPredictLasso(t *testing.T) {
	data, test := genData(t), genData(t, "--seed", "4")
	dir := t.TempDir()
	model, metrics := filepath.Join(dir, "beta.csv"), filepath.Join(dir, "m.csv")
	if code, _, stderr := runCLI(t, "lasso", "--data", data, "--test", test, "--lambda-ratio", "0.1", "--intercept",
		"--progress", "0", "--out", model, "--metrics", metrics); code != 0 {
		t.Fatalf("lasso: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "predict", "--model", model, "--data", test)
	if code != 0 {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	labels := readLines(t, test)
	if lines[0] != "prediction" || len(lines) != len(labels)+1 {
		t.Fatalf("predictions: header %q, %d lines for %d samples", lines[0], len(lines)-1, len(labels))
	}
	var sse float64
	for i, l := range lines[1:] {
		p, err1 := strconv.ParseFloat(l, 64)
		y, err2 := strconv.ParseFloat(strings.Fields(labels[i])[0], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("line %d: %q, label %q", i+2, l, labels[i])
		}
		sse += (p - y) * (p - y)
	}
	reported := testhelper.WrittenRow(t, metrics)["test_mse"]
	if mse := sse / float64(len(labels)); !(math.Abs(mse-reported) <= 1e-9*reported) {
		t.Errorf("MSE of the predictions %v, the job reported test_mse %v in the metrics' written row", mse, reported)
	}
}

// TestPredictErrors checks that predict refuses what it cannot do, with
// status 2, naming the file and line, and writes nothing.
func TestPredictErrors(t *testing.T) {
	data := genData(t)
	dir := t.TempDir()
	model := filepath.Join(dir, "beta.csv")
	if code, _, stderr := runCLI(t, "lasso", "--data", data, "--lambda-ratio", "0.1", "--progress", "0", "--out", model); code != 0 {
		t.Fatalf("lasso: exit %d: %s", code, stderr)
	}
	wide := filepath.Join(dir, "wide.svm")
	notModel := filepath.Join(dir, "not-a-model.csv")
	if err := os.WriteFile(wide, []byte("1 1:1\n2 301:0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notModel, []byte("index,value\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pred.csv")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"more features than the model", []string{"--model", model, "--data", wide, "--out", out}, wide + ":2: feature 301: the model knows 300 features"},
		{"not a model", []string{"--model", notModel, "--data", data, "--out", out}, notModel + ":1: not a strads linear model"},
		{"no model", []string{"--data", data}, "--model FILE is required"},
		{"out is an input", []string{"--model", model, "--data", data, "--out", data}, "would overwrite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"predict"}, tc.args...)...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, error %q; want 2 and %q", code, stderr, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was written", out)
			}
		})
	}
}
