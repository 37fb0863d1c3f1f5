package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// Saver stores the pieces of a worker or a scheduler part, in the
// background, and tells the coordinator of each (protocol.Stored), so
// that the role's rounds do not wait for the store.
type Saver struct {
	c       *wire.Conn
	store   *Store
	role    string
	place   int
	run     string
	timeout time.Duration
	log     *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// told is the last news sent, sent again after a reconnect: an outage
	// may have lost it, and a checkpoint would then never be committed.
	mu        sync.Mutex
	told      *protocol.Stored
	stopWatch func()
}

// NewSaver returns the saver of role's place in the run of the job on c,
// whose store the coordinator created; timeout bounds each store.
func NewSaver(ctx context.Context, c *wire.Conn, role string, place int, run string, timeout time.Duration, log *slog.Logger) (*Saver, error) {
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	store, err := OpenConn(octx, c, false)
	if err != nil {
		return nil, err
	}
	s := &Saver{c: c, store: store, role: role, place: place, run: run, timeout: timeout, log: log}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.stopWatch = c.Watch(func(e wire.Event) {
		if e.Kind != wire.Reconnected {
			return
		}
		s.mu.Lock()
		m := s.told
		s.mu.Unlock()
		if m != nil {
			s.publish(*m)
		}
	})
	return s, nil
}

// Snapshot returns snap's snapshot, its app's panic an error: the role's
// piece of a checkpoint, for Saver.Save.
func Snapshot(snap schmp.Snapshotter) ([]byte, error) {
	if snap == nil {
		return nil, errors.New("the app cannot take snapshots")
	}
	var b []byte
	err := protocol.Guard("Snapshot", func() (err error) { b, err = snap.Snapshot(); return err })
	return b, err
}

// Taken is a role's piece of the checkpoint of Round as its core took it
// (Snapshot): Data, or why not, Err.
type Taken struct {
	Round uint64
	Data  []byte
	Err   error
}

// Take returns snap's piece of the checkpoint of round.
func Take(round uint64, snap schmp.Snapshotter) *Taken {
	b, err := Snapshot(snap)
	return &Taken{Round: round, Data: b, Err: err}
}

// Save stores t, the role's piece of a checkpoint, in the background. A
// role whose snapshot failed tells the coordinator why; the checkpoint is
// then abandoned, not the job.
func (s *Saver) Save(t *Taken) {
	round, b, err := t.Round, t.Data, t.Err
	m := protocol.Stored{Header: protocol.Header{Type: protocol.TypeStored, Run: s.run}, Role: s.role, Place: s.place, Round: round}
	if err != nil {
		m.Err = err.Error()
		s.tell(m)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
		defer cancel()
		t0 := time.Now()
		var d string
		err := Retry(ctx, s.c, func(ctx context.Context) (err error) {
			d, err = s.store.Put(ctx, round, Piece(s.role, s.place), b)
			return err
		})
		if err != nil {
			m.Err = err.Error()
		} else {
			m.Digest, m.Bytes = d, int64(len(b))
			s.log.Debug("checkpoint piece stored", "round", round, "bytes", len(b), "took", time.Since(t0))
		}
		s.tell(m)
	}()
}

// tell sends m to the coordinator, and keeps it to send again after a
// reconnect.
func (s *Saver) tell(m protocol.Stored) {
	if m.Err != "" {
		s.log.Warn("checkpoint piece not stored", "round", m.Round, "err", m.Err)
	}
	s.mu.Lock()
	if s.told == nil || s.told.Round <= m.Round {
		s.told = &m
	}
	s.mu.Unlock()
	s.publish(m)
}

// publish sends m to the coordinator.
func (s *Saver) publish(m protocol.Stored) {
	if err := wire.Publish(s.c, protocol.SubjectStored, m); err != nil {
		s.log.Warn("checkpoint piece: tell the coordinator", "round", m.Round, "err", err)
	}
}

