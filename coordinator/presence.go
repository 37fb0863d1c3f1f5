package coordinator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/member"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/wire"
)

// ErrNameTaken is wrapped in the error of a coordinator that found another
// coordinator running a job of its name, and refused to start (DESIGN "Roles, subjects and messages").
// It is protocol.ErrNameTaken.
var ErrNameTaken = protocol.ErrNameTaken

// minProbeWait is the least time a coordinator waits for the answers to
// its presence probe; it waits 4 round trips to the server if that is
// longer.
const minProbeWait = 100 * time.Millisecond

// presence is a coordinator's side of the presence protocol (DESIGN "Roles, subjects and messages"):
// it answers probes on SubjectCoordinator, and notes a probe from a
// coordinator that starts at the same time and wins.
type presence struct {
	self protocol.Presence

	mu      sync.Mutex
	running bool    // the name is ours
	lost    *answer // a coordinator starting at once, with a smaller ticket
}

// claim makes sure that no other coordinator runs a job of c's name
// before this one admits any node (DESIGN "Roles, subjects and messages"). It answers the probes of
// other coordinators from now until the returned subscription is
// unsubscribed, then probes, and waits for answers: an answer from a
// running coordinator refuses this one at once, and of two that start at
// the same time (each probing while the other does), the one with the
// smaller ticket goes on. The error of a refusal matches ErrNameTaken and
// names the other coordinator.
//
// Presence crosses keys: probes and answers are taken whether their MAC
// verifies or not, so that a job with another key (a whole job's random
// one) or none is found too, rather than run beside this one and share its
// checkpoints (issue 28). An answer that does not verify refuses this
// coordinator all the same, with a message that says so: an outsider who
// can publish on the job's subjects can keep a job from starting, but not
// make it compute anything else.
//
// Core NATS has no atomic operation to take a name with: two coordinators
// that start within the wait of each other, one of whose answers takes
// longer than the wait, may both go on. (JetStream's key-value Create,
// once the runtime uses JetStream, would close that.)
func (n *node[P, R, U, S]) claim(ctx context.Context) (*nats.Subscription, error) {
	host, pid := member.Self()
	p := &presence{self: protocol.Presence{Header: protocol.Header{Type: protocol.TypePresence},
		Ticket: nuid.Next(), Host: host, PID: pid, Since: time.Now().UnixNano()}}
	sub, err := n.c.NATS().Subscribe(n.c.Subject(protocol.SubjectCoordinator), func(msg *nats.Msg) {
		var probe protocol.Presence
		if err := protocol.Open(msg.Data, &probe, protocol.TypePresence, ""); err != nil {
			n.drop(msg, "", protocol.Reason(err), err)
			return
		}
		if probe.Ticket == p.self.Ticket || msg.Reply == "" {
			return
		}
		p.mu.Lock()
		if !p.running && p.lost == nil && probe.Ticket < p.self.Ticket {
			p.lost = &answer{probe, n.c.Verify(msg) == nil}
		}
		ans := p.self
		ans.Running = p.running
		p.mu.Unlock()
		if err := wire.Reply(n.c, msg, ans); err != nil {
			n.log.Warn("presence reply", "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("coordinator: subscribe to %s: %w", n.c.Subject(protocol.SubjectCoordinator), err)
	}
	other, err := n.probe(ctx, p)
	if err == nil && other == nil {
		return sub, nil
	}
	sub.Unsubscribe()
	if err != nil {
		return nil, err
	}
	since := time.Unix(0, other.Since).Format(time.DateTime)
	who := protocol.Node{Role: "coordinator", Place: -1, Host: other.Host, PID: other.PID}.String()
	if !other.verified {
		who += " of a job with another key, or none,"
	}
	if other.Running {
		return nil, fmt.Errorf("coordinator: job %q: %w: %s has run it since %s; a job needs a name of its own", n.c.Job(), ErrNameTaken, who, since)
	}
	return nil, fmt.Errorf("coordinator: job %q: %w: %s, which started at the same time (%s), goes on; a job needs a name of its own", n.c.Job(), ErrNameTaken, who, since)
}

// answer is another coordinator's Presence, and whether its MAC verified
// under this job's key.
type answer struct {
	protocol.Presence
	verified bool
}

// probe asks every coordinator of the job's name to answer, and returns
// the one that refuses this coordinator, or nil once the name is ours.
func (n *node[P, R, U, S]) probe(ctx context.Context, p *presence) (*answer, error) {
	nc := n.c.NATS()
	wait := minProbeWait
	if rtt, err := nc.RTT(); err == nil {
		wait = max(wait, 4*rtt)
	}
	inbox := nc.NewInbox()
	answers := make(chan *nats.Msg, 16)
	sub, err := nc.Subscribe(inbox, func(msg *nats.Msg) {
		select {
		case answers <- msg:
		default: // more than 16 coordinators answer: enough is known
		}
	})
	if err != nil {
		return nil, fmt.Errorf("coordinator: presence probe: %w", err)
	}
	defer sub.Unsubscribe()
	// Flush: the server has the subscriptions before the probe, so that
	// a coordinator that starts later finds this one.
	if err := nc.Flush(); err != nil {
		return nil, fmt.Errorf("coordinator: presence probe: %w", err)
	}
	data, err := codec.Marshal(p.self)
	if err == nil {
		err = n.c.Send(n.c.Subject(protocol.SubjectCoordinator), inbox, data)
	}
	if err != nil {
		return nil, fmt.Errorf("coordinator: presence probe: %w", err)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case msg := <-answers:
			var ans protocol.Presence
			if err := protocol.Open(msg.Data, &ans, protocol.TypePresence, ""); err != nil {
				n.drop(msg, "", protocol.Reason(err), err)
				continue
			}
			if ans.Ticket == p.self.Ticket {
				continue
			}
			other := &answer{ans, n.c.Verify(msg) == nil}
			if ans.Running {
				return other, nil
			}
			p.mu.Lock()
			if p.lost == nil && ans.Ticket < p.self.Ticket {
				p.lost = other
			}
			p.mu.Unlock()
		case <-timer.C:
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.lost != nil {
				return p.lost, nil
			}
			p.running = true
			return nil, nil
		}
	}
}
