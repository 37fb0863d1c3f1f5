package lda

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/strads-go/strads/inputfile"
)

// fakeRemote is an inputfile.Remote of a file's content in memory, in
// blocks of every lines whose heads are cut to head bytes, that counts
// the bytes its readers are given.
type fakeRemote struct {
	path    string
	data    []byte
	every   int
	head    int
	fetched int
	whole   bool
}

func (r *fakeRemote) starts() []int {
	s := []int{0}
	for i, c := range r.data {
		if c == '\n' && i+1 < len(r.data) {
			s = append(s, i+1)
		}
	}
	return append(s, len(r.data))
}

func (r *fakeRemote) Summary() inputfile.Summary {
	return inputfile.Summary{Name: "nats:x", Size: int64(len(r.data)), Lines: len(r.starts()) - 1, Fingerprint: "fp"}
}

func (r *fakeRemote) Fetch() error {
	r.whole = true
	return os.WriteFile(r.path, r.data, 0o600)
}

func (r *fakeRemote) Blocks() []inputfile.Block {
	s := r.starts()
	var bs []inputfile.Block
	for l := 0; l < len(s)-1; l += r.every {
		line := r.data[s[l]:s[l+1]]
		line = bytes.TrimSuffix(line, []byte("\n"))
		bs = append(bs, inputfile.Block{Line: l, Head: string(line[:min(len(line), r.head)])})
	}
	return bs
}

func (r *fakeRemote) Lines(first, end int) (io.ReadCloser, int, error) {
	s := r.starts()
	n := len(s) - 1
	if first >= n {
		return io.NopCloser(bytes.NewReader(nil)), n, nil
	}
	b0 := first / r.every * r.every
	b1 := min((max(end, first+1)+r.every-1)/r.every*r.every, n)
	r.fetched += s[b1] - s[b0]
	return io.NopCloser(bytes.NewReader(r.data[s[b0]:s[b1]])), b0, nil
}

// TestRemoteShards checks that a worker of a docword file read in parts
// (an inputfile.Remote) loads the same shard as from the local file,
// whatever the blocks and however short their heads, fetching less than
// the whole where the heads tell its documents, and that a bad entry in
// its documents is a *ParseError of its line in the whole file.
func TestRemoteShards(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 60, Vocab: 80, Topics: 3, DocLen: 12, Alpha: 0.5, Beta: 0.1, Seed: 4})
	data, err := os.ReadFile(f.docword)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		every, head int
		less        bool // fetches less than the whole
	}{
		{"blocks of 1", 1, 64, true},
		{"blocks of 17", 17, 64, true},
		{"heads cut in the docID", 17, 1, false},
		{"one block", 1 << 20, 64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "docword.txt")
			r := &fakeRemote{path: path, data: data, every: tc.every, head: tc.head}
			defer inputfile.Register(path, r)()
			for _, shards := range []int{1, 3, 7} {
				for k := range shards {
					cfg := f.config(shards, 1)
					want, err := NewWorker(cfg, k, shards)
					if err != nil {
						t.Fatal(err)
					}
					cfg.Docword = path
					r.fetched = 0
					got, err := NewWorker(cfg, k, shards)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got.sh, want.sh) {
						t.Errorf("shard %d of %d: not the local file's", k, shards)
					}
					if tc.less && shards == 7 && r.fetched >= len(data) {
						t.Errorf("shard %d of %d fetched %d of %d bytes", k, shards, r.fetched, len(data))
					}
				}
			}
			if r.whole {
				t.Error("a worker fetched the whole")
			}
		})
	}
	// A bad count in the last shard's documents: the line in the whole.
	lines := bytes.SplitAfter(data, []byte("\n"))
	n := len(lines) - 3
	lines[n] = append(bytes.TrimSuffix(lines[n], []byte("\n"))[:bytes.LastIndexByte(lines[n], ' ')], " 0\n"...)
	bad := bytes.Join(lines, nil)
	path := filepath.Join(t.TempDir(), "docword.txt")
	defer inputfile.Register(path, &fakeRemote{path: path, data: bad, every: 5, head: 64})()
	cfg := f.config(3, 1)
	cfg.Docword = path
	var pe *ParseError
	if _, err := NewWorker(cfg, 2, 3); !errors.As(err, &pe) || pe.Line != n+1 || pe.File != path {
		t.Errorf("a zero count on line %d: got %v, want a *ParseError of %s:%d", n+1, err, path, n+1)
	}
}
