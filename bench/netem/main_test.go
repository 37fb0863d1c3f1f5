package main

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// TestDue checks the link's schedule: serialization at the rate, in order,
// then the delay.
func TestDue(t *testing.T) {
	t0 := time.Unix(0, 0)
	l := Link{Delay: 500 * time.Microsecond, Rate: 8e6} // 1 byte per µs
	var free time.Time
	for _, tc := range []struct {
		at   time.Duration
		n    int
		want time.Duration
	}{
		{0, 1000, 1500 * time.Microsecond},                                      // 1 ms on the wire, then the delay
		{100 * time.Microsecond, 1000, 2500 * time.Microsecond},                 // waits for the first
		{10 * time.Millisecond, 10, 10*time.Millisecond + 510*time.Microsecond}, // an idle wire
	} {
		if got := l.Due(&free, t0.Add(tc.at), tc.n); got.Sub(t0) != tc.want {
			t.Errorf("%d bytes at %s: due at %s, want %s", tc.n, tc.at, got.Sub(t0), tc.want)
		}
	}
	unlimited := Link{Delay: time.Millisecond}
	free = time.Time{}
	if got := unlimited.Due(&free, t0, 1<<20); got.Sub(t0) != time.Millisecond {
		t.Errorf("unlimited rate: due at %s, want the delay alone", got.Sub(t0))
	}
}

// TestProxyRoundTrip sends bytes through the proxy to an echo server and
// back: they come back whole, and no sooner than the round trip.
func TestProxyRoundTrip(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const rtt = 20 * time.Millisecond
	go serve(ctx, l, echo.Addr().String(), Link{Delay: rtt / 2, Rate: 1e9})
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := make([]byte, 100_000)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	t0 := time.Now()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took < rtt {
		t.Errorf("round trip in %s, less than the link's %s", took, rtt)
	}
	if string(got) != string(msg) {
		t.Error("the bytes came back changed")
	}
}
