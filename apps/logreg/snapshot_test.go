package logreg

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/lasso"
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
func pathLines(t *testing.T, p *lasso.Path) string {
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
// policy, one and two workers and scheduler parts, with and without an
// intercept (whose steps the coordinator schedules by the work done), at
// depth 1 and with rounds in flight.
func TestRestoreRows(t *testing.T) {
	for _, tc := range []struct {
		policy          scheduler.Policy
		workers, parts  int
		depth           int
		intercept, test bool
		tol             float64
		maxRounds       uint64
		// Large blocks of correlated columns, whose rounds overshoot,
		// so that the joint-step safeguard's θ moves.
		overshoot bool
	}{
		{scheduler.Priority, 1, 1, 1, false, false, 1e-9, 150, false},
		{scheduler.Priority, 2, 2, 1, true, true, 1e-9, 150, false},
		{scheduler.Random, 2, 1, 1, true, false, 0, 60, false},
		{scheduler.Cyclic, 1, 2, 1, false, false, 1e-9, 150, false},
		{scheduler.Priority, 2, 1, 1, false, false, 1e-10, 200, true},
		{scheduler.Priority, 2, 2, 3, true, true, 1e-9, 150, false},
		{scheduler.Random, 2, 1, 4, true, false, 0, 60, false},
		{scheduler.Cyclic, 1, 2, 2, false, false, 1e-9, 150, false},
		{scheduler.Priority, 2, 1, 2, false, false, 1e-10, 200, true},
	} {
		t.Run(fmt.Sprintf("%v/workers=%d/parts=%d/depth=%d/intercept=%t/overshoot=%t", tc.policy, tc.workers, tc.parts, tc.depth, tc.intercept, tc.overshoot), func(t *testing.T) {
			g := genConfig(50, 60, 12, 1)
			sc := schedule(tc.policy, tc.workers)
			if tc.overshoot {
				g = genConfig(100, 80, 8, 3)
				g.Corr, g.Density = 0.95, 0.3
				sc.Block, sc.Candidates, sc.Rho = 16, 32, 1
			}
			pr := newProblem(t, g)
			cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: tc.intercept, Schedule: sc}
			if tc.test {
				g := genConfig(50, 60, 12, 1)
				g.Samples, g.Seed = 30, 9
				cfg.Test = newProblem(t, g).path
			}
			pc := pipeline.Config{Workers: tc.workers, Parts: tc.parts, Depth: tc.depth, ReportEvery: 5, Tol: tc.tol, MaxRounds: tc.maxRounds}
			extra := func(c schmp.Coordinator[Plan, Partial, Update, Summary]) string {
				cc := c.(*Coordinator)
				return fmt.Sprintf("%+v %v\n", cc.Safeguard(), cc.Records())
			}
			testhelper.CheckRestores(t, Program(cfg), pc, extra, 1, 3, 7)
		})
	}
}

// TestRestoreColumns checks RestoreEvery in the column layout, with every
// policy, one to three workers (the working sets, the columns shared and
// held, the joint rounds), and a regularization path.
func TestRestoreColumns(t *testing.T) {
	wide := genConfig(50, 120, 24, 1)
	tall := genConfig(200, 30, 10, 2)
	tall.Bias, tall.ZeroOne = 0.8, true
	for _, tc := range []struct {
		name            string
		gen             GenConfig
		policy          scheduler.Policy
		workers         int
		work, path      int
		intercept, test bool
	}{
		{"p>n", wide, scheduler.Priority, 1, 150, 0, false, false},
		{"p>n/intercept", wide, scheduler.Random, 2, 150, 0, true, false},
		{"n>p/intercept", tall, scheduler.Cyclic, 1, 150, 0, true, true},
		{"n>p/intercept/3", tall, scheduler.Priority, 3, 0, 0, true, false},
		{"path", wide, scheduler.Priority, 1, 150, 4, false, false},
		{"path/intercept/test", wide, scheduler.Priority, 2, 150, 4, true, true},
	} {
		t.Run(fmt.Sprintf("%s/%v/workers=%d", tc.name, tc.policy, tc.workers), func(t *testing.T) {
			pr := newProblem(t, tc.gen)
			cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: tc.intercept, Schedule: colSchedule(tc.policy), RoundWork: tc.work, Path: tc.path}
			if tc.test {
				g := tc.gen
				g.Samples, g.Seed = 80, 9
				cfg.Test = newProblem(t, g).path
			}
			pc := pipeline.Config{Workers: tc.workers, Depth: 1, ReportEvery: 1, Tol: 1e-9, MaxRounds: 3000}
			extra := func(c schmp.Coordinator[ColPlan, ColPartial, ColUpdate, ColSummary]) string {
				cc := c.(*ColCoordinator)
				return fmt.Sprintf("%+v %v\n%s", cc.Stats(), cc.Records(), pathLines(t, cc.Path()))
			}
			testhelper.CheckRestores(t, ColumnProgram(cfg, tc.workers), pc, extra, 1, 3, 7)
		})
	}
}

