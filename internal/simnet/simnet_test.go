package simnet

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/mf"
	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/local"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

var schedules = flag.Int("simnet.schedules", 10000, "random fault schedules of TestFaults")

// job is a job of the tests: an app's program under one set of rules.
type job[P, R, U, S any] struct {
	name string
	prog schmp.Program[P, R, U, S]
	cfg  pipeline.Config
}

// nnlsJobs are jobs of the nnls example app, which passes nothing.
func nnlsJobs() []job[nnls.Plan, nnls.Partial, nnls.Update, nnls.Summary] {
	return []job[nnls.Plan, nnls.Partial, nnls.Update, nnls.Summary]{
		{"depth 1", nnls.Program(nnls.Config{Rows: 30, Cols: 8, Seed: 1, Block: 2}), pipeline.Config{Workers: 2, Parts: 1, Depth: 1, MaxRounds: 12, ReportEvery: 3}},
		{"depth 3, 2 parts", nnls.Program(nnls.Config{Rows: 30, Cols: 8, Seed: 2, Block: 2}), pipeline.Config{Workers: 3, Parts: 2, Depth: 3, MaxRounds: 14, ReportEvery: 2}},
		// A stop at a tolerance, confirmed by a check.
		{"tol, depth 2", nnls.Program(nnls.Config{Rows: 30, Cols: 6, Seed: 3, Block: 3}), pipeline.Config{Workers: 2, Parts: 2, Depth: 2, MaxRounds: 400, ReportEvery: 2, Tol: 1e-3}},
	}
}

