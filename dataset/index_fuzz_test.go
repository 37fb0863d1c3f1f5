package dataset

import (
	"encoding/json"
	"errors"
	"math/bits"
	"strconv"
	"testing"
)

// FuzzParseIndex feeds parseIndex arbitrary index objects: it must never
// panic, and an index it accepts must list blocks of the data set that add
// up to its size and lines; anything else is an error matching ErrIndex.
func FuzzParseIndex(f *testing.F) {
	good := index{
		Size: 30, Digest: "SHA-256=abc", CRC32C: 7, Fingerprint: "fp", Lines: 3,
		Blocks: []block{
			{Object: "d/p/000000", Size: 20, Lines: 2, Digest: "SHA-256=x", Head: "1 1:2"},
			{Object: "d/p/000001", Size: 10, Lines: 1, Digest: "SHA-256=y", Head: "0 3:1"},
		},
	}
	b, err := json.Marshal(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, "30", "SHA-256=abc")
	f.Add([]byte(`{"size":0,"digest":"SHA-256=e","fingerprint":"f","lines":0,"blocks":[]}`), "0", "SHA-256=e")
	f.Add([]byte(`{"size":0,"digest":"SHA-256=e","fingerprint":"f","lines":2,"blocks":[{"object":"d/a","size":18446744073709551615,"lines":1,"digest":"SHA-256=z"},{"object":"d/b","size":1,"lines":1,"digest":"SHA-256=z"}]}`), "0", "SHA-256=e")
	f.Add([]byte(`{"size":1,"lines":-1}`), "1", "")
	f.Add([]byte(`{} {}`), "", "")
	f.Fuzz(func(t *testing.T, b []byte, size, digest string) {
		ix, err := parseIndex("d", b, map[string]string{metaSize: size, metaDigest: digest})
		if err != nil {
			if !errors.Is(err, ErrIndex) {
				t.Fatalf("error %v does not match ErrIndex", err)
			}
			return
		}
		var sum uint64
		lines := 0
		for _, bl := range ix.Blocks {
			if bl.Size == 0 || bl.Lines < 1 || len(bl.Object) < 3 || bl.Object[:2] != "d/" {
				t.Fatalf("accepted a bad block %+v", bl)
			}
			var carry uint64
			sum, carry = bits.Add64(sum, bl.Size, 0)
			if carry != 0 {
				t.Fatalf("accepted blocks whose sizes overflow: %+v", ix.Blocks)
			}
			lines += bl.Lines
		}
		if sum != ix.Size || lines != ix.Lines || strconv.FormatUint(ix.Size, 10) != size {
			t.Fatalf("accepted blocks of %d bytes and %d lines for an index of %d bytes and %d lines", sum, lines, ix.Size, ix.Lines)
		}
	})
}
