package logreg

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/lasso"
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
