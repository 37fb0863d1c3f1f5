package lasso

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/libsvm"
)

// genTestConfig is a small valid config for the tests to vary.
var genTestConfig = GenConfig{
	Samples:    300,
	Features:   120,
	Density:    0.1,
	CorrGroups: 6,
	Corr:       0.5,
	TrueNNZ:    10,
	Noise:      0.1,
	Seed:       1,
}

// genWriteTemp generates c into a temporary file and returns its path and
// the true coefficients.
func genWriteTemp(t *testing.T, c GenConfig) (string, []float64) {
	t.Helper()
	var buf strings.Builder
	beta, err := Generate(&buf, c)
	if err != nil {
		t.Fatal(err)
	}
	return testhelper.WriteFile(t, "gen.svm", buf.String()), beta
}

// genDense reads the file at path into a dense column-major matrix with
// the given number of rows and columns, and returns it with the labels.
func genDense(t *testing.T, path string, rows, cols int) (x [][]float64, y []float64) {
	t.Helper()
	x = make([][]float64, cols)
	for j := range x {
		x[j] = make([]float64, rows)
	}
	err := libsvm.Read(path, func(line int, r libsvm.Row) error {
		for k, j := range r.Index {
			x[j][line-1] = r.Value[k]
		}
		y = append(y, r.Label)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return x, y
}

// genCorr returns the Pearson correlation of a and b.
func genCorr(a, b []float64) float64 {
	n := float64(len(a))
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma, mb = ma/n, mb/n
	var sab, saa, sbb float64
	for i := range a {
		da, db := a[i]-ma, b[i]-mb
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	if saa == 0 || sbb == 0 {
		return 0
	}
	return sab / math.Sqrt(saa*sbb)
}

func TestGenerateDeterministic(t *testing.T) {
	gen := func(c GenConfig) []byte {
		t.Helper()
		var buf bytes.Buffer
		if _, err := Generate(&buf, c); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, groups := range []int{0, 6} {
		c := genTestConfig
		c.CorrGroups = groups
		a, b := gen(c), gen(c)
		if !bytes.Equal(a, b) {
			t.Errorf("groups=%d: same config gave different output", groups)
		}
		c.Seed++
		if bytes.Equal(a, gen(c)) {
			t.Errorf("groups=%d: different seeds gave the same output", groups)
		}
	}
}

func TestGenerateParses(t *testing.T) {
	tests := []struct {
		name string
		c    GenConfig
	}{
		{"independent", GenConfig{Samples: 400, Features: 150, Density: 0.05, TrueNNZ: 15, Seed: 2}},
		{"groups", GenConfig{Samples: 400, Features: 150, Density: 0.05, CorrGroups: 7, Corr: 0.9, TrueNNZ: 15, Seed: 3}},
		{"dense", GenConfig{Samples: 50, Features: 30, Density: 1, TrueNNZ: 30, Seed: 4}},
		{"one feature per group", GenConfig{Samples: 400, Features: 40, Density: 0.2, CorrGroups: 40, Corr: 0.3, Seed: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c
			path, beta := genWriteTemp(t, c)
			if len(beta) != c.Features {
				t.Fatalf("len(beta) = %d, want %d", len(beta), c.Features)
			}
			nnz := 0
			for _, b := range beta {
				if b != 0 {
					nnz++
					if math.Abs(b) < 1 {
						t.Errorf("true coefficient %v smaller than 1 in magnitude", b)
					}
				}
			}
			if nnz != c.TrueNNZ {
				t.Errorf("beta has %d non-zeros, want %d", nnz, c.TrueNNZ)
			}

			rows, entries := 0, 0
			err := libsvm.Read(path, func(_ int, r libsvm.Row) error {
				rows++
				entries += len(r.Index)
				var xb float64
				for k, j := range r.Index {
					if int(j) >= c.Features {
						t.Fatalf("feature %d out of range", j)
					}
					xb += beta[j] * r.Value[k]
				}
				if c.Noise == 0 && math.Abs(r.Label-xb) > 1e-12*(1+math.Abs(xb)) {
					t.Fatalf("row %d: label %v, want Xβ = %v", rows, r.Label, xb)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if rows != c.Samples {
				t.Errorf("got %d rows, want %d", rows, c.Samples)
			}
			density := float64(entries) / float64(c.Samples*c.Features)
			if math.Abs(density-c.Density) > 0.2*c.Density {
				t.Errorf("density %.4f, want about %v", density, c.Density)
			}
		})
	}
}

func TestGenerateCorrelation(t *testing.T) {
	tests := []struct {
		name          string
		groups        int
		minIn, maxOut float64 // bounds on mean |corr| within and between groups
		checkInGroups bool
	}{
		{name: "groups", groups: 10, minIn: 0.6, maxOut: 0.05, checkInGroups: true},
		{name: "independent", groups: 0, maxOut: 0.05},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := GenConfig{Samples: 2000, Features: 100, Density: 0.1, CorrGroups: tt.groups, Corr: 0.8, Seed: 6}
			path, _ := genWriteTemp(t, c)
			x, _ := genDense(t, path, c.Samples, c.Features)
			group := func(j int) int {
				if tt.groups == 0 {
					return -1 - j // every feature on its own
				}
				return j / (c.Features / tt.groups)
			}
			var in, out float64
			var nIn, nOut int
			for j := range x {
				for k := j + 1; k < len(x); k++ {
					r := math.Abs(genCorr(x[j], x[k]))
					if group(j) == group(k) {
						in += r
						nIn++
					} else {
						out += r
						nOut++
					}
				}
			}
			if tt.checkInGroups {
				if in /= float64(nIn); in < tt.minIn {
					t.Errorf("mean |corr| within groups %.3f, want >= %v", in, tt.minIn)
				}
			}
			if out /= float64(nOut); out > tt.maxOut {
				t.Errorf("mean |corr| between groups %.3f, want <= %v", out, tt.maxOut)
			}
		})
	}
}

func TestGenConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*GenConfig)
		want   string // substring of the error, "" for none
	}{
		{"valid", func(*GenConfig) {}, ""},
		{"valid edges", func(c *GenConfig) {
			c.Density, c.Corr, c.TrueNNZ, c.CorrGroups, c.Noise = 1, 0, c.Features, c.Features, 0
		}, ""},
		{"samples < 1", func(c *GenConfig) { c.Samples = 0 }, "Samples must be at least 1, got 0"},
		{"features < 1", func(c *GenConfig) { c.Features = -2 }, "Features must be at least 1, got -2"},
		{"density 0", func(c *GenConfig) { c.Density = 0 }, "Density must be in (0,1], got 0"},
		{"density > 1", func(c *GenConfig) { c.Density = 1.5 }, "Density must be in (0,1], got 1.5"},
		{"density NaN", func(c *GenConfig) { c.Density = math.NaN() }, "Density must be in (0,1], got NaN"},
		{"corr 1", func(c *GenConfig) { c.Corr = 1 }, "Corr must be in [0,1), got 1"},
		{"corr < 0", func(c *GenConfig) { c.Corr = -0.1 }, "Corr must be in [0,1), got -0.1"},
		{"true nnz > features", func(c *GenConfig) { c.TrueNNZ = c.Features + 1 }, "TrueNNZ must be in [0,120]"},
		{"true nnz < 0", func(c *GenConfig) { c.TrueNNZ = -1 }, "TrueNNZ must be in [0,120]"},
		{"groups > features", func(c *GenConfig) { c.CorrGroups = c.Features + 1 }, "CorrGroups must be in [0,120]"},
		{"groups < 0", func(c *GenConfig) { c.CorrGroups = -1 }, "CorrGroups"},
		{"noise < 0", func(c *GenConfig) { c.Noise = -1 }, "Noise must be finite and >= 0, got -1"},
		{"noise inf", func(c *GenConfig) { c.Noise = math.Inf(1) }, "Noise"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := genTestConfig
			tt.modify(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want error containing %q", err, tt.want)
			}
			if _, gerr := Generate(io.Discard, c); gerr == nil || !strings.Contains(gerr.Error(), tt.want) {
				t.Errorf("Generate error = %v, want one containing %q", gerr, tt.want)
			}
		})
	}
}

// genFailWriter fails every write with err.
type genFailWriter struct{ err error }

func (w genFailWriter) Write([]byte) (int, error) { return 0, w.err }

func TestGenerateWriteError(t *testing.T) {
	errWrite := errors.New("disk full")
	if _, err := Generate(genFailWriter{errWrite}, genTestConfig); !errors.Is(err, errWrite) {
		t.Errorf("got %v, want an error wrapping %v", err, errWrite)
	}
}

func BenchmarkGenerate(b *testing.B) {
	c := GenConfig{Samples: 2000, Features: 20000, Density: 0.01, CorrGroups: 1000, Corr: 0.5, TrueNNZ: 100, Noise: 0.1, Seed: 7}
	for _, groups := range []int{0, 1000} {
		c.CorrGroups = groups
		b.Run("groups="+strconv.Itoa(groups), func(b *testing.B) {
			for b.Loop() {
				if _, err := Generate(io.Discard, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
