package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/member"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// Options configures a worker node.
type Options struct {
	// ID names this worker process in the job; empty picks a unique one.
	ID string
	// JoinTimeout bounds how long the worker tries to join and then waits
	// for the job to start.
	JoinTimeout time.Duration
	// Timeout bounds a reply. The wait for the next task is twice as long,
	// so that a coordinator waiting out a slow worker (for its own Timeout)
	// is not taken for gone.
	Timeout time.Duration
	// Logger receives the node's log; nil discards it.
	Logger *slog.Logger
	// Monitor, if set, receives the node's metrics.
	Monitor *monitor.Metrics
	// Manifest is what the worker believes about the job; the coordinator
	// refuses it if that differs from the job's.
	Manifest protocol.Manifest
	// Configure, if set, receives the job's settings once the worker has
	// joined, before the worker is built: the settings it was not given
	// come from there. An error fails the worker as a failed load does,
	// and the job with it.
	Configure func(settings map[string]string) error
	// Entry, if set, is the place that the command joined already (to
	// take the job's settings) as ID: the node serves it, and joins no
	// more.
	Entry *member.Entry
}

func (o *Options) fill() {
	if o.Entry != nil {
		o.ID = o.Entry.ID
	}
	if o.ID == "" {
		o.ID = nuid.Next()
	}
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// The kinds of failure of a worker's error (errors.Is); they are package
// protocol's.
var (
	// ErrTimeout: the worker waited in vain for the coordinator.
	ErrTimeout = protocol.ErrTimeout
	// ErrAborted: the coordinator told the worker that the job failed.
	ErrAborted = protocol.ErrAborted
	// ErrManifest: the coordinator refused the worker at join, its manifest
	// differing from the job's.
	ErrManifest = protocol.ErrManifest
)

// Run runs a worker node on c until the coordinator stops the job, the job
// fails, or ctx is done. newWorker builds the app's worker for the shard
// that the coordinator assigns.
//
// The worker joins with opts.Manifest (its Version protocol.Version when
// 0); a refusal because it differs from the job's is an error matching
// protocol.ErrManifest whose text names the role and the field. Once
// joined, it calls opts.Configure with the job's settings before it builds
// the app's worker.
//
// The worker's own failures (Configure, its load, Apply, Push or Report) are a
// *protocol.NodeError naming its shard, host, pid and round; the
// coordinator learns of them at once, flushed before Run returns, and fails
// the job with an error of the same text (DESIGN "How a job fails"). So it does when ctx
// ends (a signal): the worker sends "interrupted" and the cause, unless
// the cause matches ErrAborted (the job failed already).
//
// The worker logs its connection's disconnects and reconnects. A task that
// comes again with the same bytes (the coordinator resends after a
// reconnect) is answered again with the partial sent, never run twice;
// after its own reconnect the worker sends its recent partials again.
func Run[P, R, U, S any](ctx context.Context, c *wire.Conn, newWorker func(ctx context.Context, shard, shards int) (schmp.Worker[P, R, U, S], error), opts Options) error {
	opts.fill()
	log := opts.Logger.With("role", "worker", "id", opts.ID)
	host, pid := member.Self()

	var live built[P, R, U, S] // the app's worker, kept for a rollback
	req := protocol.JoinRequest{ID: opts.ID, Role: protocol.RoleWorker, Manifest: opts.Manifest, Host: host, PID: pid}
	drop := func(reason string) { opts.Monitor.Drop(protocol.RoleWorker, reason) }
	do := func(place protocol.JoinReply) error {
		return serve(ctx, c, newWorker, opts, place, log, host, pid, &live)
	}
	if opts.Entry != nil {
		return opts.Entry.Serve(ctx, log, do)
	}
	return member.Enter(ctx, c, req, opts.JoinTimeout, opts.Timeout, drop, log, do)
}

// built is the app's worker that a node built, the summary its Describe
// gave and its shard: a rollback to a checkpoint restores it in place
// instead of building it again (DESIGN "Spares and replacement").
type built[P, R, U, S any] struct {
	w       schmp.Worker[P, R, U, S]
	summary S
	shard   int
}

// reusable returns the worker kept in live for place, a rollback of the
// same shard, if it can be restored in place: it is a Snapshotter and no
// schmp.Rebuilder asking for a new one.
func (live *built[P, R, U, S]) reusable(place protocol.JoinReply) (schmp.Worker[P, R, U, S], S, bool) {
	var zero S
	if live.w == nil || place.Resume == 0 || live.shard != place.Shard || schmp.RebuildsOnRollback(live.w) {
		return nil, zero, false
	}
	if _, ok := live.w.(schmp.Snapshotter); !ok {
		return nil, zero, false
	}
	return live.w, live.summary, true
}

// serve runs the worker of place until the job stops, fails, or rolls
// back (a *protocol.RollbackError). The app's worker it builds is kept in
// live; after a rollback, the worker kept is restored in place, its shard
// not loaded again, unless the app asks for a new one (schmp.Rebuilder).
func serve[P, R, U, S any](ctx context.Context, c *wire.Conn, newWorker func(ctx context.Context, shard, shards int) (schmp.Worker[P, R, U, S], error), opts Options, place protocol.JoinReply, log *slog.Logger, host string, pid int, live *built[P, R, U, S]) error {
	t0 := time.Now()
	joinCtx, cancel := context.WithTimeout(ctx, opts.JoinTimeout)
	defer cancel()
	self := protocol.Node{Role: protocol.RoleWorker, Place: place.Shard, Host: host, PID: pid}
	log = log.With("shard", place.Shard)
	log.Info("joined", "shards", place.Shards)

	// A survivor of a rollback restores the worker it has in place: the
	// settings and its shard are the same, its data loaded (DESIGN "Spares and replacement").
	w, summary, inPlace := live.reusable(place)
	live.w = nil // kept again once restored: a failed restore leaves it half set
	var err error
	if !inPlace {
		if opts.Configure != nil {
			if err = opts.Configure(place.Settings); err != nil {
				err = fmt.Errorf("configure: %w", err)
			}
		}
		if err == nil {
			err = protocol.Guard("NewWorker", func() (err error) { w, err = newWorker(ctx, place.Shard, place.Shards); return err })
		}
		if err == nil {
			err = protocol.Guard("Describe", func() (err error) { summary, err = w.Describe(); return err })
		}
	}
	// A resumed job's worker restores its state from its piece of the
	// checkpoint; a job that takes checkpoints has it store its pieces
	// (DESIGN "Checkpoints").
	if err == nil && place.Resume != 0 {
		snap, _ := w.(schmp.Snapshotter)
		err = checkpoint.Restore(ctx, c, protocol.RoleWorker, place.Shard, place.Resume, place.Digest, snap, opts.Timeout)
		if err == nil {
			log.Info("restored", "round", place.Resume, "in_place", inPlace, "took", time.Since(t0).Round(time.Millisecond))
		}
	}
	if err == nil {
		*live = built[P, R, U, S]{w: w, summary: summary, shard: place.Shard}
	}
	var saver *checkpoint.Saver
	if err == nil && place.Checkpoints {
		if saver, err = checkpoint.NewSaver(ctx, c, protocol.RoleWorker, place.Shard, place.Run, opts.Timeout, log); err == nil {
			defer saver.Close()
		}
	}
	// Subscribe before reporting ready: the first task follows once every
	// worker is. A worker that passes parts to others (schmp.Passer)
	// takes its own on the same mailbox.
	passes := ""
	var inbox *wire.Mailbox
	if err == nil {
		subjects := []string{protocol.SubjectTask, protocol.SubjectTaskShard(place.Shard)}
		if _, ok := w.(schmp.Passer[R]); ok {
			passes = protocol.SubjectPass(place.Shard)
			subjects = append(subjects, passes)
		}
		if inbox, err = wire.NewMailbox(c, subjects...); err == nil {
			defer inbox.Close()
		}
	}
	ready := protocol.Ready[S]{Header: protocol.Header{Type: protocol.TypeReady, Run: place.Run}, ID: opts.ID, Role: protocol.RoleWorker, Shard: place.Shard, Summary: summary}
	if err != nil {
		// The coordinator names the worker itself: send the cause.
		ready.Err = err.Error()
		if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(cause, protocol.ErrAborted) {
			ready.Err = protocol.Interrupted(cause)
		}
		err = &protocol.NodeError{Node: self, Err: err}
	}
	if aerr := member.Announce(joinCtx, c, ready); err == nil && aerr != nil {
		err = aerr
	}
	if err != nil {
		return err
	}
	log.Info("ready")

	// Heartbeats (DESIGN "How a job fails"): the worker's own, and the coordinator's,
	// without which for LostAfter the worker stops.
	ctx, pulse, stopBeats, err := member.Heartbeats(ctx, c, place, protocol.Node{Role: protocol.RoleWorker, Place: place.Shard}, opts.ID, log)
	if err != nil {
		return err
	}
	defer stopBeats()

	// A reconnect may have lost a partial in flight: send the recent ones
	// again (the coordinator drops those it has), and look at the tasks
	// that come again (DESIGN "NATS outages").
	reconnected := make(chan struct{}, 1)
	stopWatch := c.Watch(func(e wire.Event) {
		wire.LogEvents(log)(e)
		if e.Kind == wire.Reconnected {
			if pulse != nil {
				pulse.Reset()
			}
			select {
			case reconnected <- struct{}{}:
			default:
			}
			inbox.Wake()
		}
	})
	defer stopWatch()

	s := &shell[P, R, U, S]{
		c: c, opts: opts, log: log, self: self, run: place.Run, saver: saver,
		core: NewCore(w, CoreConfig{Shard: place.Shard, Shards: place.Shards, Resume: place.Resume, Checkpoints: saver != nil}),
	}
	// The first task comes once every worker is ready: allow the join time.
	deadline := time.Now().Add(wait(opts, place.Resume))
	var awaiting time.Time // since when the next task waits for a part
	for {
		ran, stop, err := s.step(ctx)
		if stop || err != nil {
			return err
		}
		if ran {
			deadline = time.Now().Add(wait(opts, s.core.Last()))
		}
		wake := deadline
		round, from, await := s.core.Awaiting()
		if !await {
			awaiting = time.Time{}
		} else if awaiting.IsZero() {
			awaiting = time.Now()
		}
		if await {
			// A part is sent before its sender's partial, so it is due by
			// the time the next task comes: half the timeout lets this
			// worker's error, which names the sender, reach the
			// coordinator before the coordinator's own wait for this
			// worker's answer ends.
			wake = awaiting.Add(opts.Timeout / 2)
		}
		tctx, cancel := context.WithDeadline(ctx, wake)
		msg, err := inbox.Next(tctx)
		cancel()
		select {
		case <-reconnected:
			s.answered.resend(c, log)
			s.sent.resend(c, log)
		default:
		}
		if err == nil && msg == nil {
			continue // woken by a reconnect
		}
		if errors.Is(err, wire.ErrIncomplete) {
			s.drop(nil, protocol.DropIncomplete, err)
			continue
		}
		if err != nil {
			if cause := context.Cause(ctx); errors.Is(cause, member.ErrCoordinatorLost) {
				return cause
			}
			if ctx.Err() != nil {
				interrupted(ctx, c, opts, log, protocol.Partial[R, S]{Header: protocol.Header{Type: protocol.TypePartial, Run: place.Run}, Round: s.core.Last() + 1, Shard: place.Shard})
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) && await {
				return s.fail(protocol.Timeout(fmt.Errorf("no block (pass) of round %d from worker shard %d in %s", round, from, opts.Timeout/2)))
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return protocol.Timeout(fmt.Errorf("worker shard %d: no task from the coordinator for %s", place.Shard, wait(opts, s.core.Last())))
			}
			return fmt.Errorf("worker shard %d: %w", place.Shard, err)
		}
		if passes != "" && msg.Subject == c.Subject(passes) {
			var p protocol.Pass[R]
			if err := protocol.Open(msg.Data, &p, protocol.TypePass, place.Run); err != nil {
				s.drop(msg, protocol.Reason(err), err)
				continue
			}
			d, err := s.core.Pass(p, s.core.Hash(msg.Data))
			if err != nil {
				err = fmt.Errorf("a pass on %s: %w", msg.Subject, err)
				if _, _, await := s.core.Awaiting(); await {
					return s.fail(err)
				}
				return fmt.Errorf("worker shard %d: %w", place.Shard, err)
			}
			if d != nil {
				s.drop(msg, d.Reason, d.Err)
			}
			continue
		}
		var task protocol.Task[P, U]
		if err := protocol.Open(msg.Data, &task, protocol.TypeTask, place.Run); err != nil {
			s.drop(msg, protocol.Reason(err), err)
			continue
		}
		d, err := s.core.Task(task, s.core.Hash(msg.Data))
		var rollback *protocol.RollbackError
		switch {
		case errors.As(err, &rollback):
			saver.Abandon()
			return err
		case errors.Is(err, protocol.ErrAborted):
			return err
		case err != nil:
			return fmt.Errorf("worker shard %d: a task on %s: %w", place.Shard, msg.Subject, err)
		case d != nil && d.Reason == protocol.DropDuplicate:
			// The coordinator sends a task again after a reconnect, the
			// same bytes: answer it again, never run it twice.
			s.answered.again(c, taskKey{task.Round, task.Check}, log)
			s.sent.resend(c, log)
		}
		if d != nil {
			s.drop(msg, d.Reason, d.Err)
		}
	}
}

// shell sends what a worker's core gives.
type shell[P, R, U, S any] struct {
	c     *wire.Conn
	opts  Options
	log   *slog.Logger
	self  protocol.Node
	run   string
	saver *checkpoint.Saver
	core  *Core[P, R, U, S]
	// The partials sent, to answer again, and the last part passed, to
	// pass again, after a reconnect (DESIGN "Checkpoints").
	answered answers
	sent     lastPass
}

// drop counts and logs a message dropped.
func (s *shell[P, R, U, S]) drop(msg *nats.Msg, reason string, err error) {
	s.opts.Monitor.Drop(protocol.RoleWorker, reason)
	subject := ""
	if msg != nil {
		subject = msg.Subject
	}
	s.log.Debug("message dropped", "subject", subject, "reason", reason, "err", err)
}

// step runs every task that can run and sends what each gives; ran is set
// if one ran, stop if it was the job's last. err ends the worker.
func (s *shell[P, R, U, S]) step(ctx context.Context) (ran, stop bool, err error) {
	for {
		t0 := time.Now()
		out, ok, err := s.core.Step(ctx)
		if !ok {
			return ran, false, nil
		}
		ran = true
		nanos := time.Since(t0).Nanoseconds()
		for _, d := range out.Drops {
			s.drop(nil, d.Reason, d.Err)
		}
		if p := out.Piece; p != nil {
			s.saver.Save(p)
		}
		if out.Pass != nil {
			if perr := s.pass(out.Pass); perr != nil {
				err, out.Answer.Err = perr, perr
			}
		}
		if err = s.answer(ctx, out.Answer, nanos, err); err != nil {
			return ran, false, err
		}
		if out.Stop {
			// The last message before Run returns: deliver it now, since a
			// process may exit right after (DESIGN "How a job fails").
			flush(s.c, s.opts.Timeout, s.log)
			s.log.Info("stopped", "round", s.core.Last())
			return ran, true, nil
		}
	}
}

// pass sends h, a part passed to another worker, and keeps it to send
// again.
func (s *shell[P, R, U, S]) pass(h *Handoff[R]) error {
	msg := protocol.Pass[R]{Header: protocol.Header{Type: protocol.TypePass, Run: s.run}, Round: h.Round, From: h.From, To: h.To, Part: h.Part}
	data, err := codec.Marshal(msg)
	if err != nil {
		return fmt.Errorf("round %d: pass to worker %d: %w", h.Round, h.To, err)
	}
	s.sent = lastPass{data: data, to: protocol.SubjectPass(h.To), round: h.Round}
	if err := s.c.PublishData(s.sent.to, "", data); err != nil && !wire.Lost(err) {
		// A pass lost to a reconnect is sent again after it (resend).
		return fmt.Errorf("round %d: pass to worker %d: %w", h.Round, h.To, err)
	}
	return nil
}

// fail ends the task that waits for a part with err, and tells the
// coordinator.
func (s *shell[P, R, U, S]) fail(err error) error {
	return s.answer(context.Background(), s.core.Fail(err), 0, err)
}

// answer sends a, the answer to a task that took nanos, if any; err, the
// task's failure, is returned as the node's error, which the last message
// sent before it carries.
func (s *shell[P, R, U, S]) answer(ctx context.Context, a *Answer[R, S], nanos int64, err error) error {
	if a != nil {
		p := protocol.Partial[R, S]{
			Header: protocol.Header{Type: protocol.TypePartial, Run: s.run},
			Round:  a.Round, Check: a.Check, Final: a.Final, Shard: s.self.Place,
			Partial: a.Partial, Report: a.Report, HasReport: a.HasReport, Nanos: nanos,
		}
		if err != nil {
			p.Err = err.Error()
			if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(cause, protocol.ErrAborted) {
				// Interrupted while the app ran (its Push saw ctx end):
				// say so, not the app's context error (DESIGN "How a job fails").
				p.Err = protocol.Interrupted(cause)
			}
		}
		if m := s.opts.Monitor; m != nil {
			l := monitor.Label(s.self.Place)
			m.WorkerTasks.WithLabelValues(l).Inc()
			m.WorkerSeconds.WithLabelValues(l).Add(float64(nanos) / 1e9)
		}
		data, perr := codec.Marshal(p)
		if perr == nil {
			s.answered.add(taskKey{a.Round, a.Check}, data)
			perr = s.c.PublishData(protocol.SubjectPartial, "", data)
			if wire.Lost(perr) {
				// Sent again at the reconnect.
				s.log.Warn("partial not sent; sending it at the reconnect", "round", a.Round, "err", perr)
				perr = nil
			}
		}
		if perr != nil && err == nil {
			err = fmt.Errorf("worker shard %d: round %d: %w", s.self.Place, a.Round, perr)
		}
	}
	if err != nil {
		if a != nil {
			err = &protocol.NodeError{Node: s.self, Round: a.Round, Err: err}
		}
		// The last message before Run returns: deliver it now, since a
		// process may exit right after (DESIGN "How a job fails").
		flush(s.c, s.opts.Timeout, s.log)
	}
	return err
}

// lastPass is the last part a worker passed, encoded, and its addressee's
// subject: sent again after a reconnect, or when the coordinator sends the
// task it answered again (its own reconnect). The addressee drops it if it
// has it (a duplicate).
type lastPass struct {
	data  []byte
	to    string
	round uint64
}

// resend sends the last part passed again.
func (l *lastPass) resend(c *wire.Conn, log *slog.Logger) {
	if l.data == nil {
		return
	}
	if err := c.PublishData(l.to, "", l.data); err != nil {
		log.Warn("pass not sent again", "round", l.round, "err", err)
	}
}

// wait returns how long a worker waits for the task after round: the
// first comes once every worker is ready (the join time and a timeout),
// the others within twice the coordinator's timeout, so that a coordinator
// waiting out a slow worker is not taken for gone.
func wait(opts Options, round uint64) time.Duration {
	if round == 0 {
		return opts.JoinTimeout + opts.Timeout
	}
	return 2 * opts.Timeout
}

// answers holds the partials a worker sent last, encoded, by the task they
// answer, so that a task that the coordinator sends again after a
// reconnect is answered again with the same bytes, and the partials are
// sent again after the worker's own reconnect (DESIGN "NATS outages"). It keeps the
// partials of the last 2·pipeline.MaxDepth tasks, up to maxAnswers bytes:
// the coordinator has at most MaxDepth rounds in flight, a check besides
// each.
type answers struct {
	keys  []taskKey
	data  [][]byte
	bytes int
}

// maxAnswers bounds the bytes of the partials a worker keeps to answer
// again.
const maxAnswers = 64 << 20

// add keeps data, the partial that answers key.
func (a *answers) add(key taskKey, data []byte) {
	a.keys, a.data = append(a.keys, key), append(a.data, data)
	a.bytes += len(data)
	for len(a.keys) > 1 && (len(a.keys) > 2*pipeline.MaxDepth || a.bytes > maxAnswers) {
		a.bytes -= len(a.data[0])
		a.keys, a.data = a.keys[1:], a.data[1:]
	}
}

// again sends the partial that answered key again, if it is kept.
func (a *answers) again(c *wire.Conn, key taskKey, log *slog.Logger) {
	for i, k := range a.keys {
		if k == key {
			if err := c.PublishData(protocol.SubjectPartial, "", a.data[i]); err != nil {
				log.Warn("partial not sent again", "round", key.round, "err", err)
			}
			return
		}
	}
}

// resend sends every partial kept again, after a reconnect.
func (a *answers) resend(c *wire.Conn, log *slog.Logger) {
	for i, data := range a.data {
		if err := c.PublishData(protocol.SubjectPartial, "", data); err != nil {
			log.Warn("partial not sent again", "round", a.keys[i].round, "err", err)
			return
		}
	}
}

// interrupted tells the coordinator that the worker stops because its
// context is done (a signal), with p, a partial carrying the error, and
// flushes it, so that the job fails at once, naming the worker, instead
// of at the coordinator's timeout. A context cancelled because the job
// failed already (its cause matches ErrAborted: job.Run's other nodes)
// says nothing.
func interrupted[R, S any](ctx context.Context, c *wire.Conn, opts Options, log *slog.Logger, p protocol.Partial[R, S]) {
	cause := context.Cause(ctx)
	if errors.Is(cause, protocol.ErrAborted) {
		return
	}
	p.Err = protocol.Interrupted(cause)
	if err := wire.Publish(c, protocol.SubjectPartial, p); err != nil {
		log.Warn("report interrupt", "err", err)
		return
	}
	flush(c, min(opts.Timeout, interruptFlush), log)
}

// interruptFlush bounds how long a node that was interrupted waits to
// deliver the news.
const interruptFlush = 2 * time.Second

// flush waits, up to timeout, until the server has every message published
// on c (across a reconnect: wire.Conn.Flush), so that the last partial of a
// worker that returns (and of a process that may exit at once) is not lost
// in the connection's buffer.
func flush(c *wire.Conn, timeout time.Duration, log *slog.Logger) {
	if err := c.Flush(timeout); err != nil {
		log.Warn("flush", "err", err)
	}
}
