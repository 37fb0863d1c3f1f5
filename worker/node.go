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
}

func (o *Options) fill() {
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
// the job with an error of the same text (DESIGN §6). So it does when ctx
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
	host, pid := protocol.Self()

	var live built[P, R, U, S] // the app's worker, kept for a rollback
	req := protocol.JoinRequest{ID: opts.ID, Role: protocol.RoleWorker, Manifest: opts.Manifest, Host: host, PID: pid}
	drop := func(reason string) { opts.Monitor.Drop(protocol.RoleWorker, reason) }
	return protocol.Enter(ctx, c, req, opts.JoinTimeout, opts.Timeout, drop, log, func(place protocol.JoinReply) error {
		return serve(ctx, c, newWorker, opts, place, log, host, pid, &live)
	})
}

// built is the app's worker that a node built, the summary its Describe
// gave and its shard: a rollback to a checkpoint restores it in place
// instead of building it again (DESIGN §6).
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

	// Subscribe before reporting ready: the first task follows once every
	// worker is.
	tasks, err := wire.NewMailbox(c, protocol.SubjectTask, protocol.SubjectTaskShard(place.Shard))
	if err != nil {
		return err
	}
	defer tasks.Close()

	// A survivor of a rollback restores the worker it has in place: the
	// settings and its shard are the same, its data loaded (DESIGN §6).
	w, summary, inPlace := live.reusable(place)
	live.w = nil // kept again once restored: a failed restore leaves it half set
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
	// (DESIGN §6).
	snap, _ := w.(schmp.Snapshotter)
	if err == nil && place.Resume != 0 {
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
	drop := func(msg *nats.Msg, reason string, err error) {
		opts.Monitor.Drop(protocol.RoleWorker, reason)
		subject := ""
		if msg != nil {
			subject = msg.Subject
		}
		log.Debug("message dropped", "subject", subject, "reason", reason, "err", err)
	}
	// A worker that passes parts to others (schmp.Passer) subscribes to
	// its own before it is ready, as to its tasks.
	passer, _ := w.(schmp.Passer[R])
	var box *passBox[R]
	if err == nil && passer != nil {
		if box, err = newPassBox[R](c, place.Shard, place.Shards, place.Run, opts.Timeout, drop); err == nil {
			defer box.close()
		}
	}
	ready := protocol.Ready[S]{Header: protocol.Header{Type: protocol.TypeReady, Run: place.Run}, ID: opts.ID, Role: protocol.RoleWorker, Shard: place.Shard, Summary: summary}
	if err != nil {
		// The coordinator names the worker itself: send the cause.
		ready.Err = err.Error()
		err = &protocol.NodeError{Node: self, Err: err}
	}
	if aerr := protocol.Announce(joinCtx, c, ready); err == nil && aerr != nil {
		err = aerr
	}
	if err != nil {
		return err
	}
	log.Info("ready")

	// Heartbeats (DESIGN §6): the worker's own, and the coordinator's,
	// without which for LostAfter the worker stops.
	ctx, pulse, stopBeats, err := protocol.Heartbeats(ctx, c, place, protocol.Node{Role: protocol.RoleWorker, Place: place.Shard}, log)
	if err != nil {
		return err
	}
	defer stopBeats()

	// A reconnect may have lost a partial in flight: send the recent ones
	// again (the coordinator drops those it has), and look at the tasks
	// that come again (DESIGN §6).
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
			tasks.Wake()
		}
	})
	defer stopWatch()
	var answered answers // the partials sent, encoded, by task

	// The first task comes once every worker is ready: allow the join time.
	deadline := time.Now().Add(opts.JoinTimeout + opts.Timeout)
	last := place.Resume // the round of the last task run
	// The tasks run, by round: [0] of rounds, [1] of checks (DESIGN §6).
	ran := [2]*protocol.Ledger{protocol.NewLedger(), protocol.NewLedger()}
	early := map[taskKey]heldTask[P, U]{} // tasks that came before their turn
	for {
		var task protocol.Task[P, U]
		var h uint64
		if e, ok := early[taskKey{last + 1, true}]; ok {
			delete(early, taskKey{last + 1, true})
			task, h = e.task, e.hash
		} else if e, ok := early[taskKey{last + 1, false}]; ok {
			delete(early, taskKey{last + 1, false})
			task, h = e.task, e.hash
		} else {
			tctx, cancel := context.WithDeadline(ctx, deadline)
			msg, err := tasks.Next(tctx)
			cancel()
			select {
			case <-reconnected:
				answered.resend(c, log)
				box.resend(c, log)
			default:
			}
			if err == nil && msg == nil {
				continue // woken by a reconnect
			}
			if errors.Is(err, wire.ErrIncomplete) {
				drop(nil, protocol.DropIncomplete, err)
				continue
			}
			if err != nil {
				if cause := context.Cause(ctx); errors.Is(cause, protocol.ErrCoordinatorLost) {
					return cause
				}
				if ctx.Err() != nil {
					interrupted(ctx, c, opts, log, protocol.Partial[R, S]{Header: protocol.Header{Type: protocol.TypePartial, Run: place.Run}, Round: last + 1, Shard: place.Shard})
					return ctx.Err()
				}
				if errors.Is(err, context.DeadlineExceeded) {
					return protocol.Timeout(fmt.Errorf("worker shard %d: no task from the coordinator for %s", place.Shard, wait(opts, last)))
				}
				return fmt.Errorf("worker shard %d: %w", place.Shard, err)
			}
			if err := protocol.Open(msg.Data, &task, protocol.TypeTask, place.Run); err != nil {
				drop(msg, protocol.Reason(err), err)
				continue
			}
			if err := task.Validate(); err != nil {
				return fmt.Errorf("worker shard %d: a task on %s: %w", place.Shard, msg.Subject, err)
			}
			if task.Abort != "" {
				return protocol.Aborted(fmt.Errorf("worker shard %d: job aborted: %s", place.Shard, task.Abort))
			}
			if task.Rollback != nil {
				saver.Abandon()
				return &protocol.RollbackError{Rollback: *task.Rollback}
			}
			if task.Split && task.Shard != place.Shard {
				drop(msg, protocol.DropUnexpected, fmt.Errorf("round %d: a task of worker shard %d", task.Round, task.Shard))
				continue
			}
			key := taskKey{task.Round, task.Check}
			ledger := ran[key.kind()]
			h = ledger.Hash(msg.Data)
			taken, err := ledger.Check(task.Round, h)
			if e, ok := early[key]; ok && !taken {
				taken = true
				if e.hash != h {
					err = fmt.Errorf("round %d: %w", task.Round, protocol.ErrConflict)
				}
			}
			switch {
			case err != nil:
				return fmt.Errorf("worker shard %d: a task on %s: %w", place.Shard, msg.Subject, err)
			case taken:
				// The coordinator sends a task again after a reconnect,
				// the same bytes: answer it again, never run it twice.
				answered.again(c, key, log)
				box.resend(c, log)
				drop(msg, protocol.DropDuplicate, fmt.Errorf("round %d: a task taken already", task.Round))
				continue
			case task.Round <= last || task.Round > last+maxEarly:
				// No coordinator sends it: a task of a round run (its
				// check, say) or far ahead.
				drop(msg, protocol.DropUnexpected, fmt.Errorf("round %d: after round %d", task.Round, last))
				continue
			case task.Round > last+1:
				// Broadcast and own tasks travel on two subjects: put
				// them back in round order.
				early[key] = heldTask[P, U]{task, h}
				continue
			}
		}
		deadline = time.Now().Add(wait(opts, task.Round))
		ran[taskKey{task.Round, task.Check}.kind()].Take(task.Round, h)
		if !task.Check {
			// A check is followed by a task of the same round (DESIGN §3).
			last = task.Round
		}
		var p protocol.Partial[R, S]
		// The parts passed to this worker come before its next task's
		// updates; a stop that asks for nothing needs none.
		if box != nil && (!task.Stop || task.Report) {
			err = box.takeAll(ctx, passer)
		}
		if err == nil && task.Checkpoint != 0 {
			// The state after the checkpoint's round: its parts taken,
			// this task's updates not applied.
			if saver != nil {
				saver.Save(task.Checkpoint, snap)
			} else {
				drop(nil, protocol.DropUnexpected, fmt.Errorf("round %d: a checkpoint asked of a job that takes none", task.Round))
			}
		}
		if err == nil {
			p, err = step(ctx, w, place.Shard, &task)
			if err == nil && box != nil && !task.Stop && !task.Check {
				p.Partial, err = box.pass(c, passer, task.Round, p.Partial)
			}
		}
		if err != nil {
			p.Round, p.Shard, p.Check, p.Final, p.Err = task.Round, place.Shard, task.Check, task.Final, err.Error()
			if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(cause, protocol.ErrAborted) {
				// Interrupted while the app ran (its Push saw ctx
				// end): say so, not the app's context error (DESIGN §6).
				p.Err = protocol.Interrupted(cause)
			}
		}
		p.Header = protocol.Header{Type: protocol.TypePartial, Run: place.Run}
		// A stop without a report needs no answer, and is no work.
		answer := !task.Stop || task.Report || err != nil
		if m := opts.Monitor; m != nil && answer {
			l := monitor.Label(place.Shard)
			m.WorkerTasks.WithLabelValues(l).Inc()
			m.WorkerSeconds.WithLabelValues(l).Add(float64(p.Nanos) / 1e9)
		}
		if err != nil {
			err = &protocol.NodeError{Node: self, Round: task.Round, Err: err}
		}
		if answer {
			data, perr := codec.Marshal(p)
			if perr == nil {
				answered.add(taskKey{task.Round, task.Check}, data)
				perr = c.PublishData(protocol.SubjectPartial, "", data)
				if lost(perr) {
					// Sent again at the reconnect.
					log.Warn("partial not sent; sending it at the reconnect", "round", task.Round, "err", perr)
					perr = nil
				}
			}
			if perr != nil && err == nil {
				err = fmt.Errorf("worker shard %d: round %d: %w", place.Shard, task.Round, perr)
			}
		}
		if err != nil || task.Stop {
			// The last message before Run returns: deliver it now, since
			// a process may exit right after (DESIGN §6).
			flush(c, opts.Timeout, log)
		}
		if err != nil {
			return err
		}
		if task.Stop {
			log.Info("stopped", "round", task.Round)
			return nil
		}
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

// taskKey names a task: its round, and whether it is the check of that
// round (DESIGN §3).
type taskKey struct {
	round uint64
	check bool
}

// kind returns the index of the key's ledger: 0 for a round, 1 for a
// check.
func (k taskKey) kind() int {
	if k.check {
		return 1
	}
	return 0
}

// heldTask is a task that came before its turn, and the hash of its bytes.
type heldTask[P, U any] struct {
	task protocol.Task[P, U]
	hash uint64
}

// answers holds the partials a worker sent last, encoded, by the task they
// answer, so that a task that the coordinator sends again after a
// reconnect is answered again with the same bytes, and the partials are
// sent again after the worker's own reconnect (DESIGN §6). It keeps the
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

// lost reports whether err is a publish that failed only because the
// connection is down: nats.go's buffer for a reconnect is full. What was
// published is then sent again after the reconnect.
func lost(err error) bool {
	return errors.Is(err, nats.ErrReconnectBufExceeded)
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

// maxEarly bounds how far ahead a task that a worker holds back until its
// turn may be: more rounds than the coordinator ever has in flight
// (pipeline.MaxDepth, a check besides each). A task further ahead is
// dropped.
const maxEarly = 2 * pipeline.MaxDepth

// step runs one task on w and returns the partial to send. On error the
// partial carries the error's text.
func step[P, R, U, S any](ctx context.Context, w schmp.Worker[P, R, U, S], shard int, task *protocol.Task[P, U]) (protocol.Partial[R, S], error) {
	t0 := time.Now()
	p := protocol.Partial[R, S]{Round: task.Round, Shard: shard, Check: task.Check, Final: task.Final}
	// The app's methods are called through protocol.Guard: a panic fails
	// the worker, and the job, as an error does (DESIGN §6).
	var err error
	for _, u := range task.Updates {
		if err = protocol.Guard("Apply", func() error { return w.Apply(u) }); err != nil {
			break
		}
	}
	if err == nil && task.Report {
		// The final request asks for the state that only the written model
		// needs (DESIGN §3); a worker without any sends its report.
		if f, ok := w.(schmp.FinalReporter[S]); ok && task.Final {
			err = protocol.Guard("FinalReport", func() (err error) { p.Report, err = f.FinalReport(); return err })
		} else {
			err = protocol.Guard("Report", func() (err error) { p.Report, err = w.Report(); return err })
		}
		p.HasReport = err == nil
	}
	if err == nil && !task.Stop && !task.Check {
		err = protocol.Guard("Push", func() (err error) { p.Partial, err = w.Push(ctx, task.Round, task.Plan); return err })
	}
	if err != nil {
		p.Err = err.Error()
	}
	p.Nanos = time.Since(t0).Nanoseconds()
	return p, err
}
