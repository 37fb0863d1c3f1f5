package testhelper

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/natsserver"
)

// StartServer starts an embedded nats-server as opts says (natsserver.Start),
// stopped when tb ends.
func StartServer(tb testing.TB, opts natsserver.Options) *natsserver.Server {
	tb.Helper()
	srv, err := natsserver.Start(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	return srv
}

// Connect opens an in-process connection, named "test", to srv, closed
// when tb ends.
func Connect(tb testing.TB, srv *natsserver.Server) *nats.Conn {
	tb.Helper()
	nc, err := srv.ConnectInProcess("test")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// InProcess starts an embedded nats-server that listens on no TCP port,
// with JetStream on a store in a temporary directory if js, and returns an
// in-process connection to it; both end when tb does.
func InProcess(tb testing.TB, js bool) *nats.Conn {
	tb.Helper()
	opts := natsserver.Options{Port: -1}
	if js {
		opts.StoreDir = tb.TempDir()
	}
	return Connect(tb, StartServer(tb, opts))
}

// ServerURL starts an embedded nats-server on a free loopback port,
// stopped when tb ends, and returns its client URL.
func ServerURL(tb testing.TB) string {
	tb.Helper()
	return StartServer(tb, natsserver.Options{}).ClientURL()
}

// AwaitCheckpoint waits until job, on srv, has committed a checkpoint of
// round at least round (they are committed in the background), asking
// every 10 ms, for at most 10 s.
func AwaitCheckpoint(tb testing.TB, srv *natsserver.Server, job string, round uint64) error {
	ctx := context.Background()
	store, err := checkpoint.Open(ctx, Connect(tb, srv), job, false)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m, err := store.Latest(ctx); err == nil && m.Round >= round {
			return nil
		}
	}
	return fmt.Errorf("job %s: no checkpoint of round %d or later committed in 10s", job, round)
}
