package member

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/wire"
)

// Join asks the coordinator of c's job for a place as req.Role until it
// answers or ctx is done (req's Header is set here); the reply carries the
// job's run id, which the node's later messages carry (DESIGN "Roles, subjects and messages"); each try waits at most try for the answer. A
// refusal because the role's manifest differs from the job's is an error
// whose text is the coordinator's (which names the role and the field) and
// that matches ErrManifest; an error with no answer matches ErrTimeout.
//
// With a job key (c.Keyed), the coordinator first answers with a
// challenge, which the join is sent again with (DESIGN "NATS outages"); a coordinator
// whose answers do not verify under the key (it has none, or another)
// admits this node nowhere, and the error, once ctx is done, says so.
func Join(ctx context.Context, c *wire.Conn, req protocol.JoinRequest, try time.Duration) (protocol.JoinReply, error) {
	role := req.Role
	if role == "" {
		role = protocol.RoleWorker
	}
	req.Header = protocol.Header{Type: protocol.TypeJoin}
	var keyErr error // the last answer dropped for its MAC
	unread := 0      // answers to a join the coordinator could not read
	for {
		rctx, cancel := context.WithTimeout(ctx, min(try, 5*time.Second))
		rep, err := wire.RequestRetried[protocol.JoinRequest, protocol.JoinReply](rctx, c, protocol.SubjectJoin, req)
		cancel()
		if err == nil {
			rep.Err = protocol.Printable(rep.Err) // its text enters here, as a message's in Open
			switch {
			case rep.Challenge != "" && c.Keyed():
				if rep.Challenge != req.Ticket {
					req.Ticket = rep.Challenge
					continue
				}
				return rep, fmt.Errorf("%s: join refused: the coordinator challenged its own ticket again", role)
			case rep.Mismatch:
				return rep, protocol.Mismatch(errors.New(rep.Err))
			case rep.Unread && unread < maxUnread:
				// This node's join is well formed: the answer may be to
				// a corrupted copy of it. Asked again, a coordinator of
				// this protocol reads it.
				unread++
				continue
			case rep.Err != "":
				return rep, fmt.Errorf("%s: join refused: %s", role, rep.Err)
			}
			return rep, nil
		}
		if errors.Is(err, wire.ErrForged) || errors.Is(err, wire.ErrUnauthenticated) {
			keyErr = err
		}
		if ctx.Err() != nil {
			err := fmt.Errorf("%s: no coordinator answered on %s: %w", role, c.Subject(protocol.SubjectJoin), ctx.Err())
			if keyErr != nil {
				err = fmt.Errorf("%s: join refused: the job's coordinator does not have this key (--key): its answers on %s do not verify (%w)", role, c.Subject(protocol.SubjectJoin), keyErr)
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = protocol.Timeout(err)
			}
			return rep, err
		}
		// No coordinator yet (no responders) or a lost reply: try again.
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// maxUnread is how many answers to an unreadable join a node takes for a
// corrupted copy's before it believes them (a coordinator of another
// protocol version's).
const maxUnread = 3

// Self returns the host name (os.Hostname; "" if unknown) and the process
// id that a node puts in its JoinRequest.
func Self() (host string, pid int) {
	host, _ = os.Hostname()
	return host, os.Getpid()
}

// Announce tells the coordinator that the node is ready (or, with r.Err
// set, that it failed to load), and waits for the acknowledgement. When ctx
// ends, the report goes on for up to AnnounceGrace more: the coordinator,
// which may have taken the ready already and started the rounds, would
// otherwise learn of an interrupted node only when its heartbeats fail to
// come, and name it lost instead of interrupted. The error is then ctx's
// cause.
func Announce[S any](ctx context.Context, c *wire.Conn, r protocol.Ready[S]) error {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(AnnounceGrace, cancel) })
	defer stop()
	ack, err := wire.Request[protocol.Ready[S], protocol.Ack](rctx, c, protocol.SubjectReady, r)
	if err != nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	ack.Err = protocol.Printable(ack.Err) // its text enters here, as a message's in Open
	switch {
	case err != nil:
		return fmt.Errorf("%s %d: report ready: %w", r.Role, r.Shard, err)
	case ack.Err != "" && r.Err == "":
		return fmt.Errorf("%s %d: coordinator refused: %s", r.Role, r.Shard, ack.Err)
	}
	return nil
}

// AnnounceGrace is how long Announce goes on reporting after its context
// ended.
const AnnounceGrace = 2 * time.Second
