package libsvm

import (
	"bytes"
	"math"
	"testing"
)

func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		"1 1:0.5 3:2\n-1 2:-4\n",
		"+1\t1:1   7:2 # comment\n2",
		"1 2:1 2:1\n",
		"1 3:1 2:1\n",
		"nan 1:1\n",
		"1 1:inf\n",
		"1:0.5 2:3\n",
		"1 1:1\r\n",
		"1 qid:2 1:1\n",
		"1 0:1\n",
		"1 2147483648:1\n",
		"\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsSequential(t, data)
		sameAsFiltered(t, data)
		rows := 0
		err := read("fuzz", bytes.NewReader(data), 0, -1, allCols, func(line int, r Row) error {
			rows++
			if line != rows {
				t.Fatalf("row %d reported at line %d", rows, line)
			}
			if math.IsNaN(r.Label) || math.IsInf(r.Label, 0) {
				t.Fatalf("line %d: non-finite label %v", line, r.Label)
			}
			if len(r.Index) != len(r.Value) {
				t.Fatalf("line %d: %d indices, %d values", line, len(r.Index), len(r.Value))
			}
			for k, i := range r.Index {
				if i < 0 || (k > 0 && i <= r.Index[k-1]) {
					t.Fatalf("line %d: indices %v not strictly ascending and non-negative", line, r.Index)
				}
				if v := r.Value[k]; math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("line %d: non-finite value %v", line, v)
				}
			}
			return nil
		})
		if err != nil {
			return
		}
		n, err := countRows(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if n != rows || n == 0 {
			t.Fatalf("Read accepted %d rows, countRows says %d", rows, n)
		}
	})
}
