package protocol

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/wire"
)

// Heartbeats (DESIGN §6): once admitted, every node publishes a Heartbeat
// every HeartbeatEvery, the coordinator on SubjectBeatCoordinator, the
// others on SubjectBeat; a node not heard from for LostAfter is taken for
// lost (a process killed, a machine gone), however long its rounds take:
// the beats come from a goroutine of their own, not from the rounds.
const (
	SubjectBeat            = "beat"
	SubjectBeatCoordinator = "beat.coordinator"
	TypeHeartbeat          = "heartbeat"

	// DefaultHeartbeat is the interval of the beats, and DefaultLostAfter
	// how long a silent node is waited for, unless the coordinator's
	// options say otherwise (the join reply carries them).
	DefaultHeartbeat = time.Second
	DefaultLostAfter = 5 * time.Second
)

// Heartbeat says that a node is alive.
type Heartbeat struct {
	Header
	Role  string `msgpack:"role"`
	Place int    `msgpack:"place"`
}

// Beat publishes h on the job subject name every every, from now until
// the returned stop is called. A beat that cannot be sent (the connection
// is down) is skipped: the next one may be.
func Beat(c *wire.Conn, name string, every time.Duration, h Heartbeat) (stop func()) {
	h.Type = TypeHeartbeat
	data, err := wire.Marshal(h)
	done := make(chan struct{})
	var once sync.Once
	if err != nil {
		return func() {}
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			_ = c.PublishData(name, "", data)
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
	sub  *nats.Subscription
	last atomic.Int64 // unix nanoseconds of the last beat, or of the start
}

// FollowCoordinator subscribes to the coordinator's heartbeats of run.
func FollowCoordinator(c *wire.Conn, run string, log *slog.Logger) (*Pulse, error) {
	p := &Pulse{}
	p.last.Store(time.Now().UnixNano())
	sub, err := c.NATS().Subscribe(c.Subject(SubjectBeatCoordinator), func(msg *nats.Msg) {
		var h Heartbeat
		if err := Open(msg.Data, &h, TypeHeartbeat, run); err != nil {
			log.Debug("message dropped", "subject", msg.Subject, "err", err)
			return
		}
		p.last.Store(time.Now().UnixNano())
	})
	if err != nil {
		return nil, err
	}
	p.sub = sub
	return p, nil
}

// Silent returns how long the coordinator has not been heard from.
func (p *Pulse) Silent() time.Duration {
	return time.Since(time.Unix(0, p.last.Load()))
}

// Reset counts the coordinator as heard from now (after a reconnect of
// this node, whose own silence was the cause).
func (p *Pulse) Reset() { p.last.Store(time.Now().UnixNano()) }

// Close stops following.
func (p *Pulse) Close() {
	if p != nil && p.sub != nil {
		_ = p.sub.Unsubscribe()
	}
}

// AwaitBeat is a context that ends, with cause, once the coordinator has
// been silent for lost, checked every every: the context of a node's waits,
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
				if s := p.Silent(); s >= lost {
					cancel(cause(s))
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}
