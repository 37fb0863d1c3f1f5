package job_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

// ckptJob runs a job of nnls named name on the server at url (url "":
// an embedded one with its store in store), with two workers and two
// scheduler parts, for 600 rounds, that takes a checkpoint every 10 rounds
// and sends heartbeats every 200 ms, or resumes; it returns its model.
func ckptJob(ctx context.Context, name, url, store, out string, resume bool, m *monitor.Metrics, timeout time.Duration) ([]byte, error) {
	return runModel(ctx, ckptOptions(name, url, store, out, resume, m, timeout))
}

// ckptOptions are ckptJob's options.
func ckptOptions(name, url, store, out string, resume bool, m *monitor.Metrics, timeout time.Duration) job.Options {
	return job.Options{Job: name, NATS: url, Store: store, Timeout: timeout, Monitor: m,
		Coordinator: coordinator.Options{Workers: 2, Schedulers: 2, MaxRounds: 600, ReportEvery: 5, Out: out,
			Timeout: timeout, JoinTimeout: 20 * time.Second, CheckpointEvery: 10, Resume: resume,
			Heartbeat: 200 * time.Millisecond, LostAfter: 2 * time.Second}}
}

// runModel runs the nnls job of opts and returns its model.
func runModel(ctx context.Context, opts job.Options) ([]byte, error) {
	if _, err := job.Run(ctx, hostileProgram(), opts); err != nil {
		return nil, err
	}
	return os.ReadFile(opts.Coordinator.Out)
}

func hostileProgram() schmp.Program[nnls.Plan, nnls.Partial, nnls.Update, nnls.Summary] {
	return nnls.Program(nnls.Config{Rows: 300, Cols: 40, Seed: 9, Block: 2})
}

// goRoles runs scheduler nodes of hostileProgram on the connections scheds
// and worker nodes on workers, each in a goroutine of wg, until ctx ends;
// timeout is their round deadline, and they wait 20 s to join.
func goRoles(ctx context.Context, wg *sync.WaitGroup, timeout time.Duration, scheds, workers []*wire.Conn) {
	prog := hostileProgram()
	for _, c := range scheds {
		wg.Go(func() {
			node.Run(ctx, c, prog.NewScheduler, node.Options{JoinTimeout: 20 * time.Second, Timeout: timeout})
		})
	}
	for _, c := range workers {
		wg.Go(func() {
			worker.Run(ctx, c, prog.NewWorker, worker.Options{JoinTimeout: 20 * time.Second, Timeout: timeout})
		})
	}
}

// ckptSubjects are the subjects that checkpoints, heartbeats and spares
// added, and those whose messages carry a rollback or a checkpoint.
var ckptSubjects = []string{
	protocol.SubjectStored, protocol.SubjectBeat, protocol.SubjectBeatCoordinator,
	protocol.SubjectSpare("x"), protocol.SubjectSpare(strings.Repeat("y", 22)),
	protocol.SubjectTask, protocol.SubjectPlan(0), protocol.SubjectPlan(1),
}

// peakHeap samples the process's heap in use until stop is closed, and
// returns the largest sample.
func peakHeap(stop <-chan struct{}) func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { <-done; return peak.Load() }
}

// watch subscribes an attacker on srv to every subject of job name, which
// calls react with each message that goes by (its own and chunks aside);
// stop ends it.
func watch(t *testing.T, srv *natsserver.Server, name string, react func(a *attacker, msg *nats.Msg), old []*nats.Msg) (stop func()) {
	t.Helper()
	return watchSkipping(t, srv, name, react, old, 3, func(msg *nats.Msg) bool { return msg.Header != nil })
}

// watchSkipping is watch, with the attacker's choices seeded by seed, that
// passes over the messages that skip says.
func watchSkipping(t *testing.T, srv *natsserver.Server, name string, react func(a *attacker, msg *nats.Msg), old []*nats.Msg, seed uint64, skip func(*nats.Msg) bool) (stop func()) {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL(), nats.NoEcho())
	if err != nil {
		t.Fatal(err)
	}
	c, err := wire.NewConn(nc, name)
	if err != nil {
		t.Fatal(err)
	}
	a := &attacker{c: c, rng: rand.New(rand.NewPCG(seed, seed+1)), recorded: old}
	var mu sync.Mutex
	sub, err := nc.Subscribe("strads."+name+".>", func(msg *nats.Msg) {
		if skip(msg) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		react(a, msg)
	})
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	return func() { sub.Unsubscribe(); nc.Close() }
}

