package lda

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/strads-go/strads/inputfile"
)

// ParseError reports bad input at a line of a file.
type ParseError struct {
	File string // the file
	Line int    // 1-based line number
	Msg  string // what is wrong
}

// Error returns "FILE:LINE: MSG".
func (e *ParseError) Error() string { return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg }

func parseErrorf(file string, line int, format string, args ...any) *ParseError {
	return &ParseError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Stats describes a corpus.
type Stats struct {
	// Docs is D, the number of documents (including empty ones), and
	// Words is W, the size of the vocabulary.
	Docs, Words int
	// Tokens is N, the number of tokens.
	Tokens int64
	// NonEmpty is the number of documents with at least one token.
	NonEmpty int
}

// corpus is an opened corpus: its sizes, and a reader of document ranges.
type corpus struct {
	path  string
	docs  int // D
	words int // W
	nnz   int // UCI: the header's NNZ
	text  *textVocab
	// maxTokens, if not 0, bounds the corpus's tokens below the package's
	// maxTokens: a reader that holds every token (ReadDocword).
	maxTokens int64
}

// maxTokens bounds the tokens of a corpus: counts are int32.
const maxTokens = math.MaxInt32

// A docword corpus's tokens are bounded by its entries (NNZ, which the
// header gives and the file's size bounds): the sampler keeps state per
// token (its word and topic: 8 bytes), so one entry "1 1 2000000000"
// would otherwise ask for some 16 GB however small the file. A document's tokens over its distinct words grow as the
// square root of its length (Heaps' law): a few per entry in real corpora
// (NYTimes 1.4, PubMed 1.5), some 25 to 100 in a million-word book. So a
// corpus of NNZ entries may hold max(minTokens, tokensPerEntry × NNZ)
// tokens: 2^24 whatever its size (some 130 MB of state), and 256 a mean
// entry beyond. Text corpora (--text) hold the tokens they spell out.
const (
	minTokens      = 1 << 24
	tokensPerEntry = 256
)

// tokenLimit returns the most tokens a docword corpus of nnz entries may
// hold: max(minTokens, tokensPerEntry × nnz), at most maxTokens.
func tokenLimit(nnz int) int64 {
	return min(maxTokens, max(minTokens, tokensPerEntry*int64(nnz)))
}

// openCorpus opens the training corpus of cfg: it reads the header of a
// docword file, or builds the vocabulary of a text file (one pass).
func openCorpus(cfg *Config) (*corpus, error) {
	if cfg.Text != "" {
		tv, err := buildTextVocab(cfg.Text, cfg.StopWords, cfg.MinDocFreq)
		if err != nil {
			return nil, err
		}
		return &corpus{path: cfg.Text, docs: tv.lines, words: len(tv.words), text: tv}, nil
	}
	return openDocword(cfg.Docword)
}

// openDocword reads the header of a UCI docword file. Of a data set read
// in parts (an inputfile.Remote: DESIGN "Data over NATS"), it fetches
// the block of the header only.
func openDocword(path string) (*corpus, error) {
	var r io.Reader
	var size int64
	if rm, ok := inputfile.RemoteOf(path); ok {
		rc, _, err := rm.Lines(0, headerLines)
		if err != nil {
			return nil, fmt.Errorf("lda: %w", err)
		}
		defer rc.Close()
		r, size = rc, rm.Summary().Size
	} else {
		f, err := inputfile.Open(path)
		if err != nil {
			return nil, fmt.Errorf("lda: %w", err)
		}
		defer f.Close()
		r, size = f, fileSize(f)
	}
	lr := newLineReader(path, r)
	c := &corpus{path: path}
	var err error
	if c.docs, c.words, c.nnz, err = lr.header(size); err != nil {
		return nil, err
	}
	return c, nil
}

// headerLines is the number of lines of a docword file's header.
const headerLines = 3

// fileSize returns the size of f, a regular file, or -1.
func fileSize(f *os.File) int64 {
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		return st.Size()
	}
	return -1
}

