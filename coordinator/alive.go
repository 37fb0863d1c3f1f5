package coordinator

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/protocol"
)

// followBeats subscribes to the workers' and scheduler parts' heartbeats
// (DESIGN "How a job fails"), and notes when each node was last heard
// from: a beat counts only from the node at its place, and only if newer
// than the last one taken from it (a replay does not keep a dead node
// alive).
func (n *node[P, R, U, S]) followBeats() (*nats.Subscription, error) {
	sub, err := n.c.SubscribeFunc(n.c.Subject(protocol.SubjectBeat), func(msg *nats.Msg) {
		var h protocol.Heartbeat
		n.mu.Lock()
		run := n.runID
		n.mu.Unlock()
		err := protocol.Open(msg.Data, &h, protocol.TypeHeartbeat, run)
		if err != nil {
			n.drop(msg, "", protocol.Reason(err), err)
			return
		}
		n.mu.Lock()
		reason := ""
		switch {
		case !n.roster.Holds(h.Role, h.Place, h.ID):
			// Not the node at that place: one replaced, or none.
			reason, err = protocol.DropUnexpected, fmt.Errorf("a heartbeat of %s %d from node %.32q", h.Role, h.Place, h.ID)
		case !n.beats.Take(h.Run+"/"+h.Role+"/"+h.ID, h.Seq):
			reason, err = protocol.DropDuplicate, fmt.Errorf("beat %d of %s %d again", h.Seq, h.Role, h.Place)
		default:
			n.live.beat(h.Role, h.Place, time.Now())
		}
		n.mu.Unlock()
		if reason != "" {
			n.drop(msg, "", reason, err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("coordinator: subscribe to heartbeats: %w", err)
	}
	return sub, nil
}

// checkAlive fails the job if a worker or a scheduler part has sent no
// heartbeat for LostAfter while the rounds run: its process is gone (killed,
// out of memory, its machine lost). It returns every node lost, and an
// error that names them and matches ErrTimeout. Nothing is lost while the
// coordinator's own connection is down, or while it hears no node at all:
// the silence would be the coordinator's; after a reconnect silences count
// from it (heard), and the nodes, which reconnect within a second or two,
// beat again.
func (n *node[P, R, U, S]) checkAlive() ([]protocol.Node, error) {
	now := time.Now()
	// It runs after every message; a look at every node a quarter of a
	// heartbeat apart is enough.
	if n.opts.Heartbeat <= 0 || now.Sub(n.aliveAt) < n.opts.Heartbeat/4 {
		return nil, nil
	}
	n.aliveAt = now
	if !n.c.NATS().IsConnected() {
		n.heard(now)
		return nil, nil
	}
	n.mu.Lock()
	lost := n.live.lost(now)
	n.mu.Unlock()
	if len(lost) == 0 {
		return nil, nil
	}
	return lost, n.lostError(lost, now)
}

// heard counts every node as heard from at now.
func (n *node[P, R, U, S]) heard(now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.live.heardAll(now)
}

// lostError is the error of the nodes lost: it names each, with its
// silence at now, and matches ErrTimeout.
func (n *node[P, R, U, S]) lostError(lost []protocol.Node, now time.Time) error {
	var msgs []string
	for _, l := range lost {
		n.mu.Lock()
		silent := n.live.silence(l.Role, l.Place, now)
		n.mu.Unlock()
		msgs = append(msgs, fmt.Sprintf("%s: no heartbeat for %s", n.who(l.Role, l.Place), silent.Round(time.Millisecond)))
	}
	what := "the node is lost"
	if len(lost) > 1 {
		what = "the nodes are lost"
	}
	return protocol.Timeout(fmt.Errorf("coordinator: %s: %s", strings.Join(msgs, "; "), what))
}
