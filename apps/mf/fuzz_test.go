package mf

import (
	"errors"
	"math"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// FuzzReadRatings checks the ratings reader on any bytes: no panic; the
// ratings it gives are finite and come in line order; an error of the
// content is a *ParseError naming the file. ReadPairs accepts every file
// ReadRatings accepts, with the same pairs.
func FuzzReadRatings(f *testing.F) {
	for _, seed := range []string{
		"1 2 3.5\n2 3 4\n",
		"1,2,3.5\r\n",
		"1::2::5::978300760\n",
		"1 2\n",
		"1 2 nan\n",
		"1 2 1e400\n",
		"-9223372036854775808 9223372036854775807 0\n",
		"1 2 3 4 5\n",
		"\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := testhelper.WriteFile(t, "r.txt", string(data))
		var ratings []Rating
		last := 0
		err := ReadRatings(path, func(line int, r Rating) error {
			if line <= last {
				t.Fatalf("line %d after line %d", line, last)
			}
			last = line
			if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
				t.Fatalf("line %d: rating %v", line, r.Value)
			}
			ratings = append(ratings, r)
			return nil
		})
		var pe *ParseError
		if err != nil {
			if !errors.As(err, &pe) || pe.File != path {
				t.Fatalf("error %v, want a *ParseError naming %s", err, path)
			}
			return
		}
		k := 0
		if err := ReadPairs(path, func(_ int, u, i int64) error {
			if k >= len(ratings) || ratings[k].User != u || ratings[k].Item != i {
				t.Fatalf("pair %d (%d, %d) differs from the rating read", k, u, i)
			}
			k++
			return nil
		}); err != nil || k != len(ratings) {
			t.Fatalf("ReadPairs: %d pairs of %d ratings, %v", k, len(ratings), err)
		}
	})
}
