// Package linear is the model file of the linear models, the Lasso
// (apps/lasso) and L1-regularized logistic regression (apps/logreg), and
// predictions with it.
//
// A model file is a CSV "index,value" of the non-zero coefficients, with
// 1-based feature indices as in LIBSVM and the intercept as index 0, after
// a header of comment lines that says what the model is:
//
//	# strads linear model
//	# app: lasso
//	# features: 5000
//	# lambda: 0.0123
//	# intercept: true
//	# version: v0.4.0
//	index,value
//	0,0.52
//	17,-1.25
//
// so that a model is never applied to data it was not trained for, and so
// that pandas (read_csv(path, comment="#")) and R (read.csv(path,
// comment.char = "#")) read the coefficients in one call. A logistic
// regression model also says its training labels ("# labels: 0/1" or
// "# labels: -1/1"), and one fit with an L2 penalty says so ("# penalty:
// l2"; without the line the penalty is L1). Readers skip keys they do not
// know.
package linear

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/version"
)

// Apps that write linear models.
const (
	Lasso  = "lasso"
	Logreg = "logreg"
)

// PenaltyL2 is Model.Penalty of a model fit with the L2 penalty
// (λ/2)‖w‖²; the empty penalty is L1, λ‖w‖₁.
const PenaltyL2 = "l2"

// Labels of a logistic regression model's training data.
const (
	Labels01 = "0/1"  // the classes were written 0 and 1
	LabelsPM = "-1/1" // the classes were written −1 and +1 (or 1)
)

// magic is the first line of a model file.
const magic = "# strads linear model"

// Model is a linear model as its file holds it.
type Model struct {
	// App is the app that fit it: Lasso (a prediction is xᵀβ + b) or Logreg
	// (P(y = +1 | x) = σ(xᵀw + b)).
	App string
	// Features is the number of features of the training data. Applying
	// the model to a row with a non-zero feature beyond is an error.
	Features int
	// Lambda is the penalty λ the model was fit with, of the L1 penalty
	// λ‖w‖₁ unless Penalty says otherwise.
	Lambda float64
	// Penalty is "" (L1) or PenaltyL2.
	Penalty string
	// Labels, for Logreg, is how the training data wrote its classes
	// (Labels01 or LabelsPM); predicted labels are written the same way.
	Labels string
	// Version is the strads version that wrote the model (package
	// version); New fills it in.
	Version string
	// HasIntercept says whether the model has an intercept, Intercept.
	HasIntercept bool
	Intercept    float64
	// Index lists the features with a non-zero coefficient, 0-based and
	// ascending; Value holds their coefficients.
	Index []int32
	Value []float64
}

// New returns the model of app with coefficients beta (copied: the
// non-zero ones) over len(beta) features, penalty lambda and intercept b0,
// kept only if intercept.
func New(app string, lambda float64, intercept bool, b0 float64, beta []float64) *Model {
	m := &Model{App: app, Features: len(beta), Lambda: lambda, Version: version.String(), HasIntercept: intercept}
	if intercept {
		m.Intercept = b0
	}
	for j, v := range beta {
		if v != 0 {
			m.Index = append(m.Index, int32(j))
			m.Value = append(m.Value, v)
		}
	}
	return m
}

// Dense returns the coefficients as a vector of Features entries.
func (m *Model) Dense() []float64 {
	dense := make([]float64, m.Features)
	for k, j := range m.Index {
		dense[j] = m.Value[k]
	}
	return dense
}

// NNZ returns the number of non-zero coefficients.
func (m *Model) NNZ() int { return len(m.Index) }

