package job_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/schmp"
)

// walk is a small app whose every role has state that a resume must
// restore exactly: the scheduler's random source, each worker's sum of the
// updates it applied, the coordinator's model. Its model depends on every
// one of them, in every round, so a resume that restored any wrongly ends
// with another model.
type (
	walkPlan    struct{ Var int }
	walkPartial struct{ V float64 }
	walkUpdate  struct {
		Var int
		D   float64
	}
	walkSummary struct{ S float64 }
)

const walkVars = 7

type walkScheduler struct {
	src *rand.PCG
	rng *rand.Rand
}

func (s *walkScheduler) Schedule(round uint64, fb []schmp.Feedback) (walkPlan, schmp.PlanInfo, error) {
	j := s.rng.IntN(walkVars)
	return walkPlan{j}, schmp.PlanInfo{Vars: []int32{int32(j)}, Candidates: walkVars, Selected: 1}, nil
}

func (s *walkScheduler) Snapshot() ([]byte, error) { return s.src.MarshalBinary() }
func (s *walkScheduler) Restore(b []byte) error    { return s.src.UnmarshalBinary(b) }

type walkWorker struct {
	shard int
	data  []float64
	sum   float64
}

func (w *walkWorker) Describe() (walkSummary, error) { return walkSummary{}, nil }
func (w *walkWorker) Apply(u walkUpdate) error       { w.sum = w.sum*0.5 + u.D; return nil }
func (w *walkWorker) Push(_ context.Context, round uint64, p walkPlan) (walkPartial, error) {
	return walkPartial{w.data[p.Var] + w.sum/float64(round)}, nil
}
func (w *walkWorker) Report() (walkSummary, error) { return walkSummary{w.sum}, nil }
func (w *walkWorker) Snapshot() ([]byte, error)    { return codec.Marshal(w.sum) }
func (w *walkWorker) Restore(b []byte) error       { return codec.Unmarshal(b, &w.sum) }

type walkCoordinator struct{ X []float64 }

func (c *walkCoordinator) Start([]walkSummary) (walkUpdate, error) { return walkUpdate{}, nil }
func (c *walkCoordinator) Pull(round uint64, p walkPlan, ps []walkPartial) (walkUpdate, schmp.Feedback, error) {
	d := 0.0
	for _, q := range ps {
		d += q.V
	}
	d = d/float64(len(ps)) - 0.5*c.X[p.Var]
	c.X[p.Var] += d
	return walkUpdate{p.Var, d}, schmp.Feedback{Vars: []int32{int32(p.Var)}, Delta: []float64{d}}, nil
}
func (c *walkCoordinator) Objective(rs []walkSummary) (schmp.Progress, error) {
	f := 0.0
	for _, r := range rs {
		f += r.S * r.S
	}
	for _, x := range c.X {
		f += x * x
	}
	return schmp.Progress{Objective: f}, nil
}
func (c *walkCoordinator) WriteModel(w io.Writer) error {
	for _, x := range c.X {
		if _, err := fmt.Fprintf(w, "%x\n", x); err != nil {
			return err
		}
	}
	return nil
}
func (c *walkCoordinator) Snapshot() ([]byte, error) { return codec.Marshal(c.X) }
func (c *walkCoordinator) Restore(b []byte) error {
	var x []float64
	if err := codec.Unmarshal(b, &x); err != nil {
		return err
	}
	if len(x) != walkVars {
		return fmt.Errorf("%d variables, want %d", len(x), walkVars)
	}
	c.X = x
	return nil
}

func walkProgram() schmp.Program[walkPlan, walkPartial, walkUpdate, walkSummary] {
	return schmp.Program[walkPlan, walkPartial, walkUpdate, walkSummary]{
		Name: "walk",
		NewScheduler: func(_ context.Context, part, parts int) (schmp.Scheduler[walkPlan], error) {
			src := rand.NewPCG(uint64(part), 7)
			return &walkScheduler{src, rand.New(src)}, nil
		},
		NewWorker: func(_ context.Context, shard, shards int) (schmp.Worker[walkPlan, walkPartial, walkUpdate, walkSummary], error) {
			r := rand.New(rand.NewPCG(uint64(shard), 3))
			w := &walkWorker{shard: shard, data: make([]float64, walkVars)}
			for j := range w.data {
				w.data[j] = r.NormFloat64()
			}
			return w, nil
		},
		NewCoordinator: func(context.Context) (schmp.Coordinator[walkPlan, walkPartial, walkUpdate, walkSummary], error) {
			return &walkCoordinator{X: make([]float64, walkVars)}, nil
		},
	}
}

