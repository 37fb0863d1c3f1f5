package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
)

// put stores the pieces of a checkpoint of round and returns its manifest.
func put(t *testing.T, s *checkpoint.Store, round uint64, pieces ...string) checkpoint.Manifest {
	t.Helper()
	m := checkpoint.Manifest{Job: "j", Round: round, Pieces: map[string]string{}}
	for _, p := range pieces {
		d, err := s.Put(context.Background(), round, p, []byte(fmt.Sprint(p, round)))
		if err != nil {
			t.Fatal(err)
		}
		m.Pieces[p] = d
	}
	return m
}

func TestStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := testhelper.InProcess(t, true)
	if _, err := checkpoint.Open(ctx, nc, "j", false); !errors.Is(err, checkpoint.ErrNone) {
		t.Fatalf("open of a job without checkpoints: %v, want ErrNone", err)
	}
	s, err := checkpoint.Open(ctx, nc, "j", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Latest(ctx); !errors.Is(err, checkpoint.ErrNone) {
		t.Fatalf("latest of an empty store: %v, want ErrNone", err)
	}
	for _, r := range []uint64{10, 20, 30} {
		m := put(t, s, r, "coordinator", "worker-0", "worker-1")
		if err := s.Commit(ctx, m, 2); err != nil {
			t.Fatal(err)
		}
	}
	put(t, s, 40, "worker-0") // a checkpoint being stored: not committed
	m, err := s.Latest(ctx)
	if err != nil || m.Round != 30 {
		t.Fatalf("latest: round %d, %v; want 30", m.Round, err)
	}
	b, err := s.Get(ctx, 30, "worker-1", m.Pieces["worker-1"])
	if err != nil || !bytes.Equal(b, []byte("worker-130")) {
		t.Fatalf("get: %q, %v", b, err)
	}
	if _, err := s.Get(ctx, 30, "worker-1", m.Pieces["worker-0"]); err == nil {
		t.Error("a piece with another digest was taken")
	}
	// Kept: 20 and 30; 10 is removed; 40, being stored, stays.
	if _, err := s.Get(ctx, 10, "worker-0", checkpoint.Digest([]byte("worker-010"))); err == nil {
		t.Error("a piece of a checkpoint not kept is still there")
	}
	for _, r := range []uint64{20, 40} {
		if _, err := s.Get(ctx, r, "worker-0", checkpoint.Digest(fmt.Append(nil, "worker-0", r))); err != nil {
			t.Errorf("round %d: %v", r, err)
		}
	}
	// A resumed run's checkpoint of an earlier round replaces the later.
	if err := s.Commit(ctx, put(t, s, 25, "coordinator"), 2); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Latest(ctx); err != nil || m.Round != 25 {
		t.Fatalf("latest after a commit of round 25: %d, %v", m.Round, err)
	}
}

func TestNoJetStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := checkpoint.Open(ctx, testhelper.InProcess(t, false), "j", true); !errors.Is(err, checkpoint.ErrNoJetStream) {
		t.Fatalf("open without JetStream: %v, want ErrNoJetStream", err)
	}
}

// TestSpaceReclaimed stores 30 checkpoints of 1 MiB, keeping 2: the
// store's directory holds about the 2 kept, not all that were written.
func TestSpaceReclaimed(t *testing.T) {
	dir := t.TempDir()
	nc := testhelper.Connect(t, testhelper.StartServer(t, natsserver.Options{Port: -1, StoreDir: dir}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := checkpoint.Open(ctx, nc, "j", true)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1<<20)
	for r := uint64(1); r <= 30; r++ {
		d, err := s.Put(ctx, r, "worker-0", b)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, checkpoint.Manifest{Job: "j", Round: r, Pieces: map[string]string{"worker-0": d}}, 2); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	// JetStream removes a deleted stream's directory in the background,
	// so a file may vanish while the walk lists it: it then holds nothing.
	err = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the store holds %d bytes after 30 checkpoints of 1 MiB, 2 kept", total)
	if total > 8<<20 {
		t.Errorf("the store holds %d bytes after 30 checkpoints of 1 MiB, 2 kept", total)
	}
}
