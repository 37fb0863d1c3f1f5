package local_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/local"
	"github.com/strads-go/strads/schmp"
)

// reports returns the rounds and objectives of a trace.
func reports(trace []schmp.Sample) []string {
	var out []string
	for _, s := range trace {
		out = append(out, fmt.Sprintf("%d:%.17g", s.Round, s.Objective))
	}
	return out
}

// TestSameAsRuntime runs the same NNLS jobs, stopped by --tol, at depths 1
// to 4 with one to three scheduler parts, twice locally and once on the
// runtime over an embedded NATS server, and checks that all three stop at
// the same round for the same reason, with the same reports and the same
// model file.
func TestSameAsRuntime(t *testing.T) {
	cfg := nnls.Config{Rows: 300, Cols: 24, Block: 3, Seed: 1}
	for _, tc := range []struct{ depth, parts int }{{1, 1}, {2, 1}, {4, 1}, {4, 2}, {3, 3}} {
		t.Run(fmt.Sprintf("depth=%d/parts=%d", tc.depth, tc.parts), func(t *testing.T) {
			pc := pipeline.Config{Workers: 2, Parts: tc.parts, Depth: tc.depth, ReportEvery: 5, Tol: 1e-9, MaxRounds: 5000}
			var models [][]byte
			var statuses []pipeline.Status
			for range 2 {
				j, st, err := local.Run(context.Background(), nnls.Program(cfg), local.Options{Config: pc})
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if err := j.Coordinator.WriteModel(&buf); err != nil {
					t.Fatal(err)
				}
				models, statuses = append(models, buf.Bytes()), append(statuses, st)
			}
			st := statuses[0]
			if st.Reason != schmp.StopConverged || st.Last != st.Decided+uint64(tc.depth-1) || st.Rounds != st.Last {
				t.Fatalf("status %+v: want a converged stop depth−1 rounds after its decision", st)
			}
			if st.MaxInFlight != tc.depth {
				t.Errorf("at most %d rounds in flight, want %d", st.MaxInFlight, tc.depth)
			}
			if !bytes.Equal(models[0], models[1]) || !slices.Equal(reports(st.Trace), reports(statuses[1].Trace)) {
				t.Fatalf("two local runs differ")
			}

			out := filepath.Join(t.TempDir(), "model.csv")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := job.Run(ctx, nnls.Program(cfg), job.Options{Job: "local-test", Timeout: 20 * time.Second, Coordinator: coordinator.Options{
				Workers: pc.Workers, Schedulers: pc.Parts, Depth: pc.Depth, ReportEvery: pc.ReportEvery, Tol: pc.Tol, MaxRounds: pc.MaxRounds,
				JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second, Out: out,
			}})
			if err != nil {
				t.Fatal(err)
			}
			model, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if res.Rounds != st.Rounds || res.Reason != st.Reason || !slices.Equal(reports(res.Trace), reports(st.Trace)) {
				t.Errorf("runtime: %d rounds (%s), reports %v; locally %d rounds (%s), reports %v",
					res.Rounds, res.Reason, reports(res.Trace), st.Rounds, st.Reason, reports(st.Trace))
			}
			if !bytes.Equal(model, models[0]) {
				t.Errorf("the runtime's model differs from the local one")
			}
		})
	}
}

// TestAfterApply checks that AfterApply sees every round's update at depth
// 1, in order, Start's first, and that its error fails the job.
func TestAfterApply(t *testing.T) {
	cfg := nnls.Config{Rows: 50, Cols: 6, Seed: 2}
	var seen []uint64
	opts := local.Options{Config: pipeline.Config{Workers: 3, MaxRounds: 7}, AfterApply: func(r uint64) error {
		seen = append(seen, r)
		return nil
	}}
	if _, _, err := local.Run(context.Background(), nnls.Program(cfg), opts); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(seen, want) {
		t.Errorf("AfterApply saw rounds %v, want %v", seen, want)
	}
	opts.AfterApply = func(r uint64) error {
		if r == 3 {
			return fmt.Errorf("bad state")
		}
		return nil
	}
	_, _, err := local.Run(context.Background(), nnls.Program(cfg), opts)
	if err == nil || err.Error() != "round 4: after the updates of round 3: bad state" {
		t.Errorf("error %v", err)
	}
}

