package testhelper

import (
	"bytes"
	"hash/crc32"
	"io"
	"os"

	"github.com/strads-go/strads/inputfile"
)

// Remote is an inputfile.Remote of a file's content in memory, as a data
// set stored in parts is (package dataset): its blocks are of Every lines,
// and it counts the bytes its readers are given. Register it at Path
// (inputfile.Register) for the readers of Path to read it.
type Remote struct {
	Path  string // where Fetch writes the whole
	Data  []byte
	Every int // lines a block
	// Head is the length to which Blocks cuts the blocks' first lines; 0:
	// Blocks describes none.
	Head int
	// Fetched counts the bytes that Lines gave, and Whole tells whether
	// Fetch was called.
	Fetched int
	Whole   bool
}

// starts returns the offsets of the lines of r.Data, and its length.
func (r *Remote) starts() []int {
	s := []int{0}
	for i, c := range r.Data {
		if c == '\n' && i+1 < len(r.Data) {
			s = append(s, i+1)
		}
	}
	return append(s, len(r.Data))
}

// Summary implements inputfile.Remote.
func (r *Remote) Summary() inputfile.Summary {
	return inputfile.Summary{Name: "nats:x", Size: int64(len(r.Data)), Lines: len(r.starts()) - 1,
		CRC32C: crc32.Checksum(r.Data, crc32.MakeTable(crc32.Castagnoli)), Fingerprint: "fp"}
}

// Fetch implements inputfile.Remote.
func (r *Remote) Fetch() error {
	r.Whole = true
	return os.WriteFile(r.Path, r.Data, 0o600)
}

// Blocks implements inputfile.Remote.
func (r *Remote) Blocks() []inputfile.Block {
	if r.Head == 0 {
		return nil
	}
	s := r.starts()
	var bs []inputfile.Block
	for l := 0; l < len(s)-1; l += r.Every {
		line := bytes.TrimSuffix(r.Data[s[l]:s[l+1]], []byte("\n"))
		bs = append(bs, inputfile.Block{Line: l, Head: string(line[:min(len(line), r.Head)])})
	}
	return bs
}

// Lines implements inputfile.Remote: it gives the whole blocks that hold
// the lines.
func (r *Remote) Lines(first, end int) (io.ReadCloser, int, error) {
	s := r.starts()
	n := len(s) - 1
	if first >= n {
		return io.NopCloser(bytes.NewReader(nil)), n, nil
	}
	b0 := first / r.Every * r.Every
	b1 := min((max(end, first+1)+r.Every-1)/r.Every*r.Every, n)
	r.Fetched += s[b1] - s[b0]
	return io.NopCloser(bytes.NewReader(r.Data[s[b0]:s[b1]])), b0, nil
}
