package libsvm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// TestLineLimit checks that every reader stops at a line longer than
// maxLine with a *ParseError naming the line, instead of growing its buffer
// without bound.
func TestLineLimit(t *testing.T) {
	old := maxLine
	maxLine = 3 << 20 // over bufSize and chunkSize, so that both grow first
	t.Cleanup(func() { maxLine = old })
	long := "1 1:1\n2 1:2\n3 " + strings.Repeat("1:1 ", (4<<20)/4) + "\n4 1:4\n"
	path := testhelper.WriteFile(t, "data.svm", long)
	readers := []struct {
		name string
		read func() error
	}{
		{"Read", func() error { return Read(path, func(int, Row) error { return nil }) }},
		{"ReadRange", func() error { return ReadRange(path, 0, 4, func(int, Row) error { return nil }) }},
		{"ReadRange skipping", func() error { return ReadRange(path, 3, 4, func(int, Row) error { return nil }) }},
		{"ReadLabels", func() error { return ReadLabels(path, func(int, float64) error { return nil }) }},
		{"readParallel", func() error {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			return readParallel(path, f, 2, 1<<10, allCols, func(int, Row) error { return nil })
		}},
	}
	for _, r := range readers {
		t.Run(r.name, func(t *testing.T) {
			err := r.read()
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != 3 || !strings.Contains(pe.Msg, "longer than") {
				t.Errorf("got %v, want a *ParseError at line 3 about the line's length", err)
			}
		})
	}
}

// TestLongLineRead checks that lines much longer than a block, within
// maxLine, are read whole by every reader, the rows around them too: a
// block with no line end is carried into the next, twice as large.
func TestLongLineRead(t *testing.T) {
	const feats = (2 << 20) / 8 // a line of 2 MiB
	var b strings.Builder
	b.WriteString("1 1:1\n2 ")
	for j := 1; j <= feats; j++ {
		fmt.Fprintf(&b, "%d:1 ", j)
	}
	b.WriteString("\n3 1:3\n")
	path := testhelper.WriteFile(t, "data.svm", b.String())
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []int
	if err := readParallel(path, f, 2, 1<<10, allCols, func(line int, r Row) error {
		got = append(got, len(r.Index))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []int{1, feats, 1}; !slices.Equal(got, want) {
		t.Errorf("features per row %v, want %v", got, want)
	}
}

// TestNotRegular checks that a FIFO, a device and a directory are refused
// at once, naming the file, before a read that would wait or not end.
func TestNotRegular(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs or /dev/zero")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, path := range []string{fifo, "/dev/zero", dir} {
		readers := map[string]func() error{
			"Read":            func() error { return Read(path, func(int, Row) error { return nil }) },
			"CountRows":       func() error { _, err := CountRows(path); return err },
			"FingerprintFile": func() error { _, err := FingerprintFile(path); return err },
		}
		for name, read := range readers {
			err := read()
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != path || !strings.Contains(pe.Msg, "not a regular file") {
				t.Errorf("%s(%s): got %v, want a *ParseError saying it is not a regular file", name, path, err)
			}
		}
	}
}

// TestLongTokenQuoted checks that an error quotes at most the start of a
// bad token, not the whole of it.
func TestLongTokenQuoted(t *testing.T) {
	token := strings.Repeat("x", 1<<20)
	for _, data := range []string{token + " 1:1\n", "1 " + token + "\n", "1 1:" + token + "\n", "1 " + token + ":1\n"} {
		err := Read(testhelper.WriteFile(t, "data.svm", data), func(int, Row) error { return nil })
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != 1 {
			t.Fatalf("got %v, want a *ParseError at line 1", err)
		}
		if len(pe.Error()) > 300 || !strings.Contains(pe.Msg, `"xxxxxxxx`) || !strings.Contains(pe.Msg, "…") {
			t.Errorf("message of %d bytes, want the token's start quoted and cut: %.200s", len(pe.Error()), pe.Error())
		}
	}
}
