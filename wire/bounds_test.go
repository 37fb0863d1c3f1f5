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