// TestOut checks the runtime's output path in the local driver with a
// model of one file (WriteModel, as the walkthrough in
// docs/writing-a-model.md writes):
// the file is the model the coordinator holds, and a bad path fails the
// job before any round runs, leaving nothing.
func TestOut(t *testing.T) {
	cfg := nnls.Config{Rows: 50, Cols: 6, Seed: 2}
	cases := []struct {
		name string
		out  string // under the test's directory
		ok   bool
	}{
		{"written", "model.csv", true},
		{"bad path", "missing/model.csv", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			applied := 0
			j, _, err := local.Run(context.Background(), nnls.Program(cfg), local.Options{
				Config: pipeline.Config{Workers: 2, MaxRounds: 5}, Out: filepath.Join(dir, tc.out),
				AfterApply: func(uint64) error { applied++; return nil },
			})
			if !tc.ok {
				entries, _ := os.ReadDir(dir)
				if err == nil || applied > 0 || len(entries) != 0 {
					t.Fatalf("error %v after %d updates applied, %d files left; want an error before any round, and no file", err, applied, len(entries))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := j.Coordinator.WriteModel(&want); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(dir, tc.out)); err != nil || !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("the file holds %q (%v), the model is %q", got, err, want.Bytes())
			}
		})
	}
}

// counting is an NNLS worker that counts its pushes, and marks each
// partial with the count (in the low bits of its first number): a state
// that its snapshot holds. With stale set its Restore sets the count only
// on a worker that has pushed nothing, as if it were always called on a
// worker just built; with rebuild it says so (schmp.Rebuilder).
type counting struct {
	*nnls.Worker
	pushes         int
	stale, rebuild bool
}

func (w *counting) Push(ctx context.Context, round uint64, p nnls.Plan) (nnls.Partial, error) {
	r, err := w.Worker.Push(ctx, round, p)
	w.pushes++
	if err == nil && len(r.Dot) > 0 {
		r.Dot[0] = math.Float64frombits(math.Float64bits(r.Dot[0]) ^ uint64(w.pushes&0xff))
	}
	return r, err
}

// countingState is a counting worker's snapshot.
type countingState struct {
	Inner  []byte `msgpack:"inner"`
	Pushes int    `msgpack:"pushes"`
}

func (w *counting) Snapshot() ([]byte, error) {
	b, err := w.Worker.Snapshot()
	if err != nil {
		return nil, err
	}
	return codec.Marshal(countingState{Inner: b, Pushes: w.pushes})
}

func (w *counting) Restore(b []byte) error {
	var st countingState
	if err := codec.Unmarshal(b, &st); err != nil {
		return err
	}
	if !w.stale || w.pushes == 0 {
		w.pushes = st.Pushes
	}
	return w.Worker.Restore(st.Inner)
}

func (w *counting) RebuildOnRollback() bool { return w.rebuild }

// TestRestoreInPlace checks RestoreInPlace on a worker whose Restore
// forgets to reset a live worker's count (stale): the driver finds that
// its partials differ from those of a worker restored anew from the same
// snapshot, and says which; the same worker is right when it is moved to
// new roles (RestoreEvery alone), or when it says it must be rebuilt
// (schmp.Rebuilder); a worker that resets its count is right in place.
// Every run that succeeds ends with the model of the job never restored.
func TestRestoreInPlace(t *testing.T) {
	cfg := nnls.Config{Rows: 120, Cols: 12, Seed: 3, Block: 2}
	prog := func(stale, rebuild bool) schmp.Program[nnls.Plan, nnls.Partial, nnls.Update, nnls.Summary] {
		p := nnls.Program(cfg)
		p.NewWorker = func(_ context.Context, shard, shards int) (schmp.Worker[nnls.Plan, nnls.Partial, nnls.Update, nnls.Summary], error) {
			w, err := nnls.NewWorker(cfg, shard, shards)
			return &counting{Worker: w, stale: stale, rebuild: rebuild}, err
		}
		return p
	}
	pc := pipeline.Config{Workers: 2, Parts: 2, Depth: 1, ReportEvery: 4, MaxRounds: 60}
	model := func(j *local.Job[nnls.Plan, nnls.Partial, nnls.Update, nnls.Summary]) string {
		var buf bytes.Buffer
		if err := j.Coordinator.WriteModel(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	j, _, err := local.Run(context.Background(), prog(false, false), local.Options{Config: pc})
	if err != nil {
		t.Fatal(err)
	}
	want := model(j)
	for _, tc := range []struct {
		name                    string
		stale, rebuild, inPlace bool
		fails                   bool
	}{
		{"stale, in place", true, false, true, true},
		{"stale, moved to new roles", true, false, false, false},
		{"stale, a Rebuilder", true, true, true, false},
		{"reset, in place", false, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, _, err := local.Run(context.Background(), prog(tc.stale, tc.rebuild), local.Options{Config: pc, RestoreEvery: 5, RestoreInPlace: tc.inPlace})
			switch {
			case tc.fails && (err == nil || !strings.Contains(err.Error(), "worker shard") || !strings.Contains(err.Error(), "the partial differs")):
				t.Fatalf("error %v, want the partials found to differ", err)
			case tc.fails:
				t.Logf("%v", err)
			case err != nil:
				t.Fatal(err)
			case j.Restores == 0:
				t.Fatal("no restore")
			case model(j) != want:
				t.Fatalf("the model differs:\n%s\nwant\n%s", model(j), want)
			}
		})
	}
}
