package node_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/wire"
)

// rolesJob is a job of the roles of separate processes (Coordinate and
// Host), each on its own connections, here goroutines.
type rolesJob struct {
	cfg  ps.Config
	opts node.Options
	dial func(string) (*wire.Conn, error)
	incs [][][]float64
	// procs[w], if set, is worker w's process: cancelled, it is gone.
	procs []context.Context
}

func newRolesJob(t *testing.T, servers, workers, clocks int) *rolesJob {
	const rows = 7
	tab := ps.Table{Name: "counts", Rows: rows, Width: workers, Model: ps.SSP, Staleness: 1}
	srv := testhelper.StartServer(t, natsserver.Options{Port: -1})
	j := &rolesJob{
		cfg:  ps.Config{Tables: []ps.Table{tab}, Servers: servers, Workers: workers},
		opts: node.Options{Resend: 50 * time.Millisecond, Timeout: 2 * time.Second},
		dial: func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "psroles") },
		incs: make([][][]float64, workers),
	}
	for w := range workers {
		rng := rand.New(rand.NewPCG(uint64(w), 2))
		j.incs[w] = make([][]float64, rows)
		for r := range rows {
			j.incs[w][r] = make([]float64, clocks)
			for k := range clocks {
				j.incs[w][r][k] = float64(1 + rng.IntN(100))
			}
		}
	}
	return j
}

// run runs the coordinator and a host per worker, worker w running
// work(w) (nil: the checking program of TestNATS), and returns the table
// that the coordinator read at the end, and each role's error.
func (j *rolesJob) run(t *testing.T, workOf func(w int) node.Work) (got []float64, hosts []error, coord error) {
	c, err := j.dial("coordinator")
	if err != nil {
		t.Fatal(err)
	}
	clocks := len(j.incs[0][0])
	hosts = make([]error, j.cfg.Workers)
	var g sync.WaitGroup
	for w := range j.cfg.Workers {
		wk := node.Work(func(ctx context.Context, w int, cl *node.Client) error { return work(ctx, cl, j.cfg, w, j.incs) })
		if workOf != nil && workOf(w) != nil {
			wk = workOf(w)
		}
		ctx := context.Background()
		if w < len(j.procs) {
			ctx = j.procs[w]
		}
		g.Go(func() { hosts[w] = node.Host(ctx, j.dial, j.cfg, w, j.opts, wk) })
	}
	coord = node.Coordinate(context.Background(), c, j.dial, j.cfg, 5*time.Second, j.opts, func(ctx context.Context, c *wire.Conn) (err error) {
		got, err = node.Read(ctx, c, j.cfg, 0, clocks, j.opts)
		return err
	})
	g.Wait()
	return got, hosts, coord
}

// TestRoles runs a job as separate roles would: a coordinator and a host
// per worker, which serves its share of the servers (3 servers over 2
// workers; 1 server, so that a worker serves none). The table at the end
// is the exact sum, and every role ends without error.
func TestRoles(t *testing.T) {
	for _, servers := range []int{3, 1} {
		j := newRolesJob(t, servers, 2, 6)
		got, hosts, coord := j.run(t, nil)
		if coord != nil || hosts[0] != nil || hosts[1] != nil {
			t.Fatalf("%d servers: coordinator %v, hosts %v", servers, coord, hosts)
		}
		want := make([]float64, len(got))
		for w, rows := range j.incs {
			for r, incs := range rows {
				for _, v := range incs {
					want[r*j.cfg.Workers+w] += v
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d servers: table %v, want %v", servers, got, want)
		}
	}
}

// TestRolesFail: a worker that fails fails the job, with its reason, at
// once (not after the others time out); one whose process is gone (its
// beats stop) is named as lost; every other role ends with the job's
// failure.
func TestRolesFail(t *testing.T) {
	t.Run("failed", func(t *testing.T) {
		j := newRolesJob(t, 2, 3, 6)
		j.opts.Timeout = 20 * time.Second // a failure must not wait for it
		start := time.Now()
		_, hosts, coord := j.run(t, func(w int) node.Work {
			if w != 1 {
				// Reads and clocks: they wait for worker 1, whose
				// increments never come.
				return readClock(6)
			}
			return func(ctx context.Context, w int, cl *node.Client) error {
				if err := cl.Clock(ctx); err != nil {
					return err
				}
				return errors.New("the data file ends early")
			}
		})
		if coord == nil || !strings.Contains(coord.Error(), "worker 1 failed") || !strings.Contains(coord.Error(), "the data file ends early") {
			t.Errorf("coordinator: %v", coord)
		}
		for w, err := range hosts {
			if err == nil || w != 1 && !strings.Contains(err.Error(), "the job failed") {
				t.Errorf("worker %d: %v", w, err)
			}
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the job took %v to fail", d)
		}
	})
	t.Run("lost", func(t *testing.T) {
		j := newRolesJob(t, 2, 2, 6)
		proc, kill := context.WithCancel(context.Background())
		defer kill()
		j.procs = []context.Context{proc}
		started := make(chan struct{})
		_, hosts, coord := j.run(t, func(w int) node.Work {
			if w == 1 {
				return func(ctx context.Context, w int, cl *node.Client) error {
					if err := cl.Clock(ctx); err != nil {
						return err
					}
					close(started)
					return work(ctx, cl, j.cfg, w, j.incs)
				}
			}
			// Worker 0's process dies at its third clock: nothing of it
			// answers or beats from then on.
			return func(ctx context.Context, w int, cl *node.Client) error {
				for range 2 {
					if err := cl.Clock(ctx); err != nil {
						return err
					}
				}
				<-started // worker 1 has read what it needs of server 0
				kill()
				<-ctx.Done()
				return ctx.Err()
			}
		})
		if coord == nil || !strings.Contains(coord.Error(), "worker 0 lost") {
			t.Errorf("coordinator: %v", coord)
		}
		if hosts[1] == nil || !strings.Contains(hosts[1].Error(), "worker 0 lost") {
			t.Errorf("worker 1: %v", hosts[1])
		}
	})
	t.Run("other tables", func(t *testing.T) {
		j := newRolesJob(t, 1, 1, 4)
		other := j.cfg
		other.Tables = slices.Clone(other.Tables)
		other.Tables[0].Staleness = 2
		c, err := j.dial("coordinator")
		if err != nil {
			t.Fatal(err)
		}
		var host error
		var g sync.WaitGroup
		g.Go(func() { host = node.Host(context.Background(), j.dial, other, 0, j.opts, readClock(4)) })
		coord := node.Coordinate(context.Background(), c, j.dial, j.cfg, 5*time.Second, j.opts, func(context.Context, *wire.Conn) error { return nil })
		g.Wait()
		for _, err := range []error{coord, host} {
			if err == nil || !strings.Contains(err.Error(), "worker 0 and the coordinator disagree about the job's tables") {
				t.Errorf("%v", err)
			}
		}
	})
}
