package lda

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
var timed = []string{"tokens_per_s", "sample_tokens_per_s_core"}

// statusOf renders what a job's status says of its rounds and its stop.
func statusOf(st pipeline.Status) string {
	return fmt.Sprintf("rounds %d updates %d candidates %d reason %q app %q decided %d last %d refuted %d done %v final %x",
		st.Rounds, st.Updates, st.Candidates, st.Reason, st.AppReason, st.Decided, st.Last, st.Refuted, st.Done,
		math.Float64bits(st.Final.Objective))
}

// ldaRun is what a local run of an LDA job gave: its model files, in
// order, its trace and status, and how many times it moved to new roles.
type ldaRun struct {
	files    []byte
	trace    []string
	status   string
	restores int
	rounds   uint64
}

// runLocal runs cfg's job (prog) through the local driver with pc, moving
// it to restored roles every `every` rounds (0: never), or, inPlace,
// rolling its roles back in place (local.Options.RestoreInPlace).
func runLocal[U any](t *testing.T, cfg Config, prog func(Config) schmp.Program[scheduler.Turn, Partial, U, Summary], pc pipeline.Config, every uint64, inPlace bool) ldaRun {
	t.Helper()
	dir := t.TempDir()
	cfg.WordTopicOut, cfg.DocTopicOut, cfg.ModelOut = filepath.Join(dir, "wt.csv"), filepath.Join(dir, "dt.csv"), filepath.Join(dir, "model.json")
	out := filepath.Join(dir, "topics.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	j, st, err := local.Run(ctx, prog(cfg), local.Options{Config: pc, Out: out, RestoreEvery: every, RestoreInPlace: inPlace, Ignore: []string{"sn"}})
	if err != nil {
		t.Fatalf("restore every %d (in place %t): %v", every, inPlace, err)
	}
	r := ldaRun{trace: testhelper.TraceLines(st.Trace, timed...), status: statusOf(st), restores: j.Restores, rounds: st.Rounds}
	for _, p := range []string{out, cfg.WordTopicOut, cfg.DocTopicOut, cfg.ModelOut} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r.files = append(append(r.files, filepath.Base(p)+"\n"...), b...)
	}
	return r
}

// TestRestoreSameModel checks that a job moved to new roles restored from
// their snapshots every k rounds (local.Options.RestoreEvery, as a resumed
// job is) ends with the same model files, bit for bit, the same reports
// and the same stop as the job never interrupted: on the ring and the
// star, on 1 to 3 workers, with learned priors and held-out perplexity,
// stopped by the rounds or by --tol, and the data-parallel baseline, with
// either sampler; and
// so with the roles restored in place, as a rollback to a checkpoint does
// (local.Options.RestoreInPlace).
func TestRestoreSameModel(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 120, Vocab: 90, Topics: 4, DocLen: 30, TestDocs: 20, Alpha: 0.1, Beta: 0.01, Seed: 11})
	type variant struct {
		name        string
		workers     int
		star        bool
		unscheduled bool
		tol         float64
		iters       int
		exact       bool // MHSteps 0
	}
	variants := []variant{
		{name: "1 worker", workers: 1, iters: 6},
		{name: "ring/2 workers", workers: 2, iters: 6},
		{name: "star/2 workers", workers: 2, star: true, iters: 6},
		{name: "ring/3 workers", workers: 3, iters: 5},
		{name: "star/3 workers", workers: 3, star: true, iters: 5},
		{name: "ring/3 workers/tol", workers: 3, tol: 2e-2, iters: 40},
		{name: "unscheduled/2 workers", workers: 2, unscheduled: true, iters: 6},
		{name: "ring/3 workers/exact", workers: 3, iters: 5, exact: true},
		{name: "unscheduled/2 workers/exact", workers: 2, unscheduled: true, iters: 6, exact: true},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			cfg := f.config(v.workers, v.iters)
			cfg.Star, cfg.Unscheduled, cfg.TestDocword, cfg.TestEvery = v.star, v.unscheduled, f.test, 2
			cfg.OptimizeEvery, cfg.OptimizeBurnIn = 2, 2
			if v.exact {
				cfg.MHSteps = 0
			}
			maxRounds, every := cfg.Rounds()
			pc := pipeline.Config{Workers: v.workers, Depth: 1, MaxRounds: maxRounds, ReportEvery: every, Tol: v.tol}
			run := func(k uint64, inPlace bool) ldaRun {
				if v.unscheduled {
					return runLocal(t, cfg, Unscheduled, pc, k, inPlace)
				}
				return runLocal(t, cfg, Program, pc, k, inPlace)
			}
			want := run(0, false)
			t.Logf("%s; %d reports", want.status, len(want.trace))
			if v.tol > 0 && !strings.Contains(want.status, "decided") {
				t.Fatalf("status %s", want.status)
			}
			for _, inPlace := range []bool{false, true} {
				for _, k := range []uint64{1, 2, 5} {
					got := run(k, inPlace)
					switch {
					case got.restores == 0 && (!inPlace || want.rounds >= k+k/2+2):
						// A rollback needs k/2 + 1 rounds past the first cut.
						t.Errorf("restore every %d (in place %t): no restore", k, inPlace)
					case got.status != want.status:
						t.Errorf("restore every %d (in place %t): status %s, want %s", k, inPlace, got.status, want.status)
					case !slices.Equal(got.trace, want.trace):
						t.Errorf("restore every %d (in place %t): reports\n%s\nwant\n%s", k, inPlace, strings.Join(got.trace, "\n"), strings.Join(want.trace, "\n"))
					case !bytes.Equal(got.files, want.files):
						t.Errorf("restore every %d (in place %t): the model files differ", k, inPlace)
					}
				}
			}
		})
	}
}