// field returns m's field name as a number, 0 if it has none.
func field(data []byte, name string) uint64 {
	var m map[string]any
	if codec.Unmarshal(data, &m) != nil {
		return 0
	}
	switch v := m[name].(type) {
	case uint64:
		return v
	case int64:
		return uint64(v)
	case uint8:
		return uint64(v)
	case uint16:
		return uint64(v)
	case uint32:
		return uint64(v)
	case int8:
		return uint64(v)
	case int16:
		return uint64(v)
	case int32:
		return uint64(v)
	}
	return 0
}

// runOf returns the run id of a message, "" if it has none.
func runOf(data []byte) string {
	var h protocol.Header
	if codec.Unmarshal(data, &h) != nil {
		return ""
	}
	return h.Run
}

// TestHostileCheckpointTraffic runs a job that takes checkpoints, with
// heartbeats, while an attacker on its subjects sends, on the subjects of
// checkpoints, heartbeats and spares (stored, beat, beat.coordinator,
// spare.*) and on those of tasks and plan requests, random bytes,
// truncated msgpack, messages of the wrong type, forged notices of stored
// pieces, heartbeats, rollbacks, checkpoints and assignments of another
// run, replays of this run and of an earlier one, and large messages: the
// job ends with the clean run's model, bit for bit, its memory bounded,
// and (the attacker's messages of another run never being applied) a
// checkpoint that --resume takes back to that model.
func TestHostileCheckpointTraffic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	want, err := ckptJob(ctx, "hck", "", filepath.Join(dir, "store"), filepath.Join(dir, "clean.csv"), false, nil, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: filepath.Join(dir, "js")})

	// Record a run, to replay its messages (stored notices and heartbeats
	// among them) into later ones.
	var mu sync.Mutex
	var old []*nats.Msg
	stop := watch(t, srv, "hck", func(_ *attacker, msg *nats.Msg) {
		mu.Lock()
		old = append(old, msg)
		mu.Unlock()
	}, nil)
	if got, err := ckptJob(ctx, "hck", srv.ClientURL(), "", filepath.Join(dir, "recorded.csv"), false, nil, 20*time.Second); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the recorded run: %v, or another model", err)
	}
	stop()
	mu.Lock()
	recorded := old
	mu.Unlock()
	kinds := map[string]int{}
	for _, msg := range recorded {
		kinds[strings.Split(strings.TrimPrefix(msg.Subject, "strads.hck."), ".")[0]]++
	}
	if kinds[protocol.SubjectStored] == 0 || kinds["beat"] == 0 {
		t.Fatalf("the recorded run has no stored notice or heartbeat: %v", kinds)
	}

	bogus := strings.Repeat("0f", 32)
	for i, tc := range []struct {
		name  string
		react func(a *attacker, msg *nats.Msg, rel string)
	}{
		{"random bytes", func(a *attacker, _ *nats.Msg, _ string) {
			junk := make([]byte, a.rng.IntN(512))
			for i := range junk {
				junk[i] = byte(a.rng.Uint32())
			}
			a.publish(ckptSubjects[a.rng.IntN(len(ckptSubjects))], "", junk)
		}},
		{"truncated msgpack", func(a *attacker, msg *nats.Msg, rel string) {
			if len(msg.Data) > 1 {
				a.publish(rel, "", msg.Data[:a.rng.IntN(len(msg.Data)-1)])
			}
		}},
		{"messages of the wrong type", func(a *attacker, msg *nats.Msg, rel string) {
			// Tasks, plans and partials on the new subjects, and stored
			// notices and heartbeats on the others'.
			to := ckptSubjects[a.rng.IntN(len(ckptSubjects))]
			if strings.HasPrefix(rel, "beat") || rel == protocol.SubjectStored {
				to = subjects[a.rng.IntN(len(subjects))]
			}
			if to != rel {
				a.publish(to, msg.Reply, msg.Data)
			}
		}},
		{"forged messages of another run", func(a *attacker, msg *nats.Msg, rel string) {
			switch {
			case rel == protocol.SubjectStored:
				b, _ := codec.Marshal(protocol.Stored{Header: protocol.Header{Type: protocol.TypeStored, Run: "forged"},
					Role: protocol.RoleWorker, Place: a.rng.IntN(2), Round: field(msg.Data, "round"), Digest: bogus, Bytes: 1})
				a.publish(rel, "", b)
			case strings.HasPrefix(rel, "beat"):
				b := forge(msg.Data, func(m map[string]any) { m["run"] = "forged" })
				a.publish(rel, "", b)
			case rel == protocol.SubjectTask || strings.HasPrefix(rel, "plan."):
				rb := &protocol.Rollback{Round: 10, Run: "forged-run"}
				var b []byte
				if rel == protocol.SubjectTask {
					b, _ = codec.Marshal(protocol.Task[nnls.Plan, nnls.Update]{Header: protocol.Header{Type: protocol.TypeTask, Run: "forged"}, Rollback: rb})
				} else {
					b, _ = codec.Marshal(protocol.PlanRequest{Header: protocol.Header{Type: protocol.TypePlanRequest, Run: "forged"}, Rollback: rb})
				}
				a.publish(rel, "", b)
				// A request for a checkpoint, under another run.
				a.publish(rel, msg.Reply, forge(msg.Data, func(m map[string]any) { m["run"], m["ckpt"] = "forged", field(msg.Data, "round")-1 }))
				b, _ = codec.Marshal(protocol.Assign{Header: protocol.Header{Type: protocol.TypeAssign, Run: "forged"}, Shard: 0, Shards: 2, Rollback: rb})
				a.publish(protocol.SubjectSpare("x"), "", b)
			}
		}},
		{"replays of this run", func(a *attacker, msg *nats.Msg, rel string) {
			a.publish(rel, msg.Reply, msg.Data)
		}},
		{"replays of an earlier run", func(a *attacker, _ *nats.Msg, _ string) {
			// Joins aside (see TestHostileTraffic).
			old := a.recorded[a.rng.IntN(len(a.recorded))]
			if rel := strings.TrimPrefix(old.Subject, "strads.hck."); rel != protocol.SubjectJoin {
				a.publish(rel, old.Reply, old.Data)
			}
		}},
		{"large messages and huge chunks", func(a *attacker, msg *nats.Msg, rel string) {
			to := ckptSubjects[a.rng.IntN(len(ckptSubjects))]
			if a.rng.IntN(10) == 0 {
				a.publish(to, "", bytes.Repeat([]byte{0xc1}, 4<<20))
			}
			h := nats.Header{wire.HeaderChunkID: {strconv.Itoa(a.rng.IntN(1000))}, wire.HeaderChunk: {"0/1024"}, wire.HeaderChunkSize: {strconv.Itoa(1 << 30)}}
			a.c.NATS().PublishMsg(&nats.Msg{Subject: a.c.Subject(to), Header: h, Data: []byte{1}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "hck" + strconv.Itoa(i)
			stop := watch(t, srv, name, func(a *attacker, msg *nats.Msg) {
				tc.react(a, msg, strings.TrimPrefix(msg.Subject, "strads."+name+"."))
			}, recorded)
			defer stop()
			m := monitor.New()
			done := make(chan struct{})
			peak := peakHeap(done)
			out := filepath.Join(dir, name+".csv")
			got, err := ckptJob(ctx, name, srv.ClientURL(), "", out, false, m, 20*time.Second)
			close(done)
			stop()
			if err != nil {
				t.Fatalf("job: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the model differs from the clean run's")
			}
			if n := droppedTotal(t, m); n == 0 {
				t.Errorf("no message dropped")
			}
			if p := peak(); p > 1<<30 {
				t.Errorf("heap in use reached %d MiB", p>>20)
			} else {
				t.Logf("heap in use at most %d MiB", p>>20)
			}
			// The checkpoints committed are the job's own: a resume
			// from the last ends with the same model.
			os.Remove(out)
			got, err = ckptJob(ctx, name, srv.ClientURL(), "", out, true, nil, 20*time.Second)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("resumed: %v, or another model", err)
			}
		})
	}
}

