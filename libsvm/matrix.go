package libsvm

import (
	"math"

	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/sparse"
)

// ReadMatrix reads rows [lo, hi) of the file at path (hi < 0: to the end)
// into a column-compressed matrix with at least cols columns, and their
// labels. A row wider than the file's entries justify (see [MaxWidth]) is
// a *ParseError naming its line: the entries of the rows read, or, where
// they do not justify it, of the whole file.
func ReadMatrix(path string, lo, hi, cols int) (*sparse.CSC, []float64, error) {
	var b sparse.Builder
	var y []float64
	var w widest
	add := func(line int, row Row) error {
		w.add(line, row)
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
	if err := CheckWidth(path, w.width, w.line, w.entries); err != nil {
		if hi < 0 {
			return nil, nil, err
		}
		// The rows of a range: the file's other rows may justify them.
		n, ferr := fileEntries(path)
		if ferr != nil {
			return nil, nil, ferr
		}
		if err := CheckWidth(path, w.width, w.line, n); err != nil {
			return nil, nil, err
		}
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
// others' tokens, which the other parts check (see cols). A file that spans
// more columns than its entries justify (see [MaxWidth]) is a *ParseError
// naming the line of its largest index, before the matrix is built.
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
	var w widest
	if parts > 1 {
		err = scanLines(path, hash, func(line int, b []byte) error {
			w.entries += lineEntries(b)
			if k := lineWidth(b); k > w.width {
				w.width, w.line = k, line
			}
			return nil
		})
		if err != nil {
			return nil, nil, 0, 0, fp, err
		}
		if err := CheckWidth(path, w.width, w.line, w.entries); err != nil {
			return nil, nil, 0, 0, fp, err
		}
		total = w.width
		lo, hi = ShardRange(total, part, parts)
		if hash != nil {
			fp, hash = hash.fp, nil
		}
		win = cols{lo: int32(lo), hi: int32(hi), split: true}
		if part == parts-1 {
			win.hi = math.MaxInt32 // reads to the lines' ends
		}
	}
	err = readFile(path, 0, -1, win, hash, func(line int, row Row) error {
		if parts == 1 {
			w.add(line, row)
		}
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
		if err := CheckWidth(path, w.width, w.line, w.entries); err != nil {
			return nil, nil, 0, 0, fp, err
		}
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
