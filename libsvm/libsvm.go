package libsvm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/strads-go/strads/inputfile"
)

// MaxLine is the longest line the readers accept, in bytes: a longer one
// is a *ParseError naming its line, not a read that grows without bound
// (a file of one endless line, or a device such as /dev/zero, would
// otherwise fill the memory). 256 MiB holds a row of more than ten million
// features.
const MaxLine = 256 << 20

// maxLine is MaxLine, which tests lower.
var maxLine = MaxLine

// errLongLine is the error of a line longer than MaxLine.
var errLongLine = fmt.Errorf("a line longer than %d MiB (libsvm.MaxLine)", MaxLine>>20)

// readError returns the error of a failed read of the file name, whose
// first line not read whole is line: a *ParseError for a line longer than
// MaxLine, else the read error wrapped.
func readError(name string, line int, err error) error {
	if errors.Is(err, errLongLine) {
		return &ParseError{File: name, Line: line, Msg: errLongLine.Error()}
	}
	return fmt.Errorf("libsvm: read %s: %w", name, err)
}

// open opens the file at path for reading, through package inputfile: what
// is not a regular file is a *ParseError naming it, before it is opened.
func open(path string) (*os.File, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return nil, inputError(path, err)
	}
	return f, nil
}

// inputError is the error of inputfile's err for path: a *ParseError for
// what is not a regular file.
func inputError(path string, err error) error {
	if errors.Is(err, inputfile.ErrNotRegular) {
		return &ParseError{File: path, Msg: strings.TrimPrefix(err.Error(), path+": ")}
	}
	return fmt.Errorf("libsvm: %w", err)
}

// quote returns b quoted as %q does, cut to its first 40 bytes (and "…")
// when longer: an error message names a bad token, it does not copy it.
func quote(b []byte) string {
	const most = 40
	if len(b) <= most {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:most])) + "…"
}

// bufSize is the size of the read buffer. Lines longer than this are
// still read whole, through a growing secondary buffer, up to MaxLine.
const bufSize = 1 << 20

// ParseError reports bad input at a line of a file.
type ParseError struct {
	File string // name of the file
	Line int    // 1-based line number, or 0 for a whole-file problem
	Msg  string // what is wrong
}

// Error returns "FILE:LINE: MSG", or "FILE: MSG" when Line is 0.
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
}

// Row is one sample. Index holds 0-based feature indices (file index minus
// 1), strictly ascending, and Value the matching feature values.
type Row struct {
	Label float64
	Index []int32
	Value []float64
}

// Width returns the number of columns the row spans: one past its last
// non-zero feature (0 if it has none).
func (r Row) Width() int {
	for k := len(r.Index) - 1; k >= 0; k-- {
		if r.Value[k] != 0 {
			return int(r.Index[k]) + 1
		}
	}
	return 0
}

// Read parses every row of the file at path, calling fn for each in order
// with its 1-based line number.
//
// The Index and Value slices of row are reused for the next row: fn must
// copy them if it keeps them after returning. An error returned by fn stops
// reading and is returned wrapped, so errors.Is and errors.As see it. Bad
// input is reported as a *ParseError, possibly after fn has seen the rows
// before it.
func Read(path string, fn func(line int, row Row) error) error {
	return readFile(path, 0, -1, allCols, nil, fn)
}

// ReadRange is like [Read] but parses only rows [lo, hi), where row r is on
// line r+1. Lines before lo are skipped by scanning for '\n' without being
// parsed or checked, and reading stops after row hi-1. It returns an error
// if the range is invalid or the file has fewer than hi rows.
func ReadRange(path string, lo, hi int, fn func(line int, row Row) error) error {
	if lo < 0 || hi < lo {
		return fmt.Errorf("libsvm: invalid row range [%d, %d)", lo, hi)
	}
	return readFile(path, lo, hi, allCols, nil, fn)
}

// CountRows returns the number of rows (lines) in the file at path without
// parsing them. A final line without '\n' counts; blank lines count too
// (they are errors for [Read]). A data set over NATS that the role has not
// fetched whole (an inputfile.Remote) has the count of its index.
func CountRows(path string) (int, error) {
	if r, ok := inputfile.RemoteOf(path); ok {
		return r.Summary().Lines, nil
	}
	f, err := open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := countRows(f)
	if err != nil {
		return 0, fmt.Errorf("libsvm: read %s: %w", path, err)
	}
	return n, nil
}

