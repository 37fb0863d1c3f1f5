package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/internal/testhelper"
)

// TestGetChunks stores pieces of many sizes, around the object store's
// chunk of 128 KiB, and replaced ones, and reads each back whole.
func TestGetChunks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := checkpoint.Open(ctx, testhelper.InProcess(t, true), "j", true)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	bytesOf := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	const chunk = 128 << 10
	tests := []struct {
		name  string
		sizes []int // the piece's sizes, stored in turn: the last is read
	}{
		{"empty", []int{0}},
		{"one byte", []int{1}},
		{"one chunk", []int{chunk}},
		{"a chunk and a byte", []int{chunk + 1}},
		{"several chunks", []int{5*chunk + 77}},
		{"replaced by a smaller one", []int{3 * chunk, 10}},
		{"replaced by a larger one", []int{10, 2*chunk + 3}},
		{"replaced by an empty one", []int{chunk, 0}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []byte
			var digest string
			for _, n := range tt.sizes {
				want = bytesOf(n)
				if digest, err = s.Put(ctx, uint64(i+1), "worker-0", want); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Get(ctx, uint64(i+1), "worker-0", digest)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want the %d stored", len(got), len(want))
			}
		})
	}
}

// TestGetChunksGone reads a piece and the manifests whose chunks are gone
// from the store (their description kept): each read is an error at once
// that says a chunk is missing. ObjectStore.GetBytes waited for them until
// its context's deadline, and ignored a cancel: a commit whose read of the
// manifests a reconnect cancelled (Retry) held every later one for the
// whole timeout.
func TestGetChunksGone(t *testing.T) {
	// Long enough that a read waiting for its deadline is not taken for
	// one that failed at once: it ends in a timeout, not ErrMsgNotFound.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc := testhelper.InProcess(t, true)
	s, err := checkpoint.Open(ctx, nc, "j", true)
	if err != nil {
		t.Fatal(err)
	}
	m := put(t, s, 10, "coordinator", "worker-0")
	if err := s.Commit(ctx, m, 2); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		bucket string
		read   func() error
	}{
		{"piece", checkpoint.Bucket("j") + "-r10", func() error {
			_, err := s.Get(ctx, 10, "worker-0", m.Pieces["worker-0"])
			return err
		}},
		{"manifests", checkpoint.Bucket("j"), func() error {
			_, err := s.Latest(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream, err := js.Stream(ctx, "OBJ_"+tt.bucket)
			if err != nil {
				t.Fatal(err)
			}
			if err := stream.Purge(ctx, jetstream.WithPurgeSubject("$O."+tt.bucket+".C.>")); err != nil {
				t.Fatal(err)
			}
			err = tt.read()
			if err == nil || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Fatalf("read of an object whose chunks are gone: %v, want an error matching ErrMsgNotFound at once", err)
			}
			t.Log(err)
		})
	}
}

// TestLatestWhileCommitting reads the manifests while commits replace
// them, each removing the chunks of the manifests before it once its own
// are in: every read gives a whole manifest, of a round committed.
func TestLatestWhileCommitting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := checkpoint.Open(ctx, testhelper.InProcess(t, true), "j", true)
	if err != nil {
		t.Fatal(err)
	}
	m := put(t, s, 1, "coordinator")
	if err := s.Commit(ctx, m, 2); err != nil {
		t.Fatal(err)
	}
	const commits = 30
	done := make(chan error, 1)
	go func() {
		for r := uint64(2); r <= commits; r++ {
			// A manifest of many pieces, so that its chunks are several.
			m := checkpoint.Manifest{Job: "j", Round: r, Pieces: map[string]string{}}
			for p := range 3000 {
				m.Pieces[checkpoint.Piece("worker", p)] = checkpoint.Digest([]byte{byte(r), byte(p)})
			}
			if err := s.Commit(ctx, m, 2); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	reads := 0
	for last := uint64(1); ; reads++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d reads during %d commits", reads, commits-1)
			return
		default:
		}
		m, err := s.Latest(ctx)
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		if m.Round < last || (m.Round > 1 && len(m.Pieces) != 3000) {
			t.Fatalf("read %d: round %d with %d pieces, after round %d", reads, m.Round, len(m.Pieces), last)
		}
		last = m.Round
	}
}