// maxDocs and maxWords bound a docword file's D and W: the header's
// numbers size allocations (a table of W words, a list of D documents)
// before any entry shows that the file holds them, so that a header
// alone (three lines announcing 2³¹−1) would cost gigabytes. 2²⁴ is
// twice PubMed's D (8.2 million) and 118 times its W.
const (
	maxDocs  = 1 << 24
	maxWords = 1 << 24
)

// minEntry is the size of the shortest entry line, "1 1 1\n": a file of
// n bytes holds at most n/minEntry entries.
const minEntry = 6

// lineReader reads a file line by line, strictly: no carriage returns.
type lineReader struct {
	file string
	r    *bufio.Reader
	line int
}

func newLineReader(file string, r io.Reader) *lineReader {
	return &lineReader{file: file, r: bufio.NewReaderSize(r, 1<<20)}
}

// next returns the next line without its '\n' (valid until the next call),
// or io.EOF after the last.
func (lr *lineReader) next() ([]byte, error) {
	b, err := lr.r.ReadSlice('\n')
	switch {
	case err == nil:
		b = b[:len(b)-1]
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, parseErrorf(lr.file, lr.line+1, "line longer than %d bytes", lr.r.Size())
	case err == io.EOF:
		if len(b) == 0 {
			return nil, io.EOF
		}
	default:
		return nil, fmt.Errorf("lda: read %s: %w", lr.file, err)
	}
	lr.line++
	if bytes.IndexByte(b, '\r') >= 0 {
		if b[len(b)-1] == '\r' {
			return nil, lr.errorf(`line ends in CRLF (\r\n); convert the file to Unix line endings (e.g. with dos2unix)`)
		}
		return nil, lr.errorf(`line contains a carriage return (\r); convert the file to Unix line endings`)
	}
	return b, nil
}

func (lr *lineReader) errorf(format string, args ...any) *ParseError {
	return parseErrorf(lr.file, lr.line, format, args...)
}

// header reads the three header lines of a docword file of size bytes
// (-1: unknown): D, W and NNZ. D and W must be at most maxDocs and
// maxWords, and NNZ no more entries than the size allows.
func (lr *lineReader) header(size int64) (d, w, nnz int, err error) {
	vals := [3]int{}
	limits := [3]int64{maxDocs, maxWords, math.MaxInt32}
	for i, name := range []string{"D (the number of documents)", "W (the size of the vocabulary)", "NNZ (the number of docID wordID count lines)"} {
		b, err := lr.next()
		if err == io.EOF {
			return 0, 0, 0, parseErrorf(lr.file, lr.line+1, "missing header line %d: %s", i+1, name)
		}
		if err != nil {
			return 0, 0, 0, err
		}
		f := fields(b, nil)
		if len(f) != 1 {
			return 0, 0, 0, lr.errorf("header line %d must be a single number, %s; got %q", i+1, name, b)
		}
		v, ok := parseUint(f[0])
		if !ok || v < 1 || v > math.MaxInt32 {
			return 0, 0, 0, lr.errorf("header line %d: %s must be an integer in [1, %d], got %q", i+1, name, math.MaxInt32, f[0])
		}
		if v > limits[i] {
			return 0, 0, 0, lr.errorf("header line %d: %s = %d exceeds the limit of %d", i+1, name, v, limits[i])
		}
		if i == 2 && size >= 0 && v > size/minEntry {
			return 0, 0, 0, lr.errorf("header line 3: NNZ = %d entries, but the file's %d bytes hold at most %d (an entry line takes at least %d bytes)", v, size, size/minEntry, minEntry)
		}
		vals[i] = int(v)
	}
	return vals[0], vals[1], vals[2], nil
}

// fields splits b at runs of spaces and tabs, appending to dst.
func fields(b []byte, dst [][]byte) [][]byte {
	dst = dst[:0]
	for {
		i := 0
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		if i == len(b) {
			return dst
		}
		j := i
		for j < len(b) && b[j] != ' ' && b[j] != '\t' {
			j++
		}
		dst = append(dst, b[i:j])
		b = b[j:]
	}
}