// TestRestoreBad checks that every role refuses a snapshot of another
// role, of another shard, or bytes that are no snapshot.
func TestRestoreBad(t *testing.T) {
	pr := newProblem(t, genConfig(50, 60, 12, 1))
	cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: schedule(scheduler.Priority, 2)}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var ws []*Worker
	var sums []Summary
	for k := range 2 {
		w, err := NewWorker(cfg, k, 2)
		must(err)
		s, err := w.Describe()
		must(err)
		ws, sums = append(ws, w), append(sums, s)
	}
	c, err := NewCoordinator(cfg)
	must(err)
	_, err = c.Start(sums)
	must(err)
	sealtest.Refuses(t, "worker", ws[0], sealtest.Snap(t, ws[1]), sealtest.Snap(t, c))
	sealtest.Refuses(t, "coordinator", c, sealtest.Snap(t, ws[0]))

	cfg.Path, cfg.Schedule = 3, colSchedule(scheduler.Priority)
	var cws []*ColWorker
	var csums []ColSummary
	for k := range 2 {
		w, err := NewColWorker(cfg, k, 2)
		must(err)
		s, err := w.Describe()
		must(err)
		cws, csums = append(cws, w), append(csums, s)
	}
	cc, err := NewColCoordinator(cfg)
	must(err)
	_, err = cc.Start(csums)
	must(err)
	cfg.Path = 0
	one, err := NewColCoordinator(cfg)
	must(err)
	_, err = one.Start(csums)
	must(err)
	sealtest.Refuses(t, "column worker", cws[0], sealtest.Snap(t, cws[1]), sealtest.Snap(t, cc))
	sealtest.Refuses(t, "column coordinator", cc, sealtest.Snap(t, one), sealtest.Snap(t, cws[0]))
	sealtest.Refuses(t, "column coordinator without a path", one, sealtest.Snap(t, cc))
}

// TestRestoreSealed checks that every role's snapshot is sealed
// (sealtest), with the roles of short jobs of each layout (without a
// regularization path: a coordinator whose path has gone on cannot be
// restored in place; TestRestoreBad restores one with a path).
func TestRestoreSealed(t *testing.T) {
	pr := newProblem(t, genConfig(40, 60, 12, 1))
	rows := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: schedule(scheduler.Priority, 2)}
	cols := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: colSchedule(scheduler.Priority)}
	pc := pipeline.Config{Workers: 2, Depth: 1, ReportEvery: 1, MaxRounds: 4}
	j, _, err := local.Run(context.Background(), Program(rows), local.Options{Config: pc})
	if err != nil {
		t.Fatal(err)
	}
	// The column layout's workers keep their contract (schmp.Worker): the
	// check restores them at every task, whose screens then count more
	// work ("w"; also the key of w in their snapshots, which only updates
	// change).
	jc, _, err := local.Run(context.Background(), ColumnProgram(cols, 2), local.Options{Config: pc, CheckContract: true, Ignore: []string{"w"}})
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
	} {
		sealed := sealtest.Sealed{Kind: tc.kind, Version: snapshotVersion, Others: []string{strings.Replace(tc.kind, "logreg/", "lasso/", 1)},
			Unsealed: map[string]any{"version": 2}}
		sealed.Check(t, tc.role.(sealtest.Role))
	}
}

