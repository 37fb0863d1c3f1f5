package logreg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/wire"
)

// runSGD runs cfg on an embedded nats-server.
func runSGD(t *testing.T, cfg SGDConfig) (*SGDResult, error) {
	t.Helper()
	srv := testhelper.StartServer(t, natsserver.Options{Port: -1})
	dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "sgdtest") }
	cfg.Node = node.Options{Resend: 200 * time.Millisecond, Timeout: 20 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return RunSGD(ctx, dial, cfg)
}

// TestSGD solves a generated problem with each consistency model on 1
// and 2 workers and compares the objective of the model read at the end
// with the scheduled solver's optimum.
func TestSGD(t *testing.T) {
	pr := newProblem(t, GenConfig{GenConfig: lasso.GenConfig{
		Samples: 600, Features: 40, Density: 0.2, TrueNNZ: 10, Seed: 3,
	}, Bias: 0.5})
	base := Config{Data: pr.path, LambdaRatio: 0.05, Intercept: true, Schedule: schedule(scheduler.Priority, 1)}
	res, coord, _ := runJob(t, base, 1, coordinator.Options{Tol: 1e-9, MaxRounds: 5000})
	opt := res.Final.Objective
	t.Logf("scheduled: objective %.6g λ %.4g", opt, coord.Lambda())
	for _, tc := range []struct {
		model     ps.Model
		staleness int
		workers   int
	}{
		{ps.BSP, 0, 1}, {ps.BSP, 0, 2}, {ps.SSP, 2, 2}, {ps.ESSP, 2, 2}, {ps.Async, 0, 2},
	} {
		t.Run(fmt.Sprintf("%v-%d", tc.model, tc.workers), func(t *testing.T) {
			cfg := SGDConfig{Config: base, Model: tc.model, Staleness: tc.staleness, Workers: tc.workers, Servers: 1,
				ClocksPerPass: 4, Passes: 30, EvalEvery: 4, Seed: 1}
			r, err := runSGD(t, cfg)
			if err != nil {
				t.Fatal(err)
			}
			first, last := r.Records[0], r.Records[len(r.Records)-1]
			t.Logf("%v/%d: objective %.6g (+%.2f%%) from %.6g, last eval %.6g, %d clocks, %v, staleness %.2f max %d, %s",
				tc.model, tc.workers, r.Objective, 100*(r.Objective/opt-1), first.Objective, last.Objective, r.Clocks, r.Elapsed, last.Staleness.Mean(), last.Staleness.Max, r.Reason)
			if r.Objective > opt*1.03 || math.Abs(r.Lambda-coord.Lambda()) > 1e-12 {
				t.Errorf("objective %.6g, λ %g; scheduled %.6g, λ %g", r.Objective, r.Lambda, opt, coord.Lambda())
			}
		})
	}
}

// resumeSGD runs cfg with a checkpoint every k clocks on an embedded
// nats-server with JetStream, stops it at clock 2k+2, once the checkpoint
// of clock 2k is committed, and runs it again from there. It returns the
// second run's result and the clocks its workers started at.
func resumeSGD(t *testing.T, cfg SGDConfig, k int) (*SGDResult, []int) {
	t.Helper()
	srv := testhelper.StartServer(t, natsserver.Options{Port: -1, StoreDir: t.TempDir()})
	dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "sgdresume") }
	cfg.CheckpointEvery = k
	cfg.Node = node.Options{Resend: 200 * time.Millisecond, Timeout: 20 * time.Second, Checkpoints: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopped := errors.New("stopped")
	cfg.atClock = func(c int) error {
		if c < 2*k+2 {
			return nil
		}
		if err := testhelper.AwaitCheckpoint(t, srv, "sgdresume", uint64(2*k)); err != nil {
			return err
		}
		return stopped
	}
	if _, err := RunSGD(ctx, dial, cfg); !errors.Is(err, stopped) {
		t.Fatalf("first run: %v, want it stopped", err)
	}
	var starts []int
	var mu sync.Mutex
	cfg.atClock = nil
	cfg.atStart = func(c int) {
		mu.Lock()
		starts = append(starts, c)
		mu.Unlock()
	}
	cfg.Node.Resume = true
	r, err := RunSGD(ctx, dial, cfg)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(starts)
	return r, starts
}

