package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/wire"
)

// A job whose roles run as separate processes: a coordinator (Coordinate)
// and one process per worker (Host), each of which also serves the
// servers i with i mod Workers = w, as Bösen's machines each run a server
// beside their workers. The workers beat on ps.beat every Options.Resend;
// the coordinator's answer says whether the job goes on, is over, or
// failed. A worker that fails says so in its beat; one silent for
// Options.LostAfter is lost; either fails the job, and every other worker
// learns it from the answer to its next beat. A worker that hears nothing
// from the coordinator for Options.Timeout ends too.

const beatSubject = "ps.beat"

// beat is a worker's heartbeat.
type beat struct {
	Sum    uint32 `msgpack:"sum"`
	Worker int    `msgpack:"worker"`
	// Done: the worker has run its program and its clocks are confirmed;
	// its servers serve on until the job is over.
	Done bool `msgpack:"done,omitempty"`
	// Err: the worker failed, for this reason.
	Err string `msgpack:"err,omitempty"`
}

// beatReply is the coordinator's answer to a beat.
type beatReply struct {
	// Over: the job has read its results and stopped the servers.
	Over bool `msgpack:"over,omitempty"`
	// Failed: the job failed, for this reason.
	Failed string `msgpack:"failed,omitempty"`
}

// serveAll starts the servers of indices, each on its own connection, in
// g; a server's error cancels ctx.
func serveAll(ctx context.Context, cancel context.CancelCauseFunc, g *sync.WaitGroup, dial func(string) (*wire.Conn, error), cfg ps.Config, opts Options, indices []int) error {
	for _, i := range indices {
		c, err := dial(fmt.Sprintf("ps-server-%d", i))
		if err != nil {
			return err
		}
		g.Go(func() {
			if err := Serve(ctx, c, cfg, i, opts); err != nil {
				cancel(fmt.Errorf("ps: server %d: %w", i, err))
			}
		})
	}
	return nil
}

// startCommitter starts Commit in g when the job takes checkpoints, and
// returns once it listens; its error cancels ctx.
func startCommitter(ctx context.Context, cancel context.CancelCauseFunc, g *sync.WaitGroup, dial func(string) (*wire.Conn, error), cfg ps.Config, opts Options) error {
	if !opts.Checkpoints || cfg.Every == 0 {
		return nil
	}
	c, err := dial("ps-committer")
	if err != nil {
		return err
	}
	ready := make(chan struct{})
	g.Go(func() {
		if err := commit(ctx, c, cfg, opts, ready); err != nil {
			cancel(err)
		}
	})
	<-ready
	return nil
}

// hosted returns the servers that worker w's process serves.
func hosted(cfg ps.Config, w int) []int {
	var s []int
	for i := w; i < cfg.Servers; i += cfg.Workers {
		s = append(s, i)
	}
	return s
}