// TestForgedStoredNotice forges, with the run id that anyone on the job's
// subjects reads, a notice that every worker and scheduler part stored
// its piece of each checkpoint, with a bogus digest, sent as soon as the
// task that asks for the pieces goes by (before the real notices): the
// job ends with the clean model, and no checkpoint whose pieces do not
// match their digests is committed (the coordinator verifies them
// against the store first, and abandons the checkpoint): --resume goes
// on from a checkpoint whose pieces are the job's, to the same model, or
// fails saying that there is none; it never restores other state.
func TestForgedStoredNotice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	want, err := ckptJob(ctx, "fst", "", filepath.Join(dir, "store"), filepath.Join(dir, "clean.csv"), false, nil, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: filepath.Join(dir, "js")})
	var forged atomic.Int64
	stop := watch(t, srv, "fst", func(a *attacker, msg *nats.Msg) {
		rel := strings.TrimPrefix(msg.Subject, "strads.fst.")
		if rel != protocol.SubjectTask {
			return
		}
		round := field(msg.Data, "ckpt")
		if round == 0 {
			return
		}
		for _, role := range []string{protocol.RoleWorker, protocol.RoleScheduler} {
			for place := range 2 {
				b, _ := codec.Marshal(protocol.Stored{Header: protocol.Header{Type: protocol.TypeStored, Run: runOf(msg.Data)},
					Role: role, Place: place, Round: round, Digest: strings.Repeat("0f", 32), Bytes: 1})
				a.publish(protocol.SubjectStored, "", b)
				forged.Add(1)
			}
		}
	}, nil)
	out := filepath.Join(dir, "forged.csv")
	opts := ckptOptions("fst", srv.ClientURL(), "", out, false, nil, 20*time.Second)
	var logs syncBuffer
	opts.Coordinator.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	got, err := runModel(ctx, opts)
	stop()
	if err != nil {
		t.Fatalf("job: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the model differs from the clean run's")
	}
	if forged.Load() == 0 {
		t.Fatal("no notice forged")
	}
	// A forged notice that came before the real one either left its
	// checkpoint abandoned (its piece not yet stored at the commit) or was
	// corrected from the store's digest.
	abandoned := strings.Count(logs.String(), "checkpoint not committed")
	corrected := strings.Count(logs.String(), "forged?")
	t.Logf("%d notices forged, %d checkpoints abandoned, %d corrected", forged.Load(), abandoned, corrected)
	if abandoned+corrected == 0 {
		t.Errorf("no checkpoint abandoned or corrected: no forged notice came before the real one?")
	}

	// Whatever checkpoint was committed holds the pieces it names.
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	store, err := checkpoint.Open(ctx, nc, "fst", false)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := store.Latest(ctx); err == nil {
		if err := store.Verify(ctx, m); err != nil {
			t.Errorf("a checkpoint committed with a piece that its manifest does not describe: %v", err)
		}
	} else if !errors.Is(err, checkpoint.ErrNone) {
		t.Fatal(err)
	}

	os.Remove(out)
	got, err = ckptJob(ctx, "fst", srv.ClientURL(), "", out, true, nil, 20*time.Second)
	switch {
	case err == nil && !bytes.Equal(got, want):
		t.Fatalf("resumed from a forged checkpoint: another model")
	case err == nil:
		t.Logf("resumed to the clean model")
	case errors.Is(err, checkpoint.ErrNone):
		t.Logf("resume: %v", err)
	default:
		t.Fatalf("resume: %v, want the clean model or no checkpoint", err)
	}
}

