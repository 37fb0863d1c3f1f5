package dataset

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/jsobject"
	"github.com/strads-go/strads/protocol"
)

// The layout of a data set in the bucket (DESIGN "Data over NATS"):
// the object of its name is its index, a JSON document whose object
// metadata say so (metaFormat) and carry the whole content's size and
// digest, for ls; the content is in blocks of whole lines, the objects
// NAME/PUT/NNNNNN, where PUT is the put's own NUID, so that the blocks of
// a data set replaced under a reader are not the new one's. A name
// cannot hold '/', so no block is a data set. An object of a data set's
// name without metaFormat is a data set stored whole, before indexes: it
// is read whole, as it was.

// DefaultBlock is the size of a block of a data set, in bytes, unless
// SetBlock says otherwise: a block is cut at the first '\n' at or after
// it (a line longer than that is a block of its own).
const DefaultBlock = 4 << 20

// ErrIndex is in the chain of the error of a data set whose index or
// blocks are not what the index says: a truncated or forged index, a
// missing or changed block.
var ErrIndex = errors.New("a broken data set")

// The metadata of an index object.
const (
	metaFormat = "strads-format" // indexFormat
	metaSize   = "strads-size"   // the content's size, in decimal
	metaDigest = "strads-digest" // the content's digest
	// indexFormat is the version of the index.
	indexFormat = "1"
)

// index is the object of a data set's name.
type index struct {
	Size   uint64 `json:"size"`
	Digest string `json:"digest"` // as the object store's: "SHA-256=" and the base64url SHA-256 of the content
	CRC32C uint32 `json:"crc32c"`
	// Fingerprint is the content's protocol.Fingerprint when it was
	// stored. Readers derive it from Size and CRC32C, which an index
	// stored by an older version, with a sampled fingerprint, holds too.
	Fingerprint string `json:"fingerprint"`
	// Lines is the number of lines: the '\n's, and one more if the last
	// byte is not '\n'.
	Lines  int     `json:"lines"`
	Blocks []block `json:"blocks"`
}

// block is one block of a data set's content, in order.
type block struct {
	Object string `json:"object"`
	Size   uint64 `json:"size"`
	Lines  int    `json:"lines"`
	Digest string `json:"digest"` // the object store's
	// Head is the start of its first line, at most MaxHead bytes: a
	// reader of lines sorted by a key (LDA's documents) finds the blocks
	// of its keys without fetching any.
	Head string `json:"head"`
}

// MaxHead is the most bytes of a block's first line that the index keeps.
const MaxHead = 64

// MaxBlock is the largest block size that SetBlock takes: a put holds a
// block in memory.
const MaxBlock = 1 << 30

// SetBlock sets the size of the blocks that Put cuts, in bytes, in [1,
// MaxBlock]; it ignores another.
func (s *Store) SetBlock(n int) {
	if n > 0 && n <= MaxBlock {
		s.block = n
	}
}

// digest returns the object store's form of the SHA-256 sum of h.
func digest(h hash.Hash) string {
	return "SHA-256=" + base64.URLEncoding.EncodeToString(h.Sum(nil))
}

// putBlocks stores the size bytes of r as blocks of the data set name and
// returns their index, without its Fingerprint. On an error, the index
// holds the blocks stored.
func (s *Store) putBlocks(ctx context.Context, name string, r io.Reader, size uint64) (index, error) {
	put := nuid.Next()
	ix := index{Size: size}
	sum, crc := sha256.New(), crc32.New(crc32.MakeTable(crc32.Castagnoli))
	br := bufio.NewReaderSize(r, 1<<20)
	buf := make([]byte, s.block)
	var total uint64
	for k := 0; ; k++ {
		n, err := io.ReadFull(br, buf[:s.block])
		b := buf[:n]
		if err == nil && b[n-1] != '\n' {
			var rest []byte
			rest, err = br.ReadBytes('\n')
			b = append(b, rest...)
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
		case err != nil:
			return ix, fmt.Errorf("dataset: put %s%s: %w", Scheme, name, err)
		}
		if len(b) == 0 {
			break
		}
		total += uint64(len(b))
		sum.Write(b)
		crc.Write(b)
		head, _, _ := bytes.Cut(b[:min(len(b), MaxHead)], []byte{'\n'})
		bl := block{Object: fmt.Sprintf("%s/%s/%06d", name, put, k), Size: uint64(len(b)), Lines: bytes.Count(b, []byte{'\n'}), Head: string(head)}
		if b[len(b)-1] != '\n' {
			bl.Lines++
		}
		oi, perr := s.obs.Put(ctx, jetstream.ObjectMeta{Name: bl.Object}, bytes.NewReader(b))
		if perr != nil {
			return ix, storeError(perr, name)
		}
		bl.Digest = oi.Digest
		ix.Blocks = append(ix.Blocks, bl)
		ix.Lines += bl.Lines
		if err != nil { // the end
			break
		}
		if len(b) > len(buf) {
			buf = b[:cap(b)]
		}
	}
	if total != size {
		return ix, fmt.Errorf("dataset: read %d bytes of %s, want %d: did the file change while it was read?", total, name, size)
	}
	ix.Digest, ix.CRC32C = digest(sum), crc.Sum32()
	return ix, nil
}

