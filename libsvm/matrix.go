package libsvm

import (
	"math"

	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/sparse"
)

// ReadMatrix reads rows [lo, hi) of the file at path (hi < 0: to the end)
// into a column-compressed matrix with at least cols columns, and their
// labels.
func ReadMatrix(path string, lo, hi, cols int) (*sparse.CSC, []float64, error) {
	var b sparse.Builder
	var y []float64
	add := func(_ int, row Row) error {
		b.AddRow(row.Index, row.Value)
		y = append(y, row.Label)
		return nil
	}
	var err error
	if hi < 0 {
		err = Read(path, add)
	} else {
		err = ReadRange(path, lo, hi, add)
	}
	if err != nil {
		return nil, nil, err
	}
	return b.Build(cols), y, nil
}

// ReadColumns reads part of parts of the columns of every row of the file at
// path: the columns [first, first+x.Cols) of a contiguous split of all
// total columns (those up to the last with a non-zero), as [ShardRange]
// splits rows. Column k of x is column first+k of the file. It keeps only
// its part (see [ReadOwnedColumns], which also returns the labels).
func ReadColumns(path string, part, parts int) (x *sparse.CSC, first, total int, err error) {
	x, _, first, total, _, err = ReadOwnedColumns(path, part, parts)
	return x, first, total, err
}

// ReadOwnedColumns reads part of parts of the columns of every row of the
// file at path, as [ReadColumns] does, the labels of all rows, and the
// file's fingerprint (as [FingerprintFile] gives it, computed in the same
// pass). With one part it parses the file once (the matrix's columns end at
// the last non-zero). Otherwise it first scans the lines' ends for the
// number of columns, then parses the file keeping its part's columns,
// converting only their values where it can and skipping most of the
// others' tokens, which the other parts check (see cols).
func ReadOwnedColumns(path string, part, parts int) (x *sparse.CSC, y []float64, first, total int, fp Fingerprint, err error) {
	var hash *fingerprinter
	if _, remote := inputfile.RemoteOf(path); remote {
		if fp, err = FingerprintFile(path); err != nil {
			return nil, nil, 0, 0, fp, err
		}
	} else {
		hash = &fingerprinter{}
	}
	var b sparse.Builder
	lo, hi := 0, math.MaxInt32
	win := allCols
	if parts > 1 {
		err = scanLines(path, hash, func(_ int, b []byte) error {
			total = max(total, lineWidth(b))
			return nil
		})
		if err != nil {
			return nil, nil, 0, 0, fp, err
		}
		lo, hi = ShardRange(total, part, parts)
		if hash != nil {
			fp, hash = hash.fp, nil
		}
		win = cols{lo: int32(lo), hi: int32(hi), split: true}
		if part == parts-1 {
			win.hi = math.MaxInt32 // reads to the lines' ends
		}
	}
	err = readFile(path, 0, -1, win, hash, func(_ int, row Row) error {
		y = append(y, row.Label)
		for k := range row.Index {
			row.Index[k] -= int32(lo)
		}
		b.AddRow(row.Index, row.Value)
		return nil
	})
	if err != nil {
		return nil, nil, 0, 0, fp, err
	}
	if parts == 1 {
		x = b.Build(0)
		total = x.Cols
	} else {
		x = b.Build(hi - lo)
	}
	if hash != nil {
		fp = hash.fp
	}
	return x, y, lo, total, fp, nil
}
