package lsq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/strads-go/strads/apps/lsq"
	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/wire"
)

func config(m ps.Model) lsq.Config {
	c := lsq.Config{Rows: 2000, Cols: 6, Seed: 3, Workers: 2, Servers: 2, Model: m, Passes: 30, ClocksPerPass: 10, Step: 0.1, Batch: 10}
	if m == ps.SSP || m == ps.ESSP {
		c.Staleness = 2
	}
	return c
}

// mse is β's mean squared error over every row.
func mse(c lsq.Config, beta []float64) float64 {
	x := make([]float64, c.Cols)
	s := 0.0
	for i := range c.Rows {
		y := c.Example(i, x)
		r := y
		for j := range x {
			r -= x[j] * beta[j]
		}
		s += r * r
	}
	return s / float64(c.Rows)
}

// ols is the least-squares solution, from the normal equations.
func ols(t *testing.T, c lsq.Config) []float64 {
	xs := mat.NewDense(c.Rows, c.Cols, nil)
	ys := mat.NewVecDense(c.Rows, nil)
	for i := range c.Rows {
		ys.SetVec(i, c.Example(i, xs.RawRowView(i)))
	}
	var beta mat.VecDense
	if err := beta.SolveVec(xs, ys); err != nil {
		t.Fatal(err)
	}
	return beta.RawVector().Data
}

