package lasso

import (
	"context"
	"fmt"
	"testing"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// TestResumeRuntime interrupts Lasso jobs on the runtime that take
// checkpoints, in the row layout with two scheduler parts (at depth 1 and
// with rounds in flight) and in the
// column layout on a regularization path with two workers, resumes them from
// their store, and checks that they end as the jobs never interrupted.
func TestResumeRuntime(t *testing.T) {
	for _, depth := range []int{1, 3} {
		t.Run(fmt.Sprintf("rows/depth=%d", depth), func(t *testing.T) {
			pr := newProblem(t, 40, 60, 42)
			cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: true, Schedule: schedule(scheduler.Priority, 2)}
			co := coordinator.Options{Workers: 2, Schedulers: 2, Depth: depth, MaxRounds: 80, ReportEvery: 5}
			testhelper.CheckModelResume(t, Program(cfg), co, func() string { return "" }, 3, 4, 12, 40)
		})
	}
	t.Run("cols/path", func(t *testing.T) {
		pr := newProblem(t, 40, 120, 42)
		cfg := Config{Data: pr.path, LambdaRatio: 0.05, Intercept: true, Schedule: colSchedule(scheduler.Priority),
			Layout: LayoutColumns, RoundWork: 300, InnerTol: 1e-14, Path: 4}
		prog := ColumnProgram(cfg, 2)
		var coord *ColCoordinator
		prog.NewCoordinator = func(context.Context) (schmp.Coordinator[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			coord = NewColCoordinator(cfg)
			return coord, nil
		}
		extra := func() string {
			return fmt.Sprintf("shortened %d min α %.17g\n%s", coord.Shortened, coord.MinAlpha, pathLines(t, coord.Path()))
		}
		co := coordinator.Options{Workers: 2, Tol: 1e-10, MaxRounds: 3000, ReportEvery: 1}
		testhelper.CheckModelResume(t, prog, co, extra, 2, 10, 40, 70)
	})
}
