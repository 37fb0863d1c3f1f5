package mf

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/wire"
)

// psIters is the iterations of the parameter-server tests: with 2 workers
// their test RMSE came within 0.1% of the scheduled SGD's at 20 (bsp, ssp,
// essp; async 0.6%), and 0.6% at 12.
const psIters = 20

// psConfig returns the SGD configuration of the parameter-server tests on
// the generated set at train, test.
func psConfig(train, test, mode string, workers int) Config {
	return Config{Train: train, Test: test, Rank: 4, Lambda: 0.01, BiasLambda: DefaultBiasLambda, Algo: SGD, Schedule: Rotation,
		LearningRate: 0.05, Decay: 0.05, Seed: 1, Workers: workers, Iters: psIters, ReportEvery: 1, Mode: mode}
}

// runPS runs cfg on an embedded nats-server.
func runPS(t *testing.T, cfg Config, o PSOptions) (*PSResult, error) {
	t.Helper()
	srv := testhelper.StartServer(t, natsserver.Options{Port: -1})
	dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "mfps") }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o.Node = node.Options{Resend: 200 * time.Millisecond, Timeout: 20 * time.Second}
	return RunPS(ctx, cfg, o, dial)
}

// TestPSModes runs SGD on the parameter server under every consistency
// model: the objective falls over the iterations (within 2%), the final test RMSE is
// within 1% of the scheduled SGD's on the same data (async 2%), and the files
// written give back the RMSE reported.
func TestPSModes(t *testing.T) {
	dir := t.TempDir()
	train, test := genSet(t, dir, 0.1, 3)
	sched, err := fitLocal(context.Background(), psConfig(train, test, Scheduled, 2))
	if err != nil {
		t.Fatal(err)
	}
	want := sched.Final().TestRMSE
	var testRatings []Rating
	if err := ReadRatings(test, func(_ int, r Rating) error { testRatings = append(testRatings, r); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode      string
		staleness int
		workers   int
	}{{"bsp", 0, 2}, {"ssp", 2, 2}, {"essp", 1, 2}, {"async", 0, 2}} {
		t.Run(tc.mode, func(t *testing.T) {
			res, err := runPS(t, psConfig(train, test, tc.mode, tc.workers), PSOptions{Staleness: tc.staleness})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Model
			f := m.Final()
			t.Logf("%s: %d evaluations, test RMSE %.4f (scheduled %.4f), staleness %+v", tc.mode, len(m.Trace), f.TestRMSE, want, res.Staleness[len(res.Staleness)-1])
			if len(m.Trace) != psIters+1 || f.Iter != psIters || res.Clocks != psIters*DefaultClocksPerIter {
				t.Errorf("%d evaluations, the last at iteration %g, %d clocks; want %d, %d, %d", len(m.Trace), f.Iter, res.Clocks, psIters+1, psIters, psIters*DefaultClocksPerIter)
			}
			// Stale reads may raise it a little (by 0.2% in the runs seen).
			for k := 2; k < len(m.Trace); k++ {
				if m.Trace[k].Objective > m.Trace[k-1].Objective*1.02 {
					t.Errorf("objective %.6g at iteration %g, up from %.6g", m.Trace[k].Objective, m.Trace[k].Iter, m.Trace[k-1].Objective)
				}
			}
			within := 0.01
			if tc.mode == "async" {
				within = 0.02 // its reads have no bound
			}
			if !(f.Objective < m.Trace[0].Objective) || !(math.Abs(f.TestRMSE-want) <= within*want) {
				t.Errorf("objective %.6g from %.6g, test RMSE %.4f; want it within %g%% of the scheduled SGD's %.4f", f.Objective, m.Trace[0].Objective, f.TestRMSE, 100*within, want)
			}
			if got := savedRMSE(t, m, testRatings); math.Abs(got-f.TestRMSE) > 1e-9*f.TestRMSE {
				t.Errorf("the model written scores a test RMSE of %.12g, the job reported %.12g", got, f.TestRMSE)
			}
		})
	}
}

// TestPSStops checks the decisions that every worker takes alike: a
// large step size fails the job as diverged, and --tol stops it early,
// with the last evaluation that of the model returned; with a straggler
// (SlowWorker) SSP's reads stay within their bound.
func TestPSStops(t *testing.T) {
	dir := t.TempDir()
	train, test := genSet(t, dir, 0.1, 4)
	var testRatings []Rating
	if err := ReadRatings(test, func(_ int, r Rating) error { testRatings = append(testRatings, r); return nil }); err != nil {
		t.Fatal(err)
	}
	t.Run("diverges", func(t *testing.T) {
		cfg := psConfig(train, test, "ssp", 2)
		cfg.LearningRate = 3
		if _, err := runPS(t, cfg, PSOptions{Staleness: 1}); !errors.Is(err, ErrDiverged) {
			t.Fatalf("RunPS: %v, want %v", err, ErrDiverged)
		}
	})
	t.Run("tol", func(t *testing.T) {
		res, err := runPS(t, psConfig(train, test, "essp", 2), PSOptions{Staleness: 2, Tol: 0.02})
		if err != nil {
			t.Fatal(err)
		}
		m := res.Model
		f := m.Final()
		if res.Reason != "converged" || res.Clocks >= psIters*DefaultClocksPerIter || f.Round != uint64(res.Clocks) {
			t.Errorf("stopped after %d clocks (%s), the last evaluation after %d; want converged before %d, the last evaluation of the state written", res.Clocks, res.Reason, f.Round, psIters*DefaultClocksPerIter)
		}
		if got := savedRMSE(t, m, testRatings); math.Abs(got-f.TestRMSE) > 1e-9*f.TestRMSE {
			t.Errorf("the model written scores a test RMSE of %.12g, the job reported %.12g", got, f.TestRMSE)
		}
	})
	t.Run("straggler", func(t *testing.T) {
		cfg := psConfig(train, test, "ssp", 3)
		cfg.Iters = 6
		res, err := runPS(t, cfg, PSOptions{Staleness: 1, SlowWorker: 3, ClocksPerIter: 2})
		if err != nil {
			t.Fatal(err)
		}
		if st := res.Staleness[len(res.Staleness)-1]; st.Max > 1 || st.Mean() == 0 || res.Clocks != 12 {
			t.Errorf("staleness %+v after %d clocks; want at most 1, not all 0, after 12", st, res.Clocks)
		}
	})
}

// TestPSResume stops a job once it has committed a checkpoint, and runs
// it again from there: with one worker the model is the uninterrupted
// job's bit for bit (W from the worker's piece, H from the servers' cut);
// with two under ssp it ends as good as the scheduled SGD, and every
// worker starts again at the checkpoint's clock.
func TestPSResume(t *testing.T) {
	dir := t.TempDir()
	train, test := genSet(t, dir, 0.1, 3)
	for _, tc := range []struct {
		mode    string
		workers int
	}{{"bsp", 1}, {"ssp", 2}} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := psConfig(train, test, tc.mode, tc.workers)
			cfg.Iters = 6
			o := PSOptions{CheckpointEvery: 20}
			if tc.mode == "ssp" {
				o.Staleness = 1
			}
			srv := testhelper.StartServer(t, natsserver.Options{Port: -1, StoreDir: t.TempDir()})
			dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "mfresume") }
			o.Node = node.Options{Resend: 200 * time.Millisecond, Timeout: 20 * time.Second, Checkpoints: true}
			// The first run stops at clock 30, once the checkpoint of
			// clock 20 is committed.
			stopped := errors.New("stopped")
			o.atClock = func(c int) error {
				if c < 30 {
					return nil
				}
				if err := testhelper.AwaitCheckpoint(t, srv, "mfresume", 20); err != nil {
					return err
				}
				return stopped
			}
			if _, err := RunPS(context.Background(), cfg, o, dial); !errors.Is(err, stopped) {
				t.Fatalf("first run: %v, want it stopped", err)
			}
			var starts []int
			var mu sync.Mutex
			o.atClock = nil
			o.atStart = func(c int) {
				mu.Lock()
				starts = append(starts, c)
				mu.Unlock()
			}
			o.Node.Resume = true
			res, err := RunPS(context.Background(), cfg, o, dial)
			if err != nil {
				t.Fatal(err)
			}
			if want := []int{20, 20}[:tc.workers]; !slices.Equal(starts, want) {
				t.Errorf("the workers started again at clocks %v, want %v", starts, want)
			}
			if res.Clocks != 60 {
				t.Errorf("%d clocks, want 60", res.Clocks)
			}
			if tc.workers == 1 {
				o.CheckpointEvery, o.Node = 0, node.Options{}
				whole, err := runPS(t, cfg, o)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(res.Model.H, whole.Model.H) || !slices.Equal(res.Model.W[0], whole.Model.W[0]) {
					t.Errorf("resumed: test RMSE %.9f; uninterrupted %.9f: not the same model", res.Model.Final().TestRMSE, whole.Model.Final().TestRMSE)
				}
				return
			}
			if f := res.Model.Final(); f.TestRMSE > 0.5 || math.IsNaN(f.TestRMSE) {
				t.Errorf("resumed: test RMSE %.4f", f.TestRMSE)
			}
		})
	}
}

