package job_test

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

// droppedBy returns the messages that the job's nodes dropped for each
// reason, as m serves them to Prometheus.
func droppedBy(t *testing.T, m *monitor.Metrics) map[string]float64 {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	n := map[string]float64{}
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "strads_dropped_messages_total{"); ok {
			f, err := strconv.ParseFloat(rest[strings.LastIndex(rest, " ")+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			_, reason, _ := strings.Cut(rest, `reason="`)
			reason, _, _ = strings.Cut(reason, `"`)
			n[reason] += f
		}
	}
	return n
}

// watchKeyed is watch for a job with a key: the attacker sees every whole
// message, MAC and all (chunks aside), and has no key.
func watchKeyed(t *testing.T, srv *natsserver.Server, name string, react func(a *attacker, msg *nats.Msg), old []*nats.Msg) (stop func()) {
	t.Helper()
	return watchSkipping(t, srv, name, react, old, 5, func(msg *nats.Msg) bool { return msg.Header.Get(wire.HeaderChunkID) != "" })
}

// sendForged publishes data on the job subject name as the attacker would
// with the job's messages at hand: without a MAC, or with the MAC of the
// message it forged from (which covers other bytes).
func (a *attacker) sendForged(name, reply string, data []byte, from *nats.Msg) {
	msg := &nats.Msg{Subject: a.c.Subject(name), Reply: reply, Data: data}
	if from != nil && a.rng.IntN(2) == 0 {
		msg.Header = nats.Header{wire.HeaderMAC: {from.Header.Get(wire.HeaderMAC)}}
	}
	a.c.NATS().PublishMsg(msg)
}

// resend publishes msg again as it was, MAC included.
func (a *attacker) resend(msg *nats.Msg) {
	a.c.NATS().PublishMsg(&nats.Msg{Subject: msg.Subject, Reply: msg.Reply, Header: msg.Header, Data: msg.Data})
}