// putIndex stores ix as the index of the data set name.
func (s *Store) putIndex(ctx context.Context, name string, ix index) (*jetstream.ObjectInfo, error) {
	b, err := json.Marshal(ix)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	meta := jetstream.ObjectMeta{Name: name, Metadata: map[string]string{
		metaFormat: indexFormat,
		metaSize:   strconv.FormatUint(ix.Size, 10),
		metaDigest: ix.Digest,
	}}
	oi, err := s.obs.Put(ctx, meta, bytes.NewReader(b))
	if err != nil {
		return nil, storeError(err, name)
	}
	return oi, nil
}

// removeBlocks removes, as best it can, the blocks bs: those of a data set
// replaced, or of a failed put. What it leaves, rm removes.
func (s *Store) removeBlocks(bs []block) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	for _, b := range bs {
		s.obs.Delete(ctx, b.Object)
	}
}

// oldBlocks returns the blocks of the data set name as it is stored now,
// none if it is not, or was stored whole, or its index cannot be read.
func (s *Store) oldBlocks(ctx context.Context, name string) []block {
	ictx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	oi, err := s.obs.GetInfo(ictx, name)
	if err != nil || oi.Metadata[metaFormat] == "" {
		return nil
	}
	ix, err := s.readIndex(ctx, name, oi)
	if err != nil {
		return nil
	}
	return ix.Blocks
}

// info returns the Info of an object stored whole.
func info(oi *jetstream.ObjectInfo) Info {
	return Info{Name: oi.Name, Size: oi.Size, Digest: oi.Digest, Modified: oi.ModTime}
}

// indexInfo returns the Info of the data set of the index object oi.
func indexInfo(oi *jetstream.ObjectInfo, ix index) Info {
	return Info{Name: oi.Name, Size: ix.Size, Digest: ix.Digest, Modified: oi.ModTime}
}

// oinfo returns the Info of the data set of the object oi, from its
// metadata if it is an index.
func oinfo(oi *jetstream.ObjectInfo) (Info, error) {
	if oi.Metadata[metaFormat] == "" {
		return info(oi), nil
	}
	size, err := strconv.ParseUint(oi.Metadata[metaSize], 10, 64)
	if err != nil {
		return Info{}, fmt.Errorf("%w %s%s: its index's metadata give the size %q", ErrIndex, Scheme, oi.Name, oi.Metadata[metaSize])
	}
	return Info{Name: oi.Name, Size: size, Digest: oi.Metadata[metaDigest], Modified: oi.ModTime}, nil
}

// readIndex reads and checks the index of the data set name, whose object
// is oi.
func (s *Store) readIndex(ctx context.Context, name string, oi *jetstream.ObjectInfo) (index, error) {
	if f := oi.Metadata[metaFormat]; f != indexFormat {
		return index{}, indexError(name, "has the format %q, not %q: is this strads older than the one that stored it?", f, indexFormat)
	}
	if oi.Size > maxIndex {
		return index{}, indexError(name, "is %d bytes", oi.Size)
	}
	var buf bytes.Buffer
	ctx, cancel := s.deadline(ctx, oi.Size)
	defer cancel()
	var got atomic.Int64
	if err := s.copyObject(ctx, name, oi, &buf, &got); err != nil {
		return index{}, err
	}
	return parseIndex(name, buf.Bytes(), oi.Metadata)
}

// maxIndex is the largest index object that readIndex reads, in bytes.
const maxIndex = 64 << 20