// Host runs worker w of a job whose coordinator runs Coordinate elsewhere:
// the servers it hosts, then the worker's program work, each on its own
// connection from dial. It returns once the job is over (nil), or failed.
func Host(ctx context.Context, dial func(name string) (*wire.Conn, error), cfg ps.Config, w int, opts Options, work Work) error {
	opts = opts.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if w < 0 || w >= cfg.Workers {
		return fmt.Errorf("ps: worker %d of %d", w, cfg.Workers)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var g sync.WaitGroup
	defer g.Wait()
	defer cancel(nil)
	if err := serveAll(ctx, cancel, &g, dial, cfg, opts, hosted(cfg, w)); err != nil {
		return err
	}
	bc, err := dial(fmt.Sprintf("ps-beat-%d", w))
	if err != nil {
		return err
	}
	var mu sync.Mutex
	b := beat{Sum: cfg.Sum(), Worker: w}
	over := make(chan struct{})
	answered := make(chan struct{}) // the first beat
	g.Go(func() {
		last := time.Now()
		first := true
		t := time.NewTicker(opts.Resend)
		defer t.Stop()
		for {
			mu.Lock()
			m := b
			mu.Unlock()
			rctx, done := context.WithTimeout(ctx, opts.Resend)
			rep, err := wire.Request[beat, beatReply](rctx, bc, beatSubject, m)
			done()
			switch {
			case err == nil && rep.Failed != "":
				cancel(fmt.Errorf("ps: worker %d: the job failed: %s", w, rep.Failed))
				return
			case err == nil && rep.Over:
				close(over)
				return
			case err == nil:
				last = time.Now()
				if first {
					first = false
					close(answered)
				}
			case time.Since(last) > opts.Timeout:
				cancel(fmt.Errorf("ps: worker %d: no answer from the job's coordinator in %v: is it lost?", w, opts.Timeout))
				return
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	})
	// The coordinator knows of the worker before it starts: one gone from
	// then on is lost, not late.
	select {
	case <-answered:
	case <-over:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	c, err := dial(fmt.Sprintf("ps-worker-%d", w))
	if err != nil {
		return err
	}
	if err := runWorker(ctx, c, cfg, w, opts, work); err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return cause
		}
		// The coordinator learns why at once, not once the others stall.
		mu.Lock()
		b.Err = err.Error()
		mu.Unlock()
		tell, done := context.WithTimeout(ctx, opts.Resend)
		wire.Request[beat, beatReply](tell, bc, beatSubject, beat{Sum: b.Sum, Worker: w, Err: b.Err})
		done()
		return err
	}
	mu.Lock()
	b.Done = true
	mu.Unlock()
	select {
	case <-over:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Coordinate runs the coordinator of a job whose workers run Host
// elsewhere, on c: it commits the checkpoints (Options.Checkpoints), waits
// up to join for every worker's first beat, and, once every worker is
// done, runs after (on its own connection from dial, to read the tables
// with Read), stops the servers, and tells the workers that the job is
// over. A worker that fails, or is silent for Options.LostAfter, fails the
// job.
func Coordinate(ctx context.Context, c *wire.Conn, dial func(name string) (*wire.Conn, error), cfg ps.Config, join time.Duration, opts Options, after func(ctx context.Context, c *wire.Conn) error) error {
	opts = opts.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var g sync.WaitGroup
	defer g.Wait()
	defer cancel(nil)
	if err := startCommitter(ctx, cancel, &g, dial, cfg, opts); err != nil {
		return err
	}
	in, err := wire.Subscribe[beat](c, beatSubject)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := c.Flush(opts.Timeout); err != nil {
		return err
	}
	f := &followers{cfg: cfg, opts: opts, start: time.Now(), join: join, last: make([]time.Time, cfg.Workers), done: make([]bool, cfg.Workers), told: make([]bool, cfg.Workers)}
	ended := make(chan error, 1) // after's end, and the servers stopped
	var jobErr error
	for {
		wait, stop := context.WithTimeout(ctx, opts.Resend)
		m, msg, err := in.Next(wait)
		stop()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		select {
		case err := <-ended:
			if err != nil && jobErr == nil {
				jobErr, f.failed = err, time.Now()
			}
			f.over, f.overAt = err == nil, time.Now()
		default:
		}
		if err == nil && m.Sum != cfg.Sum() && m.Worker >= 0 && m.Worker < cfg.Workers && jobErr == nil {
			// A worker of this job started with other settings: it
			// would wait at its servers' handshake, and the job for it.
			jobErr, f.failed = fmt.Errorf("ps: worker %d and the coordinator disagree about the job's tables (checksums %08x and %08x): every role needs the same settings", m.Worker, m.Sum, cfg.Sum()), time.Now()
		}
		if err == nil && m.Sum != cfg.Sum() && jobErr == nil {
			err = fmt.Errorf("a beat of a job with other tables (checksum %08x, this job's %08x)", m.Sum, cfg.Sum())
		}
		if err == nil && (m.Worker < 0 || m.Worker >= cfg.Workers) {
			err = fmt.Errorf("a beat of worker %d of %d", m.Worker, cfg.Workers)
		}
		if err == nil {
			if jobErr == nil {
				jobErr = f.take(m)
			}
			rep := beatReply{Over: f.over}
			if jobErr != nil {
				rep = beatReply{Failed: jobErr.Error()}
			}
			if msg.Reply != "" {
				if err := wire.Reply(c, msg, rep); err != nil {
					opts.Log.Warn("ps: coordinator: beat answer failed", "err", err)
				} else if rep.Over || rep.Failed != "" {
					f.told[m.Worker] = true
				}
			}
		} else if !errors.Is(err, context.DeadlineExceeded) {
			opts.Log.Warn("ps: coordinator: message dropped", "err", err)
		}
		if jobErr == nil {
			jobErr = f.lost()
		}
		switch {
		case jobErr != nil && (!slices.Contains(f.told, false) || time.Since(f.failed) > 3*opts.Resend):
			return jobErr
		case f.over && (!slices.Contains(f.told, false) || time.Since(f.overAt) > opts.Timeout):
			return nil
		case jobErr == nil && !f.started && !slices.Contains(f.done, false):
			f.started = true
			g.Go(func() {
				rc, err := dial("ps-observer")
				if err == nil {
					err = after(ctx, rc)
				}
				if err == nil {
					err = Stop(ctx, c, cfg, opts)
				}
				ended <- err
			})
		}
	}
}

// followers is what Coordinate knows of the workers.
type followers struct {
	cfg     ps.Config
	opts    Options
	start   time.Time
	join    time.Duration
	last    []time.Time // each worker's last beat (zero: none yet)
	done    []bool
	told    []bool    // told that the job is over or failed
	started bool      // after runs
	over    bool      // after ran, and the servers stopped
	overAt  time.Time // since when
	failed  time.Time // when the job failed
}

// take takes a beat, and returns the job's failure if it reports one.
func (f *followers) take(b beat) error {
	f.last[b.Worker] = time.Now()
	f.done[b.Worker] = f.done[b.Worker] || b.Done
	if b.Err != "" {
		f.failed = time.Now()
		return fmt.Errorf("ps: worker %d failed: %s", b.Worker, b.Err)
	}
	return nil
}

// lost returns the job's failure if a worker is silent too long: LostAfter
// since its last beat, or join since the start for its first.
func (f *followers) lost() error {
	var late []string
	var silent time.Duration
	for w, t := range f.last {
		switch {
		case f.done[w] && f.over:
		case t.IsZero() && time.Since(f.start) > f.join:
			late, silent = append(late, strconv.Itoa(w)), f.join
		case !t.IsZero() && time.Since(t) > f.opts.LostAfter:
			late, silent = append(late, strconv.Itoa(w)), f.opts.LostAfter
		}
	}
	if len(late) == 0 {
		return nil
	}
	f.failed = time.Now()
	return fmt.Errorf("ps: worker %s lost: no heartbeat in %v", strings.Join(late, ", "), silent)
}