// syncBuffer is a bytes.Buffer that goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestForgedRollback forges, with the run id, a rollback to the first
// checkpoint on the task subject, or on the plan requests' subjects, once
// the job is past it: the nodes that take it leave the run, and the job
// fails within its deadlines with an error that names a node, never
// hangs and never ends with another model.
func TestForgedRollback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: filepath.Join(dir, "js")})
	want, err := ckptJob(ctx, "frb", srv.ClientURL(), "", filepath.Join(dir, "clean.csv"), false, nil, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{protocol.SubjectTask, protocol.SubjectPlan(0)} {
		t.Run(subject, func(t *testing.T) {
			var once sync.Once
			stop := watch(t, srv, "frb", func(a *attacker, msg *nats.Msg) {
				rel := strings.TrimPrefix(msg.Subject, "strads.frb.")
				if rel != protocol.SubjectTask || field(msg.Data, "round") < 3*10 {
					return
				}
				once.Do(func() {
					rb := &protocol.Rollback{Round: 10, Run: "forged-run"}
					h := protocol.Header{Run: runOf(msg.Data)}
					var b []byte
					if subject == protocol.SubjectTask {
						h.Type = protocol.TypeTask
						b, _ = codec.Marshal(protocol.Task[nnls.Plan, nnls.Update]{Header: h, Rollback: rb})
					} else {
						h.Type = protocol.TypePlanRequest
						b, _ = codec.Marshal(protocol.PlanRequest{Header: h, Rollback: rb})
					}
					a.publish(subject, "", b)
				})
			}, nil)
			defer stop()
			start := time.Now()
			got, err := ckptJob(ctx, "frb", srv.ClientURL(), "", filepath.Join(dir, "forged.csv"), false, nil, 4*time.Second)
			took := time.Since(start)
			switch {
			case err == nil && !bytes.Equal(got, want):
				t.Fatalf("another model")
			case err == nil:
				t.Logf("the forged rollback came too late: the clean model")
			case took > 20*time.Second:
				t.Errorf("failed after %s: %v", took, err)
			case !errors.Is(err, protocol.ErrTimeout) && !errors.Is(err, protocol.ErrConflict) && !errors.Is(err, protocol.ErrAborted):
				t.Errorf("job: %v, want a timeout, a conflict or an abort", err)
			default:
				t.Logf("after %s: %v", took.Round(time.Millisecond), err)
			}
		})
	}
}

