package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/member"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

// helperURL, when set in the environment, makes the test binary a worker
// process of TestWorkerExits instead of running the tests.
const helperURL = "STRADS_TEST_WORKER_URL"

func TestMain(m *testing.M) {
	if url := os.Getenv(helperURL); url != "" {
		os.Exit(exitingWorker(url))
	}
	os.Exit(m.Run())
}

// exitingWorker runs a worker whose Push of round 2 fails, and returns
// the status to exit with at once, without closing its connection, as a
// command's main does.
func exitingWorker(url string) int {
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := wire.NewConn(nc, "exiting")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = worker.Run(context.Background(), c, counting{failPush: 2}.program().NewWorker, worker.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second})
	fmt.Fprintln(os.Stderr, err)
	return 3
}

// failFast bounds the time from a node's failure to the job's: far less
// than the 20 s timeout the tests set, so that a failure noticed only
// through the timeout fails the test.
const failFast = 5 * time.Second

// TestNodeFailureTravels checks that a worker's failed Push or Apply, and
// a scheduler's failed plan, fail the job at once, not at the timeout, with
// an error that names the node (role, place, host, pid) and the round and
// matches ErrAborted, and that the node returns its own error with the same
// text.
func TestNodeFailureTravels(t *testing.T) {
	host, pid := member.Self()
	ns := startServer(t)
	cases := []struct {
		name   string
		c      counting
		depth  int
		role   string
		place  int
		round  uint64
		reason string
	}{
		{"push", counting{failShard: 1, failPush: 3}, 1, protocol.RoleWorker, 1, 3, "boom"},
		{"push at depth 3", counting{failShard: 0, failPush: 5}, 3, protocol.RoleWorker, 0, 5, "boom"},
		// At depth D the update of round 2 rides with the task of round
		// 2+D.
		{"apply", counting{failShard: 1, failApply: 2}, 1, protocol.RoleWorker, 1, 3, "cannot apply the update of round 2"},
		{"apply at depth 2", counting{failShard: 1, failApply: 2}, 2, protocol.RoleWorker, 1, 4, "cannot apply the update of round 2"},
		{"plan", counting{failPlan: 4}, 1, protocol.RoleScheduler, 0, 4, "no plan"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodeOpts := worker.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}
			o := runRoles(t, ns, fmt.Sprintf("fail%d", i), roles[uint64, uint64, uint64, uint64]{
				prog: tc.c.program(),
				coordinator: coordinator.Options{Workers: 2, Depth: tc.depth, ReportEvery: 1, MaxRounds: 50,
					JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second},
				workers:    times(2, nodeOpts),
				schedulers: []node.Options{{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}},
			})
			who := protocol.Node{Role: tc.role, Place: tc.place, Host: host, PID: pid}
			want := fmt.Sprintf("%s: round %d: %s", who, tc.round, tc.reason)
			var ne *coordinator.NodeError
			if o.err == nil || o.err.Error() != want || !errors.Is(o.err, coordinator.ErrAborted) ||
				!errors.As(o.err, &ne) || ne.Node != who || ne.Round != tc.round {
				t.Fatalf("coordinator: %v (%+v), want %q, an abort naming the node", o.err, ne, want)
			}
			if o.took > failFast {
				t.Errorf("the job failed after %s, the timeout is 20s", o.took)
			}
			// Shards go in the order of joins: find the failed node by
			// its error.
			nodes := o.workers
			if tc.role == protocol.RoleScheduler {
				nodes = o.schedulers
			}
			var own error
			for _, err := range nodes {
				if errors.As(err, &ne) {
					own = err
				}
			}
			if own == nil || own.Error() != want || errors.Is(own, coordinator.ErrAborted) {
				t.Errorf("the failed node's own error: %v (of %v), want %q", own, nodes, want)
			}
		})
	}
}

// TestAborted checks that the nodes that did not fail learn that the job
// failed from the coordinator, and return an error that matches
// ErrAborted and carries the cause.
func TestAborted(t *testing.T) {
	ns := startServer(t)
	// A worker keeps waiting for the job to start: the coordinator
	// fails it when its Start fails… here, when a scheduler fails round 3.
	o := runRoles(t, ns, "aborted", roles[uint64, uint64, uint64, uint64]{
		prog:        counting{failPlan: 3}.program(),
		coordinator: coordinator.Options{Workers: 2, ReportEvery: 1, MaxRounds: 50, JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second},
		workers:     times(2, worker.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}),
		schedulers:  []node.Options{{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}},
	})
	if o.err == nil {
		t.Fatal("the job did not fail")
	}
	for k, err := range o.workers {
		// The coordinator's abort races the test's cancellation once the
		// coordinator has returned: one of the two ends each worker.
		if !errors.Is(err, worker.ErrAborted) && !errors.Is(err, context.Canceled) {
			t.Errorf("worker %d: %v, want an abort", k, err)
		}
		if errors.Is(err, worker.ErrAborted) && !strings.Contains(err.Error(), "job aborted: "+o.err.Error()) {
			t.Errorf("worker %d: %v, want the cause %q", k, err, o.err)
		}
	}
}

// TestTimeouts checks that a job whose nodes do not all join, or whose
// worker stops answering, fails with ErrTimeout.
func TestTimeouts(t *testing.T) {
	ns := startServer(t)
	o := runRoles(t, ns, "lonely", roles[uint64, uint64, uint64, uint64]{
		prog:        counting{}.program(),
		coordinator: coordinator.Options{Workers: 2, ReportEvery: 1, MaxRounds: 5, JoinTimeout: 300 * time.Millisecond},
		workers:     times(1, worker.Options{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}),
		schedulers:  []node.Options{{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}},
	})
	if !errors.Is(o.err, coordinator.ErrTimeout) || !strings.Contains(o.err.Error(), "1 of 2 workers ready (missing [1])") {
		t.Errorf("error %v, want a timeout naming the missing worker", o.err)
	}
	// A worker that waits for a job that never starts.
	c := connect(t, ns, "nobody")
	err := worker.Run(context.Background(), c, counting{}.program().NewWorker, worker.Options{JoinTimeout: 200 * time.Millisecond})
	if !errors.Is(err, worker.ErrTimeout) {
		t.Errorf("worker without a coordinator: %v, want a timeout", err)
	}
}

// TestWorkerExits runs a worker as a process of its own that exits at once
// (os.Exit) when its Push fails: its error partial, flushed before
// worker.Run returns, still fails the job at once, naming the process.
func TestWorkerExits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ns := startServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperURL+"="+ns.ClientURL())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	o := runRoles(t, ns, "exiting", roles[uint64, uint64, uint64, uint64]{
		prog:        counting{}.program(),
		coordinator: coordinator.Options{Workers: 1, ReportEvery: 1, MaxRounds: 50, JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second},
		schedulers:  []node.Options{{JoinTimeout: 20 * time.Second, Timeout: 20 * time.Second}},
	})
	err := <-exited
	host, _ := os.Hostname()
	want := fmt.Sprintf("worker shard 0 (host %s, pid %d): round 2: boom", host, cmd.Process.Pid)
	if o.err == nil || o.err.Error() != want {
		t.Fatalf("coordinator: %v, want %q (the worker: %v, %s)", o.err, want, err, stderr.String())
	}
	if o.took > failFast {
		t.Errorf("the job failed after %s, the timeout is 20s", o.took)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || strings.TrimSpace(stderr.String()) != want {
		t.Errorf("the worker exited with %v and said %q, want status 3 and %q", err, stderr.String(), want)
	}
}
