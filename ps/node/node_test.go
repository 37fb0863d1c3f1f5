package node_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/wire"
)

// TestNATS runs servers and workers on an embedded nats-server, each on
// its own connection: every read within its bound, and the table at the
// end the exact sum of the integer increments.
func TestNATS(t *testing.T) {
	for _, m := range []ps.Model{ps.BSP, ps.SSP, ps.ESSP, ps.Async} {
		t.Run(m.String(), func(t *testing.T) {
			const (
				servers, workers, clocks, rows = 2, 3, 8, 10
			)
			tab := ps.Table{Name: "counts", Rows: rows, Width: workers, Model: m}
			if m == ps.SSP || m == ps.ESSP {
				tab.Staleness = 2
			}
			cfg := ps.Config{Tables: []ps.Table{tab}, Servers: servers, Workers: workers}
			srv := testhelper.StartServer(t, natsserver.Options{Port: -1})
			opts := node.Options{Resend: 200 * time.Millisecond, Timeout: 20 * time.Second}
			// incs[w][r][k]: worker w's increment of row r at clock k.
			incs := make([][][]float64, workers)
			for w := range workers {
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				incs[w] = make([][]float64, rows)
				for r := range rows {
					incs[w][r] = make([]float64, clocks)
					for k := range clocks {
						incs[w][r][k] = float64(1 + rng.IntN(100))
					}
				}
			}
			dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "pstest") }
			var got []float64
			err := node.Run(context.Background(), dial, cfg, opts,
				func(ctx context.Context, w int, cl *node.Client) error { return work(ctx, cl, cfg, w, incs) },
				func(ctx context.Context, c *wire.Conn) (err error) {
					got, err = node.Read(ctx, c, cfg, 0, clocks, opts)
					return err
				})
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, rows*workers)
			for w := range workers {
				for r := range rows {
					for _, v := range incs[w][r] {
						want[r*workers+w] += v
					}
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("table at the end %v, want %v", got, want)
			}
		})
	}
}

// work is worker w: at every clock it reads each row, checks what it sees
// of every worker's increments against the bound, and adds its own.
func work(ctx context.Context, cl *node.Client, cfg ps.Config, w int, incs [][][]float64) error {
	tab := cfg.Tables[0]
	bound := map[ps.Model]int{ps.BSP: 0, ps.SSP: tab.Staleness, ps.ESSP: tab.Staleness, ps.Async: -1}[tab.Model]
	clocks := len(incs[0][0])
	for k := range clocks {
		for r := range tab.Rows {
			v, err := cl.Get(ctx, 0, r)
			if err != nil {
				return err
			}
			for j := range cfg.Workers {
				p, sum := -1, 0.0
				if v[j] == 0 {
					p = 0
				}
				for i, inc := range incs[j][r] {
					sum += inc
					if sum == v[j] {
						p = i + 1
					}
				}
				switch {
				case j == w && p != k:
					return fmt.Errorf("worker %d at clock %d reads its own increments of row %d up to clock %d", w, k, r, p)
				case p < 0:
					return fmt.Errorf("worker %d at clock %d reads %v of worker %d's increments of row %d: no run of clocks adds up to it", w, k, v[j], j, r)
				case bound >= 0 && p < k-bound:
					return fmt.Errorf("worker %d at clock %d reads worker %d's increments of row %d up to clock %d, bound %d", w, k, j, r, p, bound)
				}
			}
			d := make([]float64, cfg.Workers)
			d[w] = incs[w][r][k]
			if err := cl.Inc(0, r, d); err != nil {
				return err
			}
		}
		if err := cl.Clock(ctx); err != nil {
			return err
		}
	}
	st := cl.Stats()
	if bound >= 0 && st.Max > bound {
		return fmt.Errorf("worker %d: staleness up to %d, bound %d", w, st.Max, bound)
	}
	return nil
}

// TestRunFails: a worker's error ends the job, with the others waiting on
// it at a BSP read, and Run returns it.
func TestRunFails(t *testing.T) {
	srv := testhelper.StartServer(t, natsserver.Options{Port: -1})
	dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "pstest") }
	cfg := ps.Config{Tables: []ps.Table{{Name: "x", Rows: 2, Width: 1}}, Servers: 1, Workers: 2}
	boom := errors.New("boom")
	err := node.Run(context.Background(), dial, cfg, node.Options{}, func(ctx context.Context, w int, cl *node.Client) error {
		if w == 1 {
			return boom
		}
		for range 3 {
			if _, err := cl.Get(ctx, 0, 0); err != nil {
				return err
			}
			if err := cl.Clock(ctx); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want %v", err, boom)
	}
}

// TestHello: a worker started with other tables than the servers' is
// refused at Dial, and Stop ends Serve.
func TestHello(t *testing.T) {
	srv := testhelper.StartServer(t, natsserver.Options{Port: -1})
	conn := func() *wire.Conn {
		c, err := wire.NewConn(testhelper.Connect(t, srv), "pstest")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cfg := ps.Config{Tables: []ps.Table{{Name: "x", Rows: 4, Width: 2}}, Servers: 1, Workers: 1}
	opts := node.Options{Resend: 100 * time.Millisecond, Timeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- node.Serve(context.Background(), conn(), cfg, 0, opts) }()
	other := cfg
	other.Tables = []ps.Table{{Name: "x", Rows: 4, Width: 3}}
	if _, err := node.Dial(context.Background(), conn(), other, 0, opts); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("Dial with other tables: %v", err)
	}
	cl, err := node.Dial(context.Background(), conn(), cfg, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if err := node.Stop(context.Background(), conn(), cfg, opts); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve still running after Stop")
	}
}

// TestLostWorker: a worker that stops clocking holds the others at their
// bound; their wait ends after the timeout with a message that names it.
func TestLostWorker(t *testing.T) {
	srv := testhelper.StartServer(t, natsserver.Options{Port: -1})
	dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "pstest") }
	cfg := ps.Config{Tables: []ps.Table{{Name: "x", Rows: 2, Width: 1, Model: ps.SSP, Staleness: 1}}, Servers: 2, Workers: 3}
	opts := node.Options{Resend: 100 * time.Millisecond, Timeout: 3 * time.Second}
	err := node.Run(context.Background(), dial, cfg, opts, func(ctx context.Context, w int, cl *node.Client) error {
		for k := range 5 {
			if w == 2 && k == 1 {
				return nil // gone after one clock
			}
			if _, err := cl.Get(ctx, 0, k%2); err != nil {
				return err
			}
			if err := cl.Clock(ctx); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err == nil || !strings.Contains(err.Error(), "clocks up to 1, and no more of worker 2:") {
		t.Fatalf("Run: %v, want a wait that names worker 2", err)
	}
}
