package logreg

import (
	"io"
	"math"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/sparse"
)

// model is what the coordinators of both layouts hold: the penalty, the
// weights and the intercept, the test set, and the records of the reports.
type model struct {
	cfg       Config
	n         float64
	lambda    float64
	lambdaMax float64
	w         []float64
	b         float64
	labels    string // how the training data writes its classes: linear.Labels01 or LabelsPM
	test      *testSet
	records   []Record
}

// Record is what a report measured besides the objective: the accuracy on
// the training rows (at the workers' state) and on the test set (at the
// coordinator's w when the report arrived; NaN without a test set).
type Record struct {
	Train, Test float64
}

// testSet is a test file held by the coordinator.
type testSet struct {
	x *sparse.CSC
	y []float64 // ±1
}

// newModel returns the model for cfg; it reads cfg.Test, if set.
func newModel(cfg Config) (model, error) {
	m := model{cfg: cfg}
	if cfg.Test != "" {
		x, labels, err := libsvm.ReadMatrix(cfg.Test, 0, -1, 0)
		if err != nil {
			return m, err
		}
		t := &testSet{x: x, y: make([]float64, len(labels))}
		for i, v := range labels {
			y, ok := label(v)
			if !ok {
				return m, &libsvm.ParseError{File: cfg.Test, Line: i + 1, Msg: badLabel(v)}
			}
			t.y[i] = y
		}
		m.test = t
	}
	return m, nil
}

// setLambda sets λ from the config, given λ_max and n.
func (m *model) setLambda(lambdaMax float64) {
	m.lambdaMax = lambdaMax
	m.lambda = m.cfg.lambda(lambdaMax, m.n)
}

// lambda returns the penalty c asks for, given λ_max and the number of
// rows n: a fraction of λ_max, 1/(C·n), or λ itself.
func (c Config) lambda(lambdaMax, n float64) float64 {
	switch {
	case c.LambdaRatio > 0:
		return c.LambdaRatio * lambdaMax
	case c.C > 0:
		return 1 / (c.C * n)
	}
	return c.Lambda
}

// Lambda returns the penalty in use (known after Start).
func (m *model) Lambda() float64 { return m.lambda }

// LambdaMax returns the smallest λ whose solution is w = 0 (known after
// Start).
func (m *model) LambdaMax() float64 { return m.lambdaMax }

// Weights returns w (owned by the coordinator).
func (m *model) Weights() []float64 { return m.w }

// Intercept returns b (0 without an intercept).
func (m *model) Intercept() float64 { return m.b }

// Records returns one record per report, in order (owned by the
// coordinator).
func (m *model) Records() []Record { return m.records }

// record records a report's training accuracy, with the test accuracy of
// the current model, and returns both as the metrics train_accuracy and
// test_accuracy.
func (m *model) record(train float64) []schmp.Metric {
	rec := Record{Train: train, Test: m.testAccuracy()}
	m.records = append(m.records, rec)
	return []schmp.Metric{
		{Name: "train_accuracy", Value: rec.Train},
		{Name: "test_accuracy", Value: rec.Test}, // NaN without a test set: an empty cell
	}
}

// testAccuracy returns the accuracy of the coordinator's model on the test
// set, or NaN without one.
func (m *model) testAccuracy() float64 {
	t := m.test
	if t == nil {
		return math.NaN()
	}
	if len(t.y) == 0 {
		return 0
	}
	z := make([]float64, len(t.y))
	for i := range z {
		z[i] = m.b
	}
	for j, wj := range m.w[:min(len(m.w), t.x.Cols)] {
		if wj == 0 {
			continue
		}
		rows, vals := t.x.Col(j)
		for k, i := range rows {
			z[i] += vals[k] * wj
		}
	}
	correct := 0
	for i, zi := range z {
		if (zi >= 0) == (t.y[i] > 0) {
			correct++
		}
	}
	return float64(correct) / float64(len(z))
}

// WriteModel implements schmp.Coordinator: the model file of package
// apps/linear, the non-zero weights with 1-based indices as in LIBSVM and
// the intercept as index 0 when the job fits one.
func (m *model) WriteModel(w io.Writer) error {
	return m.Model().Write(w)
}

// Model returns the coordinator's model.
func (m *model) Model() *linear.Model {
	lm := linear.New(linear.Logreg, m.lambda, m.cfg.Intercept, m.b, m.w)
	lm.Labels = m.labels
	return lm
}

// setLabels records how the training data writes its classes, from the
// count of its labels written 0.
func (m *model) setLabels(zero int) {
	m.labels = linear.LabelsPM
	if zero > 0 {
		m.labels = linear.Labels01
	}
}

// WritePredictions writes the predictions of the model for every row of
// the LIBSVM file at path, as strads predict does from the model file
// (linear.Model.WritePredictions): a CSV "label,probability", the
// predicted label as the training data writes its classes and
// P(y = +1 | x).
func (m *model) WritePredictions(w io.Writer, path string) error {
	return m.Model().WritePredictions(w, path)
}
