package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// NodeOptions configures a scheduler node.
type NodeOptions struct {
	// JoinTimeout bounds the wait for the first plan request.
	JoinTimeout time.Duration
	// Timeout is the coordinator's round timeout: the scheduler waits twice
	// as long between two plan requests before it takes the coordinator for
	// gone.
	Timeout time.Duration
	// Logger receives the node's log; nil discards it.
	Logger *slog.Logger
}

// Run runs a scheduler node on c: it builds the app's scheduler, then
// answers the coordinator's plan requests until the coordinator stops the
// job, the job fails, or ctx is done.
func Run[P any](ctx context.Context, c *wire.Conn, newScheduler func(ctx context.Context) (schmp.Scheduler[P], error), opts NodeOptions) error {
	if opts.JoinTimeout <= 0 {
		opts.JoinTimeout = time.Minute
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("role", "scheduler")

	s, err := newScheduler(ctx)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	// Subscribe only once the scheduler can answer: until then the
	// coordinator's requests find no responder and are retried.
	reqs, err := wire.Subscribe[protocol.PlanRequest](c, protocol.SubjectPlan)
	if err != nil {
		return err
	}
	defer reqs.Close()
	log.Info("ready")

	wait := opts.JoinTimeout + opts.Timeout
	for {
		rctx, cancel := context.WithTimeout(ctx, wait)
		req, msg, err := reqs.Next(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("scheduler: no plan request from the coordinator for %s", wait)
			}
			return fmt.Errorf("scheduler: %w", err)
		}
		wait = 2 * opts.Timeout
		if req.Stop {
			if msg.Reply != "" {
				_ = wire.Reply(c, msg, protocol.PlanReply[P]{})
			}
			if req.Abort != "" {
				return fmt.Errorf("scheduler: job aborted: %s", req.Abort)
			}
			log.Info("stopped", "round", req.Round)
			return nil
		}
		var rep protocol.PlanReply[P]
		rep.Plan, rep.Info, err = s.Schedule(req.Round, req.Feedback)
		if err != nil {
			rep.Err = err.Error()
		}
		if rerr := wire.Reply(c, msg, rep); rerr != nil && err == nil {
			err = rerr
		}
		if err != nil {
			return fmt.Errorf("scheduler: round %d: %w", req.Round, err)
		}
	}
}
