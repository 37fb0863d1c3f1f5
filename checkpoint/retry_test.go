package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/wire"
)

// TestRetry checks which failures Retry runs an operation again after:
// JetStream's having no responder (a server going down shuts JetStream
// down first: a store of a role then failed, and its news could be lost in
// the outage, which left the checkpoint open until the timeout), but not
// any other error, and not beyond its attempts or its context.
func TestRetry(t *testing.T) {
	c, err := wire.NewConn(connect(t, false), "j")
	if err != nil {
		t.Fatal(err)
	}
	errOther := errors.New("some other error")
	noResponders := fmt.Errorf("checkpoint: store worker-0 of round 10: %w", nats.ErrNoResponders)
	tests := []struct {
		name     string
		fails    []error // what the attempts return, in turn; nil after them
		cancel   bool    // the context is cancelled at the first attempt
		wantRuns int
		want     error
	}{
		{"succeeds", nil, false, 1, nil},
		{"no responders, then succeeds", []error{noResponders, noResponders}, false, 3, nil},
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