// parseUint parses a decimal integer (optionally signed); ok is false if b
// is not one. Values beyond MaxInt64 saturate.
func parseUint(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg, b = b[0] == '-', b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v < math.MaxInt64/10-10 {
			v = v*10 + int64(c-'0')
		}
	}
	if neg {
		v = -v
	}
	return v, true
}

// docFunc receives a document: its 0-based id, and its 0-based word ids
// with their counts (valid during the call only).
type docFunc func(doc int, words, counts []int32) error

// read calls fn for every non-empty document of [lo, hi), in order. With
// full set, it reads and checks the whole file (the header's NNZ included)
// whatever the range.
func (c *corpus) read(lo, hi int, full bool, fn docFunc) error {
	if c.text != nil {
		return c.text.read(c.path, lo, hi, full, fn)
	}
	var lr *lineReader
	if rm, ok := inputfile.RemoteOf(c.path); ok && !full {
		rc, first, err := c.entries(rm, lo, hi)
		if err != nil {
			return err
		}
		defer rc.Close()
		lr = newLineReader(c.path, rc)
		lr.line = first
		for lr.line < headerLines { // read by openDocword
			if _, err := lr.next(); err != nil {
				return err
			}
		}
	} else {
		f, err := inputfile.Open(c.path)
		if err != nil {
			return fmt.Errorf("lda: %w", err)
		}
		defer f.Close()
		lr = newLineReader(c.path, f)
		if _, _, _, err := lr.header(fileSize(f)); err != nil {
			return err
		}
	}
	seen := make([]int32, c.words) // seen[w] = 1 + the last document with word w
	var words, counts []int32
	var fs [][]byte
	cur, entries := -1, 0
	var tokens int64
	flush := func() error {
		if cur >= lo && cur < hi && len(words) > 0 {
			if err := fn(cur, words, counts); err != nil {
				return err
			}
		}
		words, counts = words[:0], counts[:0]
		return nil
	}
	for {
		b, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		entries++
		if entries > c.nnz {
			return lr.errorf("more than NNZ = %d entries: the header (line 3) says NNZ = %d", c.nnz, c.nnz)
		}
		fs = fields(b, fs)
		if len(fs) != 3 {
			return lr.errorf("want \"docID wordID count\", got %q", b)
		}
		var v [3]int64
		for i, name := range []string{"docID", "wordID", "count"} {
			x, ok := parseUint(fs[i])
			if !ok {
				return lr.errorf("%s %q is not an integer", name, fs[i])
			}
			v[i] = x
		}
		doc, word, count := v[0], v[1], v[2]
		switch {
		case doc < 1 || doc > int64(c.docs):
			return lr.errorf("docID %d out of range [1, %d] (D, line 1)", doc, c.docs)
		case word < 1 || word > int64(c.words):
			return lr.errorf("wordID %d out of range [1, %d] (W, line 2)", word, c.words)
		case count < 1:
			return lr.errorf("count %d: counts must be at least 1", count)
		case count > maxTokens:
			return lr.errorf("count %d exceeds %d", count, maxTokens)
		}
		d, w := int(doc-1), int32(word-1)
		if d < cur {
			return lr.errorf("docID %d after docID %d: the entries must be sorted by document", doc, cur+1)
		}
		if d != cur {
			if err := flush(); err != nil {
				return err
			}
			if !full && d >= hi {
				return nil
			}
			cur = d
		}
		if seen[w] == int32(d+1) {
			return lr.errorf("word %d appears twice in document %d", word, doc)
		}
		seen[w] = int32(d + 1)
		if tokens += count; c.maxTokens > 0 && tokens > c.maxTokens {
			return lr.errorf("the corpus has more than %d tokens", c.maxTokens)
		}
		if limit := tokenLimit(c.nnz); tokens > limit {
			if limit == maxTokens {
				return lr.errorf("the corpus has more than %d tokens", maxTokens)
			}
			return lr.errorf("count %d: the corpus has more than %d tokens, the most its NNZ = %d entries justify (max(2^24, 256 × NNZ)); strads keeps state per token", count, limit, c.nnz)
		}
		if d >= lo && d < hi {
			words, counts = append(words, w), append(counts, int32(count))
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if full && entries != c.nnz {
		return parseErrorf(c.path, 3, "the header says NNZ = %d but the file has %d entries", c.nnz, entries)
	}
	return nil
}

// entries returns a reader of the lines of rm, a docword file read in
// parts, that hold the entries of documents [lo, hi), and the number
// (0-based) of its first line. It starts at the last block whose first
// line is an entry of a document before lo (or at the entries' start),
// and ends before the first block after it whose first line is an entry
// of hi or later: the entries are sorted by document (read checks it), so
// the blocks between hold the range. A head that does not parse, say cut
// short, is passed over: the range only grows.
func (c *corpus) entries(rm inputfile.Remote, lo, hi int) (io.ReadCloser, int, error) {
	first, end := headerLines, rm.Summary().Lines
	for _, b := range rm.Blocks() {
		if b.Line < headerLines {
			continue
		}
		f := fields([]byte(b.Head), nil)
		if len(f) < 2 { // the head holds docID and more: docID is whole
			continue
		}
		doc, ok := parseUint(f[0])
		switch {
		case !ok:
		case doc-1 < int64(lo):
			first = b.Line
		case doc-1 >= int64(hi) && b.Line > first:
			end = b.Line
		}
		if end < rm.Summary().Lines {
			break
		}
	}
	rc, at, err := rm.Lines(first, end)
	if err != nil {
		return nil, 0, fmt.Errorf("lda: %w", err)
	}
	return rc, at, nil
}

// scan reads the whole corpus, checking it, and returns its sizes.
func (c *corpus) scan() (Stats, error) {
	st := Stats{Docs: c.docs, Words: c.words}
	err := c.read(0, c.docs, true, func(_ int, _, counts []int32) error {
		st.NonEmpty++
		for _, n := range counts {
			st.Tokens += int64(n)
		}
		return nil
	})
	if err == nil && st.Tokens == 0 {
		err = fmt.Errorf("lda: %s: the corpus has no tokens", c.path)
	}
	return st, err
}

// readVocab reads a vocabulary of exactly w words, one a line.
func readVocab(path string, w int) ([]string, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lda: %w", err)
	}
	defer f.Close()
	lr := newLineReader(path, f)
	words := make([]string, 0, min(w, 1<<16)) // grows with the lines read, not with W
	for {
		b, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(words) == w {
			return nil, lr.errorf("more than W = %d words: the docword file says W = %d", w, w)
		}
		word := string(bytes.TrimSpace(b))
		if word == "" {
			return nil, lr.errorf("blank line: every line must be a word")
		}
		words = append(words, word)
	}
	if len(words) < w {
		return nil, parseErrorf(path, lr.line+1, "missing word %d: the vocabulary has %d lines but the docword file says W = %d", len(words)+1, len(words), w)
	}
	return words, nil
}

// textVocab is the vocabulary of a text corpus: one document a line,
// lower-cased, split on non-letters; words in the stop list or in fewer than
// the minimum number of documents are dropped.
type textVocab struct {
	words []string         // sorted
	index map[string]int32 // word → id
	lines int
}

// splitWords calls fn with each word of line, lower-cased: a maximal run of
// letters (Unicode).
func splitWords(line []byte, buf []byte, fn func(w []byte)) []byte {
	buf = buf[:0]
	for len(line) > 0 {
		r, n := utf8.DecodeRune(line)
		line = line[n:]
		if unicode.IsLetter(r) {
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
			continue
		}
		if len(buf) > 0 {
			fn(buf)
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		fn(buf)
	}
	return buf
}

// readStopWords reads a stop-word list: words separated by blanks or
// newlines, lower-cased and split like the text.
func readStopWords(path string) (map[string]bool, error) {
	stop := map[string]bool{}
	if path == "" {
		return stop, nil
	}
	if err := inputfile.Check(path); err != nil {
		return nil, fmt.Errorf("lda: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lda: %w", err)
	}
	splitWords(data, nil, func(w []byte) { stop[string(w)] = true })
	return stop, nil
}

// maxTextLine is the longest line, a document, that eachLine takes, in
// bytes: a longer one is refused as it is read, before it takes more
// memory. A variable, which tests lower.
var maxTextLine = 256 << 20

// eachLine calls fn with every line of the file at path (without '\n'; a
// carriage return is a separator like any non-letter).
func eachLine(path string, fn func(line int, b []byte) error) error {
	f, err := inputfile.Open(path)
	if err != nil {
		return fmt.Errorf("lda: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	tooLong := func(line int) error {
		return parseErrorf(path, line, "a line longer than %d MiB: a text corpus holds one document a line", maxTextLine>>20)
	}
	var long []byte
	line := 0
	for {
		b, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(b) > maxTextLine {
				return tooLong(line + 1)
			}
			long = append(long, b...)
			continue
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("lda: read %s: %w", path, err)
		}
		if long != nil {
			b = append(long, b...)
			long = nil
		}
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		if len(bytes.TrimSuffix(b, []byte{'\n'})) > maxTextLine {
			return tooLong(line + 1)
		}
		line++
		if ferr := fn(line, bytes.TrimSuffix(b, []byte{'\n'})); ferr != nil {
			return ferr
		}
		if err == io.EOF {
			return nil
		}
	}
}

// buildTextVocab reads a text corpus once to build its vocabulary.
func buildTextVocab(path, stopPath string, minDF int) (*textVocab, error) {
	stop, err := readStopWords(stopPath)
	if err != nil {
		return nil, err
	}
	df := map[string]int{}
	last := map[string]int{}
	var buf []byte
	tv := &textVocab{}
	err = eachLine(path, func(line int, b []byte) error {
		tv.lines = line
		buf = splitWords(b, buf, func(w []byte) {
			if stop[string(w)] || last[string(w)] == line {
				return
			}
			s := string(w)
			last[s] = line
			df[s]++
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for w, n := range df {
		if n >= max(minDF, 1) {
			tv.words = append(tv.words, w)
		}
	}
	if len(tv.words) == 0 {
		return nil, fmt.Errorf("lda: %s: no word is left (%d lines; stop words and --min-df %d remove every word)", path, tv.lines, minDF)
	}
	if len(tv.words) > math.MaxInt32 {
		return nil, fmt.Errorf("lda: %s: more than %d words", path, math.MaxInt32)
	}
	slices.Sort(tv.words)
	tv.index = make(map[string]int32, len(tv.words))
	for i, w := range tv.words {
		tv.index[w] = int32(i)
	}
	return tv, nil
}

// read calls fn for every non-empty document (line) of [lo, hi).
func (tv *textVocab) read(path string, lo, hi int, full bool, fn docFunc) error {
	var buf []byte
	var words, counts []int32
	at := map[int32]int{} // word → its position in words
	var tokens int64
	errStop := errors.New("stop")
	err := eachLine(path, func(line int, b []byte) error {
		d := line - 1
		if d < lo {
			return nil
		}
		if d >= hi && !full {
			return errStop
		}
		words, counts = words[:0], counts[:0]
		clear(at)
		buf = splitWords(b, buf, func(w []byte) {
			id, ok := tv.index[string(w)]
			if !ok {
				return
			}
			tokens++
			if i, ok := at[id]; ok {
				counts[i]++
				return
			}
			at[id] = len(words)
			words, counts = append(words, id), append(counts, 1)
		})
		if tokens > maxTokens {
			return parseErrorf(path, line, "the corpus has more than %d tokens", maxTokens)
		}
		if d >= hi || len(words) == 0 {
			return nil
		}
		return fn(d, words, counts)
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}