// TestOptimum: under BSP, SSP and ESSP, the fit's error is within 0.1% of
// the least-squares optimum's, and the errors the workers report
// are those of the passes, falling (each worker sees its own β, so their
// sum may dip just below the optimum).
func TestOptimum(t *testing.T) {
	srv := testhelper.StartServer(t, natsserver.Options{Port: -1})
	dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "lsq") }
	c := config(ps.BSP)
	best := mse(c, ols(t, c))
	for _, m := range []ps.Model{ps.BSP, ps.SSP, ps.ESSP, ps.Async} {
		t.Run(m.String(), func(t *testing.T) {
			c := config(m)
			res, err := lsq.Fit(context.Background(), dial, c, node.Options{Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			got := mse(c, res.Beta)
			if m == ps.Async {
				// No bound: a worker may run many clocks before it
				// hears from the other, each adding steps of its own
				// (measured: from 0.05% above the optimum's error to
				// 3.6 times it).
				t.Logf("async: %.6g (optimum %.6g)", got, best)
				return
			}
			if got > best*1.001 {
				t.Errorf("mean squared error %.6g, optimum %.6g", got, best)
			}
			if first, last := res.MSE[0], res.MSE[len(res.MSE)-1]; last > first/10 || last < best*0.99 {
				t.Errorf("reported errors from %.4g to %.4g, optimum %.4g", first, last, best)
			}
			t.Logf("%v: %.6g (optimum %.6g), first pass %.4g", m, got, best, res.MSE[0])
		})
	}
}

// TestProcesses runs the servers and the workers as separate processes
// against a nats-server on TCP, as on several machines; this process
// collects the result and stops the servers.
func TestProcesses(t *testing.T) {
	if role := os.Getenv("LSQ_ROLE"); role != "" {
		t.Skip("a role's process")
	}
	url := testhelper.ServerURL(t)
	c := config(ps.SSP)
	var procs []*exec.Cmd
	start := func(role string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRole$")
		cmd.Env = append(os.Environ(), "LSQ_ROLE="+role, "LSQ_NATS="+url)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	for s := range c.Servers {
		start(fmt.Sprintf("server:%d", s))
	}
	for w := range c.Workers {
		start(fmt.Sprintf("worker:%d", w))
	}
	opts := node.Options{Timeout: 30 * time.Second}
	conn := connect(t, url)
	ctx := context.Background()
	res, err := c.Collect(ctx, conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Stop(ctx, conn, c.PS(), opts); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Errorf("%v: %v", p.Env[len(p.Env)-2], err)
		}
	}
	if got, best := mse(c, res.Beta), mse(c, ols(t, c)); got > best*1.001 {
		t.Errorf("mean squared error %.6g, optimum %.6g", got, best)
	}
}

// TestRole is a process of TestProcesses.
func TestRole(t *testing.T) {
	role, url := os.Getenv("LSQ_ROLE"), os.Getenv("LSQ_NATS")
	if role == "" {
		t.Skip("run by TestProcesses")
	}
	c := config(ps.SSP)
	kind, index, _ := strings.Cut(role, ":")
	i, err := strconv.Atoi(index)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := node.Options{Timeout: 30 * time.Second}
	conn := connect(t, url)
	switch kind {
	case "server":
		err = node.Serve(ctx, conn, c.PS(), i, opts)
	case "worker":
		var cl *node.Client
		if cl, err = node.Dial(ctx, conn, c.PS(), i, opts); err != nil {
			break
		}
		defer cl.Close()
		if err = c.Work(ctx, i, cl); err == nil {
			err = cl.Sync(ctx)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func connect(t *testing.T, url string) *wire.Conn {
	nc, err := wire.Connect(url, "lsq", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := wire.NewConn(nc, "lsq")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var errInterrupt = errors.New("interrupted")

// interrupter fails a worker's Clock once it has ended at clocks and
// committed says the checkpoint before is in.
type interrupter struct {
	*node.Client
	at        int
	committed func() bool
}

func (i *interrupter) Clock(ctx context.Context) error {
	if err := i.Client.Clock(ctx); err != nil {
		return err
	}
	if i.Clocks() < i.at {
		return nil
	}
	for !i.committed() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return errInterrupt
}

// TestResume interrupts a job with checkpoints every 5 passes (50 clocks)
// at clock 170, once the checkpoint of clock 150 is committed, and resumes
// it: the workers go on from clock 150, and the fit ends at the optimum
// with the errors of every pass, those before pass 15 from the checkpoint.
func TestResume(t *testing.T) {
	srv := testhelper.StartServer(t, natsserver.Options{Port: -1, StoreDir: t.TempDir()})
	dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "lsq") }
	c := config(ps.SSP)
	c.Every = 50
	opts := node.Options{Timeout: 20 * time.Second, Checkpoints: true}
	ctx := context.Background()
	err := node.Run(ctx, dial, c.PS(), opts, func(ctx context.Context, w int, cl *node.Client) error {
		return c.Work(ctx, w, &interrupter{Client: cl, at: 170, committed: func() bool {
			store, err := checkpoint.Open(ctx, testhelper.Connect(t, srv), "lsq", false)
			if err != nil {
				return false
			}
			m, err := store.Latest(ctx)
			return err == nil && m.Round == 150
		}})
	}, nil)
	if !errors.Is(err, errInterrupt) {
		t.Fatalf("first run: %v, want the interrupt", err)
	}
	opts.Resume = true
	var starts []int
	var mu sync.Mutex
	var res *lsq.Result
	err = node.Run(ctx, dial, c.PS(), opts, func(ctx context.Context, w int, cl *node.Client) error {
		mu.Lock()
		starts = append(starts, cl.Clocks())
		mu.Unlock()
		if cl.Resumed() == nil {
			return errors.New("not resumed")
		}
		return c.Work(ctx, w, cl)
	}, func(ctx context.Context, conn *wire.Conn) (err error) {
		res, err = c.Collect(ctx, conn, opts)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(starts, []int{150, 150}) {
		t.Errorf("resumed at clocks %v, want 150, 150", starts)
	}
	if got, best := mse(c, res.Beta), mse(c, ols(t, c)); got > best*1.001 {
		t.Errorf("mean squared error %.6g, optimum %.6g", got, best)
	}
	if res.MSE[0] < 1 || res.MSE[14] > 0.02 {
		t.Errorf("errors of passes 0 and 14 from the checkpoint: %.4g, %.4g (all: %.3g)", res.MSE[0], res.MSE[14], res.MSE)
	}
}
