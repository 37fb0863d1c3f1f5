package mf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/libsvm"
)

// ParseError reports bad input at a line of a file, "FILE:LINE: MSG"; it
// is package libsvm's, so that a command treats bad input of every format
// alike.
type ParseError = libsvm.ParseError

// Rating is one line of a ratings file: user User rated item Item with
// Value.
type Rating struct {
	User, Item int64
	Value      float64
}

// maxLine is the longest line a ratings file may have.
const maxLine = 4096

// ReadRatings parses every line of the ratings file at path, calling fn for
// each in order with its 1-based line number. A line is
//
//	user item rating [timestamp]
//
// with the fields separated by white space, by commas or by "::" (one kind
// per line; white space around a comma or "::" is allowed), user and item
// any 64-bit integers, rating a finite number, and an optional fourth
// integer field (MovieLens' timestamp) that is ignored. A CR before the
// newline is allowed. Anything else, and an empty file, is a *ParseError;
// an error returned by fn stops reading and is returned as is.
func ReadRatings(path string, fn func(line int, r Rating) error) error {
	n := 0
	err := readLines(path, func(line int, fields [][]byte) error {
		if len(fields) != 3 && len(fields) != 4 {
			return failf("want \"user item rating\", got %d fields", len(fields))
		}
		r, err := parseRating(fields)
		if err != nil {
			return err
		}
		n++
		return fn(line, r)
	})
	if err == nil && n == 0 {
		return &ParseError{File: path, Msg: "no ratings: the file is empty"}
	}
	return err
}

// ReadPairs parses a file of (user, item) pairs for prediction, calling fn
// for each line in order: "user item", with the separators of
// [ReadRatings]; a ratings file is read as pairs too (its other fields are
// checked and ignored).
func ReadPairs(path string, fn func(line int, user, item int64) error) error {
	n := 0
	err := readLines(path, func(line int, fields [][]byte) error {
		var r Rating
		var err error
		switch len(fields) {
		case 2:
			if r.User, err = parseID("user", fields[0]); err == nil {
				r.Item, err = parseID("item", fields[1])
			}
		case 3, 4:
			r, err = parseRating(fields)
		default:
			err = failf("want \"user item\", got %d fields", len(fields))
		}
		if err != nil {
			return err
		}
		n++
		return fn(line, r.User, r.Item)
	})
	if err == nil && n == 0 {
		return &ParseError{File: path, Msg: "no pairs: the file is empty"}
	}
	return err
}

// readLines splits every line of the file at path into fields and calls fn.
// A parseFailure, from splitting or from fn, becomes a *ParseError at the
// line; any other error from fn is returned as is.
func readLines(path string, fn func(line int, fields [][]byte) error) error {
	f, err := inputfile.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var fields [][]byte
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(b) > maxLine {
			return &ParseError{File: path, Line: line, Msg: fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		text := bytes.TrimSuffix(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\r'})
		fields, err = splitFields(text, fields[:0])
		if err == nil {
			if err = fn(line, fields); err != nil && !isParseFailure(err) {
				return err
			}
		}
		if err != nil {
			return &ParseError{File: path, Line: line, Msg: err.Error()}
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			return nil // the last line has no newline
		}
	}
}

// parseFailure is an error in a line's fields.
type parseFailure struct{ msg string }

func (e *parseFailure) Error() string { return e.msg }

func isParseFailure(err error) bool {
	var pf *parseFailure
	return errors.As(err, &pf)
}

func failf(format string, args ...any) error {
	return &parseFailure{fmt.Sprintf(format, args...)}
}

// splitFields splits a line into its fields, appending them to fields.
func splitFields(line []byte, fields [][]byte) ([][]byte, error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, failf("empty line")
	}
	var sep []byte
	switch {
	case bytes.Contains(line, []byte("::")):
		sep = []byte("::")
	case bytes.IndexByte(line, ',') >= 0:
		sep = []byte(",")
	default:
		for len(line) > 0 {
			line = bytes.TrimLeft(line, " \t")
			if len(line) == 0 {
				break
			}
			end := bytes.IndexAny(line, " \t")
			if end < 0 {
				end = len(line)
			}
			fields = append(fields, line[:end])
			line = line[end:]
		}
		return fields, nil
	}
	for {
		end := bytes.Index(line, sep)
		if end < 0 {
			end = len(line)
		}
		field := bytes.Trim(line[:end], " \t")
		if len(field) == 0 {
			return nil, failf("empty field (separator %q)", sep)
		}
		fields = append(fields, field)
		if end == len(line) {
			return fields, nil
		}
		line = line[end+len(sep):]
	}
}

// parseRating parses the fields "user item rating [timestamp]".
func parseRating(fields [][]byte) (Rating, error) {
	var r Rating
	var err error
	if r.User, err = parseID("user", fields[0]); err != nil {
		return r, err
	}
	if r.Item, err = parseID("item", fields[1]); err != nil {
		return r, err
	}
	if r.Value, err = parseFloat(fields[2]); err != nil {
		return r, err
	}
	if len(fields) == 4 {
		if _, err := parseID("timestamp", fields[3]); err != nil {
			return r, err
		}
	}
	return r, nil
}

// parseID parses a decimal 64-bit integer.
func parseID(what string, b []byte) (int64, error) {
	neg := false
	d := b
	if len(d) > 0 && (d[0] == '-' || d[0] == '+') {
		neg = d[0] == '-'
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 19 {
		return 0, badID(what, b)
	}
	var v uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, badID(what, b)
		}
		v = v*10 + uint64(c-'0')
	}
	switch {
	case neg && v <= 1<<63:
		return int64(-v), nil
	case !neg && v < 1<<63:
		return int64(v), nil
	}
	return 0, badID(what, b)
}

