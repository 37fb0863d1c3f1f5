package mf

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

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/local"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// timed are the metrics that measure time, which differ between any two
// runs.
var timed = []string{"ratings_per_s", "ratings_per_core_s"}

// evalsOf renders the model's evaluations bit for bit, but for the times,
// and the validation's state.
func evalsOf(m *Model) string {
	var b strings.Builder
	for _, e := range m.Trace {
		fmt.Fprintf(&b, "%d %x %x %x %x %x %x\n", e.Round, math.Float64bits(e.Iter), math.Float64bits(e.Objective),
			math.Float64bits(e.TrainRMSE), math.Float64bits(e.TestRMSE), math.Float64bits(e.ValRMSE), math.Float64bits(e.Ratings))
	}
	fmt.Fprintf(&b, "best %d stopped %v", m.BestAt, m.Stopped)
	return b.String()
}

// mfRun is what a local run of an mf job gave.
type mfRun struct {
	files    []byte
	trace    []string
	evals    string
	status   string
	restores int
	rounds   uint64
}

// runRestoring runs prog's job through the local driver with pc, writing
// the model's files, and moving it to restored roles every `every` rounds
// (0: never), or, inPlace, rolling its roles back in place
// (local.Options.RestoreInPlace).
func runRestoring[P, R, U any](t *testing.T, prog schmp.Program[P, R, U, Summary], pc pipeline.Config, every uint64, inPlace bool) mfRun {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "m")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	j, st, err := local.Run(ctx, prog, local.Options{Config: pc, Out: out, RestoreEvery: every, RestoreInPlace: inPlace, Ignore: []string{"ns"}})
	if err != nil {
		t.Fatalf("restore every %d (in place %t): %v", every, inPlace, err)
	}
	r := mfRun{
		trace: testhelper.TraceLines(st.Trace, timed...), evals: evalsOf(ModelOf(j.Coordinator)), restores: j.Restores, rounds: st.Rounds,
		status: fmt.Sprintf("rounds %d updates %d reason %q app %q decided %d last %d refuted %d done %v final %x",
			st.Rounds, st.Updates, st.Reason, st.AppReason, st.Decided, st.Last, st.Refuted, st.Done, math.Float64bits(st.Final.Objective)),
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		r.files = append(append(r.files, e.Name()+"\n"...), b...)
	}
	return r
}

// runMF runs cfg's job as runRestoring does, with the program of its
// algorithm.
func runMF(t *testing.T, cfg Config, pc pipeline.Config, every uint64, inPlace bool) mfRun {
	switch {
	case cfg.Algo == ALS:
		return runRestoring(t, ALSProgram(cfg), pc, every, inPlace)
	case cfg.Algo == CCD:
		return runRestoring(t, CCDProgram(cfg), pc, every, inPlace)
	case cfg.Schedule == Unscheduled:
		return runRestoring(t, UnscheduledProgram(cfg), pc, every, inPlace)
	}
	return runRestoring(t, RotationProgram(cfg), pc, every, inPlace)
}

