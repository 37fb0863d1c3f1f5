package lasso

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/internal/sealtest"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/local"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// pathLines describes a path's points as text, bit for bit, without the
// times, with their models.
func pathLines(t *testing.T, p *Path) string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for _, pt := range p.Points() {
		fmt.Fprintf(&b, "step %d λ %.17g round %d rounds %d %s: %.17g gap %.17g nnz %d\n", pt.Step, pt.Lambda, pt.Round, pt.Rounds, pt.Stop, pt.Objective, pt.Gap, pt.NNZ)
		for _, m := range pt.Metrics {
			fmt.Fprintf(&b, " %s %.17g", m.Name, m.Value)
		}
		if err := pt.Model.Write(&b); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestRestoreRows checks RestoreEvery in the row layout, with every
// policy, one and two workers and scheduler parts, at depth 1 and with
// rounds in flight.
func TestRestoreRows(t *testing.T) {
	for _, tc := range []struct {
		policy          scheduler.Policy
		workers, parts  int
		depth           int
		intercept, test bool
		tol             float64
		maxRounds       uint64
	}{
		{scheduler.Priority, 1, 1, 1, false, false, 1e-10, 150},
		{scheduler.Priority, 2, 2, 1, true, true, 1e-10, 150},
		{scheduler.Random, 2, 1, 1, true, false, 0, 60},
		{scheduler.Cyclic, 1, 2, 1, false, false, 1e-10, 150},
		{scheduler.Priority, 2, 1, 2, true, true, 1e-10, 150},
		{scheduler.Priority, 2, 2, 3, true, false, 1e-10, 150},
		{scheduler.Random, 2, 1, 4, true, false, 0, 60},
		{scheduler.Cyclic, 1, 2, 2, false, false, 1e-10, 150},
	} {
		t.Run(fmt.Sprintf("%v/workers=%d/parts=%d/depth=%d/intercept=%t", tc.policy, tc.workers, tc.parts, tc.depth, tc.intercept), func(t *testing.T) {
			pr := newProblem(t, 40, 60, 42)
			cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: tc.intercept, Schedule: schedule(tc.policy, tc.workers)}
			if tc.test {
				cfg.Test = newProblem(t, 20, 60, 43).path
			}
			pc := pipeline.Config{Workers: tc.workers, Parts: tc.parts, Depth: tc.depth, ReportEvery: 5, Tol: tc.tol, MaxRounds: tc.maxRounds}
			testhelper.CheckRestores(t, Program(cfg), pc, nil, 1, 3, 7)
		})
	}
}

// TestRestoreColumns checks RestoreEvery in the column layout, with every
// policy, one to three workers (their working sets), and a regularization
// path.
func TestRestoreColumns(t *testing.T) {
	for _, tc := range []struct {
		name            string
		n, p            int
		policy          scheduler.Policy
		workers         int
		work, path      int
		intercept, test bool
		tol             float64
	}{
		{"p>n", 40, 120, scheduler.Priority, 1, 300, 0, false, false, 1e-10},
		{"p>n/intercept", 40, 120, scheduler.Random, 2, 300, 0, true, false, 1e-8},
		{"n>p", 100, 30, scheduler.Cyclic, 1, 200, 0, true, true, 1e-14},
		// Several workers take hundreds of rounds on this p ≫ n set (a
		// worker's columns alone can fit the 40 rows): a looser tolerance.
		{"p≫n/wide", 40, 1500, scheduler.Priority, 3, 0, 0, true, false, 1e-5},
		{"path", 40, 120, scheduler.Priority, 1, 300, 5, false, false, 1e-10},
		{"path/intercept/test", 40, 120, scheduler.Priority, 2, 300, 5, true, true, 1e-8},
	} {
		t.Run(fmt.Sprintf("%s/%v/workers=%d", tc.name, tc.policy, tc.workers), func(t *testing.T) {
			pr := newProblem(t, tc.n, tc.p, 42)
			cfg := Config{Data: pr.path, LambdaRatio: 0.05, Intercept: tc.intercept, Schedule: colSchedule(tc.policy),
				Layout: LayoutColumns, RoundWork: tc.work, InnerTol: 1e-14, Path: tc.path}
			if tc.test {
				cfg.Test = newProblem(t, 20, tc.p, 43).path
			}
			pc := pipeline.Config{Workers: tc.workers, Depth: 1, ReportEvery: 1, Tol: tc.tol, MaxRounds: 3000}
			extra := func(c schmp.Coordinator[ColPlan, ColPartial, ColUpdate, ColSummary]) string {
				cc := c.(*ColCoordinator)
				return fmt.Sprintf("shortened %d min α %.17g\n%s", cc.Shortened, cc.MinAlpha, pathLines(t, cc.Path()))
			}
			testhelper.CheckRestores(t, ColumnProgram(cfg, tc.workers), pc, extra, 1, 3, 7)
		})
	}
}