// Check reports the first thing wrong with m: an unknown app, a feature
// count, penalty or labels out of range, indices not ascending within
// [0, Features), or a coefficient that is zero or not finite. Its errors
// name the fields as the file's header does (app, features, lambda,
// labels).
func (m *Model) Check() error {
	switch m.App {
	case Lasso:
		if m.Labels != "" {
			return fmt.Errorf("a Lasso model has no labels, got %q", m.Labels)
		}
	case Logreg:
		if m.Labels != Labels01 && m.Labels != LabelsPM {
			return fmt.Errorf("labels must be %q or %q, got %q", Labels01, LabelsPM, m.Labels)
		}
	default:
		return fmt.Errorf("app must be %q or %q, got %q", Lasso, Logreg, m.App)
	}
	switch {
	case m.Features < 0 || m.Features > math.MaxInt32:
		return fmt.Errorf("features must be in [0, %d], got %d", math.MaxInt32, m.Features)
	case !(m.Lambda >= 0) || math.IsInf(m.Lambda, 0):
		return fmt.Errorf("lambda must be a finite number >= 0, got %v", m.Lambda)
	case m.Penalty != "" && m.Penalty != PenaltyL2:
		return fmt.Errorf("penalty must be %q or absent (L1), got %q", PenaltyL2, m.Penalty)
	case math.IsNaN(m.Intercept) || math.IsInf(m.Intercept, 0):
		return fmt.Errorf("the intercept must be finite, got %v", m.Intercept)
	case len(m.Index) != len(m.Value):
		return fmt.Errorf("%d indices and %d values", len(m.Index), len(m.Value))
	}
	for k, j := range m.Index {
		switch v := m.Value[k]; {
		case j < 0 || int(j) >= m.Features:
			return fmt.Errorf("feature %d is outside the model's %d", int64(j)+1, m.Features)
		case k > 0 && j <= m.Index[k-1]:
			return fmt.Errorf("features not ascending: %d after %d", int64(j)+1, int64(m.Index[k-1])+1)
		case v == 0 || math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Errorf("feature %d has coefficient %v, want a finite non-zero", int64(j)+1, v)
		}
	}
	return nil
}

// Write writes m's file to w.
func (m *Model) Write(w io.Writer) error {
	if err := m.Check(); err != nil {
		return fmt.Errorf("linear model: %w", err)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s\n# app: %s\n# features: %d\n# lambda: %s\n# intercept: %t\n", magic, m.App, m.Features, formatFloat(m.Lambda), m.HasIntercept)
	if m.Labels != "" {
		fmt.Fprintf(bw, "# labels: %s\n", m.Labels)
	}
	if m.Penalty != "" {
		fmt.Fprintf(bw, "# penalty: %s\n", m.Penalty)
	}
	if m.Version != "" {
		fmt.Fprintf(bw, "# version: %s\n", m.Version)
	}
	bw.WriteString("index,value\n")
	var buf []byte
	line := func(j int64, v float64) {
		buf = strconv.AppendInt(buf[:0], j, 10)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, v, 'g', 17, 64)
		bw.Write(append(buf, '\n'))
	}
	if m.HasIntercept {
		line(0, m.Intercept)
	}
	for k, j := range m.Index {
		line(int64(j)+1, m.Value[k])
	}
	return bw.Flush()
}

