package job_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/schmp"
)

// stepWorker is a walk worker that holds some of its rounds until its
// test's condition on the store holds (wait), and whose snapshots fail
// from round failFrom on (0: never).
type stepWorker struct {
	*walkWorker
	wait     func(round uint64)
	failFrom uint64

	mu     sync.Mutex
	pushed uint64 // the last round pushed
}

func (w *stepWorker) Push(ctx context.Context, round uint64, p walkPlan) (walkPartial, error) {
	if w.wait != nil {
		w.wait(round)
	}
	w.mu.Lock()
	w.pushed = round
	w.mu.Unlock()
	return w.walkWorker.Push(ctx, round, p)
}

// Snapshot is the walk worker's, but fails from failFrom on: a worker
// saves its piece of the checkpoint of round C before it pushes C+1.
func (w *stepWorker) Snapshot() ([]byte, error) {
	w.mu.Lock()
	pushed := w.pushed
	w.mu.Unlock()
	if w.failFrom > 0 && pushed >= w.failFrom {
		return nil, fmt.Errorf("test: no snapshot after round %d", pushed)
	}
	return w.walkWorker.Snapshot()
}

// awaitStore polls the store of job on nc, every 5 ms for at most 30 s,
// until ok holds of it; it reports whether it did.
func awaitStore(nc *nats.Conn, job string, ok func(ctx context.Context, s *checkpoint.Store) bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if s, err := checkpoint.Open(ctx, nc, job, false); err == nil && ok(ctx, s) {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// committed is awaitStore's condition that the checkpoint of round c, or
// a later one, is committed.
func committed(c uint64) func(ctx context.Context, s *checkpoint.Store) bool {
	return func(ctx context.Context, s *checkpoint.Store) bool {
		m, err := s.Latest(ctx)
		return err == nil && m.Round >= c
	}
}

// stepProgram is the walk program whose worker 0 calls wait before each
// push, and whose other workers' snapshots fail from round failFrom on (0:
// never).
func stepProgram(wait func(round uint64), failFrom uint64) schmp.Program[walkPlan, walkPartial, walkUpdate, walkSummary] {
	prog := walkProgram()
	newWorker := prog.NewWorker
	prog.NewWorker = func(ctx context.Context, shard, shards int) (schmp.Worker[walkPlan, walkPartial, walkUpdate, walkSummary], error) {
		w, err := newWorker(ctx, shard, shards)
		if err != nil {
			return nil, err
		}
		s := &stepWorker{walkWorker: w.(*walkWorker)}
		if shard == 0 {
			s.wait = wait
		} else {
			s.failFrom = failFrom
		}
		return s, nil
	}
	return prog
}

// buckets returns the names of the object store buckets of job on nc's
// server, sorted.
func buckets(t *testing.T, nc *nats.Conn, job string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names := js.ObjectStoreNames(ctx)
	var got []string
	for name := range names.Name() {
		if name == checkpoint.Bucket(job) || strings.HasPrefix(name, checkpoint.Bucket(job)+"-") {
			got = append(got, name)
		}
	}
	if err := names.Error(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

// TestUncommittedRemoved runs jobs of 60 rounds that take a checkpoint
// every 10 (each committed before the next is due: worker 0 holds round
// C+3 until C is) and whose worker 1 fails its snapshots from round
// failFrom on, so that the checkpoints from there are abandoned, and ends
// each only once every other piece of the last one is stored: the pieces
// of the checkpoints not committed are no longer in the store after the
// job, only the manifests and the 2 checkpoints kept.
func TestUncommittedRemoved(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failFrom  uint64
		committed int
		last      uint64   // the round of the last checkpoint committed
		kept      []uint64 // the rounds of the checkpoints kept
	}{
		{"the last abandoned", 50, 4, 40, []uint64{30, 40}},
		{"all abandoned", 1, 0, 0, nil},
		{"none abandoned", 0, 5, 50, []uint64{40, 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testhelper.StartServer(t, natsserver.Options{StoreDir: t.TempDir()})
			nc := testhelper.Connect(t, srv)
			lastCkpt := uint64(50) // the last checkpoint decided: of round 50
			others := []string{checkpoint.CoordinatorPiece, checkpoint.Piece("worker", 0),
				checkpoint.Piece("scheduler", 0), checkpoint.Piece("scheduler", 1)}
			var held []string
			wait := func(round uint64) {
				var ok func(ctx context.Context, s *checkpoint.Store) bool
				// The pieces of the checkpoint of round C are saved up to
				// the plan of C+2 (2 scheduler parts): worker 0 holds
				// round C+3 until C is committed.
				switch c := round - 3; {
				case round == 60 && (tc.failFrom == 0 || tc.failFrom > lastCkpt):
					ok = committed(lastCkpt)
				case round == 60:
					// Every piece of the checkpoint of round 50 but
					// worker 1's, which failed, is stored.
					ok = func(ctx context.Context, s *checkpoint.Store) bool {
						for _, p := range others {
							if _, _, err := s.Stat(ctx, lastCkpt, p); err != nil {
								return false
							}
						}
						return true
					}
				case c%10 == 0 && c > 0 && c < lastCkpt && (tc.failFrom == 0 || c < tc.failFrom):
					ok = committed(c)
				default:
					return
				}
				if !awaitStore(nc, "walk", ok) {
					held = append(held, fmt.Sprint(round))
				}
			}
			prog := stepProgram(wait, tc.failFrom)
			out := filepath.Join(t.TempDir(), "model")
			co := coordinator.Options{Workers: 2, Schedulers: 2, MaxRounds: 60, ReportEvery: 4, Out: out,
				Timeout: 10 * time.Second, CheckpointEvery: 10, CheckpointKeep: 2}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := job.Run(ctx, prog, job.Options{Job: "walk", NATS: srv.ClientURL(), Timeout: 10 * time.Second, Coordinator: co})
			if err != nil {
				t.Fatal(err)
			}
			if len(held) > 0 {
				t.Fatalf("the store was not as awaited within 30 s at rounds %v", held)
			}
			if res.Checkpoints != tc.committed || res.LastCheckpoint != tc.last {
				t.Errorf("%d checkpoints committed, the last of round %d; want %d, %d", res.Checkpoints, res.LastCheckpoint, tc.committed, tc.last)
			}
			want := []string{checkpoint.Bucket("walk")}
			for _, r := range tc.kept {
				want = append(want, fmt.Sprintf("%s-r%d", checkpoint.Bucket("walk"), r))
			}
			slices.Sort(want)
			if got := buckets(t, nc, "walk"); !slices.Equal(got, want) {
				t.Errorf("buckets after the job: %v, want %v", got, want)
			}
			s, err := checkpoint.Open(ctx, nc, "walk", false)
			if err != nil {
				t.Fatal(err)
			}
			switch m, err := s.Latest(ctx); {
			case tc.last == 0 && !errors.Is(err, checkpoint.ErrNone):
				t.Errorf("latest: round %d, %v; want none", m.Round, err)
			case tc.last > 0 && (err != nil || m.Round != tc.last):
				t.Errorf("latest: round %d, %v; want %d", m.Round, err, tc.last)
			case tc.last > 0:
				if err := s.Verify(ctx, m); err != nil {
					t.Errorf("the last checkpoint: %v", err)
				}
			}
		})
	}
}

// TestLostStore runs a job of 60 rounds that takes a checkpoint every 10
// on a server that loses every bucket of the job after the checkpoint of
// round 20 is committed, as a restart without the store does (issue 28:
// every later checkpoint failed with a warning, and their pieces were
// left behind): the job says so as an error, makes the manifests' bucket
// again and commits the later checkpoints, which a resume can use; no
// bucket is left but the manifests' and the 2 checkpoints kept.
func TestLostStore(t *testing.T) {
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: t.TempDir()})
	nc := testhelper.Connect(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	wait := func(round uint64) {
		// Worker 0 holds round C+3 until the checkpoint of round C is
		// committed, so that none is skipped for the one before; after
		// that of round 20, the buckets go.
		c := round - 3
		if round < 3 || c%10 != 0 || c == 0 || c > 50 {
			return
		}
		if !awaitStore(nc, "walk", committed(c)) {
			failed = append(failed, fmt.Sprintf("round %d not committed", c))
		}
		if c != 20 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, b := range buckets(t, nc, "walk") {
			if err := js.DeleteObjectStore(ctx, b); err != nil {
				failed = append(failed, err.Error())
			}
		}
	}
	prog := stepProgram(wait, 0)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	co := coordinator.Options{Workers: 2, MaxRounds: 60, ReportEvery: 4, Out: filepath.Join(t.TempDir(), "model"),
		Timeout: 10 * time.Second, CheckpointEvery: 10, CheckpointKeep: 2, Logger: log}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := job.Run(ctx, prog, job.Options{Job: "walk", NATS: srv.ClientURL(), Timeout: 10 * time.Second, Coordinator: co, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if len(failed) > 0 {
		t.Fatalf("the store was not as awaited: %v", failed)
	}
	if res.Checkpoints != 5 || res.LastCheckpoint != 50 {
		t.Errorf("%d checkpoints committed, the last of round %d; want 5, 50", res.Checkpoints, res.LastCheckpoint)
	}
	if !strings.Contains(logs.String(), "level=ERROR msg=\"the NATS server lost the job's checkpoints") {
		t.Errorf("no error says the store was lost; the logs:\n%s", logs.String())
	}
	want := []string{checkpoint.Bucket("walk"), checkpoint.Bucket("walk") + "-r40", checkpoint.Bucket("walk") + "-r50"}
	if got := buckets(t, nc, "walk"); !slices.Equal(got, want) {
		t.Errorf("buckets after the job: %v, want %v", got, want)
	}
	s, err := checkpoint.Open(ctx, nc, "walk", false)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.Latest(ctx); err != nil || m.Round != 50 {
		t.Errorf("latest: round %d, %v; want 50", m.Round, err)
	} else if err := s.Verify(ctx, m); err != nil {
		t.Errorf("the last checkpoint: %v", err)
	}
}

// TestEarlierCheckpointsSaid runs a job that takes checkpoints twice under
// one name, the second time without --resume: it says, as it starts, that
// it replaces the checkpoints of the earlier one (issue 28: a user who
// forgot --resume learnt nothing).
func TestEarlierCheckpointsSaid(t *testing.T) {
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, want := range []string{"", "the store holds the checkpoints of an earlier job of this name"} {
		var logs syncBuffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		co := coordinator.Options{Workers: 2, MaxRounds: 30, ReportEvery: 4, Out: filepath.Join(t.TempDir(), "model"),
			Timeout: 10 * time.Second, CheckpointEvery: 10, Logger: log}
		// Worker 0 holds round 13 until the checkpoint of round 10 is
		// committed: the first job leaves one.
		prog := stepProgram(func(round uint64) {
			if round == 13 && !awaitStore(testhelper.Connect(t, srv), "walk", committed(10)) {
				t.Error("the checkpoint of round 10 was not committed")
			}
		}, 0)
		if _, err := job.Run(ctx, prog, job.Options{Job: "walk", NATS: srv.ClientURL(), Timeout: 10 * time.Second, Coordinator: co, Logger: log}); err != nil {
			t.Fatal(err)
		}
		if said := strings.Contains(logs.String(), "earlier job"); said != (want != "") || !strings.Contains(logs.String(), want) {
			t.Errorf("run %d: logs %q, want %q", i, logs.String(), want)
		}
	}
}
