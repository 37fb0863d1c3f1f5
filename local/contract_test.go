package local_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/local"
	"github.com/strads-go/strads/schmp"
)

// breaker is an NNLS worker that breaks its contract (schmp.Worker) as
// told: its Push moves the residual, which Report shows (as if it applied
// its own step); its Report does; or it counts its pushes outside its
// snapshot and marks each partial with the count.
type breaker struct {
	*nnls.Worker
	pushMoves, reportMoves, hidden bool
	pushes                         int
}

// move moves the residual as a step of 10⁻³ on the first variable would.
func (w *breaker) move() error {
	return w.Worker.Apply(nnls.Update{Vars: codec.Int32s{0}, Delta: codec.Float64s{1e-3}})
}

func (w *breaker) Push(ctx context.Context, round uint64, p nnls.Plan) (nnls.Partial, error) {
	r, err := w.Worker.Push(ctx, round, p)
	if err == nil && w.pushMoves {
		err = w.move()
	}
	if w.hidden && len(r.Dot) > 0 {
		w.pushes++
		r.Dot[0] += float64(w.pushes)
	}
	return r, err
}

func (w *breaker) Report() (nnls.Summary, error) {
	if w.reportMoves {
		if err := w.move(); err != nil {
			return nnls.Summary{}, err
		}
	}
	return w.Worker.Report()
}

// TestCheckContract checks Options.CheckContract on NNLS workers that keep
// their contract and on workers that break it: the check fails the job,
// naming the worker shard, the round and what changed, except where the
// contract allows what the worker does; a job that keeps it writes the
// model of a job run without the check.
func TestCheckContract(t *testing.T) {
	cfg := nnls.Config{Rows: 90, Cols: 10, Seed: 4, Block: 2}
	prog := func(b breaker) schmp.Program[nnls.Plan, nnls.Partial, nnls.Update, nnls.Summary] {
		p := nnls.Program(cfg)
		p.NewWorker = func(_ context.Context, shard, shards int) (schmp.Worker[nnls.Plan, nnls.Partial, nnls.Update, nnls.Summary], error) {
			w, err := nnls.NewWorker(cfg, shard, shards)
			b := b
			b.Worker = w
			return &b, err
		}
		return p
	}
	model := func(opts local.Options) (string, error) {
		j, _, err := local.Run(context.Background(), prog(breaker{}), opts)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = j.Coordinator.WriteModel(&buf)
		return buf.String(), err
	}
	for _, tc := range []struct {
		name    string
		b       breaker
		depth   int
		restore uint64 // RestoreEvery, in place
		want    string // in the error; "" for none
	}{
		{name: "kept", depth: 1},
		{name: "kept at depth 3", depth: 3},
		{name: "kept, rolled back", depth: 2, restore: 6},
		{name: "Push moves what Report shows, at depth 2", b: breaker{pushMoves: true}, depth: 2,
			want: "worker shard 0: round 1: the contract of schmp.Worker: at depth 2, Push changed what Report shows, at .r"},
		// The contract lets a Push at depth 1 change the state: the check
		// cannot tell the worker's own variables from its copy of others'.
		{name: "Push moves what Report shows, at depth 1", b: breaker{pushMoves: true}, depth: 1},
		{name: "Report moves the state", b: breaker{reportMoves: true}, depth: 1,
			want: "worker shard 0: round 1: the contract of schmp.Worker: Report changed the worker's state: its snapshot differs at .r"},
		{name: "state the snapshot misses", b: breaker{hidden: true}, depth: 1,
			want: "worker shard 0: round 2: the contract of schmp.Worker: restored in place from its snapshot at the cut and given the task's updates and plan again, the worker pushes a partial that differs at [0].d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc := pipeline.Config{Workers: 2, Parts: 1, Depth: tc.depth, ReportEvery: 1, MaxRounds: 30}
			opts := local.Options{Config: pc, RestoreEvery: tc.restore, RestoreInPlace: tc.restore > 0, CheckContract: true}
			j, _, err := local.Run(context.Background(), prog(tc.b), opts)
			switch {
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			case tc.want != "":
				return
			case err != nil:
				t.Fatal(err)
			case tc.restore > 0 && j.Restores == 0:
				t.Fatal("no rollback")
			}
			if tc.b != (breaker{}) {
				return
			}
			got, err := model(opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.CheckContract, opts.RestoreEvery, opts.RestoreInPlace = false, 0, false
			want, err := model(opts)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("the model differs with the check:\n%s\nwant\n%s", got, want)
			}
		})
	}
}
