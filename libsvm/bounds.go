package libsvm

import (
	"bytes"
	"fmt"

	"github.com/strads-go/strads/inputfile"
)

// The apps keep state per feature, sized by the number of columns a file
// spans (one past its largest index with a non-zero value): coefficients,
// column sums and norms, screens, the summaries the workers send — some
// 100 bytes a feature in each role. One line "1 2147483647:1" would so ask
// for hundreds of GB, whatever the rest of the file. The readers that build
// a matrix (ReadMatrix, ReadColumns, ReadOwnedColumns) therefore bound the
// width by the entries (idx:val tokens, explicit zeros included) the file
// holds before anything is sized by it:
//
//	width ≤ max(MinWidth, WidthPerEntry × entries)
//
// An entry costs at least 4 bytes of the file, so the state that a width
// within the bound asks for is at most a constant times the file's size
// (6.4 KB per entry at 100 bytes a feature). Real data, hashed features
// included, span far fewer columns than they hold entries (p ≤ nnz for
// rcv1, news20, url, kdd2010, webspam, criteo; the generated shapes, e.g.
// 20,000 × 2,000,000 with 10^8 non-zeros, 0.02): the factor of 64 leaves
// room for a small sample of hashed data (2^24 buckets take 262,144
// entries), and the floor of 2^20 columns (some 100 MB of state) for a tiny
// file of wide indices. What is refused can be renumbered densely.
const (
	MinWidth      = 1 << 20
	WidthPerEntry = 64
)

// MaxWidth returns the most columns a file of entries idx:val entries may
// span: max(MinWidth, WidthPerEntry × entries).
func MaxWidth(entries int) int { return max(MinWidth, WidthPerEntry*entries) }

// CheckWidth returns a *ParseError naming the file name and the line line
// if width, the columns that line spans (its last non-zero index), exceeds
// MaxWidth(entries), entries being the idx:val entries of the file; nil
// otherwise. A caller of [Read] that sizes state by the width checks it so.
func CheckWidth(name string, width, line, entries int) error {
	if width <= MaxWidth(entries) {
		return nil
	}
	return &ParseError{File: name, Line: line, Msg: fmt.Sprintf(
		"feature index %d: the file has only %d entries (idx:val); strads keeps state per feature, for at most max(2^20, 64 × entries) features (renumber the features)",
		width, entries)}
}

// widest tracks the widest row of a read and the entries it saw.
type widest struct {
	width, line, entries int
}

// add counts the row of line line.
func (w *widest) add(line int, row Row) {
	w.entries += len(row.Index)
	if k := row.Width(); k > w.width {
		w.width, w.line = k, line
	}
}

// lineEntries returns the number of idx:val entries of the line b (without
// its '\n'): its ':'s before any '#'. It does not check the line: on a bad
// one the parse that follows reports it.
func lineEntries(b []byte) int {
	if i := bytes.IndexByte(b, '#'); i >= 0 {
		b = b[:i]
	}
	return bytes.Count(b, []byte{':'})
}

// fileEntries returns the number of idx:val entries of the file at path,
// by a scan of its lines; of a data set over NATS that the role has not
// fetched whole, a bound from its size (an entry and its blank take at
// least 4 bytes), which the scan would fetch.
func fileEntries(path string) (int, error) {
	if r, ok := inputfile.RemoteOf(path); ok {
		return int(r.Summary().Size / 4), nil
	}
	n := 0
	err := scanLines(path, nil, func(_ int, b []byte) error {
		n += lineEntries(b)
		return nil
	})
	return n, err
}