// ringJob runs cfg's job for its rounds and returns the job, whose
// roles' snapshots the caller takes.
func ringJob(t *testing.T, cfg Config) *local.Job[scheduler.Turn, Partial, Update, Summary] {
	t.Helper()
	maxRounds, every := cfg.Rounds()
	j, _, err := local.Run(context.Background(), Program(cfg), local.Options{Config: pipeline.Config{Workers: cfg.Workers, Depth: 1, MaxRounds: maxRounds, ReportEvery: every}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// snap returns the snapshot of a role.
func snap(t *testing.T, role any) []byte {
	t.Helper()
	b, err := role.(schmp.Snapshotter).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestoreRefuses checks that Restore refuses, with an error and no
// panic, bytes that are not a snapshot of the role: truncated, corrupted,
// garbage, another role's or another shard's, and well sealed snapshots
// whose contents do not fit the role.
func TestRestoreRefuses(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 60, Vocab: 50, Topics: 3, DocLen: 20, Alpha: 0.1, Beta: 0.01, Seed: 12})
	cfg := f.config(2, 2)
	j := ringJob(t, cfg)
	w0, w1, coord, sched := snap(t, j.Workers[0]), snap(t, j.Workers[1]), snap(t, j.Coordinator), snap(t, j.Schedulers[0])

	// fresh builds the role anew, ready for Restore.
	fresh := func(role string) schmp.Snapshotter {
		switch role {
		case "worker":
			w, err := NewWorker(cfg, 0, 2)
			if err != nil {
				t.Fatal(err)
			}
			return w
		case "coordinator":
			c, err := NewCoordinator(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var sums []Summary
			for k := range 2 {
				w, err := NewWorker(cfg, k, 2)
				if err != nil {
					t.Fatal(err)
				}
				s, _ := w.Describe()
				sums = append(sums, s)
			}
			if _, err := c.Start(sums); err != nil {
				t.Fatal(err)
			}
			return c
		}
		s, err := newScheduler(cfg, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for role, good := range map[string][]byte{"worker": w0, "coordinator": coord, "scheduler": sched} {
		if err := fresh(role).Restore(good); err != nil {
			t.Fatalf("%s: restore of its own snapshot: %v", role, err)
		}
		bad := map[string][]byte{"empty": nil, "garbage": []byte("not a snapshot at all"), "other role": w1}
		if role == "worker" {
			bad["other role"] = coord
			bad["other shard"] = w1
		}
		for _, n := range []int{1, 4, len(good) / 2, len(good) - 1} {
			bad[fmt.Sprintf("truncated to %d", n)] = good[:n]
		}
		for _, i := range []int{0, len(good) / 3, len(good) - 5} {
			b := slices.Clone(good)
			b[i] ^= 0x10
			bad[fmt.Sprintf("bit flipped at %d", i)] = b
		}
		for name, b := range bad {
			if err := fresh(role).Restore(b); err == nil {
				t.Errorf("%s: restore of %s: no error", role, name)
			} else {
				t.Logf("%s: %s: %v", role, name, err)
			}
		}
	}

	// Sealed, but not fitting.
	var ws workerState
	if err := unseal(w0, kindWorker, &ws); err != nil {
		t.Fatal(err)
	}
	tamper := []struct {
		name string
		edit func(s *workerState)
	}{
		{"shard", func(s *workerState) { s.Shard = 1 }},
		{"tokens", func(s *workerState) { s.Tokens++ }},
		{"topics short", func(s *workerState) { s.Z.N-- }},
		{"topics bits", func(s *workerState) { s.Z.Bits++ }},
		{"topics bytes", func(s *workerState) { s.Z.Data = s.Z.Data[:len(s.Z.Data)-1] }},
		{"topic out of range", func(s *workerState) { s.Z.Data[0] |= 3 }},
		{"no layout", func(s *workerState) { s.Layout = nil }},
		{"layout", func(s *workerState) { s.Layout.Data[0] ^= 0xff }},
		{"topic totals", func(s *workerState) { s.NK = s.NK[:1] }},
		{"negative total", func(s *workerState) { s.NK[0] = -1 }},
		{"priors", func(s *workerState) { s.Alpha = s.Alpha[:1] }},
		{"nan prior", func(s *workerState) { s.Beta = math.NaN() }},
		{"held block id", func(s *workerState) { s.HeldID = 7 }},
		{"held block rows", func(s *workerState) { s.Held.Offsets = s.Held.Offsets[:1] }},
		{"held block topic", func(s *workerState) { s.Held.Topics[0] = 99 }},
	}
	for _, tc := range tamper {
		var s workerState
		if err := unseal(w0, kindWorker, &s); err != nil {
			t.Fatal(err)
		}
		if tc.name == "topic out of range" && s.Z.Bits != 2 {
			t.Fatalf("%d bits a topic, want 2 for 3 topics", s.Z.Bits)
		}
		if s.Held == nil {
			t.Fatal("worker 0 holds no block at the end of a ring job")
		}
		tc.edit(&s)
		b, err := seal(kindWorker, &s)
		if err != nil {
			t.Fatal(err)
		}
		if err := fresh("worker").Restore(b); err == nil {
			t.Errorf("worker: restore with a bad %s: no error", tc.name)
		} else {
			t.Logf("worker: %s: %v", tc.name, err)
		}
	}
	var ms modelState
	if err := unseal(coord, kindCoordinator, &ms); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(s *modelState)
	}{
		{"workers", func(s *modelState) { s.Workers = 3 }},
		{"totals", func(s *modelState) { s.NK[0]++ }},
		{"blocks", func(s *modelState) { s.Blocks = s.Blocks[:1] }},
		{"block rows", func(s *modelState) { s.Blocks[1].Offsets = s.Blocks[1].Offsets[1:] }},
		{"table", func(s *modelState) { s.Table = &Sparse{} }},
		{"priors", func(s *modelState) { s.Alpha[0] = -1 }},
	} {
		var s modelState
		if err := unseal(coord, kindCoordinator, &s); err != nil {
			t.Fatal(err)
		}
		tc.edit(&s)
		b, err := seal(kindCoordinator, &s)
		if err != nil {
			t.Fatal(err)
		}
		if err := fresh("coordinator").Restore(b); err == nil {
			t.Errorf("coordinator: restore with bad %s: no error", tc.name)
		}
	}
	if c, err := NewCoordinator(cfg); err != nil {
		t.Fatal(err)
	} else if err := c.Restore(coord); err == nil {
		t.Error("coordinator: restore before Start: no error")
	}
}

// TestPack checks that packed integers come back as they were, at every
// width.
func TestPack(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 7, 8, 9, 1000, 1 << 20} {
		v := make([]int32, 37)
		for i := range v {
			v[i] = int32((i * 7919) % limit)
		}
		p := pack(v, limit)
		got := make([]int32, len(v))
		if err := p.unpack(got, limit); err != nil || !slices.Equal(got, v) {
			t.Errorf("limit %d: %v, %v", limit, got, err)
		}
		if want := (len(v)*bitsFor(limit) + 7) / 8; len(p.Data) != want {
			t.Errorf("limit %d: %d bytes, want %d", limit, len(p.Data), want)
		}
	}
}

// TestResumeRuntime interrupts a ring job on the runtime that takes
// checkpoints, resumes it from its store, and checks that it ends with the
// model files of the job never interrupted, bit for bit.
func TestResumeRuntime(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 120, Vocab: 90, Topics: 4, DocLen: 30, TestDocs: 20, Alpha: 0.1, Beta: 0.01, Seed: 13})
	cfg := f.config(3, 6)
	cfg.TestDocword, cfg.OptimizeEvery, cfg.OptimizeBurnIn = f.test, 2, 2
	co := coordinator.Options{Workers: cfg.Workers, Timeout: 20 * time.Second}
	co.MaxRounds, co.ReportEvery = cfg.Rounds()
	testhelper.CheckResume(t, co, func(ctx context.Context, opts job.Options, dir string) (string, *coordinator.Result, error) {
		cfg := cfg
		cfg.WordTopicOut, cfg.DocTopicOut, cfg.ModelOut = filepath.Join(dir, "wt.csv"), filepath.Join(dir, "dt.csv"), filepath.Join(dir, "model.json")
		opts.Coordinator.Out = filepath.Join(dir, "topics.txt")
		res, err := job.Run(ctx, Program(cfg), opts)
		if err != nil {
			return "", res, err
		}
		files, err := testhelper.DirFiles(dir)
		return files, res, err
	}, 2, 25, 60)
}