// TestPSReport: worker 0 reports every evaluation it reads, in order, with
// the staleness of the reads so far (none above the bound).
func TestPSReport(t *testing.T) {
	dir := t.TempDir()
	train, test := genSet(t, dir, 0.1, 3)
	cfg := psConfig(train, test, "ssp", 2)
	cfg.Iters = 4
	var got []Eval
	var stale []ps.Stats
	o := PSOptions{Staleness: 1, Report: func(e Eval, st ps.Stats) { got, stale = append(got, e), append(stale, st) }}
	res, err := runPS(t, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 || len(got) > len(res.Model.Trace) {
		t.Fatalf("%d reports of %d evaluations", len(got), len(res.Model.Trace))
	}
	for k, e := range got {
		if want := res.Model.Trace[k]; e.Round != want.Round || e.Objective != want.Objective {
			t.Errorf("report %d: clock %d objective %v; the trace's %d %v", k, e.Round, e.Objective, want.Round, want.Objective)
		}
		if st := stale[k]; k > 0 && (st.Reads == 0 || st.Max > 1) {
			t.Errorf("report %d: staleness %+v", k, st)
		}
	}
}

// TestMerged: a worker's change counts in full while the steps are small
// (the workers' changes add up as one sequence of steps would), as its
// share once they correct the error in full (they average), and in full
// when it has every rating.
func TestMerged(t *testing.T) {
	for _, tc := range []struct {
		share, a, want, tol float64
	}{
		{0.5, 1e-9, 1, 1e-6},
		{0.25, 1e-9, 1, 1e-6},
		{0.5, 50, 0.5, 1e-12},
		{0.25, 50, 0.25, 1e-12},
		{1, 3, 1, 0},
		{0.5, 0, 0.5, 0},
		// Two workers, each contracting by e^−1: together e^−2, 1−e^−2
		// of the error corrected, from changes of 1−e^−1 each.
		{0.5, 1, (1 - math.Exp(-2)) / (2 * (1 - math.Exp(-1))), 1e-12},
	} {
		if got := merged(tc.share, tc.a); math.Abs(got-tc.want) > tc.tol {
			t.Errorf("merged(%v, %v) = %v, want %v", tc.share, tc.a, got, tc.want)
		}
	}
}