// ringJobs are jobs of matrix factorization by DSGD on the rotation,
// whose workers pass their blocks of H round the ring (schmp.Passer), on
// a small generated data set; a Finisher, it asks for final reports.
func ringJobs(t *testing.T) []job[scheduler.Turn, mf.RotationPartial, mf.RotationUpdate, mf.Summary] {
	dir := t.TempDir()
	train, test := filepath.Join(dir, "train.txt"), filepath.Join(dir, "test.txt")
	var tr, te bytes.Buffer
	if _, err := mf.Generate(&tr, &te, mf.GenConfig{Users: 60, Items: 40, Rank: 3, Ratings: 1200, Noise: 0.1, TestFraction: 0.1, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(train, tr.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(test, te.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var jobs []job[scheduler.Turn, mf.RotationPartial, mf.RotationUpdate, mf.Summary]
	// Reports at the end of each iteration, and after every round.
	for _, each := range []bool{false, true} {
		c := mf.Config{Train: train, Test: test, Rank: 3, Lambda: 0.01, BiasLambda: 1, Algo: mf.SGD, Schedule: mf.Rotation,
			LearningRate: 0.05, Decay: 0.02, Inner: 1, Seed: 1, Workers: 3, Iters: 3, ReportEvery: 1}
		rounds, every := c.Rounds()
		if each {
			every = 1
		}
		jobs = append(jobs, job[scheduler.Turn, mf.RotationPartial, mf.RotationUpdate, mf.Summary]{
			fmt.Sprintf("ring, reports every %d rounds", every), mf.RotationProgram(c),
			pipeline.Config{Workers: 3, Parts: 1, Depth: 1, MaxRounds: rounds, ReportEvery: every, Period: uint64(c.RoundsPerIter())},
		})
	}
	return jobs
}

// model returns the model that c holds, as WriteModel writes it.
func model(t *testing.T, c interface{ WriteModel(io.Writer) error }) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := c.WriteModel(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// undisturbed returns the model of j run by the local driver, and its
// rounds.
func undisturbed[P, R, U, S any](t *testing.T, j job[P, R, U, S]) ([]byte, uint64) {
	t.Helper()
	l, st, err := local.Run(context.Background(), j.prog, local.Options{Config: j.cfg})
	if err != nil {
		t.Fatalf("%s: %v", j.name, err)
	}
	return model(t, l.Coordinator), st.Rounds
}

// TestUndisturbed checks that a job on a network without faults gives
// the local driver's model, bit for bit, in as many rounds.
func TestUndisturbed(t *testing.T) {
	undisturbedAll(t, nnlsJobs())
	undisturbedAll(t, ringJobs(t))
}

func undisturbedAll[P, R, U, S any](t *testing.T, jobs []job[P, R, U, S]) {
	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			want, rounds := undisturbed(t, j)
			cfg := j.cfg
			cfg.Timeout = time.Second
			out, err := Run(context.Background(), j.prog, cfg, Faults{Delay: 5 * time.Millisecond}, 1)
			if err != nil || out.Err != nil {
				t.Fatalf("%v, %v", err, out.Err)
			}
			if got := model(t, out.Coordinator); !bytes.Equal(got, want) || out.Status.Rounds != rounds {
				t.Fatalf("%d rounds, model\n%s\nwant %d rounds,\n%s", out.Status.Rounds, got, rounds, want)
			}
		})
	}
}

// TestFaults runs the jobs under random fault schedules (-simnet.schedules
// of nnls, a fifth as many of the ring), each drawn from its seed: every
// run ends with the undisturbed model, bit for bit, or with a deadline
// missed that names the round and the node. The faults that lose nothing
// (duplicates, replays, another run's messages, garbage, delays, short
// partitions) never fail a job; a run fails only where a message was
// dropped, overtook the others on its link, or a node was cut off long
// enough to miss a deadline.
func TestFaults(t *testing.T) {
	t.Run("nnls", func(t *testing.T) { faults(t, nnlsJobs(), *schedules) })
	t.Run("ring", func(t *testing.T) { faults(t, ringJobs(t), *schedules/5) })
}

func faults[P, R, U, S any](t *testing.T, jobs []job[P, R, U, S], schedules int) {
	type want struct {
		model  []byte
		rounds uint64
	}
	wants := make([]want, len(jobs))
	for i, j := range jobs {
		wants[i].model, wants[i].rounds = undisturbed(t, j)
	}
	const timeout = 50 * time.Millisecond
	injected := map[string]int{}
	var ok, failed, lossless int
	for seed := range uint64(schedules) {
		rng := rand.New(rand.NewPCG(seed, 7))
		i := rng.IntN(len(jobs))
		j := jobs[i]
		f := Faults{Delay: time.Duration(rng.Int64N(int64(20 * time.Millisecond)))}
		// Each fault is on in half the schedules, at a rate of up to 10%.
		rate := func() float64 {
			if rng.IntN(2) == 0 {
				return 0
			}
			return rng.Float64() * 0.1
		}
		f.Duplicate, f.Replay, f.Foreign, f.Garbage = rate(), rate(), rate(), rate()
		f.Drop, f.Reorder = rate()/10, rate()/10
		if f.Partition = rate() / 5; f.Partition > 0 {
			f.PartitionFor = time.Duration(rng.Int64N(int64(2 * timeout)))
		}
		cfg := j.cfg
		cfg.Timeout = timeout
		out, err := Run(context.Background(), j.prog, cfg, f, seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for k, n := range out.Faults {
			injected[k] += n
		}
		// A message may wait for a partition to heal and then for its
		// delay, on each of the two hops that an answer awaited takes.
		long := 2*(f.PartitionFor+2*f.Delay+2*latency) >= timeout
		lossy := out.Faults["drop"] > 0 || out.Faults["reorder"] > 0 || long && out.Faults["partition"] > 0
		if !lossy {
			lossless++
		}
		switch {
		case out.Err == nil:
			if got := model(t, out.Coordinator); !bytes.Equal(got, wants[i].model) || out.Status.Rounds != wants[i].rounds {
				t.Fatalf("seed %d (%s, %+v, %v): %d rounds and a model other than the undisturbed one (%d rounds):\n%s\nwant\n%s",
					seed, j.name, f, out.Faults, out.Status.Rounds, wants[i].rounds, got, wants[i].model)
			}
			ok++
		case !lossy:
			t.Fatalf("seed %d (%s, %+v, %v): failed with nothing lost: %v", seed, j.name, f, out.Faults, out.Err)
		case !errors.Is(out.Err, protocol.ErrTimeout) || !strings.Contains(out.Err.Error(), "round ") ||
			!strings.Contains(out.Err.Error(), "worker") && !strings.Contains(out.Err.Error(), "scheduler"):
			t.Fatalf("seed %d (%s, %+v, %v): a failure that names no deadline, round and node: %v", seed, j.name, f, out.Faults, out.Err)
		default:
			failed++
		}
	}
	t.Logf("%d schedules: %d ended with the undisturbed model, %d with a deadline missed; %d lost nothing; faults injected: %v", schedules, ok, failed, lossless, injected)
	kinds := []string{"drop", "duplicate", "replay", "foreign", "garbage", "reorder", "partition"}
	for _, k := range kinds {
		if injected[k] == 0 && schedules >= 1000 {
			t.Errorf("no %s injected", k)
		}
	}
	if schedules >= 1000 && (ok < schedules/2 || failed == 0) {
		t.Errorf("%d runs ended well and %d failed: the schedules test too little", ok, failed)
	}
}