// commitGate holds a walk job's last round until the job commits a
// checkpoint: its worker of shard 0 waits in its Push of that round for
// the coordinator's log line of a commit. A job that ended takes in no
// more news of the roles' pieces: 60 quick rounds, on a loaded machine,
// could otherwise end before any checkpoint is committed. The
// pieces of the checkpoints decided before the last round are stored
// before its Push, so the gate never holds a commit up.
type commitGate struct {
	once      sync.Once
	committed chan struct{}
}

func newCommitGate() *commitGate { return &commitGate{committed: make(chan struct{})} }

// commitGateWait bounds the wait of the gate: a job that commits nothing
// goes on after it, and its test fails counting its checkpoints.
const commitGateWait = 30 * time.Second

// Enabled, Handle, WithAttrs and WithGroup make the gate the slog.Handler
// of the coordinator's log, which says "checkpoint committed" after each
// commit.
func (g *commitGate) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (g *commitGate) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "checkpoint committed" {
		g.once.Do(func() { close(g.committed) })
	}
	return nil
}
func (g *commitGate) WithAttrs([]slog.Attr) slog.Handler { return g }
func (g *commitGate) WithGroup(string) slog.Handler      { return g }

// program returns prog whose worker of shard 0 waits for the gate in its
// Push of round last.
func (g *commitGate) program(prog schmp.Program[walkPlan, walkPartial, walkUpdate, walkSummary], last uint64) schmp.Program[walkPlan, walkPartial, walkUpdate, walkSummary] {
	newWorker := prog.NewWorker
	prog.NewWorker = func(ctx context.Context, shard, shards int) (schmp.Worker[walkPlan, walkPartial, walkUpdate, walkSummary], error) {
		w, err := newWorker(ctx, shard, shards)
		if err != nil || shard != 0 {
			return w, err
		}
		return gatedWorker{w.(*walkWorker), g, last}, nil
	}
	return prog
}

// gatedWorker is a walk worker whose Push of round last waits for its gate.
type gatedWorker struct {
	*walkWorker
	gate *commitGate
	last uint64
}

func (w gatedWorker) Push(ctx context.Context, round uint64, p walkPlan) (walkPartial, error) {
	if round == w.last {
		select {
		case <-w.gate.committed:
		case <-ctx.Done():
		case <-time.After(commitGateWait):
		}
	}
	return w.walkWorker.Push(ctx, round, p)
}