// otherVersion returns b, a snapshot of package columnar's schedulers
// (bare msgpack with a version field, unsealed), with another version.
func otherVersion(t *testing.T, b []byte) []byte {
	var m map[string]any
	if err := codec.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["version"] = 99
	b, err := codec.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestoreBad checks that every role refuses a snapshot of another
// role, of another shard or part, or bytes that are no snapshot.
func TestRestoreBad(t *testing.T) {
	pr := newProblem(t, 40, 60, 42)
	cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: schedule(scheduler.Priority, 2)}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The row layout.
	var ws []*Worker
	var sums []Summary
	for k := range 2 {
		w, err := NewWorker(cfg, k, 2)
		must(err)
		s, err := w.Describe()
		must(err)
		ws, sums = append(ws, w), append(sums, s)
	}
	c := NewCoordinator(cfg)
	_, err := c.Start(sums)
	must(err)
	s0, err := NewScheduler(cfg, 0, 2)
	must(err)
	s1, err := NewScheduler(cfg, 1, 2)
	must(err)
	sealtest.Refuses(t, "worker", ws[0], sealtest.Snap(t, ws[1]), sealtest.Snap(t, c), sealtest.Snap(t, s0))
	sealtest.Refuses(t, "coordinator", c, sealtest.Snap(t, ws[0]))
	sealtest.Refuses(t, "scheduler", s0, sealtest.Snap(t, s1), sealtest.Snap(t, c), otherVersion(t, sealtest.Snap(t, s0)))

	// The column layout, with a path.
	cfg.Layout, cfg.Path, cfg.Schedule = LayoutColumns, 3, colSchedule(scheduler.Priority)
	var cws []*ColWorker
	var csums []ColSummary
	for k := range 2 {
		w, err := NewColWorker(cfg, k, 2)
		must(err)
		s, err := w.Describe()
		must(err)
		cws, csums = append(cws, w), append(csums, s)
	}
	cc := NewColCoordinator(cfg)
	_, err = cc.Start(csums)
	must(err)
	one := NewColCoordinator(Config{Data: pr.path, LambdaRatio: 0.1, Layout: LayoutColumns})
	_, err = one.Start(csums)
	must(err)
	bs := columnarScheduler(t, cfg, 1)
	sealtest.Refuses(t, "column worker", cws[0], sealtest.Snap(t, cws[1]), sealtest.Snap(t, cc))
	sealtest.Refuses(t, "column coordinator", cc, sealtest.Snap(t, one), sealtest.Snap(t, cws[0]))
	sealtest.Refuses(t, "column coordinator without a path", one, sealtest.Snap(t, cc))
	sealtest.Refuses(t, "block scheduler", bs, sealtest.Snap(t, columnarScheduler(t, cfg, 2)), sealtest.Snap(t, cc))
	sealtest.Refuses(t, "path", cc.Path(), sealtest.Snap(t, cc))
}