// FuzzRestore checks that Restore of any bytes into a worker of each
// layout (the column layout's shard 0) and the coordinators is an error or
// a state from which the role runs, never a panic. The seeds are
// snapshots of the roles of short jobs, and those with a byte changed.
func FuzzRestore(f *testing.F) {
	pr := newProblem(f, genConfig(40, 60, 12, 1))
	rows := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: schedule(scheduler.Priority, 2)}
	cols := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: colSchedule(scheduler.Priority), Path: 3}
	seed := func(roles ...any) {
		for _, r := range roles {
			b, err := r.(sealtest.Role).Snapshot()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
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
	f.Fuzz(func(t *testing.T, b []byte) {
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		w, err := NewWorker(rows, 0, 2)
		must(err)
		var sums []Summary
		for k := range 2 {
			x, err := NewWorker(rows, k, 2)
			must(err)
			s, _ := x.Describe()
			sums = append(sums, s)
		}
		c, err := NewCoordinator(rows)
		must(err)
		_, err = c.Start(sums)
		must(err)
		var csums []ColSummary
		var cw *ColWorker
		for k := range 2 {
			x, err := NewColWorker(cols, k, 2)
			must(err)
			s, _ := x.Describe()
			csums = append(csums, s)
			if k == 0 {
				cw = x
			}
		}
		cc, err := NewColCoordinator(cols)
		must(err)
		_, err = cc.Start(csums)
		must(err)
		if w.Restore(b) == nil {
			w.Report()
			w.Push(context.Background(), 1, Plan{Vars: codec.Int32s{0, 59}})
			w.Apply(Update{Round: 9, Vars: codec.Int32s{1}, Delta: codec.Float64s{0.5}})
		}
		if c.Restore(b) == nil {
			c.WriteModel(&bytes.Buffer{})
			c.Pull(9, Plan{Vars: codec.Int32s{1}}, []Partial{{Grad: codec.Float64s{1}, Curv: codec.Float64s{1}}, {Grad: codec.Float64s{1}, Curv: codec.Float64s{1}}})
			c.Snapshot()
		}
		if cw.Restore(b) == nil {
			cw.Report()
			cw.Push(context.Background(), 1, ColPlan{Blocks: make([]codec.Int32s, 2)})
			cw.Apply(ColUpdate{Alpha: 1, Lambda: 0.1})
			cw.Snapshot()
		}
		if cc.Restore(b) == nil {
			cc.WriteModel(&bytes.Buffer{})
			cc.Pull(1, ColPlan{Blocks: make([]codec.Int32s, 2)}, make([]ColPartial, 2))
			cc.Snapshot()
		}
	})
}

// TestReportsChangeNothing checks that the row layout's model does not
// depend on how often the job reports: its workers keep their contract
// (schmp.Worker: Report changes nothing a later call reads), which the
// local driver checks, and jobs that report every round, every 7th and
// once write the same model, bit for bit.
func TestReportsChangeNothing(t *testing.T) {
	pr := newProblem(t, genConfig(40, 60, 12, 1))
	rows := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: schedule(scheduler.Priority, 2)}
	var want []byte
	for _, every := range []int{1, 7, 1000} {
		pc := pipeline.Config{Workers: 2, Depth: 1, ReportEvery: every, MaxRounds: 120}
		j, _, err := local.Run(context.Background(), Program(rows), local.Options{Config: pc, CheckContract: every == 1})
		if err != nil {
			t.Fatalf("report every %d: %v", every, err)
		}
		var b bytes.Buffer
		if err := j.Coordinator.WriteModel(&b); err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = b.Bytes()
		} else if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("report every %d: the model differs from that of a job reporting every round", every)
		}
	}
}
