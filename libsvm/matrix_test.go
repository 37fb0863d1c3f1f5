package libsvm

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// sameAsFiltered checks that a read keeping a window of columns gives, on
// data, the rows of a full read with the other features dropped, and the
// same error at the same line, sequentially and in parallel.
func sameAsFiltered(t *testing.T, data []byte) {
	t.Helper()
	full := func(win cols) parsed {
		return collect(func(fn func(int, Row) error) error {
			return read("f", bytes.NewReader(data), 0, -1, allCols, func(line int, r Row) error {
				var kept Row
				kept.Label = r.Label
				for k, j := range r.Index {
					if j >= win.lo && j < win.hi {
						kept.Index = append(kept.Index, j)
						kept.Value = append(kept.Value, r.Value[k])
					}
				}
				return fn(line, kept)
			})
		})
	}
	for _, win := range []cols{{0, 1, false}, {1, 3, false}, {2, math.MaxInt32, false}, {5, 5, false}} {
		want := full(win)
		for _, got := range []parsed{
			collect(func(fn func(int, Row) error) error { return read("f", bytes.NewReader(data), 0, -1, win, fn) }),
			collect(func(fn func(int, Row) error) error {
				return readParallel("f", bytes.NewReader(data), 2, 7, win, fn)
			}),
		} {
			if got.err != want.err || fmt.Sprint(got.rows) != fmt.Sprint(want.rows) {
				t.Fatalf("window %v: rows %v, error %q; filtered full read: rows %v, error %q (data %q)",
					win, got.rows, got.err, want.rows, want.err, data)
			}
		}
	}
}

// TestReadWindow checks reads that keep a window of columns against full
// reads, on valid files and on every bad input of TestReadErrors, with the
// bad token inside and outside the window.
func TestReadWindow(t *testing.T) {
	inputs := []string{
		"1 1:0.5 3:2 4:-1e-3\n-1 2:-4 5:+.5 6:5. 7:1E+07\n0 1:0x1p-2 2:Inf 3:1e400\n",
		"1 1:1 2:1e-400 3:1_0 4:nan 5:0\n",
		"1 1:1 2:2 3:3 4:4 5:5 6:6\n1 4:.\n",
		"1 3:1 2:1\n", "1 2:1 2:1\n", "1 1:1 3:1 2:x\n", "1 1:1 4:-\n", "1 4:1e\n", "1 4:1e+\n",
		"1 4:" + strings.Repeat("9", 60) + "\n", "1 4:0." + strings.Repeat("0", 60) + "1e-99\n",
	}
	for _, in := range inputs {
		sameAsFiltered(t, []byte(in))
	}
}

// TestPlainValue checks that every value plainValue vouches for parses to
// a finite number, and that it turns down the forms it must leave to
// parseFloat.
func TestPlainValue(t *testing.T) {
	for _, tt := range []struct {
		in    string
		plain bool
	}{
		{"0", true}, {"-1.5", true}, {"+.5", true}, {"5.", true}, {"1e5", true}, {"1E-07", true},
		{"0.21481502069794578", true}, {"-1.110977493720785e+99", true},
		{"", false}, {".", false}, {"-", false}, {"1..2", false}, {"1e", false}, {"1e+", false},
		{"1e100", false}, {"1e-100", false}, {"inf", false}, {"NaN", false}, {"0x1p3", false},
		{"1_0", false}, {"1e5x", false}, {strings.Repeat("9", 49), false},
	} {
		if got := plainValue([]byte(tt.in)); got != tt.plain {
			t.Errorf("plainValue(%q) = %v, want %v", tt.in, got, tt.plain)
		}
		if tt.plain {
			if _, msg := parseFloat([]byte(tt.in)); msg != "" {
				t.Errorf("plainValue(%q) vouches for a value that parseFloat rejects: %s", tt.in, msg)
			}
		}
	}
}

// FuzzPlainValue checks that parseFloat accepts every value plainValue
// vouches for.
func FuzzPlainValue(f *testing.F) {
	for _, s := range []string{"0", "-1.5e-07", "+.5", "9999999999999999999999e99", "1e", "."} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if plainValue(b) {
			if _, msg := parseFloat(b); msg != "" {
				t.Fatalf("plainValue(%q) but parseFloat: %s", b, msg)
			}
		}
	})
}