// TestKeyedHostileTraffic runs a job with a key, that takes checkpoints
// and sends heartbeats, while an attacker on its subjects, who reads the
// run id and every message but has no key, forges messages of the current
// run that without a key fail the job or steer it: partials and plans,
// stops and aborts, notices of stored pieces, rollbacks, heartbeats,
// assignments to spares, joins; and replays messages, their MACs
// included, of this run and of an earlier run of the job under the same
// key, joins included. Every forgery is dropped: the job ends with the
// clean model, bit for bit (DESIGN "Spares and replacement").
func TestKeyedHostileTraffic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	want, err := ckptJob(ctx, "keyed", "", filepath.Join(dir, "clean-store"), filepath.Join(dir, "clean.csv"), false, nil, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: filepath.Join(dir, "js")})
	key := wire.NewKey()
	run := func(name string, m *monitor.Metrics) ([]byte, error) {
		opts := ckptOptions(name, srv.ClientURL(), "", filepath.Join(dir, name+".csv"), false, m, 20*time.Second)
		opts.Key = key
		return runModel(ctx, opts)
	}

	// Record a run of the job under the key, to replay its messages.
	old := record(t, srv, "keyed", func() {
		if got, err := run("keyed", nil); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("the recorded run: %v, or another model", err)
		}
	})
	joins := 0
	for _, msg := range old {
		if strings.HasSuffix(msg.Subject, "."+protocol.SubjectJoin) {
			joins++
		}
	}
	if joins == 0 {
		t.Fatal("no join recorded")
	}

	rel := func(subject string) string { return strings.TrimPrefix(subject, "strads.keyed.") }
	for _, tc := range []struct {
		name  string
		react func(a *attacker, msg *nats.Msg)
		// reasons are the drop reasons that must be counted.
		reasons []string
	}{
		{"forged partials and plans with the run id", func(a *attacker, msg *nats.Msg) {
			switch rel(msg.Subject) {
			case protocol.SubjectPartial, protocol.SubjectPlanned:
				if b := forge(msg.Data, func(m map[string]any) { m["ns"] = 12345 }); b != nil {
					a.sendForged(rel(msg.Subject), msg.Reply, b, msg)
				}
			}
		}, []string{protocol.DropForged, protocol.DropUnauthenticated}},
		{"forged stops and aborts with the run id", func(a *attacker, msg *nats.Msg) {
			if rel(msg.Subject) == protocol.SubjectTask {
				if b := forge(msg.Data, func(m map[string]any) { m["stop"], m["abort"] = true, "forged abort" }); b != nil {
					a.sendForged(protocol.SubjectTask, "", b, msg)
				}
			}
		}, []string{protocol.DropForged, protocol.DropUnauthenticated}},
		{"forged stored notices with the run id", func(a *attacker, msg *nats.Msg) {
			round := field(msg.Data, "ckpt")
			if rel(msg.Subject) != protocol.SubjectTask || round == 0 {
				return
			}
			for _, role := range []string{protocol.RoleWorker, protocol.RoleScheduler} {
				for place := range 2 {
					b, _ := codec.Marshal(protocol.Stored{Header: protocol.Header{Type: protocol.TypeStored, Run: runOf(msg.Data)},
						Role: role, Place: place, Round: round, Digest: strings.Repeat("0f", 32), Bytes: 1})
					a.sendForged(protocol.SubjectStored, "", b, msg)
				}
			}
		}, []string{protocol.DropForged, protocol.DropUnauthenticated}},
		{"forged rollbacks with the run id", func(a *attacker, msg *nats.Msg) {
			if rel(msg.Subject) != protocol.SubjectTask || field(msg.Data, "round") < 30 {
				return
			}
			rb := &protocol.Rollback{Round: 10, Run: "forged-run"}
			h := protocol.Header{Run: runOf(msg.Data)}
			h.Type = protocol.TypeTask
			b, _ := codec.Marshal(protocol.Task[nnls.Plan, nnls.Update]{Header: h, Rollback: rb})
			a.sendForged(protocol.SubjectTask, "", b, msg)
			h.Type = protocol.TypePlanRequest
			b, _ = codec.Marshal(protocol.PlanRequest{Header: h, Rollback: rb})
			a.sendForged(protocol.SubjectPlan(0), "", b, msg)
		}, []string{protocol.DropForged, protocol.DropUnauthenticated}},
		{"forged heartbeats and assignments with the run id", func(a *attacker, msg *nats.Msg) {
			if rel(msg.Subject) != protocol.SubjectTask {
				return
			}
			h := protocol.Header{Run: runOf(msg.Data), Type: protocol.TypeHeartbeat}
			b, _ := codec.Marshal(protocol.Heartbeat{Header: h, Role: protocol.RoleWorker, Place: 0})
			a.sendForged(protocol.SubjectBeat, "", b, msg)
			a.sendForged(protocol.SubjectBeatCoordinator, "", b, msg)
			h.Type = protocol.TypeAssign
			b, _ = codec.Marshal(protocol.Assign{Header: h, Stop: true, Abort: "forged"})
			a.sendForged(protocol.SubjectSpare("x"), "", b, msg)
		}, []string{protocol.DropForged, protocol.DropUnauthenticated}},
		{"forged joins", func(a *attacker, msg *nats.Msg) {
			if rel(msg.Subject) != protocol.SubjectJoin {
				return
			}
			// A node's join with another ID, the MAC of the node's own.
			b := forge(msg.Data, func(m map[string]any) { m["id"] = "forger-" + strconv.Itoa(a.rng.IntN(4)) })
			a.sendForged(protocol.SubjectJoin, a.c.NATS().NewInbox(), b, msg)
			a.sendForged(protocol.SubjectJoin, a.c.NATS().NewInbox(), b, nil)
		}, []string{protocol.DropForged, protocol.DropUnauthenticated}},
		{"replays of this run", func(a *attacker, msg *nats.Msg) {
			a.resend(msg)
		}, []string{protocol.DropDuplicate}},
		{"replays of an earlier run under the key, joins first", func(a *attacker, msg *nats.Msg) {
			// Every recorded join as soon as a node joins, while the job
			// admits its nodes; then anything recorded.
			if rel(msg.Subject) == protocol.SubjectJoin {
				for _, old := range a.recorded {
					if rel(old.Subject) == protocol.SubjectJoin {
						a.resend(old)
					}
				}
				return
			}
			a.resend(a.recorded[a.rng.IntN(len(a.recorded))])
		}, []string{protocol.DropForeign}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "keyed"
			stop := watchKeyed(t, srv, name, tc.react, old)
			m := monitor.New()
			got, err := run(name, m)
			stop()
			if err != nil {
				t.Fatalf("job: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the model differs from the clean run's")
			}
			dropped := droppedBy(t, m)
			t.Logf("dropped: %v", dropped)
			for _, reason := range tc.reasons {
				if dropped[reason] == 0 {
					t.Errorf("no message dropped as %s", reason)
				}
			}
		})
	}
}