func badID(what string, b []byte) error {
	return failf("%s id %q is not a 64-bit integer", what, b)
}

// pow10 holds the powers of ten that a float64 represents exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// parseFloat parses a finite rating. Plain decimals of at most 15 digits
// take a fast path (an exact integer divided by an exact power of ten is
// correctly rounded, as strconv.ParseFloat is); anything else goes to
// strconv.ParseFloat.
func parseFloat(b []byte) (float64, error) {
	if v, ok := fastFloat(b); ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		if err == nil || errors.Is(err, strconv.ErrRange) {
			return 0, failf("rating %q is not finite", b)
		}
		return 0, failf("rating %q is not a number", b)
	}
	return v, nil
}

func fastFloat(b []byte) (float64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	var m uint64
	digits, frac := 0, -1
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 || frac == 0 {
		return 0, false
	}
	v := float64(m)
	if frac > 0 {
		v /= pow10[frac]
	}
	if neg {
		v = -v
	}
	return v, true
}

// CheckTrain reads the training file at path as a job's workers do and
// returns the first error they would: a *ParseError for a malformed line,
// and for a (user, item) pair rated twice (see duplicateError). It reads
// the file once, keeping a 64-bit hash of each pair, 8 bytes per rating
// outside Go's heap (mapped: room for the most ratings the file's size
// allows, a rating a line of at least 6 bytes, of which it touches only
// what it uses); two equal hashes are looked up in the file again, so
// that only a pair rated twice is an error.
func CheckTrain(path string) error {
	f, err := inputfile.Open(path)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	f.Close()
	if err != nil {
		return err
	}
	hashes, free, err := mapped[uint64](int(st.Size()/6) + 1)
	if err != nil {
		return err
	}
	defer free()
	n := 0
	err = ReadRatings(path, func(_ int, r Rating) error {
		if n == len(hashes) {
			return fmt.Errorf("%s changed while it was read: more ratings than its size allows", path)
		}
		hashes[n] = pairHash(r.User, r.Item)
		n++
		return nil
	})
	if err != nil {
		return err
	}
	hashes = hashes[:n]
	slices.Sort(hashes)
	for k := 1; k < len(hashes); k++ {
		if hashes[k] != hashes[k-1] {
			continue
		}
		if user, item, ok := pairOf(path, hashes[k]); ok {
			return duplicateError(path, user, item)
		}
	}
	return nil
}

// pairHash hashes the pair (user, item).
func pairHash(user, item int64) uint64 {
	return splitmix(uint64(user) ^ splitmix(uint64(item)))
}

// pairOf returns the first (user, item) pair of the training file at path
// whose hash is h and that it rates twice; ok is false if the pairs of
// hash h differ (a collision).
func pairOf(path string, h uint64) (user, item int64, ok bool) {
	seen := map[[2]int64]bool{}
	_ = ReadRatings(path, func(_ int, r Rating) error {
		if pairHash(r.User, r.Item) != h {
			return nil
		}
		p := [2]int64{r.User, r.Item}
		if seen[p] {
			user, item, ok = r.User, r.Item, true
			return errFound
		}
		seen[p] = true
		return nil
	})
	return user, item, ok
}

// duplicateError returns the *ParseError of a training file in which user
// rated item more than once: it names the file and the pair's first two
// lines. A model rates a pair once, and which of two ratings counts, or
// whether both, is not for the reader to guess.
func duplicateError(path string, user, item int64) error {
	var lines []int
	err := ReadRatings(path, func(line int, r Rating) error {
		if r.User == user && r.Item == item {
			if lines = append(lines, line); len(lines) == 2 {
				return errFound
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return err
	}
	if len(lines) < 2 {
		return fmt.Errorf("%s changed while it was read: user %d rated item %d twice, then once", path, user, item)
	}
	return &ParseError{File: path, Line: lines[1], Msg: fmt.Sprintf("user %d rates item %d again (first at line %d): each pair may be rated once", user, item, lines[0])}
}

// errFound stops a read early.
var errFound = errors.New("found")
