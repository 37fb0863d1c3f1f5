package libsvm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// parsed is what a read gives: every row as text, in order, and the error.
type parsed struct {
	rows []string
	err  string
}

func collect(read func(fn func(int, Row) error) error) parsed {
	var p parsed
	err := read(func(line int, r Row) error {
		p.rows = append(p.rows, fmt.Sprintf("%d %v %v %v", line, r.Label, r.Index, r.Value))
		return nil
	})
	if err != nil {
		p.err = err.Error()
	}
	return p
}

// sameAsSequential checks that readParallel gives what read gives on data,
// for several numbers of parsers and block sizes down to one byte.
func sameAsSequential(t *testing.T, data []byte) {
	t.Helper()
	want := collect(func(fn func(int, Row) error) error { return read("f", bytes.NewReader(data), 0, -1, allCols, fn) })
	for _, p := range []int{1, 2, 3} {
		for _, size := range []int{1, 2, 7, 64, chunkSize} {
			got := collect(func(fn func(int, Row) error) error {
				return readParallel("f", bytes.NewReader(data), p, size, allCols, fn)
			})
			if got.err != want.err || len(got.rows) != len(want.rows) {
				t.Fatalf("%d parsers, blocks of %d: %d rows, error %q; sequentially %d rows, error %q (data %q)",
					p, size, len(got.rows), got.err, len(want.rows), want.err, data)
			}
			for k := range got.rows {
				if got.rows[k] != want.rows[k] {
					t.Fatalf("%d parsers, blocks of %d: row %d is %q, sequentially %q", p, size, k, got.rows[k], want.rows[k])
				}
			}
		}
	}
}

// TestReadParallel checks the parallel whole-file read against the
// sequential one on valid files, on every bad input of TestReadErrors
// placed after many good lines, and on long lines.
func TestReadParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var good strings.Builder
	for i := range 300 {
		fmt.Fprintf(&good, "%d", i%2)
		for j := 1; j < 40; j++ {
			if rng.IntN(3) == 0 {
				fmt.Fprintf(&good, " %d:%v", j, rng.NormFloat64())
			}
		}
		good.WriteString("\n")
	}
	inputs := []string{
		good.String(),
		strings.TrimSuffix(good.String(), "\n"), // a last line without '\n'
		"", "\n", "1 1:1", "1 1:1\n", "1 1:1\n\n", "1 1:1\r\n",
		"1 " + strings.Repeat("1:1 ", 1) + strings.Repeat("x", 3*chunkSize) + "\n1 1:1\n",
	}
	for _, bad := range []string{"abc 1:2", "1 3:abc", "1 1:1 2:1 2:3", "1 5:1 2:1", "nan 1:1", "", "# header", "1 qid:3 1:1"} {
		inputs = append(inputs, good.String()+bad+"\n"+good.String())
	}
	for _, in := range inputs {
		sameAsSequential(t, []byte(in))
		sameAsFiltered(t, []byte(in))
	}
}

// TestReadParallelCallbackError checks that a callback's error stops a
// parallel read at once, names the line, and leaves no goroutine blocked.
func TestReadParallelCallbackError(t *testing.T) {
	data := []byte(strings.Repeat("1 1:1 2:3\n", 10000))
	stop := errors.New("stop")
	calls := 0
	err := readParallel("f", bytes.NewReader(data), 2, 64, allCols, func(line int, _ Row) error {
		calls++
		if line == 500 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !strings.HasSuffix(err.Error(), "f:500: stop") || calls != 500 {
		t.Errorf("got %v after %d calls, want f:500: stop after 500", err, calls)
	}
}

// failing reads n bytes of data, then fails.
type failing struct {
	r io.Reader
	n int
}

var errDisk = errors.New("disk")

func (f *failing) Read(b []byte) (int, error) {
	if f.n <= 0 {
		return 0, errDisk
	}
	b = b[:min(len(b), f.n)]
	k, err := f.r.Read(b)
	f.n -= k
	return k, err
}

// TestReadParallelReadError checks that a read error comes after the rows
// read before it, wrapped.
func TestReadParallelReadError(t *testing.T) {
	data := []byte(strings.Repeat("1 1:1\n", 100))
	rows := 0
	err := readParallel("f", &failing{bytes.NewReader(data), 300}, 2, 64, allCols, func(int, Row) error { rows++; return nil })
	if !errors.Is(err, errDisk) || rows != 50 {
		t.Errorf("got %v after %d rows, want %v after 50", err, rows, errDisk)
	}
}
