// Package node runs the parameter server's cores (package ps) over NATS:
// Serve runs a server, a Client is a worker's view of the tables, and Read
// (ReadSparse by nonzeros) takes a whole table as of a stamp, for a job's
// outputs and metrics.
//
// Server i takes its messages on ps.server.<i> and worker w on
// ps.worker.<w>, under the job's prefix. Nothing waits without end: a
// worker sends again what no server has answered after Options.Resend, and
// gives up after Options.Timeout.
package node

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/wire"
)

// Options are a node's waits.
type Options struct {
	// Resend is how long a worker waits for an answer before it sends
	// again what is unanswered (default 1s).
	Resend time.Duration
	// Timeout is the longest a worker waits for an answer before its call
	// fails (default 1m).
	Timeout time.Duration
	// Log takes the nodes' warnings (default slog.Default()).
	Log *slog.Logger
	// Checkpoints stores the servers' cuts (ps.Config.Every) and the
	// workers' pieces (Client.Checkpoint) in the job's checkpoint store,
	// which needs JetStream; Commit commits them.
	Checkpoints bool
	// Keep is how many checkpoints Commit keeps (default 2).
	Keep int
	// Resume starts every server and worker from the last checkpoint
	// committed.
	Resume bool
	// LostAfter is how long a worker of a job of separate processes
	// (Host, Coordinate) may be silent before the job fails (default
	// 10×Resend); it beats every Resend.
	LostAfter time.Duration
}