// TestKeyedJoinRefused: a worker without the job's key, or with another,
// takes no place in a job with a key, and one with a key none in a job
// without: each fails within its join timeout with an error that says
// why.
func TestKeyedJoinRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testhelper.StartServer(t, natsserver.Options{})
	key := wire.NewKey()
	cases := []struct {
		name          string
		coord, worker wire.Key
		want          string
	}{
		{"worker without the key", key, wire.Key{}, "join refused: wrong key"},
		{"worker with another key", key, wire.NewKey(), "the job's coordinator does not have this key"},
		{"coordinator without a key", wire.Key{}, key, "the job's coordinator does not have this key"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "kj" + strconv.Itoa(i)
			opts := ckptOptions(name, srv.ClientURL(), "", filepath.Join(t.TempDir(), "out.csv"), false, nil, 20*time.Second)
			opts.Coordinator.CheckpointEvery, opts.Coordinator.Workers = 0, 1
			// Running until cancelled, while the outsider tries.
			opts.Coordinator.MaxRounds, opts.Coordinator.Tol = 1<<40, 0
			opts.Coordinator.JoinTimeout = 5 * time.Second
			opts.Key = tc.coord
			jctx, jcancel := context.WithCancel(ctx)
			defer jcancel()
			done := make(chan error, 1)
			go func() {
				_, err := runModel(jctx, opts) // its own worker fills the place
				done <- err
			}()
			nc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			c, err := wire.NewConn(nc, name)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.SetKey(tc.worker); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = worker.Run(ctx, c, hostileProgram().NewWorker, worker.Options{ID: "outsider", JoinTimeout: 3 * time.Second, Timeout: 3 * time.Second})
			took := time.Since(start)
			switch {
			case err == nil:
				t.Fatalf("the worker joined")
			case !strings.Contains(err.Error(), tc.want):
				t.Fatalf("worker: %v, want %q", err, tc.want)
			case tc.want != "join refused: wrong key" && !errors.Is(err, protocol.ErrTimeout):
				t.Errorf("worker: %v does not match ErrTimeout", err)
			}
			t.Logf("after %s: %v", took.Round(time.Millisecond), err)
			jcancel()
			<-done
		})
	}
}

// TestKeyedResume: a job with a key seals its checkpoints' manifests;
// --resume with the key goes on to the same model, and with another key
// refuses the manifest.
func TestKeyedResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	key := wire.NewKey()
	opts := ckptOptions("kres", "", store, filepath.Join(dir, "first.csv"), false, nil, 20*time.Second)
	opts.Key = key
	want, err := runModel(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts = ckptOptions("kres", "", store, filepath.Join(dir, "other-key.csv"), true, nil, 20*time.Second)
	opts.Key = wire.NewKey()
	if _, err := runModel(ctx, opts); !errors.Is(err, checkpoint.ErrForgedManifest) {
		t.Fatalf("resume with another key: %v, want ErrForgedManifest", err)
	}
	opts = ckptOptions("kres", "", store, filepath.Join(dir, "resumed.csv"), true, nil, 20*time.Second)
	opts.Key = key
	got, err := runModel(ctx, opts)
	if err != nil {
		t.Fatalf("resume with the key: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the resumed job found another model")
	}
}

// TestKeyedJoinReplayChallenged records the joins of a run of a job with
// a key, MACs and reply subjects as they were, and replays them to the
// coordinator of the next run: each is answered with a challenge (the new
// coordinator's ticket), never with a place or the run id (DESIGN "Hostile traffic").
func TestKeyedJoinReplayChallenged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testhelper.StartServer(t, natsserver.Options{})
	key := wire.NewKey()
	rec, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	var mu sync.Mutex
	var joins []*nats.Msg
	sub, err := rec.Subscribe("strads.kjr.join", func(msg *nats.Msg) {
		mu.Lock()
		joins = append(joins, msg)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	rec.Flush()
	opts := ckptOptions("kjr", srv.ClientURL(), "", filepath.Join(t.TempDir(), "out.csv"), false, nil, 20*time.Second)
	opts.Coordinator.CheckpointEvery, opts.Coordinator.MaxRounds = 0, 20
	opts.Key = key
	if _, err := runModel(ctx, opts); err != nil {
		t.Fatal(err)
	}
	sub.Unsubscribe()
	mu.Lock()
	old := joins
	mu.Unlock()
	if len(old) < 4 {
		t.Fatalf("%d joins recorded, want at least one per node", len(old))
	}

	// The next run: its coordinator alone, waiting for its nodes.
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := wire.NewConn(nc, "kjr")
	if err == nil {
		err = c.SetKey(key)
	}
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	claimed := make(chan struct{})
	copts := opts.Coordinator
	copts.JoinTimeout = time.Minute
	copts.Claimed = func() { close(claimed) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		coordinator.Run(cctx, c, hostileProgram().NewCoordinator, copts)
	}()
	defer func() { ccancel(); <-done }()
	select {
	case <-claimed:
	case <-done:
		t.Fatal("the coordinator ended")
	}
	replies := make(chan *nats.Msg, len(old))
	for _, msg := range old {
		s, err := rec.Subscribe(msg.Reply, func(m *nats.Msg) { replies <- m })
		if err != nil {
			t.Fatal(err)
		}
		defer s.Unsubscribe()
	}
	rec.Flush()
	for _, msg := range old {
		if err := rec.PublishMsg(&nats.Msg{Subject: msg.Subject, Reply: msg.Reply, Header: msg.Header, Data: msg.Data}); err != nil {
			t.Fatal(err)
		}
	}
	for range old {
		select {
		case m := <-replies:
			var rep protocol.JoinReply
			if err := codec.Unmarshal(m.Data, &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Challenge == "" || rep.Run != "" || rep.Err != "" {
				t.Errorf("a replayed join was answered %+v, want a challenge alone", rep)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a replayed join had no answer")
		}
	}
}
