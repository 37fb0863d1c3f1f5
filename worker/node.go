package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nuid"

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

// Run runs a worker node on c until the coordinator stops the job, the job
// fails, or ctx is done. newWorker builds the app's worker for the shard
// that the coordinator assigns.
func Run[P, R, U, S any](ctx context.Context, c *wire.Conn, newWorker func(ctx context.Context, shard, shards int) (schmp.Worker[P, R, U, S], error), opts Options) error {
	opts.fill()
	log := opts.Logger.With("role", "worker", "id", opts.ID)

	// Subscribe before joining so that no task can slip past.
	tasks, err := wire.Subscribe[protocol.Task[P, U]](c, protocol.SubjectTask)
	if err != nil {
		return err
	}
	defer tasks.Close()

	joinCtx, cancel := context.WithTimeout(ctx, opts.JoinTimeout)
	defer cancel()
	place, err := join(joinCtx, c, opts)
	if err != nil {
		return err
	}
	log = log.With("shard", place.Shard)
	log.Info("joined", "shards", place.Shards)

	w, err := newWorker(ctx, place.Shard, place.Shards)
	var summary S
	if err == nil {
		summary, err = w.Describe()
	}
	ready := protocol.Ready[S]{ID: opts.ID, Shard: place.Shard, Summary: summary}
	if err != nil {
		err = fmt.Errorf("shard %d: %w", place.Shard, err)
		ready.Err = err.Error()
	}
	ack, rerr := wire.Request[protocol.Ready[S], protocol.Ack](joinCtx, c, protocol.SubjectReady, ready)
	switch {
	case err != nil:
		return err
	case rerr != nil:
		return fmt.Errorf("worker shard %d: report ready: %w", place.Shard, rerr)
	case ack.Err != "":
		return fmt.Errorf("worker shard %d: coordinator refused: %s", place.Shard, ack.Err)
	}
	log.Info("ready")

	// The first task comes once every worker is ready: allow the join time.
	wait := opts.JoinTimeout + opts.Timeout
	for {
		tctx, cancel := context.WithTimeout(ctx, wait)
		task, _, err := tasks.Next(tctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("worker shard %d: no task from the coordinator for %s", place.Shard, wait)
			}
			return fmt.Errorf("worker shard %d: %w", place.Shard, err)
		}
		wait = 2 * opts.Timeout
		if task.Abort != "" {
			return fmt.Errorf("worker shard %d: job aborted: %s", place.Shard, task.Abort)
		}
		p, err := step(ctx, w, place.Shard, &task)
		if perr := wire.Publish(c, protocol.SubjectPartial, p); perr != nil && err == nil {
			err = perr
		}
		if err != nil {
			return fmt.Errorf("worker shard %d: round %d: %w", place.Shard, task.Round, err)
		}
		if task.Stop {
			log.Info("stopped", "round", task.Round)
			return nil
		}
	}
}

// step runs one task on w and returns the partial to send. On error the
// partial carries the error's text.
func step[P, R, U, S any](ctx context.Context, w schmp.Worker[P, R, U, S], shard int, task *protocol.Task[P, U]) (protocol.Partial[R, S], error) {
	p := protocol.Partial[R, S]{Round: task.Round, Shard: shard}
	err := w.Apply(task.Update)
	if err == nil && (task.Report || task.Stop) {
		p.Report, err = w.Report()
		p.HasReport = err == nil
	}
	if err == nil && !task.Stop {
		p.Partial, err = w.Push(ctx, task.Round, task.Plan)
	}
	if err != nil {
		p.Err = err.Error()
	}
	return p, err
}

// join asks the coordinator for a shard until it answers or ctx is done.
func join(ctx context.Context, c *wire.Conn, opts Options) (protocol.JoinReply, error) {
	req := protocol.JoinRequest{ID: opts.ID}
	for {
		rctx, cancel := context.WithTimeout(ctx, min(opts.Timeout, 5*time.Second))
		rep, err := wire.Request[protocol.JoinRequest, protocol.JoinReply](rctx, c, protocol.SubjectJoin, req)
		cancel()
		if err == nil {
			if rep.Err != "" {
				return rep, fmt.Errorf("worker: join refused: %s", rep.Err)
			}
			return rep, nil
		}
		if ctx.Err() != nil {
			return rep, fmt.Errorf("worker: no coordinator answered on %s within %s", c.Subject(protocol.SubjectJoin), opts.JoinTimeout)
		}
		// No coordinator yet (no responders) or a lost reply: try again.
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}
