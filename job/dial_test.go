package job_test

import (
	"context"
	"testing"
	"time"

	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/wire"
)

// TestDial checks the connections of a job that runs its own nodes: on an
// embedded server and on an external one, a node's message reaches
// another, under the job's key; closing ends every connection.
func TestDial(t *testing.T) {
	for _, tc := range []struct {
		name string
		nats string
	}{{"embedded", ""}, {"external", testhelper.ServerURL(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			dial, closeAll, err := job.Dial(job.Options{Job: "dialtest", NATS: tc.nats, Key: wire.NewKey()})
			if err != nil {
				t.Fatal(err)
			}
			a, err := dial("a")
			if err != nil {
				t.Fatal(err)
			}
			b, err := dial("b")
			if err != nil {
				t.Fatal(err)
			}
			in, err := wire.Subscribe[int](b, "x")
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Flush(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			if err := wire.Publish(a, "x", 7); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if v, _, err := in.Next(ctx); err != nil || v != 7 {
				t.Fatalf("got %d, %v; want 7", v, err)
			}
			closeAll()
			if err := wire.Publish(a, "x", 8); err == nil {
				t.Error("a connection still publishes after close")
			}
		})
	}
}
