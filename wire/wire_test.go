package wire

import (
	"context"
	"testing"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/natsserver"
)

type numbers struct {
	F codec.Float64s `msgpack:"f"`
	I codec.Int32s   `msgpack:"i"`
	X int            `msgpack:"x"`
}

func TestPublishRequestSubscribe(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	nc, err := srv.ConnectInProcess("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := NewConn(nc, "j1")
	if err != nil {
		t.Fatal(err)
	}
	in, err := Subscribe[numbers](c, "echo")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		v, msg, err := in.Next(ctx)
		if err == nil {
			v.X++
			Reply(c, msg, v)
		}
	}()
	rep, err := Request[numbers, numbers](ctx, c, "echo", numbers{F: codec.Float64s{3}, X: 1})
	if err != nil || rep.X != 2 || rep.F[0] != 3 {
		t.Fatalf("reply %+v, %v", rep, err)
	}

	// Nobody listens: an error at once, not a hang.
	if _, err := Request[numbers, numbers](ctx, c, "nobody", numbers{}); err == nil {
		t.Error("request to a subject without responders succeeded")
	}
	// Too big for the server: sent in chunks, never a silent drop.
	big := numbers{F: make(codec.Float64s, natsserver.MaxPayload/8+1)}
	if err := Publish(c, "echo", big); err != nil {
		t.Fatalf("oversized publish: %v", err)
	}
	if got, _, err := in.Next(ctx); err != nil || len(got.F) != len(big.F) {
		t.Errorf("oversized message: %d values, %v; want %d", len(got.F), err, len(big.F))
	}
	// Next honours its context.
	short, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	if _, _, err := in.Next(short); err == nil {
		t.Error("Next returned without a message")
	}
}

func TestCheckJob(t *testing.T) {
	for job, ok := range map[string]bool{"lasso": true, "a-b_9": true, "": false, "a.b": false, "a b": false, "a*": false, ">": false} {
		if err := CheckJob(job); (err == nil) != ok {
			t.Errorf("CheckJob(%q) = %v", job, err)
		}
	}
}
