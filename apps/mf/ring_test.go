package mf

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// ringJob runs DSGD on the rotation of cfg over NATS (an embedded server,
// or url) with prog's roles, and returns the model file it writes.
func ringJob(t *testing.T, cfg Config, prog schmp.Program[scheduler.Turn, RotationPartial, RotationUpdate, Summary], url string, timeout time.Duration) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "model")
	opts := job.Options{Job: "mfring", NATS: url, Timeout: timeout, Coordinator: coordinator.Options{Out: out, Timeout: timeout}}
	setDefaults(cfg, &opts.Coordinator)
	if _, err := job.Run(ctx, prog, opts); err != nil {
		return nil, err
	}
	var all []byte
	for _, ext := range []string{".W.txt", ".H.txt", ".bias.txt"} {
		b, err := os.ReadFile(out + ext)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append(all, ext...), b...)
	}
	return all, nil
}

// TestRingStar checks that DSGD's blocks of H give the same model, bit for
// bit, whether they travel from worker to worker (the ring) or through the
// coordinator (the star), at evaluation points and between them.
func TestRingStar(t *testing.T) {
	cfg := config(t, "rotation", 3, 6)
	cfg.ReportEvery = 2
	star := cfg
	star.Star = true
	ring, err := ringJob(t, cfg, RotationProgram(cfg), "", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ringJob(t, star, RotationProgram(star), "", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ring, want) {
		t.Errorf("the ring's model (%d bytes) differs from the star's (%d bytes)", len(ring), len(want))
	}
}

// mute is a rotation worker that passes nothing on.
type mute struct{ *rotationWorker }

// Pass implements schmp.Passer: the coordinator's share only.
func (m mute) Pass(round uint64, r RotationPartial) (coord, part RotationPartial, to int, ok bool) {
	coord, _, _, _ = m.rotationWorker.Pass(round, r)
	return coord, RotationPartial{}, 0, false
}

// TestRingMissingBlock checks that a worker whose block never comes fails
// the job within the timeout, naming the worker that did not send it.
func TestRingMissingBlock(t *testing.T) {
	cfg := config(t, "rotation", 2, 4)
	cfg.ReportEvery = 4
	prog := RotationProgram(cfg)
	newWorker := prog.NewWorker
	prog.NewWorker = func(ctx context.Context, shard, shards int) (schmp.Worker[scheduler.Turn, RotationPartial, RotationUpdate, Summary], error) {
		w, err := newWorker(ctx, shard, shards)
		if err == nil && shard == 1 {
			return mute{w.(*rotationWorker)}, nil
		}
		return w, err
	}
	_, err := ringJob(t, cfg, prog, "", 2*time.Second)
	switch {
	case err == nil:
		t.Fatal("the job ran without worker 1's blocks")
	case !strings.Contains(err.Error(), "from worker shard 1"):
		t.Errorf("job: %v, want it to name worker shard 1", err)
	}
	t.Logf("job: %v", err)
}

// TestRingHostile runs the ring while an attacker replays every block
// passed under another run id, and forges blocks with the run id from
// another sender or with other bytes: those of another run, or from a
// sender nobody awaits, are dropped and the model is the clean run's;
// a forged block of the awaited sender is either caught as a conflict with
// the real one (protocol.ErrConflict) or, taken first, refused by the app:
// the job fails with an error that says so (DESIGN "Hostile traffic").
func TestRingHostile(t *testing.T) {
	cfg := config(t, "rotation", 3, 3)
	cfg.ReportEvery = 3
	want, err := ringJob(t, cfg, RotationProgram(cfg), "", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := testhelper.StartServer(t, natsserver.Options{})
	for _, tc := range []struct {
		name    string
		change  func(m map[string]any)
		mayFail bool // the job may fail, with an error that says why
	}{
		{"another run", func(m map[string]any) { m["run"] = "forged" }, false},
		{"another sender", func(m map[string]any) {
			// Worker q awaits the blocks of worker q+1 mod 3 only.
			m["from"] = (toInt(m["to"]) + 2) % 3
		}, false},
		{"other bytes", func(m map[string]any) { m["part"] = map[string]any{"b": -1} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := nats.Connect(srv.ClientURL(), nats.NoEcho())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			var mu sync.Mutex
			sub, err := nc.Subscribe("strads.mfring.pass.*", func(msg *nats.Msg) {
				if msg.Header != nil {
					return // chunks
				}
				mu.Lock()
				defer mu.Unlock()
				var m map[string]any
				if codec.Unmarshal(msg.Data, &m) != nil {
					return
				}
				tc.change(m)
				if b, err := codec.Marshal(m); err == nil {
					nc.Publish(msg.Subject, b)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			nc.Flush()
			got, err := ringJob(t, cfg, RotationProgram(cfg), srv.ClientURL(), 20*time.Second)
			switch {
			case err == nil && !bytes.Equal(got, want):
				t.Errorf("the model differs from the clean run's")
			case err != nil && !tc.mayFail:
				t.Errorf("job: %v", err)
			case err != nil:
				t.Logf("job: %v", err)
			}
		})
	}
}

// toInt returns the integer that msgpack decoded into v.
func toInt(v any) int {
	switch n := v.(type) {
	case int8:
		return int(n)
	case uint8:
		return int(n)
	case int16:
		return int(n)
	case uint16:
		return int(n)
	case int32:
		return int(n)
	case int64:
		return int(n)
	case uint64:
		return int(n)
	}
	return 0
}
