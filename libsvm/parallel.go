package libsvm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
)

// A whole-file read parses blocks of whole lines on several goroutines
// while the caller's goroutine hands the rows to its callback in file
// order: the parse, not the callback, is what costs (some 200 MB/s a
// core). Blocks are cut at the last '\n' of chunkSize bytes, or further on
// for a longer line; at most 2·parsers blocks are in flight.
// Blocks whose rows the callback has seen are parsed into again: a read
// makes next to no garbage, so that the heap of a caller who keeps what it
// reads (a matrix) does not grow by half again before a collection.
const chunkSize = 1 << 20

// chunk is a block of whole lines and, once parsed, its rows.
type chunk struct {
	data []byte
	done chan struct{} // closed when the rows below are set

	label  []float64
	start  []int // row k's non-zeros are idx[start[k]:start[k+1]]
	idx    []int32
	val    []float64
	msg    string // a parse error on the line after the rows above; "" if none
	readEr error  // an error reading the file, after the rows above
}

// parsers returns how many goroutines parse a whole-file read.
func parsers() int { return runtime.GOMAXPROCS(0) }

// readParallel parses every line of r as read does, keeping the features in
// the window win, on p goroutines, with blocks of size bytes (cut at line
// ends), calling fn in file order.
func readParallel(name string, r io.Reader, p, size int, win cols, fn func(int, Row) error) error {
	stop := make(chan struct{})
	order := make(chan *chunk, 2*p)  // blocks in file order, for the caller
	work := make(chan *chunk, 2*p)   // blocks to parse
	free := make(chan *chunk, 4*p+2) // blocks whose rows fn has seen
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		for range order { // let the reader finish
		}
		wg.Wait()
	}()
	wg.Add(1 + p)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(work)
		splitChunks(r, size, stop, free, func(c *chunk) bool {
			select {
			case order <- c:
			case <-stop:
				return false
			}
			if c.readEr != nil {
				close(c.done)
				return false
			}
			select {
			case work <- c:
				return true
			case <-stop:
				return false
			}
		})
	}()
	for range p {
		go func() {
			defer wg.Done()
			var row Row
			for c := range work {
				c.parse(&row, win)
				close(c.done)
			}
		}()
	}

	line, seen := 0, false
	for c := range order {
		select {
		case <-c.done:
		case <-stop:
		}
		for k, label := range c.label {
			row := Row{Label: label, Index: c.idx[c.start[k]:c.start[k+1]], Value: c.val[c.start[k]:c.start[k+1]]}
			if err := fn(line+k+1, row); err != nil {
				return fmt.Errorf("libsvm: %s:%d: %w", name, line+k+1, err)
			}
		}
		line += len(c.label)
		seen = seen || len(c.label) > 0 || c.msg != ""
		if c.msg != "" {
			return &ParseError{File: name, Line: line + 1, Msg: c.msg}
		}
		if c.readEr != nil {
			return readError(name, line+1, c.readEr)
		}
		select {
		case free <- c:
		default:
		}
	}
	if !seen {
		return &ParseError{File: name, Msg: "no samples (empty file)"}
	}
	return nil
}

// splitChunks reads r in blocks of whole lines of about size bytes and
// gives each to emit in order, until emit returns false, stop is closed or
// r ends. A read error is given as a chunk with readEr set, after the lines
// before it; a final line without '\n' is a line. It takes the chunks it
// fills from free while free has one (a nil free: none), and makes new ones
// otherwise.
func splitChunks(r io.Reader, size int, stop <-chan struct{}, free <-chan *chunk, emit func(*chunk) bool) {
	var carry []byte // the start of a line that the previous block cut
	for {
		select {
		case <-stop:
			return
		default:
		}
		if len(carry) > maxLine {
			emit(&chunk{done: make(chan struct{}), readEr: errLongLine})
			return
		}
		// A line longer than size doubles the block, so that its bytes
		// are copied a bounded number of times, up to one byte past
		// maxLine: a long line costs twice maxLine at most, carry and
		// block.
		c := &chunk{}
		select {
		case old := <-free:
			c = old.reuse()
		default:
		}
		want := min(len(carry)+max(size, len(carry)), maxLine+1)
		buf := c.data[:0]
		if cap(buf) < want {
			buf = make([]byte, 0, want)
		}
		buf = append(buf, carry...)
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		end := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		failed := err != nil && !end
		cut := len(buf)
		if !end {
			cut = bytes.LastIndexByte(buf, '\n') + 1 // 0: no line ends in buf yet
		}
		if cut == 0 && !end && !failed {
			carry = buf // all of it: taken, not copied
			continue
		}
		carry = append(carry[:0], buf[cut:]...)
		if cut > 0 {
			c.data, c.done = buf[:cut], make(chan struct{})
			if !emit(c) {
				return
			}
		}
		if failed {
			emit(&chunk{done: make(chan struct{}), readEr: err})
			return
		}
		if end {
			return
		}
	}
}

// reuse returns c emptied, its arrays kept for the next block.
func (c *chunk) reuse() *chunk {
	return &chunk{data: c.data[:0], label: c.label[:0], start: c.start[:0], idx: c.idx[:0], val: c.val[:0]}
}

// parse parses the chunk's lines, keeping the features in the window win,
// stopping at the first bad one.
func (c *chunk) parse(row *Row, win cols) {
	// At most a feature per ':', a row per line: growing the slices
	// from nothing moved each byte of them several times.
	lines, feats := bytes.Count(c.data, []byte{'\n'})+1, bytes.Count(c.data, []byte{':'})
	c.label = slices.Grow(c.label[:0], lines)
	c.start = append(slices.Grow(c.start[:0], lines+1), 0)
	c.idx = slices.Grow(c.idx[:0], feats)
	c.val = slices.Grow(c.val[:0], feats)
	for line := range bytes.Lines(c.data) {
		// The row's features go straight to the chunk's free capacity,
		// which holds them all (see above): nothing is copied.
		n := len(c.idx)
		row.Index, row.Value = c.idx[n:n:cap(c.idx)], c.val[n:n:cap(c.val)]
		if msg := parseLine(bytes.TrimSuffix(line, []byte{'\n'}), row, win); msg != "" {
			c.msg = msg
			return
		}
		c.label = append(c.label, row.Label)
		switch k := len(row.Index); {
		case k == 0:
		case cap(c.idx) > n && &row.Index[0] == &c.idx[:n+1][n] && &row.Value[0] == &c.val[:n+1][n]:
			c.idx, c.val = c.idx[:n+k], c.val[:n+k]
		default: // grown elsewhere after all
			c.idx, c.val = append(c.idx, row.Index...), append(c.val, row.Value...)
		}
		c.start = append(c.start, len(c.idx))
	}
}