// Abandon makes Close abandon the stores in progress at once: the job goes
// back to a checkpoint before them.
func (s *Saver) Abandon() {
	if s != nil {
		s.cancel()
	}
}

// Close waits for the stores in progress, up to the saver's timeout, then
// abandons them.
func (s *Saver) Close() {
	s.stopWatch()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.timeout):
	}
	s.cancel()
	<-done
}

// Restore restores snap, the app of role's place, from its piece of the
// checkpoint of round, which must hash to digest ("": the digest the
// checkpoint's manifest names), read from the store of the job on c;
// timeout bounds the read.
func Restore(ctx context.Context, c *wire.Conn, role string, place int, round uint64, digest string, snap schmp.Snapshotter, timeout time.Duration) error {
	if snap == nil {
		return errors.New("resume: the app cannot restore snapshots")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Each read is a request whose answer an outage may lose: Retry
	// sends it again after the reconnect (a rollback runs mid-job).
	var store *Store
	err := Retry(ctx, c, func(ctx context.Context) (err error) {
		store, err = OpenConn(ctx, c, false)
		return err
	})
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if digest == "" {
		var m Manifest
		if err := Retry(ctx, c, func(ctx context.Context) (err error) { m, err = store.Manifest(ctx, round); return err }); err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		digest = m.Pieces[Piece(role, place)]
	}
	var b []byte
	if err := Retry(ctx, c, func(ctx context.Context) (err error) {
		b, err = store.Get(ctx, round, Piece(role, place), digest)
		return err
	}); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if err := protocol.Guard("Restore", func() error { return snap.Restore(b) }); err != nil {
		return fmt.Errorf("resume from the checkpoint of round %d: %w", round, err)
	}
	return nil
}

// Retry runs op, an operation on the store that may run twice, with a
// context that a reconnect of c cancels, and runs it again, up to
// retryAttempts times within ctx, when it failed because of an outage
// (DESIGN "NATS outages"):
//   - a reconnect cancelled it: JetStream's answer to a request in flight
//     when the connection broke is lost, and op would otherwise wait for it
//     until ctx ends;
//   - the connection broke while it ran, or is down: nats.go fails the
//     acknowledgements of the stores in flight (nats.ErrDisconnected);
//   - JetStream did not answer (nats.ErrNoResponders): a server that stops
//     shuts JetStream down before it closes the connections, though the
//     server that comes back has it (Open checked that the server has
//     JetStream).
//
// It waits for the reconnect first while the connection is down, else
// retryWait times the attempt. A role whose store failed so tells the
// coordinator, and the outage could lose that news too: the checkpoint then
// stayed open until the timeout.
func Retry(ctx context.Context, c *wire.Conn, op func(ctx context.Context) error) error {
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithCancelCause(ctx)
		var broke atomic.Bool
		back := make(chan struct{}, 1)
		stop := c.Watch(func(e wire.Event) {
			broke.Store(true)
			if e.Kind == wire.Reconnected {
				cancel(errReconnected)
				select {
				case back <- struct{}{}:
				default:
				}
			}
		})
		err := op(actx)
		cancel(nil)
		outage := err != nil && (broke.Load() || !c.NATS().IsConnected() ||
			errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionReconnecting))
		if !outage || ctx.Err() != nil || attempt == retryAttempts || c.NATS().IsClosed() {
			stop()
			return err
		}
		wait := time.After(time.Duration(attempt) * retryWait)
		if !c.NATS().IsConnected() {
			wait = nil // the reconnect is waited for alone
		}
		select {
		case <-ctx.Done():
		case <-back:
		case <-wait:
		}
		stop()
		if ctx.Err() != nil {
			return err
		}
	}
}

// retryAttempts is how many times Retry runs an operation at most, and
// retryWait how long it waits, times the attempt (100 ms, 200 ms, …),
// before it runs again one that failed with the connection up.
const (
	retryAttempts = 5
	retryWait     = 100 * time.Millisecond
)

// errReconnected is the cause of an attempt that a reconnect ended.
var errReconnected = errors.New("the connection was re-established")
