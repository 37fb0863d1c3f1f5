package node_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
		return readClock(3)(ctx, w, cl)
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

// TestNATSSparse runs sparse tables on an embedded nats-server: a table of
// 10⁶ rows of 10⁶ columns of which the workers touch a few, and a small
// one, both read by GetSparse within their bound and with the reader's own
// increments, and at the end, by ReadSparse and Read, the exact sums of
// every increment. Column c holds worker c mod 3's increments only, so that
// a value tells which of its clocks are in.
func TestNATSSparse(t *testing.T) {
	for _, m := range []ps.Model{ps.BSP, ps.SSP, ps.ESSP, ps.Async} {
		t.Run(m.String(), func(t *testing.T) {
			const servers, workers, clocks = 2, 3, 6
			staleness := 0
			if m == ps.SSP || m == ps.ESSP {
				staleness = 1
			}
			cfg := ps.Config{Tables: []ps.Table{
				{Name: "features", Rows: 1_000_000, Width: 1_000_000, Model: m, Staleness: staleness, Sparse: true},
				{Name: "topics", Rows: 7, Width: 12, Model: m, Staleness: staleness, Sparse: true},
			}, Servers: servers, Workers: workers}
			// The rows the workers touch, and each worker's script.
			rng := rand.New(rand.NewPCG(11, uint64(m)))
			rows := [2][]int{}
			for range 30 {
				rows[0] = append(rows[0], rng.IntN(cfg.Tables[0].Rows))
			}
			for r := range cfg.Tables[1].Rows {
				rows[1] = append(rows[1], r)
			}
			script := make([][][]sparseInc, workers)
			incs := map[cell][]float64{} // by clock
			for w := range workers {
				script[w] = make([][]sparseInc, clocks)
				for k := range clocks {
					for range 12 {
						tab := rng.IntN(2)
						in := sparseInc{table: tab, row: rows[tab][rng.IntN(len(rows[tab]))]}
						for range 1 + rng.IntN(4) {
							col := int32(rng.IntN(cfg.Tables[tab].Width/workers)*workers + w)
							v := float64(1 + rng.IntN(9))
							in.cols = append(in.cols, col)
							in.vals = append(in.vals, v)
							c := cell{tab, in.row, col}
							if incs[c] == nil {
								incs[c] = make([]float64, clocks)
							}
							incs[c][k] += v
						}
						script[w][k] = append(script[w][k], in)
					}
				}
			}
			srv := testhelper.StartServer(t, natsserver.Options{Port: -1})
			opts := node.Options{Resend: 200 * time.Millisecond, Timeout: 20 * time.Second}
			dial := func(string) (*wire.Conn, error) { return wire.NewConn(testhelper.Connect(t, srv), "pstest") }
			var features ps.Nonzeros
			var topics []float64
			err := node.Run(context.Background(), dial, cfg, opts,
				func(ctx context.Context, w int, cl *node.Client) error {
					return sparseWork(ctx, cl, cfg, w, rows, script[w], incs)
				},
				func(ctx context.Context, c *wire.Conn) (err error) {
					if _, err := node.Read(ctx, c, cfg, 0, clocks, opts); err == nil {
						return errors.New("Read of 10¹² values: no error")
					}
					if features, err = node.ReadSparse(ctx, c, cfg, 0, clocks, opts); err != nil {
						return err
					}
					topics, err = node.Read(ctx, c, cfg, 1, clocks, opts)
					return err
				})
			if err != nil {
				t.Fatal(err)
			}
			want := [2]map[int]map[int32]float64{{}, {}}
			for c, byClock := range incs {
				if want[c.table][c.row] == nil {
					want[c.table][c.row] = map[int32]float64{}
				}
				for _, v := range byClock {
					want[c.table][c.row][c.col] += v
				}
			}
			t.Logf("%d rows of features with %d nonzeros, %d of topics", len(features.Rows), len(features.Cols), len(want[1]))
			if !slices.IsSorted(features.Rows) || len(features.Rows) != len(want[0]) {
				t.Errorf("ReadSparse: rows %v, want %d rows in order", features.Rows, len(want[0]))
			}
			for k := range features.Rows {
				r, v := features.At(k)
				if got := asMap(v); !maps.Equal(got, want[0][r]) {
					t.Errorf("features row %d is %v, want %v", r, got, want[0][r])
				}
			}
			for r := range cfg.Tables[1].Rows {
				w := cfg.Tables[1].Width
				for col, v := range topics[r*w : (r+1)*w] {
					if v != want[1][r][int32(col)] {
						t.Errorf("topics row %d column %d is %v, want %v", r, col, v, want[1][r][int32(col)])
					}
				}
			}
		})
	}
}