// indexError returns an error matching ErrIndex about the index of the
// data set name.
func indexError(name, format string, args ...any) error {
	return fmt.Errorf("%w %s%s: its index %s: store it again (strads data put)", ErrIndex, Scheme, name, fmt.Sprintf(format, args...))
}

// parseIndex decodes and checks the index of the data set name, whose
// object holds b and has the metadata meta. Whatever b holds, an index
// that it returns lists blocks of the data set's name, each of at least
// one byte and one line, that add up to its size and lines without
// overflow; any other b is an error matching ErrIndex.
func parseIndex(name string, b []byte, meta map[string]string) (index, error) {
	var ix index
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ix); err != nil {
		return index{}, indexError(name, "is not one: %v", err)
	}
	if dec.More() {
		return index{}, indexError(name, "holds more than one document")
	}
	if ix.Size > math.MaxInt64 || ix.Lines < 0 {
		return index{}, indexError(name, "says %d bytes and %d lines", ix.Size, ix.Lines)
	}
	var size uint64
	lines := 0
	for k, b := range ix.Blocks {
		if !strings.HasPrefix(b.Object, name+"/") || b.Size == 0 || b.Lines < 1 || !strings.HasPrefix(b.Digest, "SHA-256=") || len(b.Head) > MaxHead {
			return index{}, indexError(name, "has a bad block %d: %+v", k, b)
		}
		if b.Size > ix.Size-size || b.Lines > ix.Lines-lines {
			return index{}, indexError(name, "lists blocks of more than its %d bytes and %d lines", ix.Size, ix.Lines)
		}
		size += b.Size
		lines += b.Lines
	}
	switch {
	case size != ix.Size || lines != ix.Lines:
		return index{}, indexError(name, "lists blocks of %d bytes and %d lines, but says %d bytes and %d lines", size, lines, ix.Size, ix.Lines)
	case strconv.FormatUint(ix.Size, 10) != meta[metaSize] || ix.Digest != meta[metaDigest]:
		return index{}, indexError(name, "says %d bytes, %s, but its metadata %s bytes, %s", ix.Size, ix.Digest, meta[metaSize], meta[metaDigest])
	case !strings.HasPrefix(ix.Digest, "SHA-256=") || ix.Fingerprint == "":
		return index{}, indexError(name, "has no digest or fingerprint")
	}
	return ix, nil
}

// getBlock writes block k of ix, of the data set name, to w, counting
// the bytes into got, and checks it: its digest is the index's (the object
// store checks the content against it), its size and its lines too.
func (s *Store) getBlock(ctx context.Context, name string, ix index, k int, w io.Writer, got *atomic.Int64) error {
	b := ix.Blocks[k]
	oi, err := s.blockInfo(ctx, name, k, b)
	if err != nil {
		return err
	}
	if oi.Digest != b.Digest || oi.Size != b.Size {
		return fmt.Errorf("%w %s%s: block %d (%s) is %d bytes, %s, but the index says %d bytes, %s: was the data set replaced while read?", ErrIndex, Scheme, name, k, b.Object, oi.Size, oi.Digest, b.Size, b.Digest)
	}
	lc := &lineCounter{w: w, head: make([]byte, 0, MaxHead)}
	before := got.Load()
	if err := s.copyObject(ctx, name, oi, lc, got); err != nil {
		return err
	}
	lines := lc.n
	if lc.last != '\n' {
		lines++
	}
	head, _, _ := bytes.Cut(lc.head, []byte{'\n'})
	if n := uint64(got.Load() - before); n != b.Size || lines != b.Lines || string(head) != b.Head {
		return fmt.Errorf("%w %s%s: block %d (%s) has %d bytes and %d lines, starting %q, but the index says %d and %d, starting %q", ErrIndex, Scheme, name, k, b.Object, n, lines, head, b.Size, b.Lines, b.Head)
	}
	return nil
}

// blockInfo returns the object of block k, b, of the data set name.
func (s *Store) blockInfo(ctx context.Context, name string, k int, b block) (*jetstream.ObjectInfo, error) {
	ictx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	oi, err := s.obs.GetInfo(ictx, b.Object)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w %s%s: its block %d (%s) is missing: was the data set replaced or removed while read? (strads data put it again)", ErrIndex, Scheme, name, k, b.Object)
	}
	if err != nil {
		return nil, storeError(err, name)
	}
	return oi, nil
}

