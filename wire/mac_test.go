package wire

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/codec"
)

func TestParseKey(t *testing.T) {
	raw := bytes.Repeat([]byte{0xfe, 0x01}, KeySize/2)
	cases := []struct {
		name string
		text []byte
		want []byte // nil: an error
	}{
		{"hex", []byte(hex.EncodeToString(raw) + "\n"), raw},
		{"base64", []byte(base64.StdEncoding.EncodeToString(raw)), raw},
		{"base64 raw url", []byte(" " + base64.RawURLEncoding.EncodeToString(raw) + "\n"), raw},
		{"raw bytes", raw, raw},
		{"short hex", []byte(hex.EncodeToString(raw[:31])), nil},
		{"short base64", []byte(base64.StdEncoding.EncodeToString(raw[:16])), nil},
		{"short raw", []byte("not a key\x00\x01"), nil},
		{"empty", nil, nil},
		{"white space", []byte(" \n"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseKey(tc.text)
			switch {
			case tc.want == nil && err == nil:
				t.Fatalf("ParseKey(%q) took a key of %d bytes, want an error", tc.text, len(k.b))
			case tc.want != nil && err != nil:
				t.Fatalf("ParseKey: %v", err)
			case tc.want != nil && !bytes.Equal(k.b, tc.want):
				t.Fatalf("ParseKey gave %x, want %x", k.b, tc.want)
			case tc.want == nil && !strings.Contains(err.Error(), "want at least 32"):
				t.Fatalf("error %q does not say the least size", err)
			}
		})
	}
}

func TestKeyHidesItself(t *testing.T) {
	k := NewKey()
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k)} {
		if strings.Contains(s, k.Hex()) || strings.Contains(s, string(k.b)) {
			t.Errorf("%q shows the key", s)
		}
	}
	if len(k.b) != KeySize || bytes.Equal(k.b, NewKey().b) {
		t.Error("NewKey does not make fresh keys of KeySize bytes")
	}
}

func TestVerify(t *testing.T) {
	k, other := NewKey(), NewKey()
	sealed := func(mod func(*nats.Msg)) *nats.Msg {
		m := &nats.Msg{Subject: "strads.j.partial", Reply: "strads.j.ack", Data: []byte("payload"),
			Header: nats.Header{HeaderChunkID: {"id"}, HeaderChunk: {"0/2"}, HeaderChunkSize: {"12"}}}
		k.seal(m)
		if mod != nil {
			mod(m)
		}
		return m
	}
	cases := []struct {
		name string
		msg  *nats.Msg
		want error
	}{
		{"good", sealed(nil), nil},
		{"no header", &nats.Msg{Subject: "s", Data: []byte("x")}, ErrUnauthenticated},
		{"no MAC", sealed(func(m *nats.Msg) { delete(m.Header, HeaderMAC) }), ErrUnauthenticated},
		{"truncated MAC", sealed(func(m *nats.Msg) { m.Header[HeaderMAC][0] = m.Header[HeaderMAC][0][:20] }), ErrForged},
		{"not base64", sealed(func(m *nats.Msg) { m.Header[HeaderMAC][0] = strings.Repeat("!", 43) }), ErrForged},
		{"another key", sealed(func(m *nats.Msg) { other.seal(m) }), ErrForged},
		{"payload", sealed(func(m *nats.Msg) { m.Data = []byte("paylaod") }), ErrForged},
		{"subject", sealed(func(m *nats.Msg) { m.Subject = "strads.j.stored" }), ErrForged},
		{"reply", sealed(func(m *nats.Msg) { m.Reply = "strads.j.other" }), ErrForged},
		{"no reply", sealed(func(m *nats.Msg) { m.Reply = "" }), ErrForged},
		{"chunk index", sealed(func(m *nats.Msg) { m.Header[HeaderChunk] = []string{"1/2"} }), ErrForged},
		{"chunk id", sealed(func(m *nats.Msg) { m.Header[HeaderChunkID] = []string{"id2"} }), ErrForged},
		{"chunk size", sealed(func(m *nats.Msg) { m.Header[HeaderChunkSize] = []string{"13"} }), ErrForged},
		// Fields run together differently: length prefixes tell them apart.
		{"shifted", sealed(func(m *nats.Msg) { m.Subject, m.Reply = "strads.j.partialstrads.j.ack", "" }), ErrForged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := k.verify(tc.msg)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("verify: %v, want %v", err, tc.want)
			}
		})
	}
}

