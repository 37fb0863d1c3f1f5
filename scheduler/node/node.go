package node

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

// Options configures a scheduler node.
type Options struct {
	// ID names this scheduler process in the job; empty picks a unique one.
	ID string
	// JoinTimeout bounds how long the node tries to join and then waits
	// for its first plan request.
	JoinTimeout time.Duration
	// Timeout is the coordinator's round timeout: the scheduler waits twice
	// as long between two plan requests before it takes the coordinator for
	// gone.
	Timeout time.Duration
	// Logger receives the node's log; nil discards it.
	Logger *slog.Logger
	// Monitor, if set, receives the node's metrics.
	Monitor *monitor.Metrics
	// Manifest is what the node believes about the job; the coordinator
	// refuses it if that differs from the job's.
	Manifest protocol.Manifest
	// Configure, if set, receives the job's settings once the node has
	// joined, before the scheduler is built: the settings it was not
	// given come from there. An error fails the node as a failed build
	// does, and the job with it.
	Configure func(settings map[string]string) error
	// Entry, if set, is the place that the command joined already (to
	// take the job's settings) as ID: the node serves it, and joins no
	// more.
	Entry *member.Entry
}

// The kinds of failure of a scheduler node's error (errors.Is); they are
// package protocol's.
var (
	// ErrTimeout: the scheduler waited in vain for the coordinator.
	ErrTimeout = protocol.ErrTimeout
	// ErrAborted: the coordinator told the scheduler that the job failed.
	ErrAborted = protocol.ErrAborted
	// ErrManifest: the coordinator refused the scheduler at join, its manifest
	// differing from the job's.
	ErrManifest = protocol.ErrManifest
)

// Run runs a scheduler node on c: it joins the job, which gives it its part
// of the variables, builds the app's scheduler for that part, then answers
// the coordinator's plan requests until the coordinator stops the job, the
// job fails, or ctx is done. It joins with opts.Manifest (its Version
// protocol.Version when 0), and a refusal because that differs from the
// job's is an error matching protocol.ErrManifest; once joined, it calls
// opts.Configure with the job's settings before it builds the scheduler.
// Its own failures (Configure, building the scheduler, a plan) are a *protocol.NodeError naming its part, host, pid and round; the
// coordinator learns of them at once and fails the job with an error of the
// same text (DESIGN "Hostile traffic"); so does an interrupt (ctx done), unless its cause
// matches ErrAborted. A plan request that comes again with the same bytes
// (a resend after a reconnect) is answered again with the plan sent, never
// planned twice; after its own reconnect the node sends its last plans
// again.
func Run[P any](ctx context.Context, c *wire.Conn, newScheduler func(ctx context.Context, part, parts int) (schmp.Scheduler[P], error), opts Options) error {
	if opts.Entry != nil {
		opts.ID = opts.Entry.ID
	}
	if opts.ID == "" {
		opts.ID = nuid.Next()
	}
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
	log = log.With("role", "scheduler", "id", opts.ID)
	host, pid := member.Self()

	var live built[P] // the app's scheduler, kept for a rollback
	req := protocol.JoinRequest{ID: opts.ID, Role: protocol.RoleScheduler, Manifest: opts.Manifest, Host: host, PID: pid}
	drop := func(reason string) { opts.Monitor.Drop(protocol.RoleScheduler, reason) }
	do := func(place protocol.JoinReply) error {
		return serve(ctx, c, newScheduler, opts, place, log, host, pid, &live)
	}
	if opts.Entry != nil {
		return opts.Entry.Serve(ctx, log, do)
	}
	return member.Enter(ctx, c, req, opts.JoinTimeout, opts.Timeout, drop, log, do)
}

// built is the app's scheduler that a node built and its part: a
// rollback to a checkpoint restores it in place instead of building it
// again (DESIGN "Spares and replacement").
type built[P any] struct {
	s    schmp.Scheduler[P]
	part int
}

// reusable returns the scheduler kept in live for place, a rollback of
// the same part, if it can be restored in place: it is a Snapshotter and
// no schmp.Rebuilder asking for a new one.
func (live *built[P]) reusable(place protocol.JoinReply) (schmp.Scheduler[P], bool) {
	if live.s == nil || place.Resume == 0 || live.part != place.Shard || schmp.RebuildsOnRollback(live.s) {
		return nil, false
	}
	if _, ok := live.s.(schmp.Snapshotter); !ok {
		return nil, false
	}
	return live.s, true
}

