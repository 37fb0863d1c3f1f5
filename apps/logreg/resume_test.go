package logreg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// interrupter is a progress writer that cancels the job at its at-th line.
type interrupter struct {
	mu     sync.Mutex
	lines  int
	at     int
	cancel context.CancelCauseFunc
}

func (r *interrupter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lines++; r.lines == r.at {
		r.cancel(errors.New("test interrupt"))
	}
	return len(p), nil
}

// checkpointed runs prog's job on the runtime (an embedded NATS server with
// JetStream in store) with co, taking a checkpoint every `every` rounds,
// resuming from the last one if resume, and interrupted at progress line
// interruptAt if > 0. It returns the model file, what extra says of the
// coordinator, and the rounds, stop and reports of the result, every
// number bit for bit.
func checkpointed[P, R, U, S any](t *testing.T, prog schmp.Program[P, R, U, S], co coordinator.Options, extra func() string, store string, every uint64, resume bool, interruptAt int) (string, *coordinator.Result, error) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	co.Out = filepath.Join(t.TempDir(), "model.csv")
	co.JoinTimeout, co.Timeout = 20*time.Second, 20*time.Second
	co.CheckpointEvery, co.Resume = every, resume
	if interruptAt > 0 {
		co.Progress, co.ProgressEvery = &interrupter{at: interruptAt, cancel: cancel}, time.Nanosecond
	}
	res, err := job.Run(ctx, prog, job.Options{Job: "logregresume", Store: store, Timeout: 20 * time.Second, Coordinator: co})
	if err != nil {
		return "", res, err
	}
	model, err := os.ReadFile(co.Out)
	if err != nil {
		return "", res, err
	}
	var b strings.Builder
	b.Write(model)
	b.WriteString(extra())
	fmt.Fprintf(&b, "rounds %d updates %d reason %s final %.17g gap %.17g nnz %d\n", res.Rounds, res.Updates, res.Reason, res.Final.Objective, res.Final.Gap, res.Final.NNZ)
	for _, s := range res.Trace {
		fmt.Fprintf(&b, "%d: %.17g gap %.17g nnz %d\n", s.Round, s.Objective, s.Gap, s.NNZ)
	}
	return b.String(), res, nil
}

// checkResume runs prog's job uninterrupted, then interrupted at each
// progress line of at while it takes checkpoints every `every` rounds and
// resumed from its store, and checks that the resumed jobs end as the
// uninterrupted one, bit for bit.
func checkResume[P, R, U, S any](t *testing.T, prog schmp.Program[P, R, U, S], co coordinator.Options, extra func() string, every uint64, at ...int) {
	t.Helper()
	want, res, err := checkpointed(t, prog, co, extra, "", 0, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uninterrupted: %d rounds, %s", res.Rounds, res.Reason)
	for _, line := range at {
		store := t.TempDir()
		if _, _, err := checkpointed(t, prog, co, extra, store, every, false, line); err == nil || !strings.HasPrefix(err.Error(), "test interrupt") {
			t.Fatalf("interrupted at line %d: %v, want the interrupt", line, err)
		}
		got, res, err := checkpointed(t, prog, co, extra, store, every, true, 0)
		if err != nil {
			t.Fatalf("resumed after line %d: %v", line, err)
		}
		t.Logf("interrupted at line %d, resumed from round %d of %d", line, res.Resumed, res.Rounds)
		if res.Resumed == 0 {
			t.Errorf("interrupted at line %d: resumed from round 0", line)
		}
		if got != want {
			t.Errorf("resumed from round %d: the job ends otherwise:\n%s\nwant\n%s", res.Resumed, got, want)
		}
	}
}

// TestResumeRuntime interrupts logistic regression jobs on the runtime
// that take checkpoints, in the row layout with two scheduler parts (whose
// rounds overshoot, so that the safeguard's θ moves), at depth 1 and with
// rounds in flight, and in the column layout on a regularization path with
// two workers, resumes them from their store, and checks that they end as
// the jobs never interrupted.
func TestResumeRuntime(t *testing.T) {
	for _, depth := range []int{1, 3} {
		t.Run(fmt.Sprintf("rows/depth=%d", depth), func(t *testing.T) {
			rowsResume(t, depth)
		})
	}
	t.Run("cols/path", func(t *testing.T) {
		pr := newProblem(t, genConfig(50, 120, 24, 1))
		cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: colSchedule(scheduler.Priority), RoundWork: 150, Path: 4}
		prog := ColumnProgram(cfg, 2)
		var coord *ColCoordinator
		prog.NewCoordinator = func(context.Context) (schmp.Coordinator[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			c, err := NewColCoordinator(cfg)
			coord = c
			return c, err
		}
		extra := func() string {
			return fmt.Sprintf("%+v %v\n%s", coord.Stats(), coord.Records(), pathLines(t, coord.Path()))
		}
		co := coordinator.Options{Workers: 2, Tol: 1e-9, MaxRounds: 3000, ReportEvery: 1}
		checkResume(t, prog, co, extra, 2, 10, 40, 100)
	})
}

// rowsResume is TestResumeRuntime's job in the row layout, at depth.
func rowsResume(t *testing.T, depth int) {
	g := genConfig(100, 80, 8, 3)
	g.Corr, g.Density = 0.95, 0.3
	pr := newProblem(t, g)
	sc := schedule(scheduler.Priority, 2)
	sc.Block, sc.Candidates, sc.Rho = 16, 32, 1
	cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: sc}
	prog := Program(cfg)
	var coord *Coordinator
	prog.NewCoordinator = func(context.Context) (schmp.Coordinator[Plan, Partial, Update, Summary], error) {
		c, err := NewCoordinator(cfg)
		coord = c
		return c, err
	}
	extra := func() string { return fmt.Sprintf("%+v %v\n", coord.Safeguard(), coord.Records()) }
	co := coordinator.Options{Workers: 2, Schedulers: 2, Depth: depth, MaxRounds: 80, ReportEvery: 5}
	checkResume(t, prog, co, extra, 3, 4, 12, 40)
}