// TestRestoreSameModel checks that a job moved to new roles restored from
// their snapshots every k rounds (local.Options.RestoreEvery, as a resumed
// job is) ends with the same model files, bit for bit, the same reports,
// evaluations and stop as the job never interrupted: every algorithm, the
// rotation on the ring and the star, with and without biases, the warm
// and the cold start, with validation (and its stop), and stopped by
// --tol; and so with the roles restored in place, as a rollback to a
// checkpoint does (local.Options.RestoreInPlace).
func TestRestoreSameModel(t *testing.T) {
	dir := t.TempDir()
	train, test := genSet(t, dir, 0.8, 3)
	type variant struct {
		name           string
		algo           string
		workers        int
		star, noBias   bool
		cold           bool
		holdout        float64
		patience       int
		tol            float64
		iters, reportK int
		rank           int
		noStop         bool // validation that does not stop the job
	}
	variants := []variant{
		{name: "rotation/ring/validate", algo: "rotation", workers: 2, holdout: 0.2, patience: 2, iters: 40},
		{name: "rotation/star/validate", algo: "rotation", workers: 2, star: true, holdout: 0.2, patience: 2, iters: 40},
		{name: "rotation/ring/3 workers/cold", algo: "rotation", workers: 3, cold: true, iters: 4},
		{name: "rotation/star/3 workers/no bias", algo: "rotation", workers: 3, star: true, noBias: true, iters: 4},
		{name: "rotation/ring/no bias/report every 2", algo: "rotation", workers: 2, noBias: true, iters: 6, reportK: 2},
		{name: "rotation/1 worker/tol", algo: "rotation", workers: 1, tol: 1e-2, iters: 30},
		{name: "unscheduled/validate", algo: "unscheduled", workers: 2, holdout: 0.2, patience: 2, iters: 40},
		{name: "unscheduled/no bias", algo: "unscheduled", workers: 3, noBias: true, iters: 6},
		{name: "ccd", algo: "ccd", workers: 2, iters: 2, rank: 3},
		{name: "ccd/no bias/validate", algo: "ccd", workers: 3, noBias: true, holdout: 0.2, patience: 1, iters: 6, rank: 3, noStop: true},
		{name: "als/validate", algo: "als", workers: 2, holdout: 0.2, patience: 2, iters: 30},
		{name: "als/no bias/tol", algo: "als", workers: 3, noBias: true, tol: 1e-3, iters: 30},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			cfg := config(t, v.algo, v.workers, v.iters)
			cfg.Train, cfg.Test, cfg.Rank, cfg.Lambda = train, test, 8, 1e-4
			cfg.Star, cfg.NoBias, cfg.ColdStart, cfg.Holdout, cfg.Patience = v.star, v.noBias, v.cold, v.holdout, v.patience
			if v.algo == "als" {
				cfg.Lambda = 0.03
			}
			if v.rank > 0 {
				cfg.Rank = v.rank
			}
			if v.reportK > 0 {
				cfg.ReportEvery = v.reportK
			}
			rpi := cfg.RoundsPerIter()
			pc := pipeline.Config{Workers: cfg.Workers, Depth: 1, ReportEvery: cfg.ReportEvery * rpi, MaxRounds: uint64(cfg.Iters * rpi), Tol: v.tol}
			want := runMF(t, cfg, pc, 0, false)
			t.Logf("%s; %d reports", want.status, len(want.trace))
			switch {
			case v.holdout > 0 && !v.noStop && !strings.Contains(want.status, "validation"):
				t.Fatalf("no validation stop: %s", want.status)
			case v.tol > 0 && !strings.Contains(want.status, "converged"):
				t.Fatalf("no --tol stop: %s", want.status)
			}
			for _, inPlace := range []bool{false, true} {
				for _, k := range []uint64{1, 2, 5} {
					got := runMF(t, cfg, pc, k, inPlace)
					switch {
					case got.restores == 0 && (!inPlace || want.rounds >= k+k/2+2):
						// A rollback needs k/2 + 1 rounds past the first cut.
						t.Errorf("restore every %d (in place %t): no restore", k, inPlace)
					case got.status != want.status:
						t.Errorf("restore every %d (in place %t): status %s, want %s", k, inPlace, got.status, want.status)
					case !slices.Equal(got.trace, want.trace):
						t.Errorf("restore every %d (in place %t): reports\n%s\nwant\n%s", k, inPlace, strings.Join(got.trace, "\n"), strings.Join(want.trace, "\n"))
					case got.evals != want.evals:
						t.Errorf("restore every %d (in place %t): evaluations\n%s\nwant\n%s", k, inPlace, got.evals, want.evals)
					case !bytes.Equal(got.files, want.files):
						t.Errorf("restore every %d (in place %t): the model files differ", k, inPlace)
					}
				}
			}
		})
	}
}

