package job_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/wire"
)

// nnlsJob runs a job of nnls named name on the server at url ("": an
// embedded one of its own), writing its model to out, and returns the
// model.
func nnlsJob(ctx context.Context, name, url, out string, rounds uint64, key wire.Key, claimed func()) ([]byte, error) {
	opts := job.Options{Job: name, NATS: url, Key: key, Timeout: 20 * time.Second,
		Coordinator: coordinator.Options{Workers: 2, MaxRounds: rounds, ReportEvery: 10, Out: out,
			Timeout: 20 * time.Second, JoinTimeout: 20 * time.Second, Claimed: claimed}}
	if _, err := job.Run(ctx, nnls.Program(nnls.Config{Rows: 200, Cols: 30, Seed: 5}), opts); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// TestSecondJobRefused checks that a job started under the name of a job
// that runs on the same server is refused, with an error naming the job
// and the running coordinator, and that the running job goes on to the
// model it computes alone (DESIGN "Roles, subjects and messages"); keys
// do not hide one job from the other (issue 28: two whole jobs, each with
// its own random key, ran side by side and shared their checkpoints).
func TestSecondJobRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const rounds = 3000
	want, err := nnlsJob(ctx, "shared", "", filepath.Join(dir, "alone.csv"), rounds, wire.Key{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	k1, k2 := wire.NewKey(), wire.NewKey()
	for _, tc := range []struct {
		name          string
		first, second wire.Key
		other         string // in the refusal: the first job's key is another
	}{
		{"no keys", wire.Key{}, wire.Key{}, ""},
		{"one key", k1, k1, ""},
		{"two keys", k1, k2, "of a job with another key, or none"},
		{"a key, then none", k1, wire.Key{}, ""}, // a keyless coordinator takes every message
		{"none, then a key", wire.Key{}, k2, "of a job with another key, or none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			srv := testhelper.StartServer(t, natsserver.Options{})
			claimed := make(chan struct{})
			var first []byte
			var firstErr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				first, firstErr = nnlsJob(ctx, "shared", srv.ClientURL(), filepath.Join(dir, "first.csv"), rounds, tc.first, func() { close(claimed) })
			}()
			select {
			case <-claimed:
			case <-done:
				t.Fatalf("the first job ended before it claimed its name: %v", firstErr)
			}
			_, err = nnlsJob(ctx, "shared", srv.ClientURL(), filepath.Join(dir, "second.csv"), rounds, tc.second, nil)
			<-done
			if !errors.Is(err, coordinator.ErrNameTaken) || !strings.Contains(err.Error(), `"shared"`) || !strings.Contains(err.Error(), "has run it since") ||
				!strings.Contains(err.Error(), tc.other) {
				t.Errorf("second job: %v, want ErrNameTaken naming the job and the running coordinator %s", err, tc.other)
			}
			if _, err := os.Stat(filepath.Join(dir, "second.csv")); !os.IsNotExist(err) {
				t.Errorf("the second job left a model: %v", err)
			}
			if firstErr != nil {
				t.Fatalf("first job: %v", firstErr)
			}
			if !bytes.Equal(first, want) {
				t.Errorf("the first job's model differs from the job's alone")
			}
		})
	}
}

// TestJobsStartingAtOnce checks that of two jobs of one name started at
// the same time on one server, one is refused and the other computes the
// model it computes alone.
func TestJobsStartingAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	const rounds = 200
	want, err := nnlsJob(ctx, "twins", "", filepath.Join(dir, "alone.csv"), rounds, wire.Key{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := testhelper.StartServer(t, natsserver.Options{})
	var wg sync.WaitGroup
	models := make([][]byte, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			models[i], errs[i] = nnlsJob(ctx, "twins", srv.ClientURL(), filepath.Join(dir, []string{"a.csv", "b.csv"}[i]), rounds, wire.Key{}, nil)
		})
	}
	wg.Wait()
	refused := 0
	for i, err := range errs {
		switch {
		case errors.Is(err, coordinator.ErrNameTaken):
			refused++
		case err != nil:
			t.Errorf("job %d: %v", i, err)
		case !bytes.Equal(models[i], want):
			t.Errorf("job %d: the model differs from the job's alone", i)
		}
	}
	if refused != 1 {
		t.Errorf("%d jobs refused (%v), want 1", refused, errs)
	}
}