// ReadLabels reads the label of every row of the file at path, calling fn
// for each in order with its 1-based line number, as [Read] does but
// without parsing the features: a bad label, a blank line or a line's bad
// ends is a *ParseError, bad features are not seen. It costs a scan of the
// file and one number per row.
func ReadLabels(path string, fn func(line int, label float64) error) error {
	seen := false
	err := scanLines(path, nil, func(line int, b []byte) error {
		seen = true
		label, _, msg := parseLabel(b)
		if msg != "" {
			return &ParseError{File: path, Line: line, Msg: msg}
		}
		if err := fn(line, label); err != nil {
			return fmt.Errorf("libsvm: %s:%d: %w", path, line, err)
		}
		return nil
	})
	if err == nil && !seen {
		return &ParseError{File: path, Msg: "no samples (empty file)"}
	}
	return err
}

// scanLines calls fn with every line of the file at path, without its
// '\n', and its 1-based number, in order, until fn returns an error, which
// it returns as it is. With fp, it fingerprints what it reads (all of the
// file, when it returns nil).
func scanLines(path string, fp *fingerprinter, fn func(line int, b []byte) error) error {
	f, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	lr := lineReader{r: bufio.NewReaderSize(fp.wrap(f), bufSize)}
	for {
		b, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return readError(path, lr.line+1, err)
		}
		if err := fn(lr.line, b); err != nil {
			return err
		}
	}
}

// ShardRange returns the contiguous row range [lo, hi) of shard number
// shard out of shards for n rows. Shard sizes differ by at most one, the
// larger shards coming first, and the shards cover [0, n) in order. It
// panics if n < 0, shards < 1 or shard is not in [0, shards).
func ShardRange(n, shard, shards int) (lo, hi int) {
	if n < 0 || shards < 1 || shard < 0 || shard >= shards {
		panic(fmt.Sprintf("libsvm: ShardRange(%d, %d, %d): bad arguments", n, shard, shards))
	}
	base, rem := n/shards, n%shards
	lo = shard*base + min(shard, rem)
	hi = lo + base
	if shard < rem {
		hi++
	}
	return lo, hi
}

