package libsvm

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// rowsOf returns n lines "1 1:1 2:1", then the lines of tail.
func rowsOf(n int, tail ...string) string {
	var b strings.Builder
	for range n {
		b.WriteString("1 1:1 2:1\n")
	}
	for _, l := range tail {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// TestWidthBound checks that every reader that builds a matrix refuses a
// width beyond MaxWidth of the file's entries with a *ParseError naming the
// line of the widest row, without allocating by the width, and accepts the
// widths within it.
func TestWidthBound(t *testing.T) {
	const wide = 1<<31 - 1
	cases := []struct {
		name, data string
		line       int // 0: accepted
		entries    int
	}{
		{"one huge index", rowsOf(40, fmt.Sprintf("1 %d:1", wide)), 41, 81},
		{"huge index first", rowsOf(0, fmt.Sprintf("1 %d:1", wide)) + rowsOf(3), 1, 7},
		{"huge index mid-row", rowsOf(2, fmt.Sprintf("1 3:1 %d:2 # x:y", wide), "1 5:1"), 3, 7},
		{"floor, exactly", rowsOf(0, fmt.Sprintf("1 %d:1", MinWidth)), 0, 1},
		{"past the floor", rowsOf(0, fmt.Sprintf("1 %d:1", MinWidth+1)), 1, 1},
		// 20,000 entries justify 64 × 20,000 columns, not one more.
		{"64 per entry, exactly", rowsOf(9999, "1 1:1 1280000:1"), 0, 20000},
		{"64 per entry, one more", rowsOf(9999, "1 1:1 1280001:1"), 10000, 20000},
		// An explicit zero spans no column.
		{"huge index of a zero", rowsOf(3, fmt.Sprintf("1 %d:0", wide)), 0, 7},
	}
	type reader struct {
		name string
		read func(path string) error
	}
	readers := []reader{
		{"ReadMatrix", func(p string) error { _, _, err := ReadMatrix(p, 0, -1, 0); return err }},
		{"ReadOwnedColumns/1", func(p string) error { _, _, _, _, _, err := ReadOwnedColumns(p, 0, 1); return err }},
		{"ReadOwnedColumns/2", func(p string) error { _, _, _, _, _, err := ReadOwnedColumns(p, 1, 2); return err }},
		{"ReadColumns/3", func(p string) error { _, _, _, err := ReadColumns(p, 0, 3); return err }},
	}
	for _, tc := range cases {
		path := testhelper.WriteFile(t, "data.svm", tc.data)
		for _, r := range readers {
			t.Run(tc.name+"/"+r.name, func(t *testing.T) {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				err := r.read(path)
				runtime.ReadMemStats(&after)
				if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
					t.Errorf("read allocated %d MB", grew>>20)
				}
				if tc.line == 0 {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("error %v, want a *ParseError", err)
				}
				want := fmt.Sprintf("the file has only %d entries", tc.entries)
				if pe.File != path || pe.Line != tc.line || !strings.Contains(pe.Msg, want) || !strings.Contains(pe.Msg, "renumber") {
					t.Errorf("error %q, want %s:%d: …%s…", err, path, tc.line, want)
				}
			})
		}
	}
}

// TestWidthBoundRange checks that a read of a range of rows is refused only
// if the whole file does not justify its width either.
func TestWidthBoundRange(t *testing.T) {
	// 10,000 entries in all: 640,000 columns, under the floor; 40,000
	// entries: 2,560,000 columns.
	small := testhelper.WriteFile(t, "data.svm", rowsOf(4999, "1 1:1 2000000:1"))
	if _, _, err := ReadMatrix(small, 4998, 5000, 0); err == nil || !strings.Contains(err.Error(), ":5000: feature index 2000000: the file has only 10000 entries") {
		t.Errorf("range of a small file: error %v", err)
	}
	big := testhelper.WriteFile(t, "data.svm", rowsOf(19999, "1 1:1 2000000:1"))
	x, _, err := ReadMatrix(big, 19998, 20000, 0)
	if err != nil {
		t.Fatalf("range of a file that justifies it: %v", err)
	}
	if x.Cols != 2000000 {
		t.Errorf("%d columns, want 2000000", x.Cols)
	}
}

func TestMaxWidth(t *testing.T) {
	for _, c := range []struct{ entries, want int }{
		{0, 1 << 20}, {1, 1 << 20}, {1 << 14, 1 << 20}, {1<<14 + 1, 1<<20 + 64},
		{100_000_000, 6_400_000_000}, // 20,000 × 2,000,000, 10^8 non-zeros
	} {
		if got := MaxWidth(c.entries); got != c.want {
			t.Errorf("MaxWidth(%d) = %d, want %d", c.entries, got, c.want)
		}
	}
	if err := CheckWidth("f", 2_000_000, 7, 100_000_000); err != nil {
		t.Errorf("the generated shape refused: %v", err)
	}
}
