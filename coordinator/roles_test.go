package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

// This file runs the roles of a job each on its own connection to a real
// nats-server, with coordinator.Run, worker.Run and node.Run (the scheduler) called
// directly (job.Run would cancel every node as soon as one fails, which
// hides whether the coordinator learnt of the failure over the network).

// counting is a toy program: the model is the number of rounds pulled;
// every worker pushes 1 and reports the last update it applied.
type counting struct {
	failPlan  uint64 // the scheduler fails the plan of this round (0: never)
	failShard int    // this worker shard…
	failPush  uint64 // …fails its Push of this round (0: never)…
	failApply uint64 // …or its Apply of the update of this round (0: never)
	panicPush uint64 // …or panics in its Push of this round (0: never)
	// gate, if set, is called by every worker before it pushes a round.
	gate func(round uint64)
}

type countingRole struct {
	c     counting
	shard int
	x     uint64 // the worker's last update; the coordinator's rounds
}

func (r *countingRole) Schedule(round uint64, _ []schmp.Feedback) (uint64, schmp.PlanInfo, error) {
	if round == r.c.failPlan {
		return 0, schmp.PlanInfo{}, errors.New("no plan")
	}
	return round, schmp.PlanInfo{Candidates: 1, Selected: 1}, nil
}
func (r *countingRole) Describe() (uint64, error) { return uint64(r.shard), nil }
func (r *countingRole) Apply(u uint64) error {
	if r.shard == r.c.failShard && u > 0 && u == r.c.failApply {
		return fmt.Errorf("cannot apply the update of round %d", u)
	}
	r.x = u
	return nil
}
func (r *countingRole) Push(_ context.Context, round uint64, _ uint64) (uint64, error) {
	if r.c.gate != nil {
		r.c.gate(round)
	}
	if r.shard == r.c.failShard && round == r.c.failPush {
		return 0, errors.New("boom")
	}
	if r.shard == r.c.failShard && round == r.c.panicPush {
		var s []uint64
		return s[round], nil
	}
	return 1, nil
}
func (r *countingRole) Report() (uint64, error)        { return r.x, nil }
func (r *countingRole) Start([]uint64) (uint64, error) { return 0, nil }
func (r *countingRole) Pull(round uint64, _ uint64, _ []uint64) (uint64, schmp.Feedback, error) {
	r.x = round
	return round, schmp.Feedback{}, nil
}
func (r *countingRole) Objective(reports []uint64) (schmp.Progress, error) {
	return schmp.Progress{Objective: 1 / float64(1+reports[0])}, nil
}
func (r *countingRole) WriteModel(w io.Writer) error { _, err := fmt.Fprintln(w, r.x); return err }

func (c counting) program() schmp.Program[uint64, uint64, uint64, uint64] {
	return schmp.Program[uint64, uint64, uint64, uint64]{
		Name: "counting",
		NewScheduler: func(context.Context, int, int) (schmp.Scheduler[uint64], error) {
			return &countingRole{c: c}, nil
		},
		NewWorker: func(_ context.Context, shard, _ int) (schmp.Worker[uint64, uint64, uint64, uint64], error) {
			return &countingRole{c: c, shard: shard}, nil
		},
		NewCoordinator: func(context.Context) (schmp.Coordinator[uint64, uint64, uint64, uint64], error) {
			return &countingRole{c: c}, nil
		},
	}
}

// startServer starts a nats-server on a free port of 127.0.0.1 for the
// test, with nats-server's own max_payload.
func startServer(t *testing.T) *server.Server {
	t.Helper()
	return testhelper.StartServer(t, natsserver.Options{MaxPayload: server.MAX_PAYLOAD_SIZE}).Server
}

// connect opens a connection to ns for job, closed at the test's end.
func connect(t *testing.T, ns *server.Server, job string) *wire.Conn {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := wire.NewConn(nc, job)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// roles is a job's nodes, each run on its own connection by runRoles.
type roles[P, R, U, S any] struct {
	prog        schmp.Program[P, R, U, S]
	coordinator coordinator.Options
	workers     []worker.Options // one per worker node started
	schedulers  []node.Options   // one per scheduler node started
}

// outcome is how the nodes of a job ended: the coordinator's result and
// error, when it returned (since the start), and each node's error.
type outcome struct {
	res        *coordinator.Result
	err        error
	took       time.Duration
	workers    []error
	schedulers []error
}

// runRoles runs the job's nodes until the coordinator returns, then
// cancels the others (as job.Run does), after a grace period for the
// messages on their way to them (an abort, a refused join), and waits for
// them.
func runRoles[P, R, U, S any](t *testing.T, ns *server.Server, job string, j roles[P, R, U, S]) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	others, cancelOthers := context.WithCancel(ctx)
	defer cancelOthers()
	o := outcome{workers: make([]error, len(j.workers)), schedulers: make([]error, len(j.schedulers))}
	var wg sync.WaitGroup
	for i, opts := range j.workers {
		c := connect(t, ns, job)
		wg.Go(func() { o.workers[i] = worker.Run(others, c, j.prog.NewWorker, opts) })
	}
	for i, opts := range j.schedulers {
		c := connect(t, ns, job)
		wg.Go(func() { o.schedulers[i] = node.Run(others, c, j.prog.NewScheduler, opts) })
	}
	c := connect(t, ns, job)
	start := time.Now()
	o.res, o.err = coordinator.Run(ctx, c, j.prog.NewCoordinator, j.coordinator)
	o.took = time.Since(start)
	time.AfterFunc(2*time.Second, cancelOthers)
	wg.Wait()
	return o
}

// times returns n copies of v.
func times[T any](n int, v T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// regexpMatch reports whether s matches the regular expression re.
func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