func countRows(r io.Reader) (int, error) {
	buf := make([]byte, bufSize)
	n := 0
	last := byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

// readFile parses rows [lo, hi) of the file at path (hi < 0: to the end),
// keeping the features in the window win, on several goroutines when it
// reads the whole file. Of a data set over NATS that the role has not
// fetched whole (an inputfile.Remote), a range fetches only the lines that
// cover it, numbered as in the whole. With fp, a read of the whole local
// file fingerprints it as it goes.
func readFile(path string, lo, hi int, win cols, fp *fingerprinter, fn func(int, Row) error) error {
	if r, ok := inputfile.RemoteOf(path); ok && hi >= 0 {
		rc, first, err := r.Lines(lo, hi)
		if err != nil {
			return fmt.Errorf("libsvm: %w", err)
		}
		defer rc.Close()
		if first > lo {
			return fmt.Errorf("libsvm: %s: lines from %d, not %d", path, first+1, lo+1)
		}
		return readFrom(path, rc, first, lo, hi, win, fn)
	}
	f, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := fp.wrap(f)
	if p := parsers(); p > 1 && lo == 0 && hi < 0 {
		return readParallel(path, r, p, chunkSize, win, fn)
	}
	return read(path, r, lo, hi, win, fn)
}

// read parses rows [lo, hi) of r, or rows [lo, EOF) if hi < 0, keeping the
// features in the window win. name is the file name used in errors.
func read(name string, r io.Reader, lo, hi int, win cols, fn func(int, Row) error) error {
	return readFrom(name, r, 0, lo, hi, win, fn)
}

// readFrom is read of r, whose first line is row first (<= lo) of the
// file name: a part of it.
func readFrom(name string, r io.Reader, first, lo, hi int, win cols, fn func(int, Row) error) error {
	lr := lineReader{r: bufio.NewReaderSize(r, bufSize), line: first}
	if _, err := lr.r.Peek(1); err == io.EOF && first == 0 {
		return &ParseError{File: name, Msg: "no samples (empty file)"}
	}
	for lr.line < lo {
		ok, err := lr.skip()
		if err != nil {
			return readError(name, lr.line+1, err)
		}
		if !ok {
			return fmt.Errorf("libsvm: %s has %d rows, fewer than needed for rows [%d, %d)", name, lr.line, lo, hi)
		}
	}
	var row Row
	for hi < 0 || lr.line < hi {
		b, err := lr.next()
		if err == io.EOF {
			if hi >= 0 {
				return fmt.Errorf("libsvm: %s has %d rows, fewer than needed for rows [%d, %d)", name, lr.line, lo, hi)
			}
			break
		}
		if err != nil {
			return readError(name, lr.line+1, err)
		}
		if msg := parseLine(b, &row, win); msg != "" {
			return &ParseError{File: name, Line: lr.line, Msg: msg}
		}
		if err := fn(lr.line, row); err != nil {
			return fmt.Errorf("libsvm: %s:%d: %w", name, lr.line, err)
		}
	}
	return nil
}

// lineReader splits its input into '\n'-terminated lines of any length.
type lineReader struct {
	r    *bufio.Reader
	long []byte // holds lines that do not fit in r's buffer
	line int    // number of lines returned or skipped so far
}

// next returns the next line without its '\n', or io.EOF when there are no
// more lines. The returned slice is valid until the next call.
func (lr *lineReader) next() ([]byte, error) {
	b, err := lr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(lr.long) > maxLine {
				return nil, errLongLine
			}
			b, err = lr.r.ReadSlice('\n')
			lr.long = append(lr.long, b...)
		}
		b = lr.long
	}
	switch {
	case err == nil:
		b = b[:len(b)-1]
	case err == io.EOF && len(b) > 0:
		// Final line without '\n'.
	default:
		return nil, err
	}
	lr.line++
	return b, nil
}

// skip moves past the next line without looking at its content. It reports
// false if there was no line left.
func (lr *lineReader) skip() (bool, error) {
	n := 0
	for {
		b, err := lr.r.ReadSlice('\n')
		n += len(b)
		switch {
		case err == nil:
			lr.line++
			return true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if n > maxLine {
				return false, errLongLine
			}
			continue
		case err == io.EOF:
			if n == 0 {
				return false, nil
			}
			lr.line++
			return true, nil
		default:
			return false, err
		}
	}
}

// cols is a window of 0-based columns [lo, hi). A read keeps the features
// of a row that are in its window and checks the others as strictly without
// converting their values where their digits show them valid (see
// plainValue).
//
// A split window, one of several parts of the columns read side by side
// (ReadOwnedColumns; the last part's hi is math.MaxInt32), also skips most
// of the others' tokens: with lo > 0 it starts each line at the token that
// searchColumn finds for lo, and it stops at the first token of a column
// ≥ hi at or after the one that searchColumn finds for hi (the next part's
// start, from which that part reads). Since every part finds the same
// starts, the parts' scans of a line overlap and cover it, whatever the
// line holds: every token is still checked by some part, and the order of
// the indices across the whole line too, so a bad line fails the job as
// before.
type cols struct {
	lo, hi int32
	split  bool
}

// allCols is the window of every column.
var allCols = cols{lo: 0, hi: math.MaxInt32}

// searchSpan is the length, in bytes, below which searchColumn stops
// halving and leaves the rest to the sequential scan.
const searchSpan = 64

