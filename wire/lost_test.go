package wire_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/wire"
)

func TestLost(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("wire: publish x: %w", io.ErrClosedPipe), true},
		{&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, true},
		{&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}, true},
		{&net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}, true},
		{nats.ErrReconnectBufExceeded, true},
		{nats.ErrConnectionReconnecting, true},
		// Closed for good, or the caller's mistake: no reconnect sends it.
		{nats.ErrConnectionClosed, false},
		{nats.ErrMaxPayload, false},
		{nats.ErrBadSubject, false},
		// A write that timed out without a byte written leaves the
		// connection up: nothing sends it again.
		{&net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded}, false},
	}
	for _, tt := range tests {
		if got := wire.Lost(tt.err); got != tt.want {
			t.Errorf("Lost(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// breakable hands out in-process connections to a server, and breaks the
// last one as the server does when it drops a client: the client's
// writes fail at once, while its reads see the end only when let go, so
// that a publish meets the closed pipe before nats.go knows.
type breakable struct {
	srv *natsserver.Server

	mu   sync.Mutex
	last *heldConn
}

func (b *breakable) InProcessConn() (net.Conn, error) {
	c, err := b.srv.InProcessConn()
	if err != nil {
		return nil, err
	}
	h := &heldConn{Conn: c, release: make(chan struct{})}
	b.mu.Lock()
	b.last = h
	b.mu.Unlock()
	return h, nil
}

// breakLast closes the last connection handed out; release lets its
// reads see it.
func (b *breakable) breakLast() (release func()) {
	b.mu.Lock()
	h := b.last
	b.mu.Unlock()
	h.broken.Store(true)
	h.Conn.Close()
	return func() { close(h.release) }
}

// heldConn is a connection of breakable.
type heldConn struct {
	net.Conn
	broken  atomic.Bool
	release chan struct{}
}

func (h *heldConn) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	if err != nil && h.broken.Load() {
		<-h.release
	}
	return n, err
}

// TestPublishLostToABreak publishes on an in-process connection that the
// server has closed and nats.go has not yet seen close: the publish fails
// on the closed pipe, Lost says so, and once the connection is back the
// same bytes go through (DESIGN "NATS outages").
func TestPublishLostToABreak(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	b := &breakable{srv: srv}
	nc, err := wire.Connect("", "breaks", 5*time.Second, nats.InProcessServer(b))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := wire.NewConn(nc, "lost")
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan wire.Event, 4)
	defer c.Watch(func(e wire.Event) { events <- e })()

	rnc, err := srv.ConnectInProcess("receiver")
	if err != nil {
		t.Fatal(err)
	}
	defer rnc.Close()
	rc, err := wire.NewConn(rnc, "lost")
	if err != nil {
		t.Fatal(err)
	}
	in, err := wire.Subscribe[[]byte](rc, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := rnc.Flush(); err != nil {
		t.Fatal(err)
	}

	// Larger than nats.go's write buffer, so that the publish itself
	// writes to the connection.
	data, err := codec.Marshal(make([]byte, 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	release := b.breakLast()
	err = c.PublishData("big", "", data)
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("publish on the broken connection: %v, want %v", err, io.ErrClosedPipe)
	}
	if !wire.Lost(err) {
		t.Fatalf("Lost(%v) = false", err)
	}
	release()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for reconnected := false; !reconnected; {
		select {
		case e := <-events:
			reconnected = e.Kind == wire.Reconnected
		case <-ctx.Done():
			t.Fatal("no reconnect")
		}
	}
	if err := c.PublishData("big", "", data); err != nil {
		t.Fatalf("publish after the reconnect: %v", err)
	}
	got, _, err := in.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 64<<10 {
		t.Errorf("received %d bytes, want %d", len(got), 64<<10)
	}
}
