package linear

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/strads-go/strads/libsvm"
)

func TestRoundTrip(t *testing.T) {
	beta := []float64{0, 1.5, 0, -1e-300, 0.1 + 0.2, 0}
	for _, m := range []*Model{
		New(Lasso, 0.0123, true, -0.25, beta),
		New(Lasso, 0, false, 7, beta),
		func() *Model { m := New(Logreg, 1e-3, true, 2, beta); m.Labels = Labels01; return m }(),
		func() *Model { m := New(Logreg, 1e-3, false, 0, make([]float64, 3)); m.Labels = LabelsPM; return m }(),
	} {
		var b bytes.Buffer
		if err := m.Write(&b); err != nil {
			t.Fatal(err)
		}
		got, err := Read(bytes.NewReader(b.Bytes()), "m.csv")
		if err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("read back %+v, wrote %+v\n%s", got, m, b.String())
		}
	}
}

func TestWriteFormat(t *testing.T) {
	m := New(Lasso, 0.5, true, 0.25, []float64{0, 2, 0, -1})
	m.Version = "v1.2.3"
	var b bytes.Buffer
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "# strads linear model\n# app: lasso\n# features: 4\n# lambda: 0.5\n# intercept: true\n# version: v1.2.3\nindex,value\n0,0.25\n2,2\n4,-1\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	bad := New(Lasso, 0.5, false, 0, []float64{math.NaN()})
	if err := bad.Write(&b); err == nil {
		t.Error("a NaN coefficient was written")
	}
}

func TestReadErrors(t *testing.T) {
	const head = "# strads linear model\n# app: lasso\n# features: 3\n# lambda: 0.1\n# intercept: true\nindex,value\n"
	tests := []struct {
		name, file string
		line       int
		msg        string
	}{
		{"empty", "", 0, "empty"},
		{"no header", "index,value\n1,2\n", 1, "not a strads linear model"},
		{"header only", "# strads linear model\n# app: lasso\n", 0, "no \"index,value\""},
		{"missing key", "# strads linear model\n# app: lasso\n# lambda: 1\n# intercept: false\nindex,value\n", 5, "lacks"},
		{"bad features", "# strads linear model\n# features: many\n", 2, "bad features"},
		{"twice", "# strads linear model\n# app: lasso\n# app: logreg\n", 3, "twice"},
		{"not a header line", "# strads linear model\napp: lasso\n", 2, "header line"},
		{"bad row", head + "0,1\n2;3\n", 8, "index,value"},
		{"beyond", head + "0,1\n4,3\n", 8, "outside the model's 3"},
		{"negative", head + "-1,3\n", 7, "outside"},
		{"descending", head + "0,1\n3,1\n2,1\n", 9, "ascend"},
		{"duplicate", head + "2,1\n2,1\n", 8, "ascend"},
		{"zero coefficient", head + "2,0\n", 7, "non-zero"},
		{"NaN", head + "2,NaN\n", 7, "non-zero"},
		{"intercept late", head + "2,1\n0,1\n", 8, "come first"},
		{"intercept NaN", head + "0,NaN\n", 7, "finite"},
		{"no intercept row", head + "2,1\n", 0, "no index 0"},
		{"intercept not announced", strings.Replace(head, "true", "false", 1) + "0,1\n", 7, "without one"},
		{"unknown app", strings.Replace(head, "lasso", "svm", 1) + "0,1\n", 0, "app must be"},
		{"logreg without labels", strings.Replace(head, "lasso", "logreg", 1) + "0,1\n", 0, "labels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.file), "m.csv")
			var pe *libsvm.ParseError
			if !errors.As(err, &pe) || pe.File != "m.csv" || pe.Line != tt.line || !strings.Contains(pe.Msg, tt.msg) {
				t.Errorf("error %v, want m.csv:%d and %q", err, tt.line, tt.msg)
			}
		})
	}
	// Unknown keys are skipped; CRLF line ends are read.
	m, err := Read(strings.NewReader(strings.ReplaceAll("# strads linear model\n# app: lasso\n# trained-on: x.svm\n# features: 2\n# lambda: 1\n# intercept: false\nindex,value\n2,0.5\n", "\n", "\r\n")), "m.csv")
	if err != nil || m.Features != 2 || m.Index[0] != 1 || m.Value[0] != 0.5 {
		t.Errorf("got %+v, %v", m, err)
	}
}

func TestPredict(t *testing.T) {
	lasso := New(Lasso, 0.1, true, 0.5, []float64{2, 0, -1})
	logreg := New(Logreg, 0.1, true, -1, []float64{2, 0, -1})
	logreg.Labels = Labels01
	tests := []struct {
		m    *Model
		idx  []int32
		val  []float64
		want float64
		err  string
	}{
		{lasso, nil, nil, 0.5, ""},
		{lasso, []int32{0, 1, 2}, []float64{1, 5, 3}, 0.5 + 2 - 3, ""},
		{lasso, []int32{2, 3}, []float64{1, 0}, 0.5 - 1, ""}, // an explicit zero beyond is harmless
		{lasso, []int32{3}, []float64{1}, math.NaN(), "the model knows 3 features"},
		{logreg, []int32{0}, []float64{1}, 1 / (1 + math.Exp(-1)), ""},
		{logreg, []int32{0}, []float64{-400}, 0, ""},
	}
	for i, tt := range tests {
		got, err := tt.m.Predict(tt.idx, tt.val)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%d: error %v, want %q", i, err, tt.err)
			}
			continue
		}
		if err != nil || math.Abs(got-tt.want) > 1e-15 {
			t.Errorf("%d: got %v, %v, want %v", i, got, err, tt.want)
		}
	}
	if logreg.Label(0.5) != 1 || logreg.Label(0.49) != 0 {
		t.Error("0/1 labels")
	}
	logreg.Labels = LabelsPM
	if logreg.Label(0.2) != -1 {
		t.Error("±1 labels")
	}
}

func TestWritePredictions(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "x.svm")
	if err := os.WriteFile(data, []byte("1 1:1 3:2\n0 2:1\n1 4:1\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	m := New(Logreg, 0.1, false, 0, []float64{1, 0, -2})
	m.Labels = Labels01
	var b bytes.Buffer
	err := m.WritePredictions(&b, data)
	var pe *libsvm.ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || !strings.Contains(pe.Msg, "feature 4") {
		t.Fatalf("error %v, want line 3 and feature 4", err)
	}
	if err := os.WriteFile(data, []byte("1 1:1 3:2\n0 2:1\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := m.WritePredictions(&b, data); err != nil {
		t.Fatal(err)
	}
	want := "label,probability\n0,0.047425873177566788\n1,0.5\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