// columnarScheduler returns the column layout's scheduler for workers.
func columnarScheduler(t *testing.T, cfg Config, workers int) sealtest.Role {
	s, err := ColumnProgram(cfg, workers).NewScheduler(context.Background(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	return s.(sealtest.Role)
}

// TestRestoreSealed checks that every role's snapshot and a path's is sealed
// (sealtest), with the roles of short jobs of each layout (without a
// regularization path: a coordinator whose path has gone on cannot be
// restored in place; TestRestoreBad restores one with a path).
func TestRestoreSealed(t *testing.T) {
	pr := newProblem(t, 30, 80, 42)
	rows := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: schedule(scheduler.Priority, 2)}
	cols := Config{Data: pr.path, LambdaRatio: 0.05, Intercept: true, Schedule: colSchedule(scheduler.Priority), Layout: LayoutColumns}
	pc := pipeline.Config{Workers: 2, Depth: 1, ReportEvery: 1, MaxRounds: 4}
	j, _, err := local.Run(context.Background(), Program(rows), local.Options{Config: pc})
	if err != nil {
		t.Fatal(err)
	}
	jc, _, err := local.Run(context.Background(), ColumnProgram(cols, 2), local.Options{Config: pc})
	if err != nil {
		t.Fatal(err)
	}
	path, err := NewPath(3, 1, 0.1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind string
		role any
	}{
		{kindWorker, j.Workers[0]},
		{kindWorker, j.Workers[1]},
		{kindCoordinator, j.Coordinator},
		{kindColWorker, jc.Workers[0]},
		{kindColWorker, jc.Workers[1]},
		{kindColCoordinator, jc.Coordinator},
		{kindPath, path},
	} {
		sealed := sealtest.Sealed{Kind: tc.kind, Version: snapshotVersion, Others: []string{strings.Replace(tc.kind, "lasso/", "logreg/", 1)},
			Unsealed: map[string]any{"version": 2}}
		sealed.Check(t, tc.role.(sealtest.Role))
	}
}

// FuzzRestore checks that Restore of any bytes into a worker of each
// layout (the column layout's worker 0) and the column layout's coordinator
// of a path is an error or a state from which the role runs, never a
// panic. The seeds are snapshots of the roles of short jobs.
func FuzzRestore(f *testing.F) {
	pr := newProblem(f, 30, 80, 42)
	rows := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: schedule(scheduler.Priority, 2)}
	cols := Config{Data: pr.path, LambdaRatio: 0.05, Intercept: true, Schedule: colSchedule(scheduler.Priority), Layout: LayoutColumns, Path: 3}
	seed := func(roles ...any) {
		for _, r := range roles {
			b, err := r.(sealtest.Role).Snapshot()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
			// And the bytes with one of them changed, at 16 places.
			for k := range 16 {
				bad := bytes.Clone(b)
				bad[k*len(b)/16] ^= 0x5a
				f.Add(bad)
			}
		}
	}
	for _, rounds := range []uint64{1, 4} {
		pc := pipeline.Config{Workers: 2, Depth: 1, ReportEvery: 1, MaxRounds: rounds}
		j, _, err := local.Run(context.Background(), Program(rows), local.Options{Config: pc})
		if err != nil {
			f.Fatal(err)
		}
		seed(j.Workers[0], j.Coordinator)
		jc, _, err := local.Run(context.Background(), ColumnProgram(cols, 2), local.Options{Config: pc})
		if err != nil {
			f.Fatal(err)
		}
		seed(jc.Workers[0], jc.Coordinator)
	}
	start := func(t *testing.T) (*Worker, *ColWorker, *ColCoordinator) {
		w, err := NewWorker(rows, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		var sums []ColSummary
		var cw *ColWorker
		for k := range 2 {
			x, err := NewColWorker(cols, k, 2)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := x.Describe()
			sums = append(sums, s)
			if k == 0 {
				cw = x
			}
		}
		c := NewColCoordinator(cols)
		if _, err := c.Start(sums); err != nil {
			t.Fatal(err)
		}
		return w, cw, c
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w, cw, c := start(t)
		if w.Restore(b) == nil {
			w.Report()
			w.Push(context.Background(), 1, Plan{Vars: codec.Int32s{0, 79}})
			w.Apply(Update{Vars: codec.Int32s{1}, Delta: codec.Float64s{0.5}, Value: codec.Float64s{0.5}})
		}
		if cw.Restore(b) == nil {
			cw.Report()
			cw.Push(context.Background(), 1, ColPlan{Blocks: make([]codec.Int32s, 2)})
			cw.Apply(ColUpdate{Lambda: 0.1})
			cw.Snapshot()
		}
		if c.Restore(b) == nil {
			c.WriteModel(&bytes.Buffer{})
			c.Pull(1, ColPlan{Blocks: make([]codec.Int32s, 2)}, make([]ColPartial, 2))
			c.Snapshot()
		}
	})
}
