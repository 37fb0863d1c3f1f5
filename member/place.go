package member

import (
	"context"
	"errors"
	"fmt"
	"github.com/strads-go/strads/protocol"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/wire"
)

// Entry is a worker or scheduler node's place in a job: the join's reply,
// and the spare subject it listens on (SubjectSpare), to be served
// (Serve) by the node. A command joins before it builds the node, to take
// the job's settings, and hands the node its Entry, so that a node joins
// once.
type Entry struct {
	// Reply is the coordinator's answer: the place, or a spare's wait,
	// and the job's settings.
	Reply protocol.JoinReply
	// ID is the node's, which its messages carry.
	ID    string
	c     *wire.Conn
	role  string
	spare *wire.Mailbox
}

// Admit joins the job as req describes, a worker or scheduler node. Before
// it joins, it subscribes to its spare subject (SubjectSpare), so that an
// Assign cannot come before it listens, and has c report each message it
// drops for the job key's MAC to drop, with its reason (Reason), and to
// log. A manifest of version 0 is sent as Version. joinTimeout bounds the
// join, timeout each request of it. The Entry must be served (Serve) or
// closed.
func Admit(ctx context.Context, c *wire.Conn, req protocol.JoinRequest, joinTimeout, timeout time.Duration, drop func(reason string), log *slog.Logger) (*Entry, error) {
	if req.Manifest.Version == 0 {
		req.Manifest.Version = protocol.Version
	}
	c.OnDrop(func(msg *nats.Msg, err error) {
		reason := protocol.Reason(err)
		drop(reason)
		log.Debug("message dropped", "subject", msg.Subject, "reason", reason, "err", err)
	})
	spare, err := wire.NewMailbox(c, protocol.SubjectSpare(req.ID))
	if err != nil {
		return nil, err
	}
	joinCtx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	place, err := Join(joinCtx, c, req, timeout)
	if err != nil {
		spare.Close()
		return nil, err
	}
	return &Entry{Reply: place, ID: req.ID, c: c, role: req.Role, spare: spare}, nil
}

// Serve serves the entry's place with serve until the job ends
// (ServePlace), and closes the entry.
func (e *Entry) Serve(ctx context.Context, log *slog.Logger, serve func(protocol.JoinReply) error) error {
	defer e.Close()
	return ServePlace(ctx, e.c, e.spare, e.Reply, e.role, log, serve)
}

// Close stops the entry's wait on its spare subject.
func (e *Entry) Close() error { return e.spare.Close() }

// Enter joins the job as req describes (Admit), and serves the place it
// is given with serve until the job ends (Serve).
func Enter(ctx context.Context, c *wire.Conn, req protocol.JoinRequest, joinTimeout, timeout time.Duration, drop func(reason string), log *slog.Logger, serve func(protocol.JoinReply) error) error {
	e, err := Admit(ctx, c, req, joinTimeout, timeout, drop, log)
	if err != nil {
		return err
	}
	return e.Serve(ctx, log, serve)
}

// ServePlace serves place, the join reply of a worker or scheduler node of
// role, with serve until the job ends (DESIGN "Spares and replacement"). A spare first awaits its
// Assign on box (its SubjectSpare), and ends there, nil, if the job ended
// without needing it. After a rollback (serve's error a *RollbackError)
// the place is served again, to be restored from the checkpoint under the
// new run id (serve keeps the app it built, to restore it in place).
func ServePlace(ctx context.Context, c *wire.Conn, box *wire.Mailbox, place protocol.JoinReply, role string, log *slog.Logger, serve func(protocol.JoinReply) error) error {
	for {
		if place.Spare {
			var ok bool
			var err error
			if place, ok, err = AwaitAssign(ctx, c, box, place, role, log); err != nil || !ok {
				return err
			}
		}
		err := serve(place)
		var rb *protocol.RollbackError
		if !errors.As(err, &rb) {
			return err
		}
		log.Info("rolling back", "round", rb.Round)
		place.Resume, place.Digest, place.Run = rb.Round, "", rb.Run
	}
}

// ErrCoordinatorLost is in the chain of the error of a node whose
// coordinator sent no heartbeat for the join reply's LostAfter.
var ErrCoordinatorLost = errors.New("the coordinator is lost")

// Heartbeats starts the heartbeats of self, the node of ID id at its place
// in the job that place describes, and follows the coordinator's (DESIGN
// "How a job fails"): the returned
// context is ctx, ended with an error that names self and matches
// ErrTimeout and ErrCoordinatorLost once the coordinator has been silent
// for LostAfter. pulse is nil, and ctx returned as is, when the job sends
// no heartbeats. stop ends it all.
func Heartbeats(ctx context.Context, c *wire.Conn, place protocol.JoinReply, self protocol.Node, id string, log *slog.Logger) (_ context.Context, pulse *Pulse, stop func(), err error) {
	if place.Heartbeat <= 0 {
		return ctx, nil, func() {}, nil
	}
	if pulse, err = FollowCoordinator(c, place.Run, log); err != nil {
		return ctx, nil, nil, err
	}
	stopBeat := Beat(c, protocol.SubjectBeat, place.Heartbeat, protocol.Heartbeat{Header: protocol.Header{Run: place.Run}, Role: self.Role, Place: self.Place, ID: id})
	ctx, stopWait := pulse.AwaitBeat(ctx, place.Heartbeat, place.LostAfter, func(silent time.Duration) error {
		return protocol.Timeout(fmt.Errorf("%s: no heartbeat from the coordinator for %s: %w", protocol.Node{Role: self.Role, Place: self.Place}, silent.Round(time.Millisecond), ErrCoordinatorLost))
	})
	return ctx, pulse, func() { stopWait(); stopBeat(); pulse.Close() }, nil
}
