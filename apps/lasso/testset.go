package lasso

import (
	"fmt"

	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/sparse"
)

// testSet is a file of held-out samples, held by the coordinator for the
// test error of its model.
type testSet struct {
	x *sparse.CSC
	y []float64
}

// readTestSet reads the LIBSVM file at path.
func readTestSet(path string) (*testSet, error) {
	x, y, err := libsvm.ReadMatrix(path, 0, -1, 0)
	if err != nil {
		return nil, fmt.Errorf("test set: %w", err)
	}
	return &testSet{x: x, y: y}, nil
}

// mse returns the mean squared error on the test set of the predictions
// b0 + x·β (features beyond β's count as 0), or 0 for an empty set.
func (t *testSet) mse(b0 float64, beta []float64) float64 {
	if len(t.y) == 0 {
		return 0
	}
	r := make([]float64, len(t.y))
	for i, y := range t.y {
		r[i] = y - b0
	}
	for j, b := range beta[:min(len(beta), t.x.Cols)] {
		if b == 0 {
			continue
		}
		rows, vals := t.x.Col(j)
		for k, i := range rows {
			r[i] -= vals[k] * b
		}
	}
	var sum float64
	for _, v := range r {
		sum += v * v
	}
	return sum / float64(len(r))
}

// testMetric is the name of the test error among an app's metrics.
const testMetric = "test_mse"
