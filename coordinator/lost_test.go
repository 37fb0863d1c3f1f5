package coordinator_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/schmp"
)

// bulkyLen is the length of a bulky update and partial: its tasks and
// partials are larger than nats.go's write buffer (32 KiB), so that their
// publish writes to the connection itself and sees its error.
const bulkyLen = 8 << 10

// bulky is halving whose updates and partials are a number bulkyLen
// times.
func bulky() schmp.Program[int, codec.Float64s, codec.Float64s, float64] {
	return schmp.Program[int, codec.Float64s, codec.Float64s, float64]{
		Name: "bulky",
		NewScheduler: func(_ context.Context, part, parts int) (schmp.Scheduler[int], error) {
			return &halvingScheduler{part: part, parts: parts}, nil
		},
		NewWorker: func(_ context.Context, shard, shards int) (schmp.Worker[int, codec.Float64s, codec.Float64s, float64], error) {
			return &bulkyWorker{shard: shard, shards: shards}, nil
		},
		NewCoordinator: func(context.Context) (schmp.Coordinator[int, codec.Float64s, codec.Float64s, float64], error) {
			return &bulkyCoordinator{}, nil
		},
	}
}

type bulkyWorker struct {
	shard, shards int
	x             float64
}

func (w *bulkyWorker) Describe() (float64, error) { return float64(w.shard), nil }
func (w *bulkyWorker) Report() (float64, error)   { return w.x / float64(w.shards), nil }
func (w *bulkyWorker) Apply(u codec.Float64s) error {
	if len(u) != bulkyLen {
		return fmt.Errorf("update of %d numbers, want %d", len(u), bulkyLen)
	}
	w.x = u[0]
	return nil
}
func (w *bulkyWorker) Push(context.Context, uint64, int) (codec.Float64s, error) {
	return repeat(w.x / float64(w.shards)), nil
}

// repeat returns x bulkyLen times.
func repeat(x float64) codec.Float64s {
	u := make(codec.Float64s, bulkyLen)
	for i := range u {
		u[i] = x
	}
	return u
}

type bulkyCoordinator struct{ x float64 }

func (c *bulkyCoordinator) Start([]float64) (codec.Float64s, error) {
	c.x = 1
	return repeat(c.x), nil
}
func (c *bulkyCoordinator) Pull(_ uint64, _ int, partials []codec.Float64s) (codec.Float64s, schmp.Feedback, error) {
	var sum float64
	for _, p := range partials {
		if len(p) != bulkyLen {
			return nil, schmp.Feedback{}, fmt.Errorf("partial of %d numbers, want %d", len(p), bulkyLen)
		}
		sum += p[0]
	}
	c.x = sum / 2
	return repeat(c.x), schmp.Feedback{}, nil
}
func (c *bulkyCoordinator) Objective(reports []float64) (schmp.Progress, error) {
	var sum float64
	for _, r := range reports {
		sum += r
	}
	return schmp.Progress{Objective: 1 + sum}, nil
}
func (c *bulkyCoordinator) WriteModel(w io.Writer) error {
	_, err := fmt.Fprintln(w, c.x)
	return err
}

// breaker hands out in-process connections to srv, and breaks those of
// the node it names as a server drops a slow consumer: its first
// connection as it writes its at-th message on subject, which is lost in
// flight (or, if fail, fails on the closed pipe), and its second as it
// writes one again after the reconnect, the write failing on the closed
// pipe.
type breaker struct {
	srv     *natsserver.Server
	node    string // the node's connection name
	subject string // in full
	at      int
	fail    bool

	mu    sync.Mutex
	conns int // the node's connections so far
}

func (b *breaker) InProcessConn() (net.Conn, error) {
	c, err := b.srv.InProcessConn()
	if err != nil {
		return nil, err
	}
	return &tapped{Conn: c, b: b}, nil
}

// tapped is a connection of breaker. nats.go writes to it under its
// connection's lock, one write at a time.
type tapped struct {
	net.Conn
	b    *breaker
	nth  int // the node's nth connection; -1: another node's
	msgs int // the messages written on the subject
}

func (t *tapped) Write(p []byte) (int, error) {
	if t.nth == 0 && bytes.HasPrefix(p, []byte("CONNECT ")) {
		t.nth = -1
		if bytes.Contains(p, []byte(`"name":"`+t.b.node+`"`)) {
			t.b.mu.Lock()
			t.b.conns++
			t.nth = t.b.conns
			t.b.mu.Unlock()
		}
	}
	if t.nth > 0 && bytes.Contains(p, []byte("PUB "+t.b.subject+" ")) {
		t.msgs++
		switch {
		case t.nth == 1 && t.msgs == t.b.at && !t.b.fail:
			t.Conn.Close()
			return len(p), nil
		case t.nth == 1 && t.msgs == t.b.at:
			t.Conn.Close()
		case t.nth == 2:
			t.Conn.Close()
		}
	}
	return t.Conn.Write(p)
}

// TestSendLostToABreak reproduces a server that drops a node (a slow
// consumer) in the middle of a job, and drops it again while the node
// sends again after the reconnect what may be lost: that send fails on
// the closed pipe of the in-process connection. So may the first send.
// A send lost so is no failure: the job goes on after the next reconnect
// and ends as an undisturbed run does (DESIGN "NATS outages").
func TestSendLostToABreak(t *testing.T) {
	opts := coordinator.Options{Workers: 2, Depth: 1, MaxRounds: 12, ReportEvery: 1,
		Timeout: 20 * time.Second, JoinTimeout: 10 * time.Second, Private: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want, err := job.Run(ctx, bulky(), job.Options{Job: "bulky", Coordinator: opts, Timeout: opts.Timeout})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, node, subject string
		fail                bool
	}{
		{"task lost in flight", "coordinator", "task", false},
		{"task send fails", "coordinator", "task", true},
		{"partial send fails", "worker-1", "partial", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := natsserver.Start(natsserver.Options{Port: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			b := &breaker{srv: srv, node: tc.node, subject: "strads.bulky." + tc.subject, at: 5, fail: tc.fail}
			got, err := job.Run(ctx, bulky(), job.Options{Job: "bulky", Coordinator: opts, Timeout: opts.Timeout,
				NATS: "nats://in-process", NATSOptions: []nats.Option{nats.InProcessServer(b)}})
			if err != nil {
				t.Fatal(err)
			}
			b.mu.Lock()
			conns := b.conns
			b.mu.Unlock()
			if conns < 3 {
				t.Errorf("%s connected %d times; want both breaks", tc.node, conns)
			}
			if tc.node == "coordinator" && got.Reconnects < 2 {
				t.Errorf("the coordinator reconnected %d times; want both breaks", got.Reconnects)
			}
			if got.Rounds != want.Rounds || got.Final.Objective != want.Final.Objective {
				t.Errorf("%d rounds, objective %v; an undisturbed run: %d, %v", got.Rounds, got.Final.Objective, want.Rounds, want.Final.Objective)
			}
		})
	}
}