// TestReadOwnedColumns checks every part of the column split against the
// columns of a full read, with zeros and comments at the lines' ends, and
// the first bad line's error from every part.
func TestReadOwnedColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "%d", i%3-1)
		for j := 1; j <= 40; j++ {
			if rng.IntN(4) == 0 {
				fmt.Fprintf(&b, " %d:%.6g", j, rng.NormFloat64())
			}
		}
		switch i % 5 {
		case 0:
			b.WriteString(" 41:0 42:0.0e1")
		case 1:
			b.WriteString(" # a comment")
		case 2:
			b.WriteString("\t ")
		}
		b.WriteString("\n")
	}
	path := testhelper.WriteFile(t, "data.svm", b.String())
	whole, labels, err := ReadMatrix(path, 0, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Cols != 40 {
		t.Fatalf("the data span %d columns, want 40", whole.Cols)
	}
	for parts := 1; parts <= 3; parts++ {
		for part := range parts {
			x, y, first, total, fp, err := ReadOwnedColumns(path, part, parts)
			if err != nil {
				t.Fatalf("part %d of %d: %v", part, parts, err)
			}
			if want, err := FingerprintFile(path); err != nil || fp != want {
				t.Fatalf("part %d of %d: fingerprint %v, FingerprintFile %v (%v)", part, parts, fp, want, err)
			}
			lo, hi := ShardRange(40, part, parts)
			if total != 40 || first != lo || x.Cols != hi-lo || fmt.Sprint(y) != fmt.Sprint(labels) {
				t.Fatalf("part %d of %d: columns [%d, %d+%d) of %d, %d labels; want [%d, %d) of 40, %d labels",
					part, parts, first, first, x.Cols, total, len(y), lo, hi, len(labels))
			}
			for l := range x.Cols {
				rows, vals := x.Col(l)
				wr, wv := whole.Col(lo + l)
				if fmt.Sprint(rows, vals) != fmt.Sprint(wr, wv) {
					t.Fatalf("part %d of %d, column %d: %v %v, want %v %v", part, parts, lo+l, rows, vals, wr, wv)
				}
			}
		}
	}
	// The part that reads column 39 reports the bad line; the other
	// skips the token, or reports it too.
	bad := testhelper.WriteFile(t, "data.svm", b.String()+"1 1:1 39:x\n"+b.String())
	reported := false
	for part := range 2 {
		_, _, _, _, _, err := ReadOwnedColumns(bad, part, 2)
		switch {
		case err == nil:
		case strings.Contains(err.Error(), fmt.Sprintf(":%d: bad value \"x\" for feature 39", 301)):
			reported = true
		default:
			t.Errorf("part %d of 2 of a file with a bad line 301: %v", part, err)
		}
	}
	if !reported {
		t.Error("no part of 2 reported the bad line 301")
	}
}

// TestReadPartsCover reads random lines, long enough that the parts skip
// most of the others' tokens, some valid and some with one fault (indices
// out of order or repeated, a bad value or index) anywhere, in 2 to 4
// parts: the parts together fail exactly when a whole read fails, and
// otherwise read the whole read's columns.
func TestReadPartsCover(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 120 {
		var b strings.Builder
		const width = 400
		for i := range 3 {
			fmt.Fprintf(&b, "%d", i%2)
			var idx []int
			for j := 1; j <= width; j++ {
				if rng.IntN(3) == 0 || j == width {
					idx = append(idx, j)
				}
			}
			fault := i == 1 && trial%2 == 1
			at := rng.IntN(len(idx))
			for k, j := range idx {
				tok := fmt.Sprintf(" %d:%.4g", j, rng.NormFloat64())
				if fault && k == at {
					switch trial / 2 % 4 {
					case 0:
						tok = fmt.Sprintf(" %d:1", idx[rng.IntN(len(idx))])
					case 1:
						tok = fmt.Sprintf(" %d:x", j)
					case 2:
						tok = fmt.Sprintf(" %d:1 %d:1", j, rng.IntN(width)+1)
					case 3:
						tok = " -3:1"
					}
				}
				b.WriteString(tok)
			}
			b.WriteString("\n")
		}
		path := testhelper.WriteFile(t, "data.svm", b.String())
		whole, _, wholeErr := ReadMatrix(path, 0, -1, 0)
		for parts := 2; parts <= 4; parts++ {
			var failed error
			for part := range parts {
				x, _, first, _, _, err := ReadOwnedColumns(path, part, parts)
				if err != nil {
					failed = err
					continue
				}
				if wholeErr != nil {
					continue
				}
				for l := range x.Cols {
					rows, vals := x.Col(l)
					wr, wv := whole.Col(first + l)
					if fmt.Sprint(rows, vals) != fmt.Sprint(wr, wv) {
						t.Fatalf("trial %d, part %d of %d, column %d: %v %v, want %v %v", trial, part, parts, first+l, rows, vals, wr, wv)
					}
				}
			}
			if (failed != nil) != (wholeErr != nil) {
				t.Fatalf("trial %d, %d parts: parts' error %v, whole read's %v\n%s", trial, parts, failed, wholeErr, b.String())
			}
		}
	}
}

// BenchmarkReadOwnedColumns reads a sparse file (2,000 × 20,000, about
// 800,000 non-zeros of 17-digit values) whole, as one part, and as the first
// of two parts (a column worker's read), and counts its columns (the block
// scheduler's read): go test -run X -bench ReadOwnedColumns ./libsvm.
func BenchmarkReadOwnedColumns(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	var sb strings.Builder
	for range 2000 {
		fmt.Fprintf(&sb, "%.17g", rng.NormFloat64())
		for j := 1; j <= 20000; j++ {
			if rng.IntN(50) == 0 {
				fmt.Fprintf(&sb, " %d:%.17g", j, rng.NormFloat64())
			}
		}
		sb.WriteString("\n")
	}
	path := testhelper.WriteFile(b, "data.svm", sb.String())
	for _, bm := range []struct {
		name string
		read func() error
	}{
		{"whole", func() error { _, _, _, _, _, err := ReadOwnedColumns(path, 0, 1); return err }},
		{"half", func() error { _, _, _, _, _, err := ReadOwnedColumns(path, 0, 2); return err }},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(sb.Len()))
			for b.Loop() {
				if err := bm.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