// drops collects what a Conn's OnDrop reports.
type drops struct {
	mu   sync.Mutex
	errs []error
}

func (d *drops) add(m *nats.Msg, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.errs = append(d.errs, err)
}

func (d *drops) count(target error) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, err := range d.errs {
		if errors.Is(err, target) {
			n++
		}
	}
	return n
}

func keyed(t *testing.T, c *Conn, k Key) *drops {
	t.Helper()
	if err := c.SetKey(k); err != nil {
		t.Fatal(err)
	}
	d := &drops{}
	c.OnDrop(d.add)
	return d
}

// TestKeyedReceivers sends whole and chunked messages from a node with the
// job's key, one without, and one with another key, to each kind of
// receiver: only the first are taken, the others reported dropped.
func TestKeyedReceivers(t *testing.T) {
	srv := startSmall(t)
	k := NewKey()
	recv := connect(t, srv, false)
	d := keyed(t, recv, k)
	good := connect(t, srv, false)
	keyed(t, good, k)
	none := connect(t, srv, false)
	wrong := connect(t, srv, false)
	keyed(t, wrong, NewKey())
	senders := []struct {
		c    *Conn
		want error // nil: taken
	}{{none, ErrUnauthenticated}, {wrong, ErrForged}, {good, nil}}
	ctx := testCtx(t)

	in, err := Subscribe[numbers](recv, "in")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	box, err := NewMailbox(recv, "box")
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	if err := recv.Flush(5 * time.Second); err != nil {
		t.Fatal(err) // the server has the subscriptions
	}
	for _, big := range []bool{false, true} {
		for i, s := range senders {
			v := numbers{X: i}
			if big {
				v = bigNumbers(i + 1)
			}
			for _, name := range []string{"in", "box"} {
				if err := Publish(s.c, name, v); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.c.Flush(5 * time.Second); err != nil {
				t.Fatal(err)
			}
		}
		// The good sender's comes last: taking it means the others
		// were dropped before.
		want := numbers{X: 2}
		if big {
			want = bigNumbers(3)
		}
		got, _, err := in.Next(ctx)
		if err != nil || got.X != want.X || len(got.F) != len(want.F) {
			t.Fatalf("inbox (big %v): got X=%d with %d floats, %v; want X=%d", big, got.X, len(got.F), err, want.X)
		}
		msg, err := box.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = numbers{}
		if err := codec.Unmarshal(msg.Data, &got); err != nil || got.X != want.X || len(got.F) != len(want.F) {
			t.Fatalf("mailbox (big %v): got X=%d, %v; want X=%d", big, got.X, err, want.X)
		}
	}
	// Per sender and receiver: one whole message, and every chunk of a
	// big one.
	chunks := len(chunksOf(t, good, "in", "", bigNumbers(1)))
	for _, target := range []error{ErrUnauthenticated, ErrForged} {
		if n := d.count(target); n != 2*(1+chunks) {
			t.Errorf("%d drops match %v, want %d", n, target, 2*(1+chunks))
		}
	}
}

// TestKeyedTamperedChunk drops a chunk whose MAC fails before it is
// buffered: the message it belongs to is incomplete, the next one taken.
func TestKeyedTamperedChunk(t *testing.T) {
	srv := startSmall(t)
	k := NewKey()
	recv := connect(t, srv, false)
	d := keyed(t, recv, k)
	send := connect(t, srv, false)
	keyed(t, send, k)
	in, err := Subscribe[numbers](recv, "in")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := recv.Flush(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	msgs := chunksOf(t, send, "in", "", numbers{F: make(codec.Float64s, 2*smallPayload/8), X: 1})
	for _, m := range msgs {
		k.seal(m)
	}
	msgs[1].Data = bytes.Clone(msgs[1].Data)
	msgs[1].Data[0] ^= 1
	publishMsgs(t, send, msgs...)
	if err := Publish(send, "in", numbers{X: 2}); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if _, _, err := in.Next(ctx); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("Next: %v, want ErrIncomplete", err)
	}
	if got, _, err := in.Next(ctx); err != nil || got.X != 2 {
		t.Fatalf("Next: X=%d, %v; want 2", got.X, err)
	}
	if n := d.count(ErrForged); n != 1 {
		t.Errorf("%d chunks dropped as forged, want 1", n)
	}
}

// TestKeyedRequest: a request is answered when both ends have the key; a
// reply under another key is dropped, and the request's error says so.
func TestKeyedRequest(t *testing.T) {
	srv := startSmall(t)
	k := NewKey()
	cases := []struct {
		name  string
		reply Key
		want  error
	}{
		{"same key", k, nil},
		{"another key", NewKey(), ErrForged},
		{"no key", Key{}, ErrUnauthenticated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asker := connect(t, srv, false)
			keyed(t, asker, k)
			answerer := connect(t, srv, false)
			if err := answerer.SetKey(tc.reply); err != nil {
				t.Fatal(err)
			}
			// The answerer takes every request (Verify is not asked),
			// and answers under its own key.
			sub, err := answerer.NATS().Subscribe(answerer.Subject("ask"), func(msg *nats.Msg) {
				_ = Reply(answerer, msg, bigNumbers(7))
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			if err := answerer.Flush(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			got, err := Request[numbers, numbers](ctx, asker, "ask", numbers{X: 1})
			switch {
			case tc.want == nil && (err != nil || got.X != 7):
				t.Fatalf("Request: X=%d, %v", got.X, err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("Request: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestKeylessUnchanged: without a key, no message carries a header.
func TestKeylessUnchanged(t *testing.T) {
	srv := startSmall(t)
	c := connect(t, srv, false)
	sub, err := c.NATS().SubscribeSync(c.Subject("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Publish(c, "x", numbers{X: 1}); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header != nil {
		t.Errorf("a keyless message has headers %v", msg.Header)
	}
}

// BenchmarkMAC is the cost of a MAC on a message of each size (the
// sender's and the receiver's are the same).
func BenchmarkMAC(b *testing.B) {
	k := NewKey()
	for _, size := range []int{1 << 10, 1 << 20, 32 << 20} {
		data := make([]byte, size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				k.mac("strads.j.partial", "", nil, data)
			}
		})
	}
}

// TestKeyedRequestNoResponders: with a key, the no-responders status,
// which anyone may send to a request's reply subject, does not end the
// request: the authenticated reply that follows does; with nobody there,
// the error says so once the wait ends.
func TestKeyedRequestNoResponders(t *testing.T) {
	srv := startSmall(t)
	k := NewKey()
	asker := connect(t, srv, false)
	keyed(t, asker, k)
	answerer := connect(t, srv, false)
	keyed(t, answerer, k)
	forger := connect(t, srv, false)
	sub, err := answerer.NATS().Subscribe(answerer.Subject("ask"), func(msg *nats.Msg) {
		// The forger's status first, then the answer.
		_ = forger.NATS().PublishMsg(&nats.Msg{Subject: msg.Reply, Header: nats.Header{"Status": {"503"}}})
		_ = forger.NATS().Flush()
		_ = Reply(answerer, msg, numbers{X: 9})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := answerer.Flush(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := Request[numbers, numbers](testCtx(t), asker, "ask", numbers{X: 1})
	if err != nil || got.X != 9 {
		t.Fatalf("Request: X=%d, %v; want the answer past the forged status", got.X, err)
	}
	sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Request[numbers, numbers](ctx, asker, "nobody", numbers{X: 1}); !errors.Is(err, ErrNoResponders) {
		t.Fatalf("Request to nobody: %v, want ErrNoResponders", err)
	}
	// RequestRetried takes the status at its word, at once.
	if _, err := RequestRetried[numbers, numbers](testCtx(t), asker, "nobody", numbers{X: 1}); !errors.Is(err, ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RequestRetried to nobody: %v, want ErrNoResponders alone", err)
	}
}
