package wire_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/wire"
)

// TestWatchReconnect restarts the server under a connection of Connect: a
// watcher sees the disconnect and then the reconnect, with the server's
// URL and without its password, and the reconnect is counted.
func TestWatchReconnect(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Addr().(*net.TCPAddr).Port
	url := strings.Replace(srv.ClientURL(), "nats://", "nats://u:s3cret@", 1)
	nc, err := wire.Connect(url, "watched", 5*time.Second)
	if err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := wire.NewConn(nc, "watch")
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan wire.Event, 8)
	stop := c.Watch(func(e wire.Event) { events <- e })
	defer stop()
	srv.Stop()
	srv, err = natsserver.Start(natsserver.Options{Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	for _, want := range []wire.EventKind{wire.Disconnected, wire.Reconnected} {
		select {
		case e := <-events:
			if e.Kind != want || strings.Contains(e.URL, "s3cret") || !strings.Contains(e.URL, "127.0.0.1") {
				t.Fatalf("event %+v, want %s with the URL redacted", e, want)
			}
			if want == wire.Reconnected && e.Reconnects != 1 {
				t.Errorf("%d reconnects, want 1", e.Reconnects)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}
}
