package lda

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/internal/testhelper"
)

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
			r := &testhelper.Remote{Path: path, Data: data, Every: tc.every, Head: tc.head}
			defer inputfile.Register(path, r)()
			for _, shards := range []int{1, 3, 7} {
				for k := range shards {
					cfg := f.config(shards, 1)
					want, err := NewWorker(cfg, k, shards)
					if err != nil {
						t.Fatal(err)
					}
					cfg.Docword = path
					r.Fetched = 0
					got, err := NewWorker(cfg, k, shards)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got.sh, want.sh) {
						t.Errorf("shard %d of %d: not the local file's", k, shards)
					}
					if tc.less && shards == 7 && r.Fetched >= len(data) {
						t.Errorf("shard %d of %d fetched %d of %d bytes", k, shards, r.Fetched, len(data))
					}
				}
			}
			if r.Whole {
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
	defer inputfile.Register(path, &testhelper.Remote{Path: path, Data: bad, Every: 5, Head: 64})()
	cfg := f.config(3, 1)
	cfg.Docword = path
	var pe *ParseError
	if _, err := NewWorker(cfg, 2, 3); !errors.As(err, &pe) || pe.Line != n+1 || pe.File != path {
		t.Errorf("a zero count on line %d: got %v, want a *ParseError of %s:%d", n+1, err, path, n+1)
	}
}