// serve runs the scheduler part of place until the job stops, fails, or
// rolls back (a *protocol.RollbackError). The app's scheduler it builds is
// kept in live; after a rollback, the scheduler kept is restored in place,
// not built again (its part of the data not read again), unless the app
// asks for a new one (schmp.Rebuilder).
func serve[P any](ctx context.Context, c *wire.Conn, newScheduler func(ctx context.Context, part, parts int) (schmp.Scheduler[P], error), opts Options, place protocol.JoinReply, log *slog.Logger, host string, pid int, live *built[P]) error {
	t0 := time.Now()
	joinCtx, cancel := context.WithTimeout(ctx, opts.JoinTimeout)
	defer cancel()
	part := place.Shard
	self := protocol.Node{Role: protocol.RoleScheduler, Place: part, Host: host, PID: pid}
	log = log.With("part", part)
	log.Info("joined", "parts", place.Shards)

	ready := protocol.Ready[struct{}]{Header: protocol.Header{Type: protocol.TypeReady, Run: place.Run}, ID: opts.ID, Role: protocol.RoleScheduler, Shard: part}
	var err error
	// A survivor of a rollback restores the scheduler it has in place
	// (DESIGN "Spares and replacement").
	s, inPlace := live.reusable(place)
	live.s = nil // kept again once restored: a failed restore leaves it half set
	if !inPlace {
		if opts.Configure != nil {
			if err = opts.Configure(place.Settings); err != nil {
				err = fmt.Errorf("configure: %w", err)
			}
		}
		if err == nil {
			err = protocol.Guard("NewScheduler", func() (err error) { s, err = newScheduler(ctx, part, place.Shards); return err })
		}
	}
	// A resumed job's part restores its state from its piece of the
	// checkpoint; a job that takes checkpoints has it store its pieces
	// (DESIGN "Checkpoints").
	snap, _ := s.(schmp.Snapshotter)
	if err == nil && place.Resume != 0 {
		err = checkpoint.Restore(ctx, c, protocol.RoleScheduler, part, place.Resume, place.Digest, snap, opts.Timeout)
		if err == nil {
			log.Info("restored", "round", place.Resume, "in_place", inPlace, "took", time.Since(t0).Round(time.Millisecond))
		}
	}
	if err == nil {
		*live = built[P]{s: s, part: part}
	}
	var saver *checkpoint.Saver
	if err == nil && place.Checkpoints {
		if saver, err = checkpoint.NewSaver(ctx, c, protocol.RoleScheduler, part, place.Run, opts.Timeout, log); err == nil {
			defer saver.Close()
		}
	}
	if err != nil {
		// The coordinator names the scheduler itself: send the cause.
		ready.Err = err.Error()
		if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(cause, protocol.ErrAborted) {
			ready.Err = protocol.Interrupted(cause)
		}
		err = &protocol.NodeError{Node: self, Err: err}
		if aerr := member.Announce(joinCtx, c, ready); aerr != nil && ctx.Err() == nil {
			log.Warn("report failure", "err", aerr)
		}
		return err
	}
	// Subscribe before announcing: the first request follows at once.
	reqs, err := wire.NewMailbox(c, protocol.SubjectPlan(part))
	if err != nil {
		return err
	}
	defer reqs.Close()
	if err := member.Announce(joinCtx, c, ready); err != nil {
		return err
	}
	log.Info("ready")

	// Heartbeats (DESIGN "How a job fails"): the part's own, and the coordinator's,
	// without which for LostAfter the part stops.
	ctx, pulse, stopBeats, err := member.Heartbeats(ctx, c, place, protocol.Node{Role: protocol.RoleScheduler, Place: part}, opts.ID, log)
	if err != nil {
		return err
	}
	defer stopBeats()

	drop := func(msg *nats.Msg, reason string, err error) {
		opts.Monitor.Drop(protocol.RoleScheduler, reason)
		subject := ""
		if msg != nil {
			subject = msg.Subject
		}
		log.Debug("message dropped", "subject", subject, "reason", reason, "err", err)
	}
	// A reconnect may have lost a plan in flight: send the last ones
	// again (the coordinator drops those it has), and answer a request
	// that comes again with the same plan (DESIGN "NATS outages").
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
			reqs.Wake()
		}
	})
	defer stopWatch()
	var replies []sentReply // the last replies, oldest first
	planned := c.Subject(protocol.SubjectPlanned)
	core := NewCore(s, CoreConfig{Part: part, Parts: place.Shards, Resume: place.Resume, Checkpoints: saver != nil})
	deadline := time.Now().Add(opts.JoinTimeout + opts.Timeout)
	for {
		rctx, cancel := context.WithDeadline(ctx, deadline)
		msg, err := reqs.Next(rctx)
		cancel()
		select {
		case <-reconnected:
			for _, r := range replies {
				if err := c.PublishData(protocol.SubjectPlanned, "", r.data); err != nil {
					log.Warn("plan not sent again", "round", r.round, "err", err)
					break
				}
			}
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
			if cause := context.Cause(ctx); errors.Is(cause, member.ErrCoordinatorLost) {
				return cause
			}
			if ctx.Err() != nil {
				// Tell the coordinator, unless the job failed already
				// (job.Run's other nodes): it fails the job at once,
				// naming this node (DESIGN "How a job fails").
				if cause := context.Cause(ctx); !errors.Is(cause, protocol.ErrAborted) {
					rep := protocol.PlanReply[P]{Header: protocol.Header{Type: protocol.TypePlanReply, Run: place.Run}, Round: core.Next(), Part: part, Err: protocol.Interrupted(cause)}
					if rerr := wire.Publish(c, protocol.SubjectPlanned, rep); rerr != nil {
						log.Warn("report interrupt", "err", rerr)
					} else if ferr := c.NATS().FlushTimeout(min(opts.Timeout, 2*time.Second)); ferr != nil {
						log.Warn("flush", "err", ferr)
					}
				}
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				wait := 2 * opts.Timeout
				if core.Next() == firstRound(part, place.Shards, place.Resume) {
					wait = opts.JoinTimeout + opts.Timeout
				}
				return protocol.Timeout(fmt.Errorf("scheduler %d: no plan request from the coordinator for %s", part, wait))
			}
			return fmt.Errorf("scheduler %d: %w", part, err)
		}
		var req protocol.PlanRequest
		if err := protocol.Open(msg.Data, &req, protocol.TypePlanRequest, place.Run); err != nil {
			drop(msg, protocol.Reason(err), err)
			continue
		}
		t0 := time.Now()
		out, d, err := core.Request(req, core.Hash(msg.Data), msg.Reply == planned)
		nanos := time.Since(t0).Nanoseconds()
		var rollback *protocol.RollbackError
		switch {
		case errors.As(err, &rollback):
			saver.Abandon()
			return err
		case errors.Is(err, protocol.ErrAborted):
			return err
		case out.Stop:
			log.Info("stopped", "round", req.Round)
			return nil
		case errors.Is(err, protocol.ErrConflict):
			err = fmt.Errorf("a plan request on %s: %w", msg.Subject, err)
			out.Reply.Err = err
		case err != nil && out.Reply == nil:
			return fmt.Errorf("scheduler %d: a plan request on %s: %w", part, msg.Subject, err)
		case d != nil && d.Reason == protocol.DropDuplicate:
			for _, r := range replies {
				if r.round == req.Round {
					if err := c.PublishData(protocol.SubjectPlanned, "", r.data); err != nil {
						log.Warn("plan not sent again", "round", r.round, "err", err)
					}
				}
			}
		}
		if d != nil {
			drop(msg, d.Reason, d.Err)
			continue
		}
		for _, d := range out.Drops {
			drop(msg, d.Reason, d.Err)
		}
		if out.Piece != nil {
			saver.Save(out.Piece)
		}
		deadline = time.Now().Add(2 * opts.Timeout)
		r := out.Reply
		rep := protocol.PlanReply[P]{Header: protocol.Header{Type: protocol.TypePlanReply, Run: place.Run}, Round: r.Round, Part: part, Plan: r.Plan, Info: r.Info, Nanos: nanos}
		if m := opts.Monitor; m != nil && r.Err == nil {
			l := monitor.Label(part)
			m.Plans.WithLabelValues(l).Inc()
			m.PlanSeconds.WithLabelValues(l).Add(float64(rep.Nanos) / 1e9)
			m.Candidates.WithLabelValues(l).Add(float64(rep.Info.Candidates))
			m.Selected.WithLabelValues(l).Add(float64(rep.Info.Selected))
		}
		if r.Err != nil {
			rep.Err = r.Err.Error()
		}
		data, rerr := codec.Marshal(rep)
		if rerr == nil && r.Err == nil {
			replies = append(replies, sentReply{req.Round, data})
			if len(replies) > keepReplies {
				replies = replies[1:]
			}
		}
		if rerr == nil {
			rerr = c.PublishData(protocol.SubjectPlanned, "", data)
			if wire.Lost(rerr) {
				log.Warn("plan not sent; sending it at the reconnect", "round", req.Round, "err", rerr)
				rerr = nil
			}
		}
		if rerr != nil && err == nil {
			return fmt.Errorf("scheduler %d: round %d: %w", part, req.Round, rerr)
		}
		if err != nil {
			// The last message before Run returns: deliver it now, since
			// a process may exit right after (DESIGN "How a job fails").
			if ferr := c.NATS().FlushTimeout(opts.Timeout); ferr != nil {
				log.Warn("flush", "err", ferr)
			}
			return &protocol.NodeError{Node: self, Round: req.Round, Err: r.Err}
		}
	}
}

// sentReply is a plan reply sent, encoded, and its round.
type sentReply struct {
	round uint64
	data  []byte
}

// keepReplies is how many of its last replies a scheduler keeps to send
// again: the coordinator asks for at most pipeline.MaxDepth plans ahead.
const keepReplies = pipeline.MaxDepth
