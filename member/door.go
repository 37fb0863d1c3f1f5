package member

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/wire"
)

// Decide answers a join request that is well formed and of this run: the
// reply, and what to do once it is sent (nil: nothing).
type Decide func(req protocol.JoinRequest) (rep protocol.JoinReply, then func())

// Dropped is told of a message on the join subject that takes no place,
// with its reason (protocol.Reason) and the error.
type Dropped func(msg *nats.Msg, reason string, err error)

// ServeJoins answers the joins of c's job (SubjectJoin) until the
// subscription it returns is unsubscribed. A join whose MAC fails under
// the job's key, or that carries one when the job has none, is refused
// with a reply without a MAC; with a job key, a join without this call's
// ticket is answered with it as a challenge, to be sent again with it (a
// join recorded in another run carries another: DESIGN "Hostile
// traffic"); a join that cannot be read is answered with Unread, so that
// a node of another protocol version learns why. Every other join gets
// decide's answer.
func ServeJoins(c *wire.Conn, decide Decide, drop Dropped, log *slog.Logger) (*nats.Subscription, error) {
	ticket := rand.Text()
	refuse := func(msg *nats.Msg, why string) {
		if msg.Reply == "" {
			return
		}
		// Sealed, a refusal would be a message of the job sent wherever
		// msg's reply subject says.
		data, err := codec.Marshal(protocol.JoinReply{Err: why})
		if err == nil {
			err = c.NATS().Publish(msg.Reply, data)
		}
		if err != nil {
			log.Warn("join refusal", "err", err)
		}
	}
	sub, err := c.NATS().Subscribe(c.Subject(protocol.SubjectJoin), func(msg *nats.Msg) {
		if err := c.Verify(msg); err != nil {
			drop(msg, protocol.Reason(err), err)
			refuse(msg, "wrong key: the job's coordinator has a job key, and this node has none or another (--key)")
			return
		}
		if !c.Keyed() && wire.HasMAC(msg) {
			drop(msg, protocol.DropUnexpected, errors.New("a join with a MAC, to a coordinator without a key"))
			refuse(msg, "the job's coordinator has no job key, and this node has one (--key)")
			return
		}
		var req protocol.JoinRequest
		var rep protocol.JoinReply
		var then func()
		err := protocol.Open(msg.Data, &req, protocol.TypeJoin, "")
		if err == nil && c.Keyed() && req.Ticket != ticket {
			if err := wire.Reply(c, msg, protocol.JoinReply{Challenge: ticket}); err != nil {
				log.Warn("join challenge", "err", err)
			}
			return
		}
		if err == nil {
			err = req.Validate()
		}
		if err != nil {
			drop(msg, cmp.Or(protocol.Reason(err), protocol.DropGarbage), err)
			if t := req.Header.Type; t != "" && t != protocol.TypeJoin {
				// Another message of the protocol, relayed here: its reply
				// subject awaits another answer (a ready's, its ack), which
				// a join reply must not take the place of.
				return
			}
			rep.Err, rep.Unread = fmt.Sprintf("not a join request of protocol version %d: %v", protocol.Version, err), true
		} else {
			rep, then = decide(req)
		}
		if msg.Reply != "" {
			if err := wire.Reply(c, msg, rep); err != nil {
				log.Warn("join reply", "err", err)
			}
		}
		if then != nil {
			then()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to joins: %w", err)
	}
	return sub, nil
}