// snapshotOf returns the snapshot of a role.
func snapshotOf(t *testing.T, role any) []byte {
	t.Helper()
	b, err := role.(schmp.Snapshotter).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refusals checks that the roles of prog's job (cfg) restore from their
// own snapshots, taken after a short run, and refuse bytes that are not
// one: empty, garbage, truncated, corrupted, another role's, another
// shard's, and those of foreign (another algorithm's worker). It returns
// the snapshots of worker 0 and of the coordinator.
func refusals[P, R, U any](t *testing.T, prog schmp.Program[P, R, U, Summary], cfg Config, foreign []byte) (worker, coord []byte) {
	t.Helper()
	ctx := context.Background()
	rpi := cfg.RoundsPerIter()
	j, _, err := local.Run(ctx, prog, local.Options{Config: pipeline.Config{Workers: cfg.Workers, Depth: 1, ReportEvery: rpi, MaxRounds: uint64(2 * rpi)}})
	if err != nil {
		t.Fatal(err)
	}
	w0, w1, c, s := snapshotOf(t, j.Workers[0]), snapshotOf(t, j.Workers[1]), snapshotOf(t, j.Coordinator), snapshotOf(t, j.Schedulers[0])
	fresh := func(role string) schmp.Snapshotter {
		t.Helper()
		switch role {
		case "scheduler":
			s, err := prog.NewScheduler(ctx, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			return s.(schmp.Snapshotter)
		case "worker":
			w, err := prog.NewWorker(ctx, 0, cfg.Workers)
			if err != nil {
				t.Fatal(err)
			}
			return w.(schmp.Snapshotter)
		}
		var sums []Summary
		for k := range cfg.Workers {
			w, err := prog.NewWorker(ctx, k, cfg.Workers)
			if err == nil {
				var s Summary
				s, err = w.Describe()
				sums = append(sums, s)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		c, err := prog.NewCoordinator(ctx)
		if err == nil {
			_, err = c.Start(sums)
		}
		if err != nil {
			t.Fatal(err)
		}
		return c.(schmp.Snapshotter)
	}
	for _, role := range []string{"worker", "coordinator", "scheduler"} {
		good := map[string][]byte{"worker": w0, "coordinator": c, "scheduler": s}[role]
		if err := fresh(role).Restore(good); err != nil {
			t.Fatalf("%s: restore of its own snapshot: %v", role, err)
		}
		bad := map[string][]byte{"empty": nil, "garbage": []byte("not a snapshot at all"), "foreign": foreign}
		if role == "worker" {
			bad["other role"], bad["other shard"] = c, w1
		} else {
			bad["other role"] = w0
		}
		for _, n := range []int{1, 4, len(good) / 2, len(good) - 1} {
			bad[fmt.Sprintf("truncated to %d", n)] = good[:min(n, len(good)-1)]
		}
		for _, i := range []int{0, len(good) / 3, max(len(good)-5, 0)} {
			b := slices.Clone(good)
			b[i] ^= 0x10
			bad[fmt.Sprintf("bit flipped at %d", i)] = b
		}
		for name, b := range bad {
			if b == nil && name == "foreign" {
				continue
			}
			if err := fresh(role).Restore(b); err == nil {
				t.Errorf("%s: restore of %s: no error", role, name)
			}
		}
	}
	return w0, c
}

// TestRestoreRefuses checks that every algorithm's roles refuse, with an
// error and no panic, bytes that are not their snapshot (refusals), and
// well sealed snapshots whose contents do not fit the role.
func TestRestoreRefuses(t *testing.T) {
	train, test := genSet(t, t.TempDir(), 0.8, 4)
	cfgOf := func(algo string, noBias bool) Config {
		cfg := config(t, algo, 2, 2)
		cfg.Train, cfg.Test, cfg.Rank, cfg.NoBias, cfg.Holdout, cfg.Patience = train, test, 3, noBias, 0.1, 2
		if algo == "als" {
			cfg.Lambda = 0.03
		}
		return cfg
	}
	cfg := cfgOf("rotation", false)
	rotW, rotC := refusals(t, RotationProgram(cfg), cfg, nil)
	ccd := cfgOf("ccd", false)
	ccdW, _ := refusals(t, CCDProgram(ccd), ccd, rotW)
	uns := cfgOf("unscheduled", true)
	refusals(t, UnscheduledProgram(uns), uns, ccdW)
	als := cfgOf("als", true)
	refusals(t, ALSProgram(als), als, rotW)

	w, err := newRotationWorker(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Restore(rotW); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(s *workerState)
	}{
		{"shard", func(s *workerState) { s.Shard = 1 }},
		{"fingerprint", func(s *workerState) { s.Fingerprint++ }},
		{"users", func(s *workerState) { s.Users++ }},
		{"W", func(s *workerState) { s.W = s.W[1:] }},
		{"W not finite", func(s *workerState) { s.W[0] = math.Inf(1) }},
		{"user biases", func(s *workerState) { s.B = nil }},
		{"block", func(s *workerState) { s.Block = 5 }},
		{"block rows", func(s *workerState) { s.H = s.H[1:] }},
		{"block biases", func(s *workerState) { s.C = append(s.C, 0) }},
		{"block NaN", func(s *workerState) { s.H[2] = math.NaN() }},
	} {
		var st workerState
		if err := unseal(rotW, kindRotationWorker, &st); err != nil {
			t.Fatal(err)
		}
		// At the end of the job the worker holds all of H; at a cut
		// on the ring, one block.
		if st.Block != -1 {
			t.Fatalf("worker 0 holds block %d at the end of a job, want all of H", st.Block)
		}
		lo, hi := w.ix.Block(1)
		st.Block, st.H, st.C = 1, st.H[lo*cfg.Rank:hi*cfg.Rank], st.C[lo:hi]
		if b, err := seal(kindRotationWorker, &st); err != nil {
			t.Fatal(err)
		} else if w, err := newRotationWorker(cfg, 0); err != nil {
			t.Fatal(err)
		} else if err := w.Restore(b); err != nil {
			t.Fatalf("rotation worker: restore of a cut's state: %v", err)
		}
		tc.edit(&st)
		b, err := seal(kindRotationWorker, &st)
		if err != nil {
			t.Fatal(err)
		}
		w, err := newRotationWorker(cfg, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Restore(b); err == nil {
			t.Errorf("rotation worker: restore with bad %s: no error", tc.name)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(s *workerState)
	}{
		{"H", func(s *workerState) { s.H = s.H[:len(s.H)-1] }},
		{"residuals", func(s *workerState) { s.Res = s.Res[1:] }},
		{"slot", func(s *workerState) { s.Cur = 3 }},
		{"slot below", func(s *workerState) { s.Cur = -2 }},
		{"not started", func(s *workerState) { s.Started = false }},
	} {
		var st workerState
		if err := unseal(ccdW, kindCCDWorker, &st); err != nil {
			t.Fatal(err)
		}
		tc.edit(&st)
		b, err := seal(kindCCDWorker, &st)
		if err != nil {
			t.Fatal(err)
		}
		w, err := newCCDWorker(ccd, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Restore(b); err == nil {
			t.Errorf("ccd worker: restore with bad %s: no error", tc.name)
		}
	}
	// fresh returns a rotation coordinator just started.
	fresh := func() *rotationCoordinator {
		coord := &rotationCoordinator{base: newBase(cfg), rot: scheduler.Rotation{Workers: cfg.Workers}}
		var sums []Summary
		for k := range cfg.Workers {
			w, err := newRotationWorker(cfg, k)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := w.Describe()
			sums = append(sums, s)
		}
		if _, err := coord.Start(sums); err != nil {
			t.Fatal(err)
		}
		return coord
	}
	sealed := func(st *coordState) []byte {
		b, err := seal(kindRotationCoordinator, st)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		edit func(s *coordState)
	}{
		{"workers", func(s *coordState) { s.Workers = 3 }},
		{"users", func(s *coordState) { s.Users[0]++ }},
		{"H", func(s *coordState) { s.H = s.H[1:] }},
		{"item biases", func(s *coordState) { s.C = nil }},
		{"best", func(s *coordState) { s.BestAt = len(s.Trace) }},
		{"kept factors", func(s *coordState) { s.KeptW = s.KeptW[:1] }},
		{"kept factors' size", func(s *coordState) { s.KeptW[1] = s.KeptW[1][1:] }},
		{"kept user biases", func(s *coordState) { s.KeptB = nil }},
		{"kept item factors", func(s *coordState) { s.KeptH = nil }},
		{"kept item biases", func(s *coordState) { s.KeptC = s.KeptC[1:] }},
		{"work", func(s *coordState) { s.Work = math.NaN() }},
	} {
		var st coordState
		if err := unseal(rotC, kindRotationCoordinator, &st); err != nil {
			t.Fatal(err)
		}
		if st.KeptW != nil {
			t.Fatal("factors kept by a job that writes no files")
		}
		// As if the job kept the factors of an evaluation.
		for _, n := range st.Users {
			st.KeptW, st.KeptB = append(st.KeptW, make(codec.Float64s, n*cfg.Rank)), append(st.KeptB, make(codec.Float64s, n))
		}
		st.KeptH, st.KeptC = slices.Clone(st.H), slices.Clone(st.C)
		if err := fresh().Restore(sealed(&st)); err != nil {
			t.Fatalf("rotation coordinator: restore with factors kept: %v", err)
		}
		tc.edit(&st)
		b := sealed(&st)
		if err := fresh().Restore(b); err == nil {
			t.Errorf("rotation coordinator: restore with bad %s: no error", tc.name)
		}
	}
	if err := (&rotationCoordinator{base: newBase(cfg)}).Restore(rotC); err == nil {
		t.Error("rotation coordinator: restore before Start: no error")
	}
}

// TestResumeRuntime interrupts jobs on the runtime that take checkpoints
// (the rotation on the ring with a validation stop, CCD++), resumes each
// from its store, and checks that it ends with the model files of the job
// never interrupted, bit for bit.
func TestResumeRuntime(t *testing.T) {
	train, test := genSet(t, t.TempDir(), 0.8, 3)
	for _, algo := range []string{"rotation", "ccd"} {
		t.Run(algo, func(t *testing.T) {
			cfg := config(t, algo, 3, 40)
			cfg.Train, cfg.Test, cfg.Rank, cfg.Lambda, cfg.Holdout, cfg.Patience = train, test, 8, 1e-4, 0.2, 2
			if algo == "ccd" {
				cfg.Rank, cfg.Iters = 3, 4
			}
			run := func(ctx context.Context, opts job.Options, dir string) (string, *coordinator.Result, error) {
				opts.Coordinator.Out = filepath.Join(dir, "m")
				res, err := runJob(ctx, cfg, opts)
				if err != nil {
					return "", res, err
				}
				files, err := testhelper.DirFiles(dir)
				return files, res, err
			}
			testhelper.CheckResume(t, coordinator.Options{Timeout: 20 * time.Second}, run, 2, 20, 50)
		})
	}
}
