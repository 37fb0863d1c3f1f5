package checkpoint_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/internal/testhelper"
)

// TestLost checks what a store says once the server has lost the job's
// buckets, as a restart without the store leaves it (issue 28: every
// later checkpoint failed with a warning, and its pieces' buckets were
// left behind): Commit fails with ErrLost, Recreate makes the manifests'
// bucket again, and the next commit removes the pieces of the checkpoints
// lost meanwhile.
func TestLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := testhelper.InProcess(t, true)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := checkpoint.Open(ctx, nc, "j", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, put(t, s, 10, "coordinator"), 2); err != nil {
		t.Fatal(err)
	}
	buckets := func() []string {
		var names []string
		l := js.ObjectStoreNames(ctx)
		for n := range l.Name() {
			if strings.HasPrefix(n, checkpoint.Bucket("j")) {
				names = append(names, n)
			}
		}
		return names
	}
	for _, b := range buckets() {
		if err := js.DeleteObjectStore(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	m := put(t, s, 20, "coordinator")
	err = s.Commit(ctx, m, 2)
	if !errors.Is(err, checkpoint.ErrLost) {
		t.Fatalf("commit after the store was lost: %v, want ErrLost", err)
	}
	t.Log(err)
	put(t, s, 30, "coordinator") // abandoned
	if err := s.Recreate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, put(t, s, 40, "coordinator"), 2); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Latest(ctx); err != nil || got.Round != 40 {
		t.Fatalf("latest: round %d, %v; want 40", got.Round, err)
	}
	if got, want := strings.Join(buckets(), " "), checkpoint.Bucket("j")+" "+checkpoint.Bucket("j")+"-r40"; got != want {
		t.Errorf("buckets %q, want %q", got, want)
	}
}
