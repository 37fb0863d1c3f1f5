package wire

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
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

// TestAssemblerBounds checks that a chunk's announced size is bounded by
// what its chunks can carry, and that a partial message costs what arrived,
// not what it announced.
func TestAssemblerBounds(t *testing.T) {
	limits := defaultChunkLimits
	limits.maxPayload = 8 << 20
	chunk := func(id, index, size string, n int) *nats.Msg {
		h := nats.Header{HeaderChunkID: {id}, HeaderChunk: {index}}
		if size != "" {
			h[HeaderChunkSize] = []string{size}
		}
		return &nats.Msg{Subject: "s", Header: h, Data: make([]byte, n)}
	}
	for _, tc := range []struct {
		name string
		msg  *nats.Msg
		want string // the error; "" if the message is held
	}{
		{"1 GiB in 1 chunk", chunk("a", "0/1", "1073741824", 1), "cannot come in 1 chunks"},
		{"1 GiB in 127 chunks", chunk("a", "0/127", "1073741824", 1), "cannot come in 127 chunks"},
		{"over the largest", chunk("a", "0/1000", "1073741825", 1), "exceed the largest message"},
		{"more chunks than bytes", chunk("a", "0/20", "10", 1), "cannot come in 20 chunks"},
		{"empty", chunk("a", "0/2", "10", 0), "has 0 bytes"},
		{"zero size", chunk("a", "0/2", "0", 1), "bad Strads-Chunk-Size"},
		{"1 GiB in 128 chunks", chunk("a", "0/128", "1073741824", 1), ""},
	} {
		a := newAssembler(limits, pendingEmpty)
		n := allocated(func() { a.add(tc.msg) })
		err := a.takeErr()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want ErrIncomplete saying %q", tc.name, err, tc.want)
		}
		if n > 64<<10 {
			t.Errorf("%s: %d bytes allocated for a chunk of %d", tc.name, n, len(tc.msg.Data))
		}
		if a.bytes != int64(len(tc.msg.Data)) && tc.want == "" || a.bytes != 0 && tc.want != "" {
			t.Errorf("%s: %d bytes held", tc.name, a.bytes)
		}
	}

	// What the partial messages hold in all is bounded by what arrived.
	limits.maxMessage = 1000
	a := newAssembler(limits, pendingEmpty)
	a.add(chunk("a", "0/2", "1000", 600))
	a.add(chunk("b", "0/2", "1000", 300))
	if err := a.takeErr(); err != nil || a.bytes != 900 {
		t.Fatalf("two partial messages: %v, %d bytes held", err, a.bytes)
	}
	a.add(chunk("b", "1/2", "", 200))
	if err := a.takeErr(); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "does not fit") || a.bytes != 600 {
		t.Errorf("over the limit: %v, %d bytes held", err, a.bytes)
	}
	if whole := a.add(chunk("a", "1/2", "", 400)); whole == nil || len(whole.Data) != 1000 || a.bytes != 0 {
		t.Errorf("the first message: %v, %d bytes held, %v", whole, a.bytes, a.takeErr())
	}
}