// searchColumn returns an offset in b, the features of a line after its
// label, from which a scan for the features of columns ≥ col starts: 0, or
// the start of a token of a column < col, found by halving b, close before
// the first token of a column ≥ col if the line's indices ascend. A token
// whose index does not parse ends the search where it is.
func searchColumn(b []byte, col int32) int {
	a, z := 0, len(b)
	for z-a > searchSpan {
		mid := a + (z-a)/2
		s := mid
		for s < len(b) && b[s] != ' ' && b[s] != '\t' {
			s++
		}
		for s < len(b) && (b[s] == ' ' || b[s] == '\t') {
			s++
		}
		if s >= z {
			z = mid
			continue
		}
		e := s
		for e < len(b) && b[e] != ':' && b[e] != ' ' && b[e] != '\t' {
			e++
		}
		if e == len(b) || b[e] != ':' {
			return a
		}
		idx, msg := parseIndex(b[s:e])
		if msg != "" {
			return a
		}
		if int32(idx-1) < col {
			a = s
		} else {
			z = s
		}
	}
	return a
}

// parseLine parses one line (without its '\n') into row, reusing row's
// slices, keeping the features in the window win. It returns a non-empty
// message if the line is bad.
func parseLine(b []byte, row *Row, win cols) string {
	row.Index = row.Index[:0]
	row.Value = row.Value[:0]
	label, b, msg := parseLabel(b)
	if msg != "" {
		return msg
	}
	row.Label = label

	line := b
	stop := len(line) + 1 // the next part's start (cols)
	if win.split && win.hi != math.MaxInt32 {
		stop = searchColumn(line, win.hi)
	}
	if win.split && win.lo > 0 {
		b = line[searchColumn(line, win.lo):]
	}
	var tok []byte
	prev := int32(-1) // the line's last index so far, kept or not
	for {
		tok, b = nextToken(b)
		if tok == nil {
			return ""
		}
		colon := bytes.IndexByte(tok, ':')
		if colon < 0 {
			return fmt.Sprintf("token %s is not idx:val", quote(tok))
		}
		if bytes.HasPrefix(tok, []byte("qid:")) {
			return fmt.Sprintf("qid tokens are not supported (found %s)", quote(tok))
		}
		is, vs := tok[:colon], tok[colon+1:]
		idx, msg := parseIndex(is)
		if msg != "" {
			return msg
		}
		i := int32(idx - 1)
		if i == prev {
			return fmt.Sprintf("duplicate index %d", idx)
		}
		if i < prev {
			return fmt.Sprintf("index %d follows %d: indices must be strictly ascending", idx, prev+1)
		}
		prev = i
		if i >= win.hi && len(line)-len(b)-len(tok) >= stop {
			return "" // the next part reads from its start, before tok
		}
		if i < win.lo || i >= win.hi {
			if plainValue(vs) {
				continue
			}
			if _, msg := parseFloat(vs); msg == "" {
				continue
			}
		}
		v, msg := parseFloat(vs)
		switch msg {
		case "":
		case "bad":
			return fmt.Sprintf("bad value %s for feature %d", quote(vs), idx)
		default:
			return fmt.Sprintf("value %s for feature %d %s", quote(vs), idx, msg)
		}
		row.Index = append(row.Index, i)
		row.Value = append(row.Value, v)
	}
}

// parseLabel parses the label of a line (without its '\n') and checks the
// line's ends: it returns the label and the rest of the line after it,
// without its comment, or a non-empty message if the line is bad.
func parseLabel(b []byte) (label float64, rest []byte, msg string) {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return 0, nil, `line ends in CRLF (\r\n); convert the file to Unix line endings (e.g. with dos2unix)`
	}
	comment := false
	if i := bytes.IndexByte(b, '#'); i >= 0 {
		b, comment = b[:i], true
	}
	if bytes.IndexByte(b, '\r') >= 0 {
		return 0, nil, `line contains a carriage return (\r); convert the file to Unix line endings (e.g. with dos2unix)`
	}
	tok, b := nextToken(b)
	if tok == nil {
		if comment {
			return 0, nil, "comment-only line; every line must be a sample"
		}
		return 0, nil, "blank line; every line must be a sample"
	}
	if bytes.IndexByte(tok, ':') >= 0 {
		return 0, nil, fmt.Sprintf("missing label: line starts with feature %s", quote(tok))
	}
	label, msg = parseFloat(tok)
	switch msg {
	case "":
	case "bad":
		return 0, nil, fmt.Sprintf("bad label %s", quote(tok))
	default:
		return 0, nil, fmt.Sprintf("label %s %s", quote(tok), msg)
	}
	return label, b, ""
}

