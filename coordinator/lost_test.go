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

// bulkyLen is the length of a bulky update: its tasks are larger than
// nats.go's write buffer (32 KiB), so that the publish of a task writes
// to the connection itself and sees its error.
const bulkyLen = 8 << 10

// bulky is halving whose update is x bulkyLen times.
func bulky() schmp.Program[int, float64, codec.Float64s, float64] {
	return schmp.Program[int, float64, codec.Float64s, float64]{
		Name: "bulky",
		NewScheduler: func(_ context.Context, part, parts int) (schmp.Scheduler[int], error) {
			return &halvingScheduler{part: part, parts: parts}, nil
		},
		NewWorker: func(_ context.Context, shard, shards int) (schmp.Worker[int, float64, codec.Float64s, float64], error) {
			return &bulkyWorker{shard: shard, shards: shards}, nil
		},
		NewCoordinator: func(context.Context) (schmp.Coordinator[int, float64, codec.Float64s, float64], error) {
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
func (w *bulkyWorker) Push(context.Context, uint64, int) (float64, error) {
	return w.x / float64(w.shards), nil
}

type bulkyCoordinator struct{ x float64 }

func (c *bulkyCoordinator) update() codec.Float64s {
	u := make(codec.Float64s, bulkyLen)
	for i := range u {
		u[i] = c.x
	}
	return u
}
func (c *bulkyCoordinator) Start([]float64) (codec.Float64s, error) {
	c.x = 1
	return c.update(), nil
}
func (c *bulkyCoordinator) Pull(_ uint64, _ int, partials []float64) (codec.Float64s, schmp.Feedback, error) {
	var sum float64
	for _, p := range partials {
		sum += p
	}
	c.x = sum / 2
	return c.update(), schmp.Feedback{}, nil
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

// breaker hands out in-process connections to srv, and breaks the
// coordinator's as a server drops a slow consumer: its first connection
// as it writes its at-th task, which is lost in flight (or, if fail, fails
// on the closed pipe), and its second as it writes a task again after the
// reconnect, the write failing on the closed pipe.
type breaker struct {
	srv     *natsserver.Server
	subject string // the tasks' subject, in full
	at      int
	fail    bool

	mu    sync.Mutex
	coord int // the coordinator's connections so far
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
	b     *breaker
	nth   int // the coordinator's nth connection; -1: another node's
	tasks int // the tasks written
}

func (t *tapped) Write(p []byte) (int, error) {
	if t.nth == 0 && bytes.HasPrefix(p, []byte("CONNECT ")) {
		t.nth = -1
		if bytes.Contains(p, []byte(`"name":"coordinator"`)) {
			t.b.mu.Lock()
			t.b.coord++
			t.nth = t.b.coord
			t.b.mu.Unlock()
		}
	}
	if t.nth > 0 && bytes.Contains(p, []byte("PUB "+t.b.subject+" ")) {
		t.tasks++
		switch {
		case t.nth == 1 && t.tasks == t.b.at && !t.b.fail:
			t.Conn.Close()
			return len(p), nil
		case t.nth == 1 && t.tasks == t.b.at:
			t.Conn.Close()
		case t.nth == 2:
			t.Conn.Close()
		}
	}
	return t.Conn.Write(p)
}

// TestSendLostToABreak reproduces a server that drops the coordinator
// (a slow consumer) in the middle of a job, and drops it again while the
// coordinator sends its task again after the reconnect: that send fails
// on the closed pipe of the in-process connection. So may the first send
// of the task. A send lost so is no failure: the job goes on after the
// next reconnect and ends as an undisturbed run does (DESIGN "NATS
// outages").
func TestSendLostToABreak(t *testing.T) {
	opts := coordinator.Options{Workers: 2, Depth: 1, MaxRounds: 12, ReportEvery: 1,
		Timeout: 20 * time.Second, JoinTimeout: 10 * time.Second, Private: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want, err := job.Run(ctx, bulky(), job.Options{Job: "bulky", Coordinator: opts, Timeout: opts.Timeout})
	if err != nil {
		t.Fatal(err)
	}
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("send fails %v", fail), func(t *testing.T) {
			srv, err := natsserver.Start(natsserver.Options{Port: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			b := &breaker{srv: srv, subject: "strads.bulky.task", at: 5, fail: fail}
			got, err := job.Run(ctx, bulky(), job.Options{Job: "bulky", Coordinator: opts, Timeout: opts.Timeout,
				NATS: "nats://in-process", NATSOptions: []nats.Option{nats.InProcessServer(b)}})
			if err != nil {
				t.Fatal(err)
			}
			b.mu.Lock()
			conns := b.coord
			b.mu.Unlock()
			if conns < 3 || got.Reconnects < 2 {
				t.Errorf("the coordinator connected %d times, reconnected %d times; want both breaks", conns, got.Reconnects)
			}
			if got.Rounds != want.Rounds || got.Final.Objective != want.Final.Objective {
				t.Errorf("%d rounds, objective %v; an undisturbed run: %d, %v", got.Rounds, got.Final.Objective, want.Rounds, want.Final.Objective)
			}
		})
	}
}
