package job_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/wire"
)

// hostileJob runs a job of nnls named name on the server at url, with two
// scheduler parts at depth 2, and returns its model.
func hostileJob(ctx context.Context, name, url, out string, m *monitor.Metrics) ([]byte, error) {
	opts := job.Options{Job: name, NATS: url, Timeout: 20 * time.Second, Monitor: m,
		Coordinator: coordinator.Options{Workers: 2, Schedulers: 2, Depth: 2, MaxRounds: 150, ReportEvery: 5, Out: out,
			Timeout: 20 * time.Second, JoinTimeout: 20 * time.Second}}
	prog := nnls.Program(nnls.Config{Rows: 300, Cols: 40, Seed: 9, Block: 2})
	if _, err := job.Run(ctx, prog, opts); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// record records the messages of job name on srv while run runs, to
// replay them into later runs.
func record(t *testing.T, srv *natsserver.Server, name string, run func()) []*nats.Msg {
	t.Helper()
	rec, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	var mu sync.Mutex
	var recorded []*nats.Msg
	sub, err := rec.Subscribe("strads."+name+".>", func(msg *nats.Msg) {
		mu.Lock()
		recorded = append(recorded, msg)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	rec.Flush()
	run()
	sub.Unsubscribe()
	mu.Lock()
	defer mu.Unlock()
	return recorded
}

// droppedTotal returns the messages that the job's nodes dropped, as m
// serves them to Prometheus.
func droppedTotal(t *testing.T, m *monitor.Metrics) float64 {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	var n float64
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "strads_dropped_messages_total{"); ok {
			f, err := strconv.ParseFloat(rest[strings.LastIndex(rest, " ")+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			n += f
		}
	}
	return n
}

// subjects are the subjects of a job with two workers and two scheduler
// parts, relative to its prefix.
var subjects = []string{
	protocol.SubjectJoin, protocol.SubjectReady, protocol.SubjectPlan(0), protocol.SubjectPlan(1), protocol.SubjectPlanned,
	protocol.SubjectTask, protocol.SubjectTaskShard(0), protocol.SubjectTaskShard(1), protocol.SubjectPartial, protocol.SubjectCoordinator,
}

// attacker is a process on the job's NATS account that sees every
// message of the job and sends its own.
type attacker struct {
	c   *wire.Conn
	rng *rand.Rand
	// recorded holds messages of an earlier run, to replay.
	recorded []*nats.Msg
	// seen counts the job's messages the attacker has reacted to.
	seen int
}

// publish sends data on the job subject name, with reply subject reply.
func (a *attacker) publish(name, reply string, data []byte) {
	msg := &nats.Msg{Subject: a.c.Subject(name), Reply: reply, Data: data}
	a.c.NATS().PublishMsg(msg)
}

// forge decodes a message as a generic map, lets change alter it, and
// encodes it again; it returns nil for a message that does not decode.
func forge(data []byte, change func(m map[string]any)) []byte {
	var m map[string]any
	if codec.Unmarshal(data, &m) != nil {
		return nil
	}
	change(m)
	b, err := codec.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// TestHostileTraffic runs a job while an attacker on its subjects sends
// random bytes, truncated msgpack, messages of the wrong type, forged
// partials, plans, tasks, stops and joins with and without the run id,
// replays from this run and an earlier one, chunks announcing huge
// messages, and large messages: the model is the clean run's, bit for bit,
// or, where what the attacker forged carries the run id, the job stops
// with an error that says so; no node panics (DESIGN "Hostile traffic").
func TestHostileTraffic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	want, err := hostileJob(ctx, "hostile", "", filepath.Join(dir, "clean.csv"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := testhelper.StartServer(t, natsserver.Options{})

	// Record a run of the job, to replay its messages into later ones.
	old := record(t, srv, "hostile", func() {
		if got, err := hostileJob(ctx, "hostile", srv.ClientURL(), filepath.Join(dir, "recorded.csv"), nil); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("the recorded run: %v, or another model", err)
		}
	})

	rel := func(subject string) string { return strings.TrimPrefix(subject, "strads.hostile.") }
	for _, tc := range []struct {
		name string
		// react is what the attacker does when it sees msg go by.
		react func(a *attacker, msg *nats.Msg)
		// runID: the attacker forges with the job's run id, and may make
		// the job fail with one of these errors.
		runID []error
	}{
		{"random bytes", func(a *attacker, msg *nats.Msg) {
			junk := make([]byte, a.rng.IntN(2048))
			for i := range junk {
				junk[i] = byte(a.rng.Uint32())
			}
			a.publish(subjects[a.rng.IntN(len(subjects))], msg.Reply, junk)
		}, nil},
		{"truncated msgpack", func(a *attacker, msg *nats.Msg) {
			if len(msg.Data) > 1 {
				a.publish(rel(msg.Subject), msg.Reply, msg.Data[:a.rng.IntN(len(msg.Data)-1)])
			}
		}, nil},
		{"messages of the wrong type", func(a *attacker, msg *nats.Msg) {
			if to := subjects[a.rng.IntN(len(subjects))]; to != rel(msg.Subject) {
				a.publish(to, msg.Reply, msg.Data)
			}
		}, nil},
		{"forged messages of another run", func(a *attacker, msg *nats.Msg) {
			// Joins aside: joins carry no run id, and the coordinator's
			// answer to a join forged from a node's, sent to that node's
			// reply inbox, can reach the node before its own (DESIGN "Hostile traffic").
			if rel(msg.Subject) == protocol.SubjectJoin {
				return
			}
			b := forge(msg.Data, func(m map[string]any) {
				m["run"] = "forged"
				m["shard"], m["part"] = 0, 0
				m["stop"], m["abort"] = true, "forged abort"
			})
			if b != nil {
				a.publish(rel(msg.Subject), msg.Reply, b)
			}
		}, nil},
		{"forged joins once the job runs", func(a *attacker, msg *nats.Msg) {
			// (A join forged while the job admits its roles takes a place,
			// or fails the job for its manifest: joins carry no run id.)
			if rel(msg.Subject) != protocol.SubjectTask {
				return
			}
			for _, role := range []string{protocol.RoleWorker, protocol.RoleScheduler} {
				req := protocol.JoinRequest{Header: protocol.Header{Type: protocol.TypeJoin}, ID: "forger-" + strconv.Itoa(a.rng.IntN(4)), Role: role,
					Manifest: protocol.Manifest{App: "nnls", Version: protocol.Version, Settings: map[string]string{"cols": "7"}}}
				b, _ := codec.Marshal(req)
				a.publish(protocol.SubjectJoin, a.c.NATS().NewInbox(), b)
			}
		}, nil},
		{"replays of this run", func(a *attacker, msg *nats.Msg) {
			a.publish(rel(msg.Subject), msg.Reply, msg.Data)
		}, nil},
		{"replays of an earlier run", func(a *attacker, _ *nats.Msg) {
			// Joins aside: a join replayed while the job admits its roles
			// takes a place that no node then fills.
			old := a.recorded[a.rng.IntN(len(a.recorded))]
			if rel(old.Subject) != protocol.SubjectJoin {
				a.publish(rel(old.Subject), old.Reply, old.Data)
			}
		}, nil},
		{"chunks announcing huge messages", func(a *attacker, msg *nats.Msg) {
			h := nats.Header{wire.HeaderChunkID: {strconv.Itoa(a.rng.IntN(1000))}, wire.HeaderChunk: {"0/1024"}, wire.HeaderChunkSize: {strconv.Itoa(1 << 30)}}
			a.c.NATS().PublishMsg(&nats.Msg{Subject: msg.Subject, Header: h, Data: []byte{1}})
		}, nil},
		{"large messages", func(a *attacker, msg *nats.Msg) {
			// The first of the job's messages always (a short job may
			// otherwise end before the draw sends one), then one in 20.
			a.seen++
			if a.seen == 1 || a.rng.IntN(20) == 0 {
				a.publish(rel(msg.Subject), "", bytes.Repeat([]byte{0xc1}, 4<<20))
			}
		}, nil},
		{"forged partials and plans with the run id", func(a *attacker, msg *nats.Msg) {
			switch rel(msg.Subject) {
			case protocol.SubjectPartial, protocol.SubjectPlanned:
				b := forge(msg.Data, func(m map[string]any) { m["ns"] = 12345 })
				if b != nil {
					a.publish(rel(msg.Subject), msg.Reply, b)
				}
			}
		}, []error{protocol.ErrConflict}},
		{"forged stops with the run id", func(a *attacker, msg *nats.Msg) {
			if rel(msg.Subject) == protocol.SubjectTask {
				b := forge(msg.Data, func(m map[string]any) { m["abort"] = "forged abort" })
				a.publish(protocol.SubjectTask, "", b)
			}
		}, []error{coordinator.ErrAborted, protocol.ErrConflict}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// NoEcho: the attacker does not see, and answer, its own messages.
			nc, err := nats.Connect(srv.ClientURL(), nats.NoEcho())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			c, err := wire.NewConn(nc, "hostile")
			if err != nil {
				t.Fatal(err)
			}
			a := &attacker{c: c, rng: rand.New(rand.NewPCG(1, 2)), recorded: old}
			var amu sync.Mutex
			sub, err := nc.Subscribe("strads.hostile.>", func(msg *nats.Msg) {
				if msg.Header != nil {
					return // its own chunks
				}
				amu.Lock()
				defer amu.Unlock()
				tc.react(a, msg)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			nc.Flush()
			m := monitor.New()
			got, err := hostileJob(ctx, "hostile", srv.ClientURL(), filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".csv"), m)
			if n := droppedTotal(t, m); err == nil && n == 0 {
				t.Errorf("no message dropped")
			}
			switch {
			case err == nil && !bytes.Equal(got, want):
				t.Errorf("the model differs from the clean run's")
			case err != nil && tc.runID == nil:
				t.Errorf("job: %v", err)
			case err != nil:
				clear := false
				for _, kind := range tc.runID {
					clear = clear || errors.Is(err, kind)
				}
				if !clear {
					t.Errorf("job: %v, want one of %v", err, tc.runID)
				}
				t.Logf("job: %v", err)
			}
		})
	}
}
