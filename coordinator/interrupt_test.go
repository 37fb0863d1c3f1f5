package coordinator_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/worker"
)

// TestInterruptTravels cancels the context of one worker or scheduler in
// the middle of a job, as a signal does: the node tells the coordinator
// before it returns, and the job fails at once with an abort that names
// the node and says "interrupted" and the cause, not at the 20 s timeout
// (DESIGN "How a job fails").
func TestInterruptTravels(t *testing.T) {
	ns := startServer(t)
	for _, tc := range []struct {
		name string
		role string
	}{
		{"worker", protocol.RoleWorker},
		{"scheduler", protocol.RoleScheduler},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			others, cancelOthers := context.WithCancel(ctx)
			defer cancelOthers()
			victim, interrupt := context.WithCancelCause(others)
			defer interrupt(nil)
			prog := counting{gate: func(round uint64) {
				if round == 5 {
					interrupt(errors.New("test signal"))
				}
			}}.program()
			job := "interrupt-" + tc.name
			var wg sync.WaitGroup
			var victimErr error
			for k := range 2 {
				c, wctx := connect(t, ns, job), others
				if tc.role == protocol.RoleWorker && k == 1 {
					wctx = victim
				}
				wg.Go(func() {
					err := worker.Run(wctx, c, prog.NewWorker, worker.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second})
					if wctx == victim {
						victimErr = err
					}
				})
			}
			sctx := others
			if tc.role == protocol.RoleScheduler {
				sctx = victim
			}
			sc := connect(t, ns, job)
			wg.Go(func() {
				err := node.Run(sctx, sc, prog.NewScheduler, node.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second})
				if sctx == victim {
					victimErr = err
				}
			})
			start := time.Now()
			_, err := coordinator.Run(ctx, connect(t, ns, job), prog.NewCoordinator,
				coordinator.Options{Workers: 2, ReportEvery: 1, MaxRounds: 1000, JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second})
			took := time.Since(start)
			cancelOthers()
			wg.Wait()
			var ne *coordinator.NodeError
			if err == nil || !errors.Is(err, coordinator.ErrAborted) || !errors.As(err, &ne) || ne.Node.Role != tc.role ||
				!regexpMatch(`: round \d+: interrupted: test signal$`, err.Error()) {
				t.Fatalf("coordinator: %v, want an abort naming the interrupted %s", err, tc.role)
			}
			if took > failFast {
				t.Errorf("the job failed after %s, the timeout is 20s", took)
			}
			if !errors.Is(victimErr, context.Canceled) {
				t.Errorf("the interrupted node returned %v, want its context's error", victimErr)
			}
			t.Log(err)
		})
	}
}

// TestCoordinatorInterruptAborts cancels the coordinator's context in the
// middle of a job: it aborts the workers and the scheduler, which return
// at once an error that matches ErrAborted, not at their timeout.
func TestCoordinatorInterruptAborts(t *testing.T) {
	ns := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cctx, interrupt := context.WithCancelCause(ctx)
	defer interrupt(nil)
	prog := counting{gate: func(round uint64) {
		if round == 5 {
			interrupt(errors.New("test signal"))
		}
	}}.program()
	const job = "interrupt-coordinator"
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for k := range 2 {
		c := connect(t, ns, job)
		wg.Go(func() {
			errs[k] = worker.Run(ctx, c, prog.NewWorker, worker.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second})
		})
	}
	sc := connect(t, ns, job)
	wg.Go(func() {
		errs[2] = node.Run(ctx, sc, prog.NewScheduler, node.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second})
	})
	_, err := coordinator.Run(cctx, connect(t, ns, job), prog.NewCoordinator,
		coordinator.Options{Workers: 2, ReportEvery: 1, MaxRounds: 1000, JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second})
	start := time.Now()
	if err == nil || !strings.Contains(err.Error(), "test signal") {
		t.Fatalf("coordinator: %v, want its cause", err)
	}
	wg.Wait()
	if took := time.Since(start); took > failFast {
		t.Errorf("the others ended %s after the coordinator, the timeout is 20s", took)
	}
	for i, err := range errs {
		if !errors.Is(err, worker.ErrAborted) || !strings.Contains(err.Error(), "test signal") {
			t.Errorf("node %d: %v, want an abort carrying the cause", i, err)
		}
	}
}