// walkJob runs a walk job of 2 workers and 2 scheduler parts, for 60
// rounds, with its checkpoints in store; interruptAt > 0 interrupts it at
// that progress line; awaitCommit holds its last round until it commits a
// checkpoint (commitGate). It returns the model.
func walkJob(t *testing.T, store string, every uint64, resume bool, interruptAt int, awaitCommit bool) ([]byte, *coordinator.Result, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "model")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	co := coordinator.Options{Workers: 2, Schedulers: 2, MaxRounds: 60, ReportEvery: 4, Out: out,
		Timeout: 10 * time.Second, CheckpointEvery: every, Resume: resume}
	if interruptAt > 0 {
		testhelper.Interrupt(&co, interruptAt, cancel)
	}
	prog := walkProgram()
	var handlers []slog.Handler
	if os.Getenv("WALKLOG") != "" {
		handlers = append(handlers, slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if awaitCommit {
		gate := newCommitGate()
		prog = gate.program(prog, co.MaxRounds)
		handlers = append(handlers, gate)
	}
	if len(handlers) > 0 {
		co.Logger = slog.New(slog.NewMultiHandler(handlers...))
	}
	res, err := job.Run(ctx, prog, job.Options{Job: "walk", Store: store, Timeout: 10 * time.Second, Coordinator: co})
	if err != nil {
		return nil, res, err
	}
	b, err := os.ReadFile(out)
	return b, res, err
}

// TestResume checks that a job that takes checkpoints (its last round
// held until one is committed: commitGate) ends with the model of the job
// that takes none; then interrupts a job that takes checkpoints at several
// points, resumes it each time from its store, and checks that the resumed
// job ends with the model of the job that was never interrupted, bit for
// bit, and that the interrupted one wrote nothing.
func TestResume(t *testing.T) {
	want, res, err := walkJob(t, "", 0, false, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rounds != 60 {
		t.Fatalf("%d rounds, want 60", res.Rounds)
	}
	got, res, err := walkJob(t, t.TempDir(), 5, false, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || res.Checkpoints == 0 || res.LastCheckpoint == 0 {
		t.Fatalf("with checkpoints: model equal %t, %d checkpoints (the last of round %d)", bytes.Equal(got, want), res.Checkpoints, res.LastCheckpoint)
	}
	for _, at := range []int{30, 75, 130} {
		t.Run(fmt.Sprint("line ", at), func(t *testing.T) {
			store := t.TempDir()
			_, _, err := walkJob(t, store, 3, false, at, false)
			if err == nil || !strings.HasPrefix(err.Error(), "test interrupt (the state after round") {
				t.Fatalf("interrupted job: %v, want the interrupt", err)
			}
			m := latest(t, store)
			if m.Round == 0 || m.Round >= 60 {
				t.Fatalf("last checkpoint of round %d", m.Round)
			}
			got, res, err := walkJob(t, store, 3, true, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			if res.Resumed != m.Round || res.Rounds != 60 {
				t.Errorf("resumed from round %d (the checkpoint's %d), %d rounds", res.Resumed, m.Round, res.Rounds)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("resumed from round %d: the model differs from the uninterrupted job's:\n%s\nwant\n%s", m.Round, got, want)
			}
		})
	}
}

// latest returns the manifest of the last checkpoint in store.
func latest(t *testing.T, store string) checkpoint.Manifest {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Options{Port: -1, StoreDir: store})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	nc, err := srv.ConnectInProcess("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := checkpoint.Open(ctx, nc, "walk", false)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCheckpointInterval takes checkpoints by time, not by rounds: some
// are committed, and the model is the one of the job without them. Its
// rounds run faster than a checkpoint is stored, and a job that ended
// waits for no checkpoint being collected (it has no more use for it), so
// that it committed none, 7 runs in 20 on a loaded machine: the progress
// line holds the rounds until the pieces of one checkpoint are all in the
// store (storedWaiter), and the coordinator then commits it as the job
// goes on.
func TestCheckpointInterval(t *testing.T) {
	want, _, err := walkJob(t, "", 0, false, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: t.TempDir()})
	nc := testhelper.Connect(t, srv)
	out := filepath.Join(t.TempDir(), "model")
	w := &storedWaiter{t: t, nc: nc, job: "walk", at: 20}
	co := coordinator.Options{Workers: 2, Schedulers: 2, MaxRounds: 60, ReportEvery: 4, Out: out,
		Timeout: 10 * time.Second, CheckpointInterval: time.Nanosecond, Progress: w, ProgressEvery: time.Nanosecond}
	if os.Getenv("WALKLOG") != "" {
		co.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := job.Run(ctx, walkProgram(), job.Options{Job: "walk", NATS: srv.ClientURL(), Timeout: 10 * time.Second, Coordinator: co})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !w.held {
		t.Fatalf("the job ended before progress line %d", w.at)
	}
	if !bytes.Equal(got, want) || res.Checkpoints == 0 {
		t.Fatalf("model equal %t, %d checkpoints", bytes.Equal(got, want), res.Checkpoints)
	}
}

// storedWaiter is a coordinator's progress writer that, at progress line
// at, holds the coordinator's rounds until every piece of a checkpoint of
// job, 2 workers and 2 scheduler parts, is in the store of the server of
// nc (for at most 30 s).
type storedWaiter struct {
	t     *testing.T
	nc    *nats.Conn
	job   string
	at    int
	lines int
	held  bool
}

func (w *storedWaiter) Write(p []byte) (int, error) {
	if w.lines++; w.lines != w.at {
		return len(p), nil
	}
	w.held = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !w.stored(ctx) {
		if ctx.Err() != nil {
			w.t.Errorf("no checkpoint had every piece stored within 30 s")
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return len(p), nil
}

// stored reports whether a checkpoint has every piece in the store.
func (w *storedWaiter) stored(ctx context.Context) bool {
	s, err := checkpoint.Open(ctx, w.nc, w.job, false)
	if err != nil {
		return false
	}
	js, err := jetstream.New(w.nc)
	if err != nil {
		return false
	}
	names := js.ObjectStoreNames(ctx)
	var rounds []uint64
	for name := range names.Name() {
		if r, ok := strings.CutPrefix(name, checkpoint.Bucket(w.job)+"-r"); ok {
			if round, err := strconv.ParseUint(r, 10, 64); err == nil {
				rounds = append(rounds, round)
			}
		}
	}
	pieces := []string{checkpoint.CoordinatorPiece, checkpoint.Piece("worker", 0), checkpoint.Piece("worker", 1),
		checkpoint.Piece("scheduler", 0), checkpoint.Piece("scheduler", 1)}
	for _, round := range rounds {
		all := true
		for _, p := range pieces {
			if _, _, err := s.Stat(ctx, round, p); err != nil {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}
