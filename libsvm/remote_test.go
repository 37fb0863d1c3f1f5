package libsvm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/internal/testhelper"
)

// TestRemote checks the readers of a data set read in parts (an
// inputfile.Remote): the rows of a range are those of the same local
// file, numbered as in the whole, fetched without the rest; a parse
// error names the original line; the count and the fingerprint come from
// the summary; a whole read fetches the whole.
func TestRemote(t *testing.T) {
	var data []byte
	for i := range 40 {
		data = fmt.Appendf(data, "%d 1:%d 3:0.5\n", i%2, i+1)
	}
	dir := t.TempDir()
	local := filepath.Join(dir, "local.svm")
	if err := os.WriteFile(local, data, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "copy.svm")
	r := &testhelper.Remote{Path: path, Data: data, Every: 7}
	defer inputfile.Register(path, r)()

	if n, err := CountRows(path); n != 40 || err != nil {
		t.Errorf("CountRows: %d, %v; want 40 from the summary", n, err)
	}
	want, _ := FingerprintFile(local)
	if fp, err := FingerprintFile(path); fp != want || err != nil {
		t.Errorf("FingerprintFile: %v, %v; want %v", fp, err, want)
	}
	type row struct {
		Line  int
		Label float64
		Index []int32
		Value []float64
	}
	collect := func(p string, lo, hi int) ([]row, error) {
		var rows []row
		err := ReadRange(p, lo, hi, func(line int, r Row) error {
			rows = append(rows, row{line, r.Label, append([]int32(nil), r.Index...), append([]float64(nil), r.Value...)})
			return nil
		})
		return rows, err
	}
	for _, rg := range [][2]int{{0, 40}, {0, 1}, {10, 20}, {13, 14}, {39, 40}, {40, 40}, {20, 20}} {
		r.Fetched = 0
		got, err := collect(path, rg[0], rg[1])
		wantRows, werr := collect(local, rg[0], rg[1])
		if err != nil || werr != nil || !reflect.DeepEqual(got, wantRows) {
			t.Errorf("rows [%d, %d): %v, %v; want the local file's %v, %v", rg[0], rg[1], got, err, wantRows, werr)
		}
		if rg[1]-rg[0] < 20 && r.Fetched > len(data)/2 {
			t.Errorf("rows [%d, %d) fetched %d of %d bytes", rg[0], rg[1], r.Fetched, len(data))
		}
	}
	if _, err := collect(path, 30, 41); err == nil {
		t.Error("rows [30, 41) of 40: no error")
	}
	if r.Whole {
		t.Fatal("a range fetched the whole")
	}

	// A bad row: its original line, in a range and in the whole.
	bad := bytes.Replace(data, []byte("1 1:24 "), []byte("1 1:x "), 1) // line 24
	r.Data = bad
	var pe *ParseError
	if _, err := collect(path, 20, 30); !errors.As(err, &pe) || pe.Line != 24 || pe.File != path {
		t.Errorf("rows [20, 30) with line 24 bad: got %v, want a *ParseError of %s:24", err, path)
	}
	if err := Read(path, func(int, Row) error { return nil }); !errors.As(err, &pe) || pe.Line != 24 || !r.Whole {
		t.Errorf("Read with line 24 bad: got %v (fetched whole: %v), want a *ParseError of line 24", err, r.Whole)
	}
}