// formatFloat formats v exactly (it parses back to v).
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// ReadFile reads the model file at path; its errors are *libsvm.ParseError,
// naming the file and the line.
func ReadFile(path string) (*Model, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads a model file from r; name names it in errors, which are
// *libsvm.ParseError with the line.
func Read(r io.Reader, name string) (*Model, error) {
	sc := bufio.NewScanner(r)
	line := 0
	fail := func(format string, args ...any) (*Model, error) {
		return nil, &libsvm.ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	m := &Model{Features: -1}
	seen := map[string]bool{}
	var inHeader, intercept bool
	for sc.Scan() {
		line++
		s := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			if s != magic {
				return fail("not a strads linear model: the first line must be %q", magic)
			}
			inHeader = true
			continue
		}
		if inHeader {
			if s == "index,value" {
				inHeader = false
				if m.App == "" || m.Features < 0 || !seen["lambda"] || !seen["intercept"] {
					return fail("the header lacks one of app, features, lambda and intercept")
				}
				continue
			}
			key, value, ok := strings.Cut(strings.TrimPrefix(s, "#"), ":")
			if !strings.HasPrefix(s, "#") || !ok {
				return fail("want a header line \"# key: value\" or \"index,value\", got %q", clip(s))
			}
			key, value = strings.TrimSpace(key), strings.TrimSpace(value)
			if seen[key] {
				return fail("%s given twice", key)
			}
			seen[key] = true
			var err error
			switch key {
			case "app":
				m.App = value
			case "features":
				m.Features, err = strconv.Atoi(value)
			case "lambda":
				m.Lambda, err = strconv.ParseFloat(value, 64)
			case "intercept":
				intercept, err = strconv.ParseBool(value)
			case "labels":
				m.Labels = value
			case "penalty":
				m.Penalty = value
			case "version":
				m.Version = value
			}
			if err != nil {
				return fail("bad %s %q", key, clip(value))
			}
			continue
		}
		a, b, ok := strings.Cut(s, ",")
		if !ok {
			return fail("want \"index,value\", got %q", clip(s))
		}
		j, err1 := strconv.ParseInt(a, 10, 64)
		v, err2 := strconv.ParseFloat(b, 64)
		switch {
		case err1 != nil || err2 != nil:
			return fail("want \"index,value\", got %q", clip(s))
		case j == 0:
			if !intercept {
				return fail("an intercept (index 0) in a model without one")
			}
			if m.HasIntercept || len(m.Index) > 0 {
				return fail("the intercept (index 0) must come first, once")
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fail("the intercept is %v, want a finite number", v)
			}
			m.HasIntercept, m.Intercept = true, v
		case j < 0 || j > int64(m.Features):
			return fail("feature %d is outside the model's %d", j, m.Features)
		case len(m.Index) > 0 && int32(j-1) <= m.Index[len(m.Index)-1]:
			return fail("features must ascend: %d after %d", j, m.Index[len(m.Index)-1]+1)
		case v == 0 || math.IsNaN(v) || math.IsInf(v, 0):
			return fail("feature %d has coefficient %v, want a finite non-zero", j, v)
		default:
			m.Index = append(m.Index, int32(j-1))
			m.Value = append(m.Value, v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	empty := line == 0
	line = 0 // what follows is about the whole file
	switch {
	case empty:
		return fail("empty file")
	case inHeader:
		return fail("no \"index,value\" line after the header")
	case intercept && !m.HasIntercept:
		return fail("the header says the model has an intercept, but no index 0 follows")
	}
	if err := m.Check(); err != nil {
		return fail("%v", err)
	}
	return m, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// Predict returns the prediction for a row with 0-based feature indices
// idx and values val: xᵀβ + b for the Lasso, P(y = +1 | x) = σ(xᵀw + b) for
// logistic regression. A non-zero value of a feature the model does not
// know (at or beyond Features) is an error.
func (m *Model) Predict(idx []int32, val []float64) (float64, error) {
	return m.predict(nil, idx, val)
}

// predict is Predict with the coefficients as a dense vector of Features
// entries, or nil to look them up in Index.
func (m *Model) predict(dense []float64, idx []int32, val []float64) (float64, error) {
	z := m.Intercept
	for k, j := range idx {
		if val[k] == 0 {
			continue
		}
		if j < 0 || int(j) >= m.Features {
			return math.NaN(), fmt.Errorf("feature %d: the model knows %d features", int64(j)+1, m.Features)
		}
		if dense != nil {
			z += dense[j] * val[k]
		} else if i, ok := slices.BinarySearch(m.Index, j); ok {
			z += m.Value[i] * val[k]
		}
	}
	if m.App == Logreg {
		return Sigmoid(z), nil
	}
	return z, nil
}

// Sigmoid returns σ(z) = 1/(1 + e^−z) without overflow.
func Sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// Label returns the class a logistic regression model predicts for the
// probability p = P(y = +1 | x), written as the training data wrote its
// classes: 1 when p ≥ 1/2, else 0 or −1.
func (m *Model) Label(p float64) float64 {
	switch {
	case p >= 0.5:
		return 1
	case m.Labels == Labels01:
		return 0
	}
	return -1
}

// WritePredictions writes to w the predictions for every row of the LIBSVM
// file at path, in order: a CSV "prediction" for the Lasso, "label,
// probability" for logistic regression (the predicted label as the
// training data wrote its classes, and P(y = +1 | x)). A row with a
// feature the model does not know is an error naming its line, as is any
// bad line of the file (*libsvm.ParseError).
func (m *Model) WritePredictions(w io.Writer, path string) error {
	bw := bufio.NewWriter(w)
	if m.App == Logreg {
		bw.WriteString("label,probability\n")
	} else {
		bw.WriteString("prediction\n")
	}
	dense := m.Dense()
	var buf []byte
	err := libsvm.Read(path, func(line int, row libsvm.Row) error {
		p, err := m.predict(dense, row.Index, row.Value)
		if err != nil {
			return &libsvm.ParseError{File: path, Line: line, Msg: err.Error()}
		}
		buf = buf[:0]
		if m.App == Logreg {
			buf = strconv.AppendFloat(buf, m.Label(p), 'g', -1, 64)
			buf = append(buf, ',')
		}
		buf = strconv.AppendFloat(buf, p, 'g', 17, 64)
		_, err = bw.Write(append(buf, '\n'))
		return err
	})
	if err != nil {
		var pe *libsvm.ParseError
		if errors.As(err, &pe) {
			return pe
		}
		return err
	}
	return bw.Flush()
}
