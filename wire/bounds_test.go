package wire

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestHeldBound floods a Mailbox on three subjects with whole messages and
// with first chunks of large messages that never complete, while nothing
// takes them (issue 28: a flood on three subjects took a coordinator to
// 3.4 GB): what the Conn's receivers hold never passes its bound, the
// messages over it come out of Next as errors that say so, the messages
// within it whole and in order, and closing the mailbox gives every byte
// back.
func TestHeldBound(t *testing.T) {
	srv := startSmall(t)
	c := connect(t, srv, false)
	const bound = 256 << 10
	c.held.max = bound
	m, err := NewMailbox(c, "a", "b", "c")
	if err != nil {
		t.Fatal(err)
	}
	flood := connect(t, srv, false)
	peak := make(chan int64, 1)
	stop := make(chan struct{})
	go func() {
		var p int64
		for {
			p = max(p, c.held.n.Load())
			select {
			case <-stop:
				peak <- p
				return
			default:
			}
		}
	}()
	const whole, size = 100, 2 << 10 // whole messages of 2 KiB a subject
	for i := range whole {
		for _, name := range []string{"a", "b", "c"} {
			if err := flood.nc.Publish(flood.Subject(name), fmt.Appendf(make([]byte, 0, size), "%s %04d %s", name, i, strings.Repeat("x", size-7))); err != nil {
				t.Fatal(err)
			}
			// The first chunk of a 1 MiB message that never ends.
			first := chunkMsgs(flood.Subject(name), "", make([]byte, 1<<20), smallPayload-chunkHeaderRoom)[0]
			first.Header.Set(HeaderChunkID, fmt.Sprintf("%s-%d", name, i))
			if err := flood.nc.PublishMsg(first); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := flood.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Every message handled: nats.go's queues are empty.
	deadline := time.Now().Add(10 * time.Second)
	for _, sub := range m.subs {
		for n, _, _ := sub.Pending(); n > 0 && time.Now().Before(deadline); n, _, _ = sub.Pending() {
			time.Sleep(time.Millisecond)
		}
	}
	got, dropped := map[string][]string{}, 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		msg, err := m.Next(ctx)
		cancel()
		switch {
		case errors.Is(err, ErrIncomplete):
			dropped++
			continue
		case err != nil:
		case msg != nil:
			name := strings.TrimPrefix(msg.Subject, c.Subject(""))
			got[name] = append(got[name], string(msg.Data[:6]))
			continue
		}
		break
	}
	close(stop)
	if p := <-peak; p > bound {
		t.Errorf("the receivers held %d bytes at the peak, over the bound of %d", p, bound)
	}
	if dropped == 0 {
		t.Error("nothing dropped")
	}
	for name, msgs := range got {
		if !slices.IsSorted(msgs) {
			t.Errorf("%s: out of order: %v", name, msgs)
		}
	}
	t.Logf("%d whole messages taken, %d errors", len(got["a"])+len(got["b"])+len(got["c"]), dropped)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := c.held.n.Load(); n != 0 {
		t.Errorf("%d bytes held after the mailbox closed", n)
	}
}