// nextToken returns the first blank-separated token of b and the rest of b
// after it, or a nil token if b holds only blanks.
func nextToken(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i == len(b) {
		return nil, nil
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}

// parseFloat parses a finite number. It returns msg "bad" for malformed
// input, or a description of why a well-formed number is rejected.
func parseFloat(b []byte) (v float64, msg string) {
	if bytes.IndexByte(b, '_') >= 0 {
		return 0, "bad"
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, "is out of range"
		}
		return 0, "bad"
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, "is not finite"
	}
	return v, ""
}

// plainValue reports whether b is a plain decimal that parseFloat surely
// accepts: an optional sign, digits with at most one point among them, at
// least one digit, and an optional exponent of one or two digits, 48 bytes
// at most — so finite and far inside float64's range. It is false for every
// other form, valid or not, which is then left to parseFloat.
func plainValue(b []byte) bool {
	if len(b) == 0 || len(b) > 48 {
		return false
	}
	i := 0
	if b[0] == '-' || b[0] == '+' {
		i++
	}
	digits, point := 0, false
	for ; i < len(b); i++ {
		c := b[i]
		if c >= '0' && c <= '9' {
			digits++
		} else if c == '.' && !point {
			point = true
		} else {
			break
		}
	}
	if digits == 0 {
		return false
	}
	if i == len(b) {
		return true
	}
	if b[i] != 'e' && b[i] != 'E' {
		return false
	}
	i++
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		i++
	}
	n := len(b) - i
	if n < 1 || n > 2 {
		return false
	}
	for ; i < len(b); i++ {
		if b[i] < '0' || b[i] > '9' {
			return false
		}
	}
	return true
}

// parseIndex parses a 1-based feature index in [1, math.MaxInt32].
func parseIndex(b []byte) (int64, string) {
	digits := b
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		digits = b[1:]
	}
	if len(digits) == 0 {
		return 0, fmt.Sprintf("bad index %s", quote(b))
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Sprintf("bad index %s", quote(b))
		}
		if v <= math.MaxInt32 {
			v = v*10 + int64(c-'0')
		}
	}
	switch {
	case v == 0 && !neg:
		// scikit-learn's dump_svmlight_file writes 0-based indices unless
		// told otherwise; LIBSVM's, liblinear's and this reader's are 1-based.
		return 0, "index 0 must be >= 1 (indices are 1-based; scikit-learn's dump_svmlight_file writes them so with zero_based=False)"
	case neg || v == 0:
		return 0, fmt.Sprintf("index %s must be >= 1 (indices are 1-based)", b)
	case v > math.MaxInt32:
		return 0, fmt.Sprintf("index %s exceeds the maximum %d", b, math.MaxInt32)
	}
	return v, ""
}

// lineWidth returns what [Row.Width] gives for the line b (without its
// '\n'), read from the line's end: the index of its last feature whose value
// is not zero (0 if none). It does not check the line: on a bad one it may
// return anything, and the parse that follows reports it.
func lineWidth(b []byte) int {
	if i := bytes.IndexByte(b, '#'); i >= 0 {
		b = b[:i]
	}
	_, b = nextToken(b) // the label
	for {
		b = bytes.TrimRight(b, " \t")
		k := bytes.LastIndexAny(b, " \t")
		tok := b[k+1:]
		if len(tok) == 0 {
			return 0
		}
		b = b[:k+1]
		colon := bytes.IndexByte(tok, ':')
		if colon < 0 {
			return 0
		}
		idx, msg := parseIndex(tok[:colon])
		if msg != "" {
			return 0
		}
		if !isZero(tok[colon+1:]) {
			return int(idx)
		}
	}
}

// isZero reports whether the value b parses to 0: from its digits when it
// is a plain decimal (digits, sign, point), by parsing it otherwise (an
// exponent may underflow to 0). A bad value counts as non-zero.
func isZero(b []byte) bool {
	zero := true
	for _, c := range b {
		switch {
		case c >= '1' && c <= '9':
			zero = false
		case c == '0' || c == '.' || c == '-' || c == '+':
		default:
			v, msg := parseFloat(b)
			return msg == "" && v == 0
		}
	}
	return zero
}