// cell is a column of a row of a table.
type cell struct {
	table, row int
	col        int32
}

// sparseInc is an increment of a sparse row.
type sparseInc struct {
	table, row int
	cols       []int32
	vals       []float64
}

func asMap(r ps.SparseRow) map[int32]float64 {
	m := map[int32]float64{}
	for i, c := range r.Cols {
		m[c] = r.Vals[i]
	}
	return m
}

// sparseWork is worker w: at every clock it makes its increments, then
// reads every row the workers touch and checks what it sees of every
// worker's increments against the bound, and of its own exactly.
func sparseWork(ctx context.Context, cl *node.Client, cfg ps.Config, w int, rows [2][]int, script [][]sparseInc, incs map[cell][]float64) error {
	for k, ops := range script {
		for _, in := range ops {
			if err := cl.IncSparse(in.table, in.row, in.cols, in.vals); err != nil {
				return err
			}
		}
		for tab := range 2 {
			tb := cfg.Tables[tab]
			bound := map[ps.Model]int{ps.BSP: 0, ps.SSP: tb.Staleness, ps.ESSP: tb.Staleness, ps.Async: -1}[tb.Model]
			for _, r := range rows[tab] {
				v, err := cl.GetSparse(ctx, tab, r)
				if err != nil {
					return err
				}
				if !slices.IsSorted(v.Cols) || slices.Contains(v.Vals, 0) {
					return fmt.Errorf("worker %d reads row %d of table %d as %v", w, r, tab, v)
				}
				got := asMap(v)
				for col, x := range got {
					if incs[cell{tab, r, col}] == nil {
						return fmt.Errorf("worker %d reads %v at table %d row %d column %d, never added to", w, x, tab, r, col)
					}
				}
				for c, byClock := range incs {
					if c.table != tab || c.row != r {
						continue
					}
					p, sum := -1, 0.0
					if got[c.col] == 0 {
						p = 0
					}
					for i, inc := range byClock {
						sum += inc
						if sum == got[c.col] {
							p = i + 1
						}
					}
					owner := int(c.col) % cfg.Workers
					switch {
					case owner == w && got[c.col] != sumTo(byClock, k+1):
						return fmt.Errorf("worker %d at clock %d reads %v of its own increments of table %d row %d column %d, want %v", w, k, got[c.col], tab, r, c.col, sumTo(byClock, k+1))
					case p < 0:
						return fmt.Errorf("worker %d at clock %d reads %v of worker %d's increments of table %d row %d column %d: no run of clocks adds up to it", w, k, got[c.col], owner, tab, r, c.col)
					case bound >= 0 && p < k-bound:
						return fmt.Errorf("worker %d at clock %d reads worker %d's increments of table %d row %d column %d up to clock %d, bound %d", w, k, owner, tab, r, c.col, p, bound)
					}
				}
			}
		}
		if err := cl.Clock(ctx); err != nil {
			return err
		}
	}
	return nil
}

// sumTo is the sum of the first k values.
func sumTo(v []float64, k int) float64 {
	s := 0.0
	for _, x := range v[:k] {
		s += x
	}
	return s
}

// readClock returns a worker that reads row 0 of table 0 and ends its
// clock, clocks times.
func readClock(clocks int) node.Work {
	return func(ctx context.Context, w int, cl *node.Client) error {
		for range clocks {
			if _, err := cl.Get(ctx, 0, 0); err != nil {
				return err
			}
			if err := cl.Clock(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}