func (o Options) withDefaults() Options {
	if o.Resend <= 0 {
		o.Resend = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.LostAfter <= 0 {
		o.LostAfter = 10 * o.Resend
	}
	if o.Keep <= 0 {
		o.Keep = 2
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}

func serverSubject(i int) string { return fmt.Sprintf("ps.server.%d", i) }
func workerSubject(w int) string { return fmt.Sprintf("ps.worker.%d", w) }

// Serve runs server index of cfg until ctx is done. A message that is not
// valid is dropped with a warning: a job's own nodes send none.
func Serve(ctx context.Context, c *wire.Conn, cfg ps.Config, index int, opts Options) error {
	opts = opts.withDefaults()
	shard, err := ps.NewShard(cfg, index)
	if err != nil {
		return err
	}
	store, cut, err := serverCheckpoints(ctx, c, cfg, index, opts)
	if err != nil {
		return fmt.Errorf("ps: server %d: %w", index, err)
	}
	if cut != nil {
		if err := shard.Restore(*cut); err != nil {
			return err
		}
	}
	in, err := wire.Subscribe[ps.ToServer](c, serverSubject(index))
	if err != nil {
		return err
	}
	defer in.Close()
	if err := c.Flush(opts.Timeout); err != nil {
		return fmt.Errorf("ps: server %d: %w", index, err)
	}
	sum := cfg.Sum()
	for {
		m, msg, err := in.Next(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			opts.Log.Warn("ps: server: message dropped", "server", index, "err", err)
			continue
		}
		if h := cmp.Or(m.Hello, m.Stop, m.Status); h != nil && msg.Reply != "" {
			ans := ps.Hello{Sum: sum}
			if m.Status != nil {
				ans.Clocks = shard.Clocks()
			}
			if err := wire.Reply(c, msg, ans); err != nil {
				opts.Log.Warn("ps: server: answer failed", "server", index, "err", err)
			}
			if m.Stop != nil && m.Stop.Sum == sum {
				return nil
			}
			continue
		}
		outs, err := shard.Step(m)
		if err != nil {
			opts.Log.Warn("ps: server: message refused", "server", index, "err", err)
			continue
		}
		for _, o := range outs {
			if o.Cut != nil {
				if opts.Checkpoints {
					if err := storeCut(ctx, c, store, cfg, *o.Cut, opts.Timeout); err != nil {
						// The checkpoint is not committed; the job goes on.
						opts.Log.Warn("ps: server: cut not stored", "server", index, "stamp", o.Cut.Stamp, "err", err)
					}
				}
				continue
			}
			to := o.ReplyTo
			if o.Worker >= 0 {
				to = workerSubject(o.Worker)
			}
			if err := wire.Publish(c, to, o.Msg); err != nil {
				// The worker sends its read again.
				opts.Log.Warn("ps: server: send failed", "server", index, "to", to, "err", err)
			}
		}
	}
}

// hello asks every server for its tables' sum, waiting up to opts.Timeout
// for the servers to come, and fails if one has another job's tables. With
// stop, the servers that agree stop.
func hello(ctx context.Context, c *wire.Conn, cfg ps.Config, opts Options, who string, stop bool) error {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	sum := cfg.Sum()
	for s := range cfg.Servers {
		m := ps.ToServer{Hello: &ps.Hello{Sum: sum}}
		if stop {
			m = ps.ToServer{Stop: &ps.Hello{Sum: sum}}
		}
		for sent := false; ; sent = true {
			try, done := context.WithTimeout(ctx, opts.Resend)
			h, err := wire.RequestRetried[ps.ToServer, ps.Hello](try, c, serverSubject(s), m)
			done()
			if err == nil {
				if h.Sum != sum {
					return fmt.Errorf("ps: %s and server %d disagree about the job's tables (checksums %08x and %08x): every role needs the same settings", who, s, sum, h.Sum)
				}
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("ps: %s: server %d did not answer in %v: %w", who, s, opts.Timeout, err)
			}
			if errors.Is(err, wire.ErrNoResponders) {
				if stop && sent {
					break // stopped; its answer was lost
				}
				select { // not up yet
				case <-time.After(opts.Resend / 4):
				case <-ctx.Done():
				}
			}
		}
	}
	return nil
}

// Stop stops the servers of cfg, once the job has read what it needs:
// each answers, then returns from Serve.
func Stop(ctx context.Context, c *wire.Conn, cfg ps.Config, opts Options) error {
	return hello(ctx, c, cfg, opts.withDefaults(), "the job's end", true)
}

// Client is worker's view of the tables: Get, Inc and Clock, and the
// staleness of its reads. It is not safe for concurrent use.
type Client struct {
	cfg    ps.Config
	worker int
	core   *ps.Cache
	c      *wire.Conn
	opts   Options
	in     *wire.Inbox[ps.ToWorker]
	mail   chan ps.ToWorker
	cancel context.CancelFunc
	done   chan struct{}

	store     *checkpoint.Store
	resumed   []byte // the state stored at the checkpoint resumed from
	resumedAt int
}

// Dial returns worker's client of cfg's tables, subscribed to what the
// servers send it, once every server has answered that it has the same
// tables.
func Dial(ctx context.Context, c *wire.Conn, cfg ps.Config, worker int, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	core, err := ps.NewCache(cfg, worker)
	if err != nil {
		return nil, err
	}
	in, err := wire.Subscribe[ps.ToWorker](c, workerSubject(worker))
	if err != nil {
		return nil, err
	}
	if err := c.Flush(opts.Timeout); err != nil {
		in.Close()
		return nil, fmt.Errorf("ps: worker %d: %w", worker, err)
	}
	if err := hello(ctx, c, cfg, opts, fmt.Sprintf("worker %d", worker), false); err != nil {
		in.Close()
		return nil, err
	}
	recv, cancel := context.WithCancel(context.Background())
	cl := &Client{cfg: cfg, worker: worker, core: core, c: c, opts: opts, in: in, mail: make(chan ps.ToWorker, 256), cancel: cancel, done: make(chan struct{}), resumedAt: -1}
	if opts.Resume {
		if err := cl.resume(ctx); err != nil {
			cancel()
			in.Close()
			return nil, fmt.Errorf("ps: worker %d: %w", worker, err)
		}
	}
	go cl.receive(recv)
	return cl, nil
}

// receive hands the servers' messages to the calls, which alone touch
// the core.
func (cl *Client) receive(ctx context.Context) {
	defer close(cl.done)
	for {
		m, _, err := cl.in.Next(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			cl.opts.Log.Warn("ps: worker: message dropped", "err", err)
			continue
		}
		select {
		case cl.mail <- m:
		case <-ctx.Done():
			return
		}
	}
}

// take gives the core a message.
func (cl *Client) take(m ps.ToWorker) {
	if err := cl.core.Receive(m); err != nil {
		cl.opts.Log.Warn("ps: worker: message refused", "err", err)
	}
}

// drain takes what has come without waiting.
func (cl *Client) drain() {
	for {
		select {
		case m := <-cl.mail:
			cl.take(m)
		default:
			return
		}
	}
}

func (cl *Client) send(msgs []ps.Send) error {
	for _, m := range msgs {
		if err := wire.Publish(cl.c, serverSubject(m.Server), m.Msg); err != nil {
			return fmt.Errorf("ps: to server %d: %w", m.Server, err)
		}
	}
	return nil
}

// await takes messages until ok holds, sending again what is unanswered
// every Resend, and fails after Timeout.
func (cl *Client) await(ctx context.Context, what string, ok func() bool) error {
	if ok() {
		return nil
	}
	deadline := time.NewTimer(cl.opts.Timeout)
	defer deadline.Stop()
	resend := time.NewTicker(cl.opts.Resend)
	defer resend.Stop()
	for !ok() {
		select {
		case m := <-cl.mail:
			cl.take(m)
		case <-resend.C:
			if err := cl.send(cl.core.Unanswered()); err != nil {
				return err
			}
		case <-deadline.C:
			return fmt.Errorf("ps: worker %d at clock %d: no answer from the servers in %v for %s%s", cl.worker, cl.core.Clock(), cl.opts.Timeout, what, cl.behind(ctx))
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// behind asks server 0 how far each worker is, and names those furthest
// behind, for the message of a wait that timed out.
func (cl *Client) behind(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, cl.opts.Resend)
	defer cancel()
	h, err := wire.Request[ps.ToServer, ps.Hello](ctx, cl.c, serverSubject(0), ps.ToServer{Status: &ps.Hello{Sum: cl.cfg.Sum()}})
	if err != nil || len(h.Clocks) != cl.cfg.Workers {
		return ""
	}
	low := slices.Min(h.Clocks)
	var late []string
	for w, c := range h.Clocks {
		if c == low {
			late = append(late, strconv.Itoa(w))
		}
	}
	return fmt.Sprintf("; server 0 has every worker's clocks up to %d, and no more of worker %s: is it lost or stalled?", low, strings.Join(late, ", "))
}

// Get returns row of table t, no staler than the table's bound allows,
// waiting for a server if it must. For a dense table the slice is the
// cache's: read it, and change it only through Inc; it is valid until the
// next call. For a sparse table it is a new dense copy (ps.Cache.Get).
func (cl *Client) Get(ctx context.Context, t, row int) ([]float64, error) {
	var v []float64
	err := cl.get(ctx, t, row, func() (bool, []ps.Send, error) {
		var sends []ps.Send
		var err error
		v, sends, err = cl.core.Get(t, row)
		return v != nil, sends, err
	})
	return v, err
}

// GetSparse is Get by the row's nonzero values, in increasing columns. For
// a sparse table they are the cache's, valid until the next call; for a
// dense table a new copy.
func (cl *Client) GetSparse(ctx context.Context, t, row int) (ps.SparseRow, error) {
	var r ps.SparseRow
	err := cl.get(ctx, t, row, func() (bool, []ps.Send, error) {
		var ok bool
		var sends []ps.Send
		var err error
		r, ok, sends, err = cl.core.GetSparse(t, row)
		return ok, sends, err
	})
	return r, err
}

// get waits until try, a read of the core, finds the row, sending the
// reads it returns.
func (cl *Client) get(ctx context.Context, t, row int, try func() (bool, []ps.Send, error)) error {
	if len(cl.mail) > 0 {
		cl.drain() // rows pushed: fresher reads at once
	}
	ok, sends, err := try()
	if ok || err != nil {
		return err
	}
	if err := cl.send(sends); err != nil {
		return err
	}
	werr := cl.await(ctx, fmt.Sprintf("row %d of table %d", row, t), func() bool {
		ok, sends, err = try()
		if err == nil && !ok && len(sends) > 0 {
			err = cl.send(sends)
		}
		return ok || err != nil
	})
	return cmp.Or(werr, err)
}

// Inc adds delta to row of table t.
func (cl *Client) Inc(t, row int, delta []float64) error { return cl.core.Inc(t, row, delta) }

// IncSparse adds vals[i] to column cols[i] of row of table t, for every i
// (ps.Cache.IncSparse).
func (cl *Client) IncSparse(t, row int, cols []int32, vals []float64) error {
	return cl.core.IncSparse(t, row, cols, vals)
}

// Clock ends the worker's clock: its increments go to the servers, and the
// rows they push are taken.
func (cl *Client) Clock(ctx context.Context) error {
	cl.drain()
	if err := cl.await(ctx, "the confirmation of earlier clocks", func() bool { return !cl.core.Behind() }); err != nil {
		return err
	}
	sends, err := cl.core.Tick()
	if err != nil {
		return err
	}
	return cl.send(sends)
}

// Clocks returns how many clocks the worker has ended.
func (cl *Client) Clocks() int { return cl.core.Clock() }

// Stats returns the staleness of the worker's reads so far.
func (cl *Client) Stats() ps.Stats { return cl.core.Stats() }

// Sync waits until every server has confirmed every clock the worker
// ended.
func (cl *Client) Sync(ctx context.Context) error {
	return cl.await(ctx, "the confirmation of its clocks", cl.core.Confirmed)
}

// Close stops taking messages; it does not wait for confirmations (Sync
// does).
func (cl *Client) Close() error {
	cl.cancel()
	<-cl.done
	return cl.in.Close()
}

// MaxDenseRead is the most values Read returns of a sparse table: read a
// larger one with ReadSparse.
const MaxDenseRead = 1 << 28

// Read returns table t of cfg as of stamp, all its rows in order (Rows ×
// Width values): every worker's increments of the clocks before stamp are
// in. It waits for the servers to reach stamp, asking again every
// opts.Resend, and fails after opts.Timeout. A sparse table comes dense,
// if it has at most MaxDenseRead values.
func Read(ctx context.Context, c *wire.Conn, cfg ps.Config, t, stamp int, opts Options) ([]float64, error) {
	tab, err := table(cfg, t)
	if err != nil {
		return nil, err
	}
	if tab.Sparse && tab.Rows > MaxDenseRead/tab.Width {
		return nil, fmt.Errorf("ps: table %s of %d × %d values is too large to read dense: read it with ReadSparse", tab.Name, tab.Rows, tab.Width)
	}
	out := make([]float64, tab.Rows*tab.Width)
	err = read(ctx, c, cfg, t, stamp, opts, func(m *ps.Rows) {
		if !tab.Sparse {
			for k, r := range m.Rows {
				copy(out[int(r)*tab.Width:(int(r)+1)*tab.Width], m.Values[k*tab.Width:(k+1)*tab.Width])
			}
			return
		}
		nz := m.Nonzeros(cfg)
		for k := range nz.Rows {
			r, v := nz.At(k)
			for i, col := range v.Cols {
				out[r*tab.Width+int(col)] = v.Vals[i]
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadSparse is Read by nonzero values: the rows of table t with nonzero
// values, in order, each by its nonzero values. For a sparse table it
// takes memory in proportion to the table's nonzeros, whatever Rows ×
// Width.
func ReadSparse(ctx context.Context, c *wire.Conn, cfg ps.Config, t, stamp int, opts Options) (ps.Nonzeros, error) {
	if _, err := table(cfg, t); err != nil {
		return ps.Nonzeros{}, err
	}
	// Each server's rows come in order; the servers' rows interleave.
	type at struct{ row, part, k int }
	var parts []ps.Nonzeros
	var all []at
	err := read(ctx, c, cfg, t, stamp, opts, func(m *ps.Rows) {
		nz := m.Nonzeros(cfg)
		for k, r := range nz.Rows {
			all = append(all, at{int(r), len(parts), k})
		}
		parts = append(parts, nz)
	})
	if err != nil {
		return ps.Nonzeros{}, err
	}
	slices.SortFunc(all, func(a, b at) int { return cmp.Compare(a.row, b.row) })
	var out ps.Nonzeros
	for _, a := range all {
		r, v := parts[a.part].At(a.k)
		if len(v.Cols) > 0 {
			out.Append(r, v)
		}
	}
	return out, nil
}

// table returns table t of cfg, if cfg is valid and has it.
func table(cfg ps.Config, t int) (ps.Table, error) {
	if err := cfg.Validate(); err != nil {
		return ps.Table{}, err
	}
	if t < 0 || t >= len(cfg.Tables) {
		return ps.Table{}, fmt.Errorf("ps: table %d of %d", t, len(cfg.Tables))
	}
	return cfg.Tables[t], nil
}

// read asks every server for table t of cfg as of stamp and gives take
// each server's answer, checked. It waits for the servers to reach stamp,
// asking again every opts.Resend, and fails after opts.Timeout.
func read(ctx context.Context, c *wire.Conn, cfg ps.Config, t, stamp int, opts Options, take func(*ps.Rows)) error {
	opts = opts.withDefaults()
	var id [8]byte
	rand.Read(id[:])
	reply := "ps.observer." + hex.EncodeToString(id[:])
	in, err := wire.Subscribe[ps.ToWorker](c, reply)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := c.Flush(opts.Timeout); err != nil {
		return err
	}
	tab := cfg.Tables[t]
	got := make([]bool, cfg.Servers)
	ask := func() error {
		for s := range cfg.Servers {
			if !got[s] {
				r := &ps.Read{Worker: -1, Table: t, Stamp: stamp, Seq: uint64(s) + 1, ReplyTo: reply}
				if err := wire.Publish(c, serverSubject(s), ps.ToServer{Read: r}); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := ask(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	for left := cfg.Servers; left > 0; {
		wait, stop := context.WithTimeout(ctx, opts.Resend)
		m, _, err := in.Next(wait)
		stop()
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("ps: reading table %s at stamp %d: %d of %d servers did not answer: %w", tab.Name, stamp, left, cfg.Servers, ctx.Err())
		case errors.Is(err, context.DeadlineExceeded):
			if err := ask(); err != nil {
				return err
			}
			continue
		case err != nil:
			opts.Log.Warn("ps: observer: message dropped", "err", err)
			continue
		}
		rows := m.Rows
		if rows == nil || rows.Server < 0 || rows.Server >= cfg.Servers || rows.Table != t || rows.Stamp < stamp || got[rows.Server] {
			continue
		}
		if err := rows.Check(cfg); err != nil {
			return fmt.Errorf("ps: reading table %s: %w", tab.Name, err)
		}
		take(rows)
		got[rows.Server] = true
		left--
	}
	return nil
}
