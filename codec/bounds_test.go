package codec

import (
	"runtime"
	"testing"
)

// allocated returns the bytes that f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeWordsBounded checks that a bin header announcing more bytes
// than the message holds costs no more memory than the message, and fails.
func TestDecodeWordsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		head []byte // a msgpack map {"f": bin32 of the announced size}
		tail int    // bytes that follow
	}{
		{"2 GiB announced, 8 bytes sent", []byte{0x81, 0xa1, 'f', 0xc6, 0x80, 0, 0, 0}, 8},
		{"16 MiB announced, 3 MiB sent", []byte{0x81, 0xa1, 'f', 0xc6, 0x01, 0, 0, 0}, 3 << 20},
	} {
		data := append(tc.head, make([]byte, tc.tail)...)
		var err error
		n := allocated(func() {
			var got numbers
			err = Unmarshal(data, &got)
		})
		if err == nil {
			t.Errorf("%s: decoded", tc.name)
		}
		if limit := uint64(4*tc.tail + 4<<20); n > limit {
			t.Errorf("%s: %d bytes allocated, want at most %d", tc.name, n, limit)
		}
	}
}

// TestArraysBounded checks that an array or a map announcing more
// elements than the message holds fails before msgpack allocates them, and
// that messages whose lengths fit decode.
func TestArraysBounded(t *testing.T) {
	type deep struct {
		X []struct{ A, B, C []float64 } `msgpack:"x"`
		M map[string]int                `msgpack:"m"`
	}
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"2^31 structs announced", []byte{0x81, 0xa1, 'x', 0xdd, 0x7f, 0xff, 0xff, 0xff, 0xc0}, false},
		{"2^20 structs announced", []byte{0x81, 0xa1, 'x', 0xdd, 0x00, 0x10, 0, 0, 0xc0}, false},
		{"a map of 2^31 entries", []byte{0x81, 0xa1, 'm', 0xdf, 0x7f, 0xff, 0xff, 0xff, 0xa1, 'a', 1}, false},
		{"a string of 2^31 bytes", []byte{0x81, 0xdb, 0x7f, 0xff, 0xff, 0xff, 'x'}, false},
		{"an ext past the end", []byte{0x81, 0xa1, 'x', 0xc7, 0x05, 0x01, 1}, false},
		{"the unused code", []byte{0x81, 0xa1, 'x', 0xc1}, false},
		{"two nils", []byte{0x81, 0xa1, 'x', 0x92, 0xc0, 0xc0}, true},
		{"a map", []byte{0x81, 0xa1, 'm', 0x81, 0xa1, 'a', 0xcd, 0x01, 0x00}, true},
	} {
		var got deep
		var err error
		if n := allocated(func() { err = Unmarshal(tc.data, &got) }); n > 1<<20 {
			t.Errorf("%s: %d bytes allocated", tc.name, n)
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