// getBlocks writes the whole content of ix, of the data set name, to w and
// checks it against the index's size, digest and CRC-32C.
func (s *Store) getBlocks(ctx context.Context, name string, ix index, w io.Writer, got *atomic.Int64) error {
	ctx, cancel := s.deadline(ctx, ix.Size)
	defer cancel()
	sum, crc := sha256.New(), crc32.New(crc32.MakeTable(crc32.Castagnoli))
	mw := io.MultiWriter(w, sum, crc)
	for k := range ix.Blocks {
		if err := s.getBlock(ctx, name, ix, k, mw, got); err != nil {
			return err
		}
	}
	if d := digest(sum); d != ix.Digest || crc.Sum32() != ix.CRC32C {
		return fmt.Errorf("%w %s%s: its blocks make %s, crc32c %08x, but the index says %s, crc32c %08x", ErrIndex, Scheme, name, d, crc.Sum32(), ix.Digest, ix.CRC32C)
	}
	return nil
}

// lineCounter counts the '\n's written through it to w, and keeps the
// last byte and the first cap(head).
type lineCounter struct {
	w    io.Writer
	n    int
	last byte
	head []byte
}

func (c *lineCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += bytes.Count(p[:n], []byte{'\n'})
	if n > 0 {
		c.last = p[n-1]
	}
	c.head = append(c.head, p[:min(n, cap(c.head)-len(c.head))]...)
	return n, err
}

// copyObject writes the object that oi describes, of the data set name, to
// w, counting the bytes into got. It reads the object chunk by chunk with
// package jsobject, not with ObjectStore.Get, whose reader waits for the
// chunks until its context's deadline and ignores a cancel: a fetch that
// its role gave up (a cancelled context) went on for the Store's timeout
// plus a second per MiB. Each chunk's request ends with ctx, a chunk that
// does not come for the Store's timeout fails the read at once, and one
// that is gone (the object removed or replaced since oi was read) is an
// error matching ErrIndex.
func (s *Store) copyObject(ctx context.Context, name string, oi *jetstream.ObjectInfo, w io.Writer, got *atomic.Int64) error {
	start := got.Load()
	_, err := s.rd.Copy(ctx, oi, &countWriter{w, got})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return fmt.Errorf("%w %s%s: %s lost chunks while read: was the data set replaced or removed meanwhile? (strads data put it again): %w", ErrIndex, Scheme, name, oi.Name, err)
	case ctx.Err() != nil:
		return fmt.Errorf("dataset: read %s%s: %w after %d bytes of %s (%w)", Scheme, name, context.Cause(ctx), got.Load()-start, oi.Name, err)
	case errors.Is(err, jsobject.ErrStalled):
		return fmt.Errorf("dataset: read %s%s: nothing came for %s, after %d bytes of %s: %w", Scheme, name, s.timeout, got.Load()-start, oi.Name, err)
	}
	return fmt.Errorf("dataset: read %s%s: %w", Scheme, name, err)
}

// countWriter is a writer that counts what it writes into n.
type countWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n.Add(int64(k))
	return k, err
}

// ErrNoIndex is the error of OpenPart for a data set stored whole, before
// indexes: it has no parts, and is fetched whole.
var ErrNoIndex = errors.New("a data set stored without an index")

// A Part is a data set that a role fetches in parts, as its readers ask
// for them: an inputfile.Remote of its local copy (DESIGN "Outputs and inputs"). A reader
// of a range of lines gets the blocks that cover it, each fetched once
// into a directory beside the copy's path; one that opens the path gets
// the whole, fetched once. It fetches with the context of OpenPart.
type Part struct {
	s       *Store
	ctx     context.Context
	name    string
	path    string
	ix      index
	first   []int // first[k] is the number of block k's first line (0-based); first[len] = Lines
	fetched atomic.Int64

	mu       sync.Mutex
	have     []bool // the blocks on disk
	whole    bool   // Fetch was called
	wholeErr error
}

// OpenPart reads the index of the data set name, for a local copy at path,
// which it does not fetch: register it with inputfile.Register. A data set
// stored whole has no index: ErrNoIndex.
func (s *Store) OpenPart(ctx context.Context, name, path string) (*Part, error) {
	oi, err := s.stat(ctx, name)
	if err != nil {
		return nil, err
	}
	if oi.Metadata[metaFormat] == "" {
		return nil, fmt.Errorf("%s%s: %w", Scheme, name, ErrNoIndex)
	}
	ix, err := s.readIndex(ctx, name, oi)
	if err != nil {
		return nil, err
	}
	p := &Part{s: s, ctx: ctx, name: name, path: path, ix: ix, first: make([]int, len(ix.Blocks)+1), have: make([]bool, len(ix.Blocks))}
	for k, b := range ix.Blocks {
		p.first[k+1] = p.first[k] + b.Lines
	}
	return p, nil
}

