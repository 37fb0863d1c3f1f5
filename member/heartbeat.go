package member

import (
	"context"
	"errors"
	"fmt"
	"github.com/strads-go/strads/protocol"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/wire"
)

// Beat publishes h on the job subject name every every, from now until
// the returned stop is called, each beat with the next Seq from 1. A beat
// that cannot be sent (the connection is down) is skipped: the next one
// may be.
func Beat(c *wire.Conn, name string, every time.Duration, h protocol.Heartbeat) (stop func()) {
	h.Type = protocol.TypeHeartbeat
	done := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			h.Seq++
			if data, err := codec.Marshal(h); err == nil {
				_ = c.PublishData(name, "", data)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

// Pulse follows the coordinator's heartbeats, for a worker or a scheduler.
type Pulse struct {
	mu     sync.Mutex
	seqs   protocol.Sequences // of the coordinator's beats, by run
	nc     *nats.Conn
	subs   []*nats.Subscription
	last   atomic.Int64 // unix nanoseconds of the coordinator's last beat, or of the start
	others atomic.Int64 // of the last beat of another node
}

// fresh reports whether h, a beat of the coordinator, is newer than every
// one taken of its run: a replay is not.
func (p *Pulse) fresh(h protocol.Heartbeat) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seqs.Take(h.Run, h.Seq)
}

// FollowCoordinator subscribes to the coordinator's heartbeats of run, or
// of any run if run is "" (a spare's: a rollback changes the run).
func FollowCoordinator(c *wire.Conn, run string, log *slog.Logger) (*Pulse, error) {
	p := &Pulse{nc: c.NATS()}
	p.Reset()
	// The other nodes' beats tell a silent coordinator from a node that
	// hears nothing at all (its own process or connection stalled).
	for _, s := range []struct {
		name string
		last *atomic.Int64
	}{{protocol.SubjectBeatCoordinator, &p.last}, {protocol.SubjectBeat, &p.others}} {
		sub, err := c.SubscribeFunc(c.Subject(s.name), func(msg *nats.Msg) {
			var h protocol.Heartbeat
			err := codec.Unmarshal(msg.Data, &h)
			switch {
			case err == nil && h.Type != protocol.TypeHeartbeat:
				err = fmt.Errorf("a message of type %q", h.Type)
			case err == nil && run != "" && h.Run != run:
				err = fmt.Errorf("%w: run %.32q", protocol.ErrForeign, h.Run)
			case err == nil && s.last == &p.last && !p.fresh(h):
				err = fmt.Errorf("the coordinator's beat %d of run %.32q again: a replay", h.Seq, h.Run)
			}
			if err != nil {
				log.Debug("message dropped", "subject", msg.Subject, "err", err)
				return
			}
			s.last.Store(time.Now().UnixNano())
		})
		if err != nil {
			p.Close()
			return nil, err
		}
		p.subs = append(p.subs, sub)
	}
	return p, nil
}

// Silent returns how long the coordinator has not been heard from.
func (p *Pulse) Silent() time.Duration {
	return time.Since(time.Unix(0, p.last.Load()))
}

// Reset counts the coordinator as heard from now (after a reconnect of
// this node, whose own silence was the cause).
func (p *Pulse) Reset() {
	now := time.Now().UnixNano()
	p.last.Store(now)
	p.others.Store(now)
}

// Close stops following.
func (p *Pulse) Close() {
	if p == nil {
		return
	}
	for _, s := range p.subs {
		_ = s.Unsubscribe()
	}
}

// AwaitBeat is a context that ends, with cause, once the coordinator has
// been silent for lost while this node's connection was up and the other
// nodes' beats came (a node that hears nothing at all is stalled itself,
// and waits on), checked every every: the context of a node's waits,
// so that a node whose coordinator is gone stops within seconds rather than
// at its timeout.
func (p *Pulse) AwaitBeat(ctx context.Context, every, lost time.Duration, cause func(silent time.Duration) error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !p.nc.IsConnected() {
					// The node's own connection is down: the silence is
					// its own (its reconnect resets the count too).
					p.Reset()
					continue
				}
				others := time.Since(time.Unix(0, p.others.Load()))
				if s := p.Silent(); s >= lost && others < lost/2 {
					// The others are heard, the coordinator is not.
					cancel(cause(s))
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// AwaitAssign waits, as the spare that joined with place, on box (its
// SubjectSpare) for its Assign (DESIGN "Spares and replacement"), and returns its new place: the
// lost node's, to be restored from the checkpoint that the assignment
// names, under its run id. ok is false when the coordinator ends the wait
// because the job is over (err nil if it succeeded, matching ErrAborted if
// it failed). A coordinator not heard from for place.LostAfter ends the
// wait with an error matching ErrTimeout; so does ctx.
func AwaitAssign(ctx context.Context, c *wire.Conn, box *wire.Mailbox, place protocol.JoinReply, role string, log *slog.Logger) (protocol.JoinReply, bool, error) {
	log.Info("joined as a spare", "places", place.Shards)
	if place.Heartbeat > 0 {
		pulse, err := FollowCoordinator(c, "", log)
		if err != nil {
			return place, false, err
		}
		defer pulse.Close()
		var stop context.CancelFunc
		ctx, stop = pulse.AwaitBeat(ctx, place.Heartbeat, place.LostAfter, func(silent time.Duration) error {
			return protocol.Timeout(fmt.Errorf("spare %s: no heartbeat from the coordinator for %s", role, silent.Round(time.Millisecond)))
		})
		defer stop()
	}
	for {
		msg, err := box.Next(ctx)
		if err != nil {
			if errors.Is(err, wire.ErrIncomplete) {
				continue
			}
			return place, false, context.Cause(ctx)
		}
		if msg == nil {
			continue
		}
		var a protocol.Assign
		if err := protocol.Open(msg.Data, &a, protocol.TypeAssign, place.Run); err != nil {
			log.Debug("message dropped", "subject", msg.Subject, "err", err)
			continue
		}
		if err := a.Validate(); err != nil {
			log.Debug("message dropped", "subject", msg.Subject, "err", err)
			continue
		}
		switch {
		case a.Stop && a.Abort != "":
			return place, false, protocol.Aborted(fmt.Errorf("spare %s: job aborted: %s", role, a.Abort))
		case a.Stop:
			log.Info("the job is over; the spare was not needed")
			return place, false, nil
		}
		place.Spare, place.Shard, place.Shards = false, a.Shard, a.Shards
		place.Resume, place.Digest, place.Run = a.Rollback.Round, "", a.Rollback.Run
		log.Info("taking a lost place", "place", a.Shard, "round", a.Rollback.Round)
		return place, true, nil
	}
}
