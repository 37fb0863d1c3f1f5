package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nuid"

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
// the job with an error of the same text (DESIGN §6).
func Run[P, R, U, S any](ctx context.Context, c *wire.Conn, newWorker func(ctx context.Context, shard, shards int) (schmp.Worker[P, R, U, S], error), opts Options) error {
	opts.fill()
	log := opts.Logger.With("role", "worker", "id", opts.ID)
	host, pid := protocol.Self()

	joinCtx, cancel := context.WithTimeout(ctx, opts.JoinTimeout)
	defer cancel()
	manifest := opts.Manifest
	if manifest.Version == 0 {
		manifest.Version = protocol.Version
	}
	place, err := protocol.Join(joinCtx, c, protocol.JoinRequest{ID: opts.ID, Role: protocol.RoleWorker, Manifest: manifest, Host: host, PID: pid}, opts.Timeout)
	if err != nil {
		return err
	}
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

	if opts.Configure != nil {
		if err = opts.Configure(place.Settings); err != nil {
			err = fmt.Errorf("configure: %w", err)
		}
	}
	var w schmp.Worker[P, R, U, S]
	if err == nil {
		w, err = newWorker(ctx, place.Shard, place.Shards)
	}
	var summary S
	if err == nil {
		summary, err = w.Describe()
	}
	ready := protocol.Ready[S]{ID: opts.ID, Role: protocol.RoleWorker, Shard: place.Shard, Summary: summary}
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

	// The first task comes once every worker is ready: allow the join time.
	wait := opts.JoinTimeout + opts.Timeout
	var last uint64                           // the round of the last task run
	early := map[uint64]protocol.Task[P, U]{} // tasks that came before their turn
	for {
		task, ok := early[last+1]
		if ok {
			delete(early, last+1)
		} else {
			tctx, cancel := context.WithTimeout(ctx, wait)
			msg, err := tasks.Next(tctx)
			cancel()
			if err == nil {
				task = protocol.Task[P, U]{}
				err = wire.Unmarshal(msg.Data, &task)
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if errors.Is(err, context.DeadlineExceeded) {
					return protocol.Timeout(fmt.Errorf("worker shard %d: no task from the coordinator for %s", place.Shard, wait))
				}
				return fmt.Errorf("worker shard %d: %w", place.Shard, err)
			}
			wait = 2 * opts.Timeout
			if task.Abort != "" {
				return protocol.Aborted(fmt.Errorf("worker shard %d: job aborted: %s", place.Shard, task.Abort))
			}
			if task.Round > last+1 && len(early) < maxEarly {
				// Broadcast and own tasks travel on two subjects: put
				// them back in round order.
				early[task.Round] = task
				continue
			}
			if task.Round != last+1 {
				// Updates must be applied in round order, each once.
				return fmt.Errorf("worker shard %d: task of round %d after round %d", place.Shard, task.Round, last)
			}
		}
		if !task.Check {
			// A check is followed by a task of the same round (DESIGN §3).
			last = task.Round
		}
		p, err := step(ctx, w, place.Shard, &task)
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
			if perr := wire.Publish(c, protocol.SubjectPartial, p); perr != nil && err == nil {
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

// flush waits, up to timeout, until the server has every message published
// on c, so that the last partial of a worker that returns (and of a
// process that may exit at once) is not lost in the connection's buffer.
func flush(c *wire.Conn, timeout time.Duration, log *slog.Logger) {
	if err := c.NATS().FlushTimeout(timeout); err != nil {
		log.Warn("flush", "err", err)
	}
}

// maxEarly bounds the tasks a worker holds back until their turn: more
// than the coordinator ever has in flight.
const maxEarly = 2 * 64

// step runs one task on w and returns the partial to send. On error the
// partial carries the error's text.
func step[P, R, U, S any](ctx context.Context, w schmp.Worker[P, R, U, S], shard int, task *protocol.Task[P, U]) (protocol.Partial[R, S], error) {
	t0 := time.Now()
	p := protocol.Partial[R, S]{Round: task.Round, Shard: shard}
	var err error
	for _, u := range task.Updates {
		if err = w.Apply(u); err != nil {
			break
		}
	}
	if err == nil && task.Report {
		p.Report, err = w.Report()
		p.HasReport = err == nil
	}
	if err == nil && !task.Stop && !task.Check {
		p.Partial, err = w.Push(ctx, task.Round, task.Plan)
	}
	if err != nil {
		p.Err = err.Error()
	}
	p.Nanos = time.Since(t0).Nanoseconds()
	return p, err
}