// TestForgedHeartbeats loses a worker (its connection closed, as a
// process killed) while an attacker forges every node's heartbeats with
// the run id: the heartbeats hide the loss from the coordinator's
// heartbeat check, but not from its round deadline: the job fails within
// its timeout, naming the silent worker.
func TestForgedHeartbeats(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: filepath.Join(dir, "js")})
	const timeout = 4 * time.Second
	for _, forge := range []bool{false, true} {
		t.Run("forged "+strconv.FormatBool(forge), func(t *testing.T) {
			name := "fhb" + strconv.FormatBool(forge)
			// The attacker forges heartbeats of every place, every 50 ms,
			// from the first task on.
			var run atomic.Value
			stop := watch(t, srv, name, func(a *attacker, msg *nats.Msg) {
				if strings.HasSuffix(msg.Subject, "."+protocol.SubjectTask) && run.Load() == nil {
					run.Store(runOf(msg.Data))
				}
			}, nil)
			defer stop()
			fctx, fstop := context.WithCancel(ctx)
			defer fstop()
			if forge {
				nc, err := nats.Connect(srv.ClientURL())
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				go func() {
					tick := time.NewTicker(50 * time.Millisecond)
					defer tick.Stop()
					for fctx.Err() == nil {
						<-tick.C
						r, _ := run.Load().(string)
						if r == "" {
							continue
						}
						for _, role := range []string{protocol.RoleWorker, protocol.RoleScheduler} {
							for place := range 2 {
								b, _ := codec.Marshal(protocol.Heartbeat{Header: protocol.Header{Type: protocol.TypeHeartbeat, Run: r}, Role: role, Place: place})
								nc.Publish("strads."+name+"."+protocol.SubjectBeat, b)
							}
						}
					}
				}()
			}
			prog := hostileProgram()
			connect := func() *wire.Conn {
				nc, err := nats.Connect(srv.ClientURL())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				c, err := wire.NewConn(nc, name)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			// nnls converges in a few hundred rounds: many rounds, so that
			// the job still runs when its worker is lost.
			co := coordinator.Options{Workers: 2, Schedulers: 2, MaxRounds: 1 << 20, ReportEvery: 5, Out: filepath.Join(dir, name+".csv"),
				Timeout: timeout, JoinTimeout: 20 * time.Second, CheckpointEvery: 10,
				Heartbeat: 200 * time.Millisecond, LostAfter: time.Second}
			var wg sync.WaitGroup
			victim := connect()
			goRoles(fctx, &wg, timeout, []*wire.Conn{connect(), connect()}, []*wire.Conn{connect(), victim})
			var lost atomic.Int64
			go func() {
				// Lose the victim once the job runs and forged beats flow.
				for run.Load() == nil && fctx.Err() == nil {
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(500 * time.Millisecond)
				lost.Store(time.Now().UnixNano())
				victim.NATS().Close()
			}()
			_, err := coordinator.Run(fctx, connect(), prog.NewCoordinator, co)
			took := time.Since(time.Unix(0, lost.Load()))
			fstop()
			wg.Wait()
			if err == nil || !errors.Is(err, protocol.ErrTimeout) || !strings.Contains(err.Error(), "worker shard") {
				t.Fatalf("job: %v, want a timeout naming a worker shard", err)
			}
			if limit := timeout + 2*time.Second; took > limit {
				t.Errorf("the loss found %s after it, more than %s: %v", took, limit, err)
			}
			t.Logf("after %s: %v", took.Round(time.Millisecond), err)
		})
	}
}

// TestForgedSpareAssign forges, with the run id, an assignment that ends
// the wait of every spare (a spare's ID is in its join, which anyone on
// the job's subjects sees), then loses a worker: the spare has left, so
// the job cannot replace the worker; it fails within its deadlines with
// an error naming the lost worker and the spare that does not answer,
// and never hangs.
//
// Which worker is the spare is the coordinator's choice: every node joins
// before the coordinator is up, and is admitted when a retry of its join
// finds it, in no set order; a node may even join after the job's first
// task. The forged assignment goes to every node that joined, and to any
// that joins later, and the test loses a worker other than the one that
// left.
func TestForgedSpareAssign(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: filepath.Join(dir, "js")})
	const name, timeout, join = "fsp", 4 * time.Second, 5 * time.Second
	var mu sync.Mutex
	var ids []string
	var run atomic.Value
	var released atomic.Bool
	stop := watch(t, srv, name, func(a *attacker, msg *nats.Msg) {
		rel := strings.TrimPrefix(msg.Subject, "strads."+name+".")
		var jr protocol.JoinRequest
		switch {
		case rel == protocol.SubjectJoin && codec.Unmarshal(msg.Data, &jr) == nil:
			mu.Lock()
			if !slices.Contains(ids, jr.ID) {
				ids = append(ids, jr.ID)
			}
			mu.Unlock()
			if r, ok := run.Load().(string); ok {
				// A node that joins once the job runs waits as a spare.
				b, _ := codec.Marshal(protocol.Assign{Header: protocol.Header{Type: protocol.TypeAssign, Run: r}, Stop: true})
				a.publish(protocol.SubjectSpare(jr.ID), "", b)
			}
		case rel == protocol.SubjectTask && run.Load() == nil:
			run.Store(runOf(msg.Data))
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				b, _ := codec.Marshal(protocol.Assign{Header: protocol.Header{Type: protocol.TypeAssign, Run: runOf(msg.Data)}, Stop: true})
				a.publish(protocol.SubjectSpare(id), "", b)
			}
			released.Store(true)
		}
	}, nil)
	defer stop()
	fctx, fstop := context.WithCancel(ctx)
	defer fstop()
	prog := hostileProgram()
	connect := func() *wire.Conn {
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		c, err := wire.NewConn(nc, name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	co := coordinator.Options{Workers: 2, Schedulers: 1, MaxRounds: 1 << 20, ReportEvery: 5, Out: filepath.Join(dir, "model.csv"),
		Timeout: timeout, JoinTimeout: join, CheckpointEvery: 10, Spares: 1,
		Heartbeat: 200 * time.Millisecond, LostAfter: time.Second}
	var wg sync.WaitGroup
	c := connect()
	wg.Add(1)
	go func() {
		defer wg.Done()
		node.Run(fctx, c, prog.NewScheduler, node.Options{JoinTimeout: join, Timeout: timeout})
	}()
	// The workers start one after the other; any of them may be the spare.
	var conns []*wire.Conn
	type left struct {
		worker int
		err    error
	}
	spareLeft := make(chan left, 3)
	for i := range 3 {
		c := connect()
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := worker.Run(fctx, c, prog.NewWorker, worker.Options{JoinTimeout: join, Timeout: timeout})
			spareLeft <- left{i, err}
		}()
		for {
			mu.Lock()
			n := len(ids)
			mu.Unlock()
			if n > i+1 || fctx.Err() != nil { // the scheduler's join, and this worker's
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	var lost atomic.Int64
	go func() {
		var l left
		select {
		case l = <-spareLeft:
			t.Logf("the spare, worker %d, left: %v", l.worker, l.err)
		case <-fctx.Done():
			return
		}
		time.Sleep(300 * time.Millisecond)
		lost.Store(time.Now().UnixNano())
		conns[(l.worker+1)%3].NATS().Close() // a worker that holds a place
	}()
	_, err := coordinator.Run(fctx, connect(), prog.NewCoordinator, co)
	took := time.Since(time.Unix(0, lost.Load()))
	fstop()
	wg.Wait()
	if !released.Load() {
		t.Fatal("no assignment forged")
	}
	if err == nil || !strings.Contains(err.Error(), "worker shard") {
		t.Fatalf("job: %v, want an error naming the lost worker", err)
	}
	if limit := co.LostAfter + join + 2*time.Second; took > limit {
		t.Errorf("failed %s after the loss, more than %s: %v", took, limit, err)
	}
	t.Logf("after %s: %v", took.Round(time.Millisecond), err)
}