// Summary implements inputfile.Remote.
func (p *Part) Summary() inputfile.Summary {
	return inputfile.Summary{Name: Scheme + p.name, Size: int64(p.ix.Size), Lines: p.ix.Lines, CRC32C: p.ix.CRC32C, Fingerprint: protocol.FingerprintSum(int64(p.ix.Size), p.ix.CRC32C)}
}

// Info returns the Info of the data set.
func (p *Part) Info() Info {
	return Info{Name: p.name, Size: p.ix.Size, Digest: p.ix.Digest}
}

// Fetched returns the number of bytes of content fetched so far.
func (p *Part) Fetched() int64 { return p.fetched.Load() }

// Fetch implements inputfile.Remote: it writes the whole content to the
// path, checked against the index's digest.
func (p *Part) Fetch() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.whole {
		p.whole = true
		p.wholeErr = writeNew(p.path, func(w io.Writer) error {
			return p.s.getBlocks(p.ctx, p.name, p.ix, w, &p.fetched)
		})
	}
	return p.wholeErr
}

// blockPath returns the path of the local copy of block k.
func (p *Part) blockPath(k int) string {
	return filepath.Join(p.path+".blocks", fmt.Sprintf("%06d", k))
}

// Lines implements inputfile.Remote: it fetches the blocks that hold
// lines [first, end) that it does not hold yet.
func (p *Part) Lines(first, end int) (io.ReadCloser, int, error) {
	if first < 0 || end < first {
		return nil, 0, fmt.Errorf("dataset: %s%s: lines [%d, %d)", Scheme, p.name, first, end)
	}
	if first >= p.ix.Lines {
		return io.NopCloser(strings.NewReader("")), p.ix.Lines, nil
	}
	k0 := p.block(first)
	k1 := p.block(min(max(end, first+1), p.ix.Lines) - 1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := os.MkdirAll(p.path+".blocks", 0o700); err != nil {
		return nil, 0, fmt.Errorf("dataset: %w", err)
	}
	for k := k0; k <= k1; k++ {
		if p.have[k] {
			continue
		}
		err := writeNew(p.blockPath(k), func(w io.Writer) error {
			ctx, cancel := p.s.deadline(p.ctx, p.ix.Blocks[k].Size)
			defer cancel()
			return p.s.getBlock(ctx, p.name, p.ix, k, w, &p.fetched)
		})
		if err != nil {
			return nil, 0, err
		}
		p.have[k] = true
	}
	files := &multiFile{}
	for k := k0; k <= k1; k++ {
		f, err := os.Open(p.blockPath(k))
		if err != nil {
			files.Close()
			return nil, 0, fmt.Errorf("dataset: %w", err)
		}
		files.files = append(files.files, f)
	}
	return files, p.first[k0], nil
}

// Blocks implements inputfile.Remote.
func (p *Part) Blocks() []inputfile.Block {
	bs := make([]inputfile.Block, len(p.ix.Blocks))
	for k, b := range p.ix.Blocks {
		bs[k] = inputfile.Block{Line: p.first[k], Head: b.Head}
	}
	return bs
}

// block returns the block that holds line (0-based, < Lines).
func (p *Part) block(line int) int {
	lo, hi := 0, len(p.ix.Blocks)-1
	for lo < hi {
		m := (lo + hi + 1) / 2
		if p.first[m] <= line {
			lo = m
		} else {
			hi = m - 1
		}
	}
	return lo
}

// multiFile reads its files one after another.
type multiFile struct {
	files []*os.File
	next  int // the file being read
}

func (m *multiFile) Read(b []byte) (int, error) {
	for m.next < len(m.files) {
		n, err := m.files[m.next].Read(b)
		switch {
		case n > 0:
			return n, nil
		case err == io.EOF:
			m.next++
		case err != nil:
			return 0, err
		}
	}
	return 0, io.EOF
}

// Close closes every file.
func (m *multiFile) Close() error {
	for _, f := range m.files {
		f.Close()
	}
	return nil
}