// sameSGD fails the test unless the results have the same model and the
// same evaluations but for their times, bit for bit.
func sameSGD(t *testing.T, got, want *SGDResult) {
	t.Helper()
	if !slices.Equal(got.Model.Dense(), want.Model.Dense()) || got.Model.Intercept != want.Model.Intercept || got.Objective != want.Objective {
		t.Errorf("resumed: objective %.17g; uninterrupted %.17g: not the same model", got.Objective, want.Objective)
	}
	if got.Clocks != want.Clocks || got.Reason != want.Reason || len(got.Records) != len(want.Records) {
		t.Fatalf("resumed: %d clocks, %d evaluations (%s); uninterrupted %d, %d (%s)", got.Clocks, len(got.Records), got.Reason, want.Clocks, len(want.Records), want.Reason)
	}
	for e, rec := range got.Records {
		w := want.Records[e]
		// Its time is the run's; NaN is no test set.
		rec.Time, w.Time = 0, 0
		if math.IsNaN(rec.Test) && math.IsNaN(w.Test) {
			rec.Test, w.Test = 0, 0
		}
		if rec != w {
			t.Errorf("evaluation %d: resumed %+v, uninterrupted %+v", e, rec, w)
		}
	}
}

// TestSGDResume stops jobs once they have committed a checkpoint in the
// middle of a pass (4 clocks) and runs them again from there: at clock 14
// (training clock 13, the second mini-batch of pass 3) between two
// evaluations (every 3 clocks), and at clock 10 (training clock 9), whose
// start is evaluation 3's. With one worker under bsp the model and every
// evaluation but its time are the uninterrupted job's bit for bit, at the
// end of the passes and where Tol stops it at the first decision after
// the checkpoint (which needs the objective before it); with two workers
// under ssp every worker starts again at the checkpoint's clock and the
// job ends near the scheduled solver's optimum.
func TestSGDResume(t *testing.T) {
	pr := newProblem(t, GenConfig{GenConfig: lasso.GenConfig{
		Samples: 400, Features: 40, Density: 0.2, TrueNNZ: 10, Seed: 5,
	}, Bias: 0.5})
	base := Config{Data: pr.path, LambdaRatio: 0.05, Intercept: true, Schedule: schedule(scheduler.Priority, 1)}
	cfg := SGDConfig{Config: base, Model: ps.BSP, Workers: 1, Servers: 1, ClocksPerPass: 4, Passes: 12, EvalEvery: 3, Seed: 1}
	whole, err := runSGD(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{7, 5} {
		t.Run(fmt.Sprintf("bsp-1-at-%d", 2*k), func(t *testing.T) {
			r, starts := resumeSGD(t, cfg, k)
			if !slices.Equal(starts, []int{2 * k}) {
				t.Errorf("the worker started again at clocks %v, want [%d]", starts, 2*k)
			}
			// 48 clocks of training after clock 0, and the last
			// evaluation's.
			if r.Clocks != 50 || len(r.Records) != 17 || r.Reason != stopReasons[stopPasses] {
				t.Errorf("%d clocks, %d evaluations (%s); want 50 and 17 (the passes)", r.Clocks, len(r.Records), r.Reason)
			}
			sameSGD(t, r, whole)
		})
	}
	t.Run("bsp-1-tol", func(t *testing.T) {
		// The tolerance that stops the job at evaluation 5, the first
		// after the checkpoint (training clock 15), whose decision
		// compares evaluations 3 and 4.
		f := func(e int) float64 { return whole.Records[e].Objective }
		tc := cfg
		tc.Tol = math.Abs(f(3)-f(4)) / math.Abs(f(4)) * (1 + 1e-9)
		for e := 1; e < 4; e++ {
			if math.Abs(f(e-1)-f(e)) <= tc.Tol*math.Abs(f(e)) {
				t.Fatalf("evaluation %d would stop the job already: pick another problem", e)
			}
		}
		stop, err := runSGD(t, tc)
		if err != nil {
			t.Fatal(err)
		}
		if stop.Clocks != 17 || stop.Reason != stopReasons[stopConverged] {
			t.Fatalf("uninterrupted: %d clocks (%s), want 17, converged", stop.Clocks, stop.Reason)
		}
		r, _ := resumeSGD(t, tc, 7)
		sameSGD(t, r, stop)
	})
	t.Run("ssp-2", func(t *testing.T) {
		res, _, _ := runJob(t, base, 1, coordinator.Options{Tol: 1e-9, MaxRounds: 5000})
		opt := res.Final.Objective
		tc := cfg
		tc.Model, tc.Staleness, tc.Workers = ps.SSP, 1, 2
		r, starts := resumeSGD(t, tc, 7)
		if !slices.Equal(starts, []int{14, 14}) {
			t.Errorf("the workers started again at clocks %v, want [14 14]", starts)
		}
		if r.Clocks != 50 || len(r.Records) != 17 {
			t.Errorf("%d clocks, %d evaluations; want 50 and 17", r.Clocks, len(r.Records))
		}
		t.Logf("resumed: objective %.9g (+%.2f%%), staleness %+v", r.Objective, 100*(r.Objective/opt-1), r.Records[len(r.Records)-1].Staleness)
		if r.Objective > opt*1.05 {
			t.Errorf("resumed: objective %.9g, the optimum %.9g", r.Objective, opt)
		}
	})
}

// TestSGDJobResume runs a job of separate roles (Coordinate, Host) that
// takes checkpoints, then again with Resume: the worker starts again at
// the last checkpoint committed, and the model is the first run's bit for
// bit. (The role commands carry the coordinator's checkpoint settings to
// the workers as they join: TestLogregPSProcessesResume.)
func TestSGDJobResume(t *testing.T) {
	pr := newProblem(t, GenConfig{GenConfig: lasso.GenConfig{
		Samples: 300, Features: 30, Density: 0.2, TrueNNZ: 6, Seed: 7,
	}, Bias: 0.5})
	srv := testhelper.StartServer(t, natsserver.Options{Port: -1, StoreDir: t.TempDir()})
	dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "sgdroles") }
	cfg := SGDConfig{Config: Config{Data: pr.path, LambdaRatio: 0.05, Intercept: true}, Model: ps.BSP, Workers: 1, Servers: 1,
		ClocksPerPass: 4, Passes: 6, EvalEvery: 3, Seed: 1}
	cfg.Node = node.Options{Resend: 200 * time.Millisecond, Timeout: 20 * time.Second}
	run := func(coord, worker SGDConfig) (*SGDResult, error) {
		t.Helper()
		cj, err := NewSGDJob(coord)
		if err != nil {
			t.Fatal(err)
		}
		wj, err := NewSGDJob(worker)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var g sync.WaitGroup
		var werr error
		g.Go(func() { werr = wj.Host(ctx, dial, 0) })
		c, err := dial("coordinator")
		if err != nil {
			t.Fatal(err)
		}
		res, err := cj.Coordinate(ctx, c, dial, 20*time.Second)
		g.Wait()
		if err != nil || werr != nil {
			return nil, fmt.Errorf("coordinator: %w; worker: %w", err, werr)
		}
		return res, nil
	}
	coord := cfg
	coord.CheckpointEvery, coord.Node.Checkpoints = 7, true
	first, err := run(coord, coord)
	if err != nil {
		t.Fatal(err)
	}
	store, err := checkpoint.Open(context.Background(), testhelper.Connect(t, srv), "sgdroles", false)
	if err != nil {
		t.Fatal(err)
	}
	m, err := store.Latest(context.Background())
	if err != nil {
		t.Fatalf("no checkpoint: %v", err)
	}
	coord.Node.Resume = true
	worker := coord
	start := -1
	worker.atStart = func(c int) { start = c }
	again, err := run(coord, worker)
	if err != nil {
		t.Fatal(err)
	}
	if start != int(m.Round) || start == 0 {
		t.Errorf("the worker started again at clock %d, the last checkpoint is of clock %d", start, m.Round)
	}
	sameSGD(t, again, first)
	// Another order of the rows: the same tables, not the same job.
	coord.Seed, worker.Seed = 2, 2
	if _, err := run(coord, worker); err == nil || !strings.Contains(err.Error(), "other settings or data (seed 1, this job seed 2)") {
		t.Errorf("resumed with another seed: %v", err)
	}
}

// TestSGDReport: worker 0 reports every evaluation it reads, in order, as
// the result's records hold them.
func TestSGDReport(t *testing.T) {
	pr := newProblem(t, GenConfig{GenConfig: lasso.GenConfig{
		Samples: 200, Features: 20, Density: 0.2, TrueNNZ: 5, Seed: 5,
	}, Bias: 0.5})
	var got []SGDRecord
	cfg := SGDConfig{Config: Config{Data: pr.path, LambdaRatio: 0.05, Intercept: true}, Model: ps.SSP, Staleness: 1, Workers: 2, Servers: 1,
		ClocksPerPass: 4, Passes: 5, EvalEvery: 4, Seed: 1, Report: func(r SGDRecord) { got = append(got, r) }}
	res, err := runSGD(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 || len(got) > len(res.Records) {
		t.Fatalf("%d reports of %d evaluations", len(got), len(res.Records))
	}
	for k, r := range got {
		if want := res.Records[k]; r.Clock != want.Clock || r.Objective != want.Objective || r.Staleness != want.Staleness {
			t.Errorf("report %d: %+v, the result's %+v", k, r, want)
		}
	}
}
