package coordinator_test

import (
	"bufio"
	"errors"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

// tap listens to the job subject name of c, as anybody on the job's NATS
// account can, and calls react with each message as it passes, in order.
// (A tap on every subject, "strads.<job>.>", would hold joins back: a join
// request finds a responder that never answers, and waits for it.)
func tap(t *testing.T, c *wire.Conn, name string, react func(msg *nats.Msg)) {
	t.Helper()
	sub, err := c.NATS().Subscribe(c.Subject(name), react)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := c.NATS().Flush(); err != nil {
		t.Fatal(err)
	}
}

// dropped returns the messages that nodes of role dropped for reason, as
// m serves them to Prometheus.
func dropped(t *testing.T, m *monitor.Metrics, role, reason string) float64 {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	want := fmt.Sprintf("strads_dropped_messages_total{reason=%q,role=%q} ", reason, role)
	sc := bufio.NewScanner(w.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// gates lets the workers push round t only once the forger is done with
// the task of round t, so that what it forged reaches the other nodes
// first (the server delivers the messages it has in the order it got
// them).
type gates struct {
	mu sync.Mutex
	ch map[uint64]chan struct{}
}

func (g *gates) get(round uint64) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = map[uint64]chan struct{}{}
	}
	if g.ch[round] == nil {
		g.ch[round] = make(chan struct{})
	}
	return g.ch[round]
}

func (g *gates) open(round uint64) {
	ch := g.get(round)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func (g *gates) wait(round uint64) {
	select {
	case <-g.get(round):
	case <-time.After(10 * time.Second):
	}
}

// TestJobIdentity checks that a message of another run, of the wrong type,
// or replayed, is dropped and counted, and changes nothing, and that a
// partial forged with the job's run id, which differs from the worker's,
// fails the job with an error naming the worker and the subject (DESIGN
// "Failures and durability").
func TestJobIdentity(t *testing.T) {
	ns := startServer(t)
	type task = protocol.Task[uint64, uint64]
	for _, tc := range []struct {
		name string
		// forge returns what to publish, and on which subject, when the
		// forger sees t, the task of a round (run is the job's run id);
		// nil: nothing.
		forge  func(t task, run string) (subject string, msg any)
		role   string // the role that drops what the forger sends…
		reason string // …for this reason
		err    error  // the job's error; nil: it succeeds
	}{
		{"partials of another run", func(t task, _ string) (string, any) {
			return protocol.SubjectPartial, protocol.Partial[uint64, uint64]{Header: protocol.Header{Type: protocol.TypePartial, Run: "another"},
				Round: t.Round, Shard: 0, Partial: 7, Report: 1 << 40, HasReport: t.Report}
		}, "coordinator", protocol.DropForeign, nil},
		{"plans of another run", func(t task, _ string) (string, any) {
			return protocol.SubjectPlanned, protocol.PlanReply[uint64]{Header: protocol.Header{Type: protocol.TypePlanReply, Run: "another"}, Round: t.Round + 1, Plan: 99}
		}, "coordinator", protocol.DropForeign, nil},
		{"tasks as partials", func(t task, _ string) (string, any) {
			return protocol.SubjectPartial, t
		}, "coordinator", protocol.DropGarbage, nil},
		{"garbage partials", func(task, string) (string, any) {
			return protocol.SubjectPartial, []byte{0xc1, 0xff, 0}
		}, "coordinator", protocol.DropGarbage, nil},
		{"stops of another run", func(t task, _ string) (string, any) {
			return protocol.SubjectTask, task{Header: protocol.Header{Type: protocol.TypeTask, Run: "another"}, Round: t.Round + 1, Stop: true, Abort: "forged"}
		}, "worker", protocol.DropForeign, nil},
		{"plan requests without a run", func(t task, _ string) (string, any) {
			return protocol.SubjectPlan(0), protocol.PlanRequest{Header: protocol.Header{Type: protocol.TypePlanRequest}, Round: t.Round + 1}
		}, "scheduler", protocol.DropForeign, nil},
		{"replayed tasks", func(t task, _ string) (string, any) {
			return protocol.SubjectTask, t
		}, "worker", protocol.DropDuplicate, nil},
		{"partials forged with the run id", func(t task, run string) (string, any) {
			if t.Round != 3 || t.Check {
				return "", nil
			}
			return protocol.SubjectPartial, protocol.Partial[uint64, uint64]{Header: protocol.Header{Type: protocol.TypePartial, Run: run},
				Round: t.Round, Shard: 1, Partial: 7, Report: 1 << 40, HasReport: t.Report}
		}, "", "", protocol.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := strings.NewReplacer(" ", "-").Replace(tc.name)
			forger := connect(t, ns, job)
			var g gates
			var mu sync.Mutex
			var forgeErr error
			tap(t, forger, protocol.SubjectTask, func(msg *nats.Msg) {
				var tk task
				if err := codec.Unmarshal(msg.Data, &tk); err != nil || tk.Abort != "" {
					return
				}
				defer g.open(tk.Round)
				subject, m := tc.forge(tk, tk.Run)
				var err error
				switch m := m.(type) {
				case nil:
					return
				case []byte:
					err = forger.NATS().Publish(forger.Subject(subject), m)
				default:
					err = wire.Publish(forger, subject, m)
				}
				if err == nil {
					err = forger.NATS().Flush()
				}
				if err != nil {
					mu.Lock()
					forgeErr = err
					mu.Unlock()
				}
			})
			m := monitor.New()
			timeouts := func(d time.Duration) (time.Duration, time.Duration) { return d, d }
			var wopts worker.Options
			wopts.Timeout, wopts.JoinTimeout = timeouts(20 * time.Second)
			wopts.Monitor = m
			sopts := node.Options{Timeout: 20 * time.Second, JoinTimeout: 20 * time.Second, Monitor: m}
			o := runRoles(t, ns, job, roles[uint64, uint64, uint64, uint64]{
				prog:        counting{gate: g.wait}.program(),
				coordinator: coordinator.Options{Workers: 2, MaxRounds: 6, ReportEvery: 1, Timeout: 20 * time.Second, JoinTimeout: 20 * time.Second, Monitor: m},
				workers:     times(2, wopts),
				schedulers:  times(1, sopts),
			})
			if forgeErr != nil {
				t.Fatal(forgeErr)
			}
			if tc.err != nil {
				if !errors.Is(o.err, tc.err) || !strings.Contains(o.err.Error(), "worker shard 1") || !strings.Contains(o.err.Error(), forger.Subject(protocol.SubjectPartial)) {
					t.Fatalf("job: %v, want %v naming worker shard 1 and the subject", o.err, tc.err)
				}
				return
			}
			if o.err != nil {
				t.Fatalf("job: %v", o.err)
			}
			for i, err := range append(o.workers, o.schedulers...) {
				if err != nil {
					t.Errorf("node %d: %v", i, err)
				}
			}
			if o.res.Rounds != 6 || o.res.Final.Objective != 1/7.0 {
				t.Errorf("%d rounds, objective %v; want 6 and 1/7", o.res.Rounds, o.res.Final.Objective)
			}
			if n := dropped(t, m, tc.role, tc.reason); n < 5 {
				t.Errorf("%s dropped %v messages (%s), want at least 5", tc.role, n, tc.reason)
			}
			if tc.role == "coordinator" && o.res.Dropped[tc.reason] < 5 {
				t.Errorf("result: dropped %v, want at least 5 %s", o.res.Dropped, tc.reason)
			}
		})
	}
}

// TestPanicFailsTheJob checks that an app's method that panics fails the
// job at once, as an error does, with an error that names the node, the
// round and the method (protocol.Guard), and that the worker returns it.
func TestPanicFailsTheJob(t *testing.T) {
	ns := startServer(t)
	opts := worker.Options{Timeout: 20 * time.Second, JoinTimeout: 20 * time.Second}
	o := runRoles(t, ns, "panics", roles[uint64, uint64, uint64, uint64]{
		prog:        counting{failShard: 1, panicPush: 3}.program(),
		coordinator: coordinator.Options{Workers: 2, MaxRounds: 6, ReportEvery: 1, Timeout: 20 * time.Second, JoinTimeout: 20 * time.Second},
		workers:     times(2, opts),
		schedulers:  times(1, node.Options{Timeout: 20 * time.Second, JoinTimeout: 20 * time.Second}),
	})
	const want = `^worker shard 1 \(host .*, pid [0-9]+\): round 3: Push panicked: runtime error: index out of range \[3\] with length 0 \(coordinator_test.\(\*countingRole\).Push, roles_test.go:[0-9]+\)$`
	// The nodes take their shards in the order they join.
	panicked := errors.Is(o.workers[0], protocol.ErrPanic) || errors.Is(o.workers[1], protocol.ErrPanic)
	if !errors.Is(o.err, coordinator.ErrAborted) || !panicked || !regexpMatch(want, o.err.Error()) || o.took > failFast {
		t.Errorf("job: %v after %v; workers: %v; want an abort at once matching %s", o.err, o.took, o.workers, want)
	}
}
