package wire

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/natsserver"
)

// smallPayload is the max_payload of the test servers: a 1 MB message
// travels in about 270 chunks.
const smallPayload = 4 << 10

// startSmall starts an embedded server with a max_payload of smallPayload,
// listening on a random TCP port as well.
func startSmall(t testing.TB) *natsserver.Server {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Options{MaxPayload: smallPayload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// connect opens a connection to srv, in-process or over TCP, scoped to the
// job "j".
func connect(t testing.TB, srv *natsserver.Server, tcp bool) *Conn {
	t.Helper()
	var nc *nats.Conn
	var err error
	if tcp {
		nc, err = Connect(srv.ClientURL(), "test", 5*time.Second)
	} else {
		nc, err = srv.ConnectInProcess("test")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := NewConn(nc, "j")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bigNumbers is about 1 MB once encoded; x tells messages apart.
func bigNumbers(x int) numbers {
	v := numbers{F: make(codec.Float64s, 1e6/8), I: make(codec.Int32s, 1000), X: x}
	for i := range v.F {
		v.F[i] = float64(i*x) + 0.5
	}
	for i := range v.I {
		v.I[i] = int32(i - x)
	}
	return v
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// chunksOf returns the chunks in which c would send v on the job subject
// name.
func chunksOf(t *testing.T, c *Conn, name, reply string, v any) []*nats.Msg {
	t.Helper()
	data, err := codec.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if reply != "" {
		reply = c.Subject(reply)
	}
	return chunkMsgs(c.Subject(name), reply, data, int(c.nc.MaxPayload())-chunkHeaderRoom)
}

func publishMsgs(t *testing.T, c *Conn, msgs ...*nats.Msg) {
	t.Helper()
	for _, msg := range msgs {
		if err := c.nc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChunkedPublishInbox(t *testing.T) {
	srv := startSmall(t)
	c := connect(t, srv, false)
	ctx := testCtx(t)
	in, err := Subscribe[numbers](c, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	raw, err := c.nc.SubscribeSync(c.Subject("big"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Unsubscribe()

	want := bigNumbers(3)
	data, _ := codec.Marshal(want)
	if err := Publish(c, "big", want); err != nil {
		t.Fatal(err)
	}
	got, msg, err := in.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("the 1 MB message did not round-trip intact")
	}
	if msg.Subject != c.Subject("big") || msg.Reply != "" || msg.Header != nil || len(msg.Data) != len(data) {
		t.Errorf("whole message: subject %q reply %q header %v, %d bytes; want %q, no reply, no header, %d bytes",
			msg.Subject, msg.Reply, msg.Header, len(msg.Data), c.Subject("big"), len(data))
	}
	// On the wire: chunks that fit, in order, with their headers.
	n := (len(data) + smallPayload - chunkHeaderRoom - 1) / (smallPayload - chunkHeaderRoom)
	for i := range n {
		m, err := raw.NextMsgWithContext(ctx)
		if err != nil {
			t.Fatalf("chunk %d of %d: %v", i, n, err)
		}
		if got, want := m.Header.Get(HeaderChunk), fmt.Sprintf("%d/%d", i, n); got != want {
			t.Fatalf("chunk %d: %s %q, want %q", i, HeaderChunk, got, want)
		}
	}

	// A small message is one NATS message without headers.
	if err := Publish(c, "big", numbers{X: 7}); err != nil {
		t.Fatal(err)
	}
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	m, err := raw.NextMsgWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header != nil {
		t.Errorf("small message has headers %v", m.Header)
	}
	if n, _, _ := raw.Pending(); n != 0 {
		t.Errorf("small message: %d more NATS messages", n)
	}
	if got, msg, err := in.Next(ctx); err != nil || got.X != 7 || msg.Header != nil {
		t.Errorf("small message: %+v, %v", got, err)
	}
}

func TestChunkedPublishRequestMailbox(t *testing.T) {
	srv := startSmall(t)
	c := connect(t, srv, false)
	ctx := testCtx(t)
	box, err := NewMailbox(c, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	back, err := Subscribe[numbers](c, "back")
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()

	want := bigNumbers(5)
	if err := PublishRequest(c, "b", "back", want); err != nil {
		t.Fatal(err)
	}
	if err := PublishRequest(c, "a", "back", numbers{X: 1}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		msg, err := box.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got numbers
		if err := codec.Unmarshal(msg.Data, &got); err != nil {
			t.Fatal(err)
		}
		if msg.Reply != c.Subject("back") || msg.Header != nil {
			t.Errorf("message on %s: reply %q, header %v; want reply %q, no header", msg.Subject, msg.Reply, msg.Header, c.Subject("back"))
		}
		switch msg.Subject {
		case c.Subject("a"):
			if got.X != 1 {
				t.Errorf("small message: %+v", got)
			}
		case c.Subject("b"):
			if !reflect.DeepEqual(got, want) {
				t.Error("the 1 MB message did not round-trip intact")
			}
			// The reply goes back in chunks too.
			want.X = 6
			if err := Reply(c, msg, want); err != nil {
				t.Fatal(err)
			}
			if rep, _, err := back.Next(ctx); err != nil || !reflect.DeepEqual(rep, want) {
				t.Errorf("1 MB reply: X=%d, %v", rep.X, err)
			}
		default:
			t.Errorf("message on %s", msg.Subject)
		}
	}
}

func TestChunkedRequestReply(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		t.Run(map[bool]string{false: "inprocess", true: "tcp"}[tcp], func(t *testing.T) {
			srv := startSmall(t)
			c := connect(t, srv, tcp)
			ctx := testCtx(t)
			in, err := Subscribe[numbers](c, "echo")
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			// The responder answers X with a 1 MB message when X is odd, a
			// small one otherwise.
			go func() {
				for {
					req, msg, err := in.Next(ctx)
					if err != nil {
						return
					}
					rep := numbers{X: req.X + 100}
					if req.X%2 == 1 {
						rep = bigNumbers(req.X + 100)
					}
					if err := Reply(c, msg, rep); err != nil {
						t.Error(err)
					}
				}
			}()
			for _, tc := range []struct {
				name     string
				req      numbers
				bigReply bool
			}{
				{"small-small", numbers{X: 2}, false},
				{"small-big", numbers{X: 1}, true},
				{"big-small", bigNumbers(4), false},
				{"big-big", bigNumbers(3), true},
			} {
				rep, err := Request[numbers, numbers](ctx, c, "echo", tc.req)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				want := numbers{X: tc.req.X + 100}
				if tc.bigReply {
					want = bigNumbers(tc.req.X + 100)
				}
				if !reflect.DeepEqual(rep, want) {
					t.Errorf("%s: reply X=%d with %d values, want X=%d with %d", tc.name, rep.X, len(rep.F), want.X, len(want.F))
				}
			}

			// Nobody listens: ErrNoResponders at once, small or chunked.
			for _, req := range []numbers{{}, bigNumbers(1)} {
				_, err := Request[numbers, numbers](ctx, c, "nobody", req)
				if !errors.Is(err, ErrNoResponders) {
					t.Errorf("request of %d values without responders: %v, want ErrNoResponders", len(req.F), err)
				}
			}
		})
	}
}

func TestChunkedInterleaved(t *testing.T) {
	srv := startSmall(t)
	c := connect(t, srv, false)
	ctx := testCtx(t)
	in, err := Subscribe[numbers](c, "mix")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()

	// Chunks of two messages alternate, with a small message between.
	a := chunksOf(t, c, "mix", "ra", bigNumbers(1))
	b := chunksOf(t, c, "mix", "rb", bigNumbers(2))
	for i := range max(len(a), len(b)) {
		if i < len(a) {
			publishMsgs(t, c, a[i])
		}
		if i < len(b) {
			publishMsgs(t, c, b[i])
		}
		if i == 3 {
			if err := Publish(c, "mix", numbers{X: 9}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, want := range []numbers{{X: 9}, bigNumbers(1), bigNumbers(2)} {
		got, msg, err := in.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got X=%d with %d values, want X=%d with %d", got.X, len(got.F), want.X, len(want.F))
		}
		if wantReply := map[int]string{1: c.Subject("ra"), 2: c.Subject("rb")}[want.X]; msg.Reply != wantReply {
			t.Errorf("X=%d: reply %q, want %q", want.X, msg.Reply, wantReply)
		}
	}

	// Two publishers, three messages each, at the same time.
	var wg sync.WaitGroup
	for p := range 2 {
		pc := connect(t, srv, false)
		wg.Go(func() {
			for k := range 3 {
				if err := Publish(pc, "mix", bigNumbers(10*p+k+1)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	seen := map[int]bool{}
	for range 6 {
		got, _, err := in.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, bigNumbers(got.X)) || seen[got.X] {
			t.Errorf("message X=%d damaged or repeated", got.X)
		}
		seen[got.X] = true
	}
	wg.Wait()
	if len(in.asm.parts) != 0 || in.asm.bytes != 0 {
		t.Errorf("%d partial messages of %d bytes left", len(in.asm.parts), in.asm.bytes)
	}
}

func TestChunkedIncompleteInbox(t *testing.T) {
	srv := startSmall(t)
	c := connect(t, srv, false)
	c.limits.stale = 250 * time.Millisecond
	c.limits.maxPartial = 2
	ctx := testCtx(t)
	in, err := Subscribe[numbers](c, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	next := func() (numbers, error) {
		t.Helper()
		v, _, err := in.Next(ctx)
		return v, err
	}

	// A message whose last chunks never come blocks nothing after it.
	lost := chunksOf(t, c, "x", "", bigNumbers(1))
	publishMsgs(t, c, lost[:3]...)
	if err := Publish(c, "x", numbers{X: 2}); err != nil {
		t.Fatal(err)
	}
	if err := Publish(c, "x", bigNumbers(3)); err != nil {
		t.Fatal(err)
	}
	for _, x := range []int{2, 3} {
		if v, err := next(); err != nil || v.X != x {
			t.Fatalf("got X=%d, %v; want X=%d", v.X, err, x)
		}
	}
	// A wait that ends says what is held.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, _, err = in.Next(short)
	cancel()
	id := lost[0].Header.Get(HeaderChunkID)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), id) {
		t.Errorf("wait with a partial message held: %v", err)
	}
	// Once overdue it is dropped, and said so.
	time.Sleep(300 * time.Millisecond)
	if _, err := next(); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "no chunk for") {
		t.Errorf("overdue message: %v, want ErrIncomplete", err)
	}
	if len(in.asm.parts) != 0 || in.asm.bytes != 0 {
		t.Errorf("%d partial messages of %d bytes left", len(in.asm.parts), in.asm.bytes)
	}
	// Its late chunks are ignored.
	publishMsgs(t, c, lost[3:]...)
	if err := Publish(c, "x", numbers{X: 4}); err != nil {
		t.Fatal(err)
	}
	if v, err := next(); err != nil || v.X != 4 {
		t.Fatalf("after late chunks: X=%d, %v", v.X, err)
	}

	// A chunk that skips one drops its message at once.
	gap := chunksOf(t, c, "x", "", bigNumbers(5))
	publishMsgs(t, c, gap[0], gap[1], gap[3])
	if err := Publish(c, "x", numbers{X: 6}); err != nil {
		t.Fatal(err)
	}
	if _, err := next(); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "came after chunk 1/") {
		t.Errorf("chunk missing: %v, want ErrIncomplete", err)
	}
	if v, err := next(); err != nil || v.X != 6 {
		t.Fatalf("after a gap: X=%d, %v", v.X, err)
	}

	// At most maxPartial messages are held at once; more are refused.
	var starts []*nats.Msg
	for x := range 3 {
		starts = append(starts, chunksOf(t, c, "x", "", bigNumbers(x+10))[0])
	}
	publishMsgs(t, c, starts...)
	if err := Publish(c, "x", numbers{X: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := next(); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "do not fit") {
		t.Errorf("third partial message: %v, want ErrIncomplete", err)
	}
	if v, err := next(); err != nil || v.X != 7 {
		t.Fatalf("after a refused message: X=%d, %v", v.X, err)
	}
	if len(in.asm.parts) != 2 {
		t.Errorf("%d partial messages held, want 2", len(in.asm.parts))
	}
}

func TestChunkedIncompleteMailbox(t *testing.T) {
	srv := startSmall(t)
	c := connect(t, srv, false)
	c.limits.stale = 100 * time.Millisecond
	ctx := testCtx(t)
	box, err := NewMailbox(c, "x", "y")
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	next := func() (numbers, error) {
		t.Helper()
		msg, err := box.Next(ctx)
		if err != nil {
			return numbers{}, err
		}
		var v numbers
		return v, codec.Unmarshal(msg.Data, &v)
	}

	lost := chunksOf(t, c, "x", "", bigNumbers(1))
	publishMsgs(t, c, lost[:2]...)
	if err := Publish(c, "y", bigNumbers(2)); err != nil {
		t.Fatal(err)
	}
	if v, err := next(); err != nil || v.X != 2 {
		t.Fatalf("got X=%d, %v; want X=2", v.X, err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err = box.Next(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), lost[0].Header.Get(HeaderChunkID)) {
		t.Errorf("wait with a partial message held: %v", err)
	}
	// Overdue: dropped when the next message comes on its subject.
	time.Sleep(150 * time.Millisecond)
	if err := Publish(c, "x", numbers{X: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := next(); !errors.Is(err, ErrIncomplete) {
		t.Errorf("overdue message: %v, want ErrIncomplete", err)
	}
	if v, err := next(); err != nil || v.X != 3 {
		t.Fatalf("after a dropped message: X=%d, %v", v.X, err)
	}
}

func TestChunkedLimits(t *testing.T) {
	srv := startSmall(t)
	c := connect(t, srv, false)
	ctx := testCtx(t)
	in, err := Subscribe[numbers](c, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()

	// A sender refuses a message larger than it may send.
	small := connect(t, srv, false)
	small.limits.maxMessage = 100 << 10
	if err := Publish(small, "x", bigNumbers(1)); err == nil || !strings.Contains(err.Error(), "largest message") {
		t.Errorf("publish over the largest message: %v", err)
	}
	// A receiver refuses a message larger than it may hold.
	in.asm.limits.maxMessage = 100 << 10
	if err := Publish(c, "x", bigNumbers(2)); err != nil {
		t.Fatal(err)
	}
	if err := Publish(c, "x", numbers{X: 3}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := in.Next(ctx); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "exceed the largest message") {
		t.Errorf("receive over the largest message: %v", err)
	}
	if v, _, err := in.Next(ctx); err != nil || v.X != 3 {
		t.Errorf("after a refused message: X=%d, %v", v.X, err)
	}
}

func TestParseChunk(t *testing.T) {
	for s, ok := range map[string]bool{"0/1": true, "4/5": true, "5/5": false, "-1/5": false, "1/0": false, "1": false, "a/b": false, "": false} {
		if _, _, err := parseChunk(s); (err == nil) != ok {
			t.Errorf("parseChunk(%q): %v", s, err)
		}
	}
}

func TestAssemblerRejects(t *testing.T) {
	chunk := func(id, index, size, reply string, n int) *nats.Msg {
		h := nats.Header{HeaderChunkID: {id}, HeaderChunk: {index}}
		if size != "" {
			h[HeaderChunkSize] = []string{size}
		}
		return &nats.Msg{Subject: "s", Reply: reply, Header: h, Data: make([]byte, n)}
	}
	for _, tc := range []struct {
		name string
		msgs []*nats.Msg
		want string
	}{
		{"bad index", []*nats.Msg{chunk("a", "x", "10", "", 5)}, "bad Strads-Chunk"},
		{"bad size", []*nats.Msg{chunk("a", "0/2", "-3", "", 5)}, "bad Strads-Chunk-Size"},
		{"first twice", []*nats.Msg{chunk("a", "0/2", "10", "", 5), chunk("a", "0/2", "10", "", 5)}, "first chunk came twice"},
		{"count changes", []*nats.Msg{chunk("a", "0/2", "10", "", 5), chunk("a", "1/3", "", "", 5)}, "chunk 1/3 came after chunk 0/2"},
		{"reply changes", []*nats.Msg{chunk("a", "0/2", "10", "r", 5), chunk("a", "1/2", "", "q", 5)}, `reply "q"`},
		{"overflow", []*nats.Msg{chunk("a", "0/2", "10", "", 8), chunk("a", "1/2", "", "", 8)}, "overflows the 10 bytes"},
		{"short", []*nats.Msg{chunk("a", "0/2", "10", "", 4), chunk("a", "1/2", "", "", 4)}, "8 of the 10 bytes"},
	} {
		a := newAssembler(defaultChunkLimits, pendingEmpty)
		for _, msg := range tc.msgs {
			if whole := a.add(msg); whole != nil {
				t.Errorf("%s: a whole message of %d bytes", tc.name, len(whole.Data))
			}
		}
		err := a.takeErr()
		if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrIncomplete saying %q", tc.name, err, tc.want)
		}
		if err := a.takeErr(); err != nil {
			t.Errorf("%s: another error: %v", tc.name, err)
		}
		if len(a.parts) != 0 || a.bytes != 0 {
			t.Errorf("%s: %d partial messages of %d bytes left", tc.name, len(a.parts), a.bytes)
		}
	}
	// A chunk without its first one is ignored.
	a := newAssembler(defaultChunkLimits, pendingEmpty)
	if whole := a.add(chunk("b", "1/2", "", "", 5)); whole != nil || a.takeErr() != nil || a.orphaned != 1 {
		t.Errorf("orphaned chunk: %v, %d orphaned", whole, a.orphaned)
	}
}

func TestChunkedRequestIncompleteReply(t *testing.T) {
	srv := startSmall(t)
	c := connect(t, srv, false)
	ctx := testCtx(t)
	// The responder sends the first chunks of its reply, then skips one
	// when asked for X=1.
	sub, err := c.nc.Subscribe(c.Subject("half"), func(msg *nats.Msg) {
		var req numbers
		if err := codec.Unmarshal(msg.Data, &req); err != nil {
			t.Error(err)
			return
		}
		data, _ := codec.Marshal(bigNumbers(1))
		chunks := chunkMsgs(msg.Reply, "", data, smallPayload-chunkHeaderRoom)
		send := chunks[:2]
		if req.X == 1 {
			send = append(send, chunks[3])
		}
		for _, m := range send {
			if err := c.nc.PublishMsg(m); err != nil {
				t.Error(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	// Long enough for the first chunks to come in on a loaded machine
	// (100 ms failed under the race detector at load 8).
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = Request[numbers, numbers](short, c, "half", numbers{})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "2 of ") {
		t.Errorf("half a reply: %v, want a deadline error that names the partial reply", err)
	}
	_, err = Request[numbers, numbers](ctx, c, "half", numbers{X: 1})
	if !errors.Is(err, ErrIncomplete) {
		t.Errorf("a reply with a chunk missing: %v, want ErrIncomplete", err)
	}
}
