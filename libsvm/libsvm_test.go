package libsvm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// gotRow is a Row copied out of a Read callback, with its line number.
type gotRow struct {
	Line  int
	Label float64
	Index []int32
	Value []float64
}

// readAll collects the rows of path [lo, hi), or all rows if hi < 0.
func readAll(path string, lo, hi int) ([]gotRow, error) {
	var rows []gotRow
	fn := func(line int, r Row) error {
		rows = append(rows, gotRow{
			Line:  line,
			Label: r.Label,
			Index: append([]int32{}, r.Index...),
			Value: append([]float64{}, r.Value...),
		})
		return nil
	}
	var err error
	if hi < 0 {
		err = Read(path, fn)
	} else {
		err = ReadRange(path, lo, hi, fn)
	}
	return rows, err
}

func TestParseErrorString(t *testing.T) {
	tests := []struct {
		err  ParseError
		want string
	}{
		{ParseError{File: "a.svm", Line: 3, Msg: "blank line"}, "a.svm:3: blank line"},
		{ParseError{File: "a.svm", Msg: "no samples"}, "a.svm: no samples"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestReadValid(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []gotRow
	}{
		{
			name: "basic",
			data: "1 1:0.5 3:2\n-1 2:-4\n",
			want: []gotRow{
				{1, 1, []int32{0, 2}, []float64{0.5, 2}},
				{2, -1, []int32{1}, []float64{-4}},
			},
		},
		{
			name: "no final newline",
			data: "1 1:1\n2 2:2",
			want: []gotRow{
				{1, 1, []int32{0}, []float64{1}},
				{2, 2, []int32{1}, []float64{2}},
			},
		},
		{
			name: "tabs multiple spaces leading and trailing blanks",
			data: "  +1\t1:1   7:2 \t\n\t-1  2:3\t\n",
			want: []gotRow{
				{1, 1, []int32{0, 6}, []float64{1, 2}},
				{2, -1, []int32{1}, []float64{3}},
			},
		},
		{
			name: "label forms",
			data: "3.5e-2 1:1e3\n-0.25\n",
			want: []gotRow{
				{1, 0.035, []int32{0}, []float64{1000}},
				{2, -0.25, []int32{}, []float64{}},
			},
		},
		{
			name: "trailing comment",
			data: "1 1:1 2:2 # a comment 3:x\n2 # only label\n3 4:4#tight\n",
			want: []gotRow{
				{1, 1, []int32{0, 1}, []float64{1, 2}},
				{2, 2, []int32{}, []float64{}},
				{3, 3, []int32{3}, []float64{4}},
			},
		},
		{
			name: "largest index",
			data: "0 2147483647:1\n",
			want: []gotRow{
				{1, 0, []int32{2147483646}, []float64{1}},
			},
		},
		{
			name: "leading zeros in index",
			data: "0 007:1\n",
			want: []gotRow{
				{1, 0, []int32{6}, []float64{1}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(testhelper.WriteFile(t, "data.svm", tt.data), 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		line int
		msg  string // substring of ParseError.Msg
	}{
		{"empty file", "", 0, "no samples"},
		{"bad label", "1 1:1\nabc 1:2\n", 2, `bad label "abc"`},
		{"bad value", "1 3:abc\n", 1, `bad value "abc" for feature 3`},
		{"empty value", "1 3:\n", 1, `bad value "" for feature 3`},
		{"underscore value", "1 3:1_0\n", 1, `bad value "1_0" for feature 3`},
		{"no colon", "1 1:1\n1 1:1 foo\n", 2, `token "foo" is not idx:val`},
		{"non-integer index", "1 1.5:1\n", 1, `bad index "1.5"`},
		{"empty index", "1 :1\n", 1, `bad index ""`},
		{"plus index", "1 +2:1\n", 1, `bad index "+2"`},
		{"zero index", "1 0:1\n", 1, "index 0 must be >= 1 (indices are 1-based; scikit-learn's dump_svmlight_file writes them so with zero_based=False)"},
		{"negative index", "1 -3:1\n", 1, "index -3 must be >= 1"},
		{"index too large", "1 2147483648:1\n", 1, "index 2147483648 exceeds the maximum 2147483647"},
		{"huge index", "1 99999999999999999999999:1\n", 1, "exceeds the maximum"},
		{"duplicate index", "1 1:1 2:1 2:3\n", 1, "duplicate index 2"},
		{"descending indices", "1 1:1\n1 5:1 2:1\n", 2, "index 2 follows 5: indices must be strictly ascending"},
		{"nan label", "nan 1:1\n", 1, `label "nan" is not finite`},
		{"inf label", "1\n+Inf 1:1\n", 2, `label "+Inf" is not finite`},
		{"overflowing label", "1e400\n", 1, `label "1e400" is out of range`},
		{"nan value", "1 1:NaN\n", 1, `value "NaN" for feature 1 is not finite`},
		{"negative inf value", "1 1:1 4:-inf\n", 1, `value "-inf" for feature 4 is not finite`},
		{"infinity value", "1 2:infinity\n", 1, `value "infinity" for feature 2 is not finite`},
		{"overflowing value", "1 2:-1e999\n", 1, `value "-1e999" for feature 2 is out of range`},
		{"missing label", "1 1:1\n1:0.5 2:3\n", 2, `missing label: line starts with feature "1:0.5"`},
		{"blank line in middle", "1 1:1\n\n2 1:1\n", 2, "blank line"},
		{"whitespace-only line", "1 1:1\n \t \n2 1:1\n", 2, "blank line"},
		{"trailing blank line", "1 1:1\n2 1:1\n\n", 3, "blank line"},
		{"trailing whitespace without newline", "1 1:1\n  ", 2, "blank line"},
		{"only newline", "\n", 1, "blank line"},
		{"comment-only line", "1 1:1\n# header\n", 2, "comment-only line"},
		{"crlf", "1 1:1\r\n2 1:1\r\n", 1, `line ends in CRLF (\r\n); convert the file to Unix line endings (e.g. with dos2unix)`},
		{"crlf later line", "1 1:1\n2 1:1\r\n", 2, "CRLF"},
		{"bare carriage returns", "1 1:1\r2 1:1\r3 1:1\n", 1, "carriage return"},
		{"qid", "1 qid:3 1:1\n", 1, `qid tokens are not supported (found "qid:3")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := testhelper.WriteFile(t, "data.svm", tt.data)
			_, err := readAll(path, 0, -1)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got error %v, want a *ParseError", err)
			}
			if pe.File != path || pe.Line != tt.line || !strings.Contains(pe.Msg, tt.msg) {
				t.Errorf("got %q, want %s:%d: ...%s...", pe, path, tt.line, tt.msg)
			}
		})
	}
}

func TestReadCallbackError(t *testing.T) {
	path := testhelper.WriteFile(t, "data.svm", "1 1:1\n2 1:1\n3 1:1\n")
	stop := errors.New("stop")
	calls := 0
	err := Read(path, func(line int, _ Row) error {
		calls++
		if line == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("got error %v, want it to wrap %v", err, stop)
	}
	if want := path + ":2: stop"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error %q does not end in %q", err, want)
	}
	if calls != 2 {
		t.Errorf("fn called %d times, want 2", calls)
	}
}

func TestReadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.svm")
	if err := Read(path, func(int, Row) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read: got %v, want os.ErrNotExist", err)
	}
	if _, err := CountRows(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CountRows: got %v, want os.ErrNotExist", err)
	}
}

// TestReadLongLine checks a line longer than the read buffer.
func TestReadLongLine(t *testing.T) {
	const nf = 300_000 // about 2.6 MB, over twice bufSize
	var sb strings.Builder
	sb.WriteString("1 1:1\n7")
	for i := 1; i <= nf; i++ {
		fmt.Fprintf(&sb, " %d:%d", i, i%10)
	}
	sb.WriteString("\n2 3:3")
	if sb.Len() <= 2*bufSize {
		t.Fatalf("test line too short: %d bytes", sb.Len())
	}
	path := testhelper.WriteFile(t, "data.svm", sb.String())
	for _, hi := range []int{-1, 3} {
		rows, err := readAll(path, 0, hi)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 {
			t.Fatalf("got %d rows, want 3", len(rows))
		}
		long := rows[1]
		if long.Line != 2 || long.Label != 7 || len(long.Index) != nf ||
			long.Index[nf-1] != nf-1 || long.Value[nf-1] != nf%10 {
			t.Errorf("long row wrong: line %d label %v, %d features", long.Line, long.Label, len(long.Index))
		}
		if rows[2].Line != 3 || rows[2].Label != 2 {
			t.Errorf("row after long row wrong: %+v", rows[2])
		}
	}
	// Skipping over the long line.
	rows, err := readAll(path, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Line != 3 || rows[0].Label != 2 {
		t.Errorf("ReadRange(2, 3) = %+v", rows)
	}
}

func TestCountRows(t *testing.T) {
	tests := []struct {
		data string
		want int
	}{
		{"", 0},
		{"1", 1},
		{"1\n", 1},
		{"1\n2", 2},
		{"1\n2\n", 2},
		{"1\n\n", 2},
		{"\n", 1},
		{strings.Repeat("1 1:1\n", bufSize/3), bufSize / 3}, // spans buffers
	}
	for _, tt := range tests {
		got, err := CountRows(testhelper.WriteFile(t, "data.svm", tt.data))
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("CountRows(%.20q) = %d, want %d", tt.data, got, tt.want)
		}
	}
}

func TestShardRange(t *testing.T) {
	for n := 0; n <= 20; n++ {
		for shards := 1; shards <= 5; shards++ {
			next := 0
			minSize, maxSize := n, 0
			for s := range shards {
				lo, hi := ShardRange(n, s, shards)
				if lo != next || hi < lo {
					t.Fatalf("ShardRange(%d, %d, %d) = [%d, %d), want to start at %d", n, s, shards, lo, hi, next)
				}
				next = hi
				minSize, maxSize = min(minSize, hi-lo), max(maxSize, hi-lo)
			}
			if next != n {
				t.Errorf("n=%d shards=%d: shards end at %d", n, shards, next)
			}
			if maxSize-minSize > 1 {
				t.Errorf("n=%d shards=%d: sizes range over [%d, %d]", n, shards, minSize, maxSize)
			}
		}
	}
}

func TestShardRangePanics(t *testing.T) {
	tests := []struct{ n, shard, shards int }{
		{10, 0, 0},
		{10, -1, 2},
		{10, 2, 2},
		{-1, 0, 1},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("ShardRange(%d, %d, %d) did not panic", tt.n, tt.shard, tt.shards)
				}
			}()
			ShardRange(tt.n, tt.shard, tt.shards)
		}()
	}
}

// randomFile returns a valid data set of n rows with up to maxF features
// per row.
func randomFile(rng *rand.Rand, n, maxF int) string {
	var sb strings.Builder
	for range n {
		sb.WriteString(strconv.FormatFloat(rng.NormFloat64(), 'g', -1, 64))
		idx := 0
		for range rng.IntN(maxF + 1) {
			idx += 1 + rng.IntN(5)
			fmt.Fprintf(&sb, " %d:%s", idx, strconv.FormatFloat(rng.NormFloat64(), 'g', -1, 64))
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func TestReadRangeShards(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		data string
	}{
		{"newline terminated", randomFile(rng, 23, 8)},
		{"no final newline", strings.TrimSuffix(randomFile(rng, 17, 8), "\n")},
		{"single row", "1 1:1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := testhelper.WriteFile(t, "data.svm", tt.data)
			want, err := readAll(path, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			n, err := CountRows(path)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(want) {
				t.Fatalf("CountRows = %d, Read saw %d rows", n, len(want))
			}
			for shards := 1; shards <= 6; shards++ {
				var got []gotRow
				for s := range shards {
					lo, hi := ShardRange(n, s, shards)
					rows, err := readAll(path, lo, hi)
					if err != nil {
						t.Fatalf("ReadRange(%d, %d): %v", lo, hi, err)
					}
					if len(rows) != hi-lo {
						t.Fatalf("ReadRange(%d, %d) gave %d rows", lo, hi, len(rows))
					}
					got = append(got, rows...)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%d shards: ReadRange rows differ from Read rows", shards)
				}
			}
		})
	}
}

func TestReadRangeErrors(t *testing.T) {
	path := testhelper.WriteFile(t, "data.svm", "1 1:1\n2 1:x\n3 1:1\n")
	tests := []struct {
		name   string
		path   string
		lo, hi int
		line   int    // > 0 for a *ParseError at that line
		msg    string // substring of the error
	}{
		{"negative lo", path, -1, 2, 0, "invalid row range [-1, 2)"},
		{"hi before lo", path, 2, 1, 0, "invalid row range [2, 1)"},
		{"hi past end", path, 2, 4, 0, "has 3 rows"},
		{"lo past end", path, 5, 6, 0, "has 3 rows"},
		{"bad row in range", path, 1, 2, 2, `bad value "x" for feature 1`},
		{"empty file", testhelper.WriteFile(t, "data.svm", ""), 0, 0, 0, "no samples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll(tt.path, tt.lo, tt.hi)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got error %v, want one containing %q", err, tt.msg)
			}
			var pe *ParseError
			if tt.line > 0 && (!errors.As(err, &pe) || pe.Line != tt.line) {
				t.Errorf("got %v, want a *ParseError at line %d", err, tt.line)
			}
		})
	}
	// A bad row outside the range is not looked at.
	for _, r := range [][2]int{{0, 1}, {2, 3}, {3, 3}} {
		if _, err := readAll(path, r[0], r[1]); err != nil {
			t.Errorf("ReadRange(%d, %d): %v", r[0], r[1], err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := randomFile(rng, 12_000, 60) // about 5 MB
	path := testhelper.WriteFile(b, "data.svm", data)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		nnz := 0
		err := Read(path, func(_ int, r Row) error {
			nnz += len(r.Index)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadLabels checks that ReadLabels gives Read's labels and line
// numbers, catches what is wrong with a line's label or ends as Read does,
// and does not look at the features.
func TestReadLabels(t *testing.T) {
	tests := []struct {
		name, data string
		labels     []float64
		line       int    // of the error; 0: none
		msg        string // substring of the error
	}{
		{"valid", "1 1:1\n-1 2:3 # c\n+1\n0.5 4:1", []float64{1, -1, 1, 0.5}, 0, ""},
		{"bad features unseen", "1 3:abc\n0 2:1 1:1\n", []float64{1, 0}, 0, ""},
		{"bad label", "1 1:1\nabc 1:2\n", nil, 2, `bad label "abc"`},
		{"missing label", "1 1:1\n1:0.5 2:3\n", nil, 2, "missing label"},
		{"blank line", "1 1:1\n\n", nil, 2, "blank line"},
		{"crlf", "1 1:1\r\n", nil, 1, "CRLF"},
		{"nan label", "nan 1:1\n", nil, 1, "not finite"},
		{"empty file", "", nil, 0, "no samples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := testhelper.WriteFile(t, "data.svm", tt.data)
			var got []float64
			err := ReadLabels(path, func(line int, label float64) error {
				if line != len(got)+1 {
					t.Errorf("label %d at line %d", len(got)+1, line)
				}
				got = append(got, label)
				return nil
			})
			if tt.msg == "" {
				if err != nil || !slices.Equal(got, tt.labels) {
					t.Errorf("got %v, %v; want %v", got, err, tt.labels)
				}
				return
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != tt.line || !strings.Contains(pe.Msg, tt.msg) {
				t.Errorf("got error %v, want line %d: ...%s...", err, tt.line, tt.msg)
			}
		})
	}
}
