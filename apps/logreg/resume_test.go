package logreg

import (
	"context"
	"fmt"
	"testing"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

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
		testhelper.CheckModelResume(t, prog, co, extra, 2, 10, 40, 100)
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
	testhelper.CheckModelResume(t, prog, co, extra, 3, 4, 12, 40)
}
