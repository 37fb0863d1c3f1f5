package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/wire"
)

// TestRetry checks which failures Retry runs an operation again after,
// with the connection up: JetStream's having no responder (a server going
// down shuts JetStream down first: a store of a role then failed, and its
// news could be lost in the outage, which left the checkpoint open until
// the timeout) and the acknowledgements that nats.go fails at a
// disconnect, but not any other error, and not beyond its attempts or its
// context.
func TestRetry(t *testing.T) {
	c, err := wire.NewConn(testhelper.InProcess(t, false), "j")
	if err != nil {
		t.Fatal(err)
	}
	errOther := errors.New("some other error")
	noResponders := fmt.Errorf("checkpoint: store worker-0 of round 10: %w", nats.ErrNoResponders)
	disconnected := fmt.Errorf("checkpoint: store worker-0 of round 10: %w", nats.ErrDisconnected)
	tests := []struct {
		name     string
		fails    []error // what the attempts return, in turn; nil after them
		cancel   bool    // the context is cancelled at the first attempt
		wantRuns int
		want     error
	}{
		{"succeeds", nil, false, 1, nil},
		{"no responders, then succeeds", []error{noResponders, noResponders}, false, 3, nil},
		{"disconnected, then succeeds", []error{disconnected}, false, 2, nil},
		{"no responders for good", []error{noResponders, noResponders, noResponders, noResponders, noResponders, noResponders}, false, 5, nats.ErrNoResponders},
		{"another error", []error{errOther}, false, 1, errOther},
		{"no responders, then another error", []error{noResponders, errOther}, false, 2, errOther},
		{"no responders, context cancelled", []error{noResponders, noResponders}, true, 1, nats.ErrNoResponders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			runs := 0
			err := checkpoint.Retry(ctx, c, func(context.Context) error {
				runs++
				if tt.cancel {
					cancel()
				}
				if runs <= len(tt.fails) {
					return tt.fails[runs-1]
				}
				return nil
			})
			if runs != tt.wantRuns || !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("ran %d times, %v; want %d times, %v", runs, err, tt.wantRuns, tt.want)
			}
		})
	}
}

// TestRetryAwaitsReconnect runs an operation that fails while the server
// is down: Retry runs it again once the connection is back, not before.
func TestRetryAwaitsReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	port := srv.Addr().(*net.TCPAddr).Port
	nc, err := wire.Connect(srv.ClientURL(), "test", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := wire.NewConn(nc, "j")
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	for nc.IsConnected() {
		if ctx.Err() != nil {
			t.Fatal("the connection did not notice the server's stop")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var connected []bool // whether the connection was up at each run
	err = checkpoint.Retry(ctx, c, func(context.Context) error {
		connected = append(connected, nc.IsConnected())
		if len(connected) == 1 {
			// The server comes back once the first run failed.
			srv, err := natsserver.Start(natsserver.Options{Port: port})
			if err != nil {
				return fmt.Errorf("restart: %w", err)
			}
			t.Cleanup(srv.Stop)
			return fmt.Errorf("checkpoint: store worker-0 of round 10: %w", nats.ErrDisconnected)
		}
		return nil
	})
	if err != nil || !slices.Equal(connected, []bool{false, true}) {
		t.Fatalf("%v; the connection up at each run: %v, want [false true]", err, connected)
	}
}
