package logreg

import (
	"fmt"
	"math"

	"github.com/strads-go/strads/libsvm"
)

// Penalty is the regularizer of the parameter-server modes: L1 is the
// scheduled solver's λ‖w‖₁, L2 is (λ/2)‖w‖² (scikit-learn's and
// liblinear's, so that λ = 1/(C·n) holds for both).
type Penalty uint8

// The penalties.
const (
	L1 Penalty = iota
	L2
)

// String returns l1 or l2.
func (p Penalty) String() string {
	if p == L2 {
		return "l2"
	}
	return "l1"
}

// ParsePenalty parses l1 or l2.
func ParsePenalty(s string) (Penalty, error) {
	switch s {
	case "l1":
		return L1, nil
	case "l2":
		return L2, nil
	}
	return 0, fmt.Errorf("unknown penalty %q (l1 or l2)", s)
}

// Of returns the penalty of w, without λ: ‖w‖₁ or ½‖w‖².
func (p Penalty) Of(w []float64) float64 {
	s := 0.0
	for _, v := range w {
		if p == L2 {
			s += v * v / 2
		} else {
			s += math.Abs(v)
		}
	}
	return s
}

// Fit is how a model (w, b) fits a LIBSVM file: its summed loss
// Σ log(1 + exp(−y_i·(x_i·w + b))) and its rows classified right, of
// Rows.
type Fit struct {
	Loss    float64
	Correct int
	Rows    int
}

// Accuracy returns Correct/Rows (0 without rows).
func (f Fit) Accuracy() float64 {
	if f.Rows == 0 {
		return 0
	}
	return float64(f.Correct) / float64(f.Rows)
}

// Loss returns the loss of the model (w, b) on the rows of the LIBSVM
// file at path, as the objective and the accuracies count them; features
// beyond len(w) count as zero weights. A label that is not a class is a
// *libsvm.ParseError.
func Loss(path string, w []float64, b float64) (Fit, error) {
	var f Fit
	err := libsvm.Read(path, func(line int, r libsvm.Row) error {
		y, ok := label(r.Label)
		if !ok {
			return &libsvm.ParseError{File: path, Line: line, Msg: badLabel(r.Label)}
		}
		z := b
		for k, j := range r.Index {
			if int(j) < len(w) {
				z += w[j] * r.Value[k]
			}
		}
		f.add(y, z)
		return nil
	})
	return f, err
}

// add counts a row of label y and margin z.
func (f *Fit) add(y, z float64) {
	s, _, _ := row(y, z)
	f.Loss += rowLoss(y, z, s)
	if (z >= 0) == (y > 0) {
		f.Correct++
	}
	f.Rows++
}
