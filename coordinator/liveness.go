package coordinator

import (
	"time"

	"github.com/strads-go/strads/protocol"
)

// liveness keeps when each worker and scheduler part was last heard from,
// and says which are lost (DESIGN "How a job fails"). It is plain data: the
// node gives it the time and holds its lock around it.
type liveness struct {
	lostAfter time.Duration
	seen      map[string][]time.Time // by role and place; zero: not heard from yet
}

func newLiveness(workers, schedulers int, lostAfter time.Duration) *liveness {
	return &liveness{lostAfter: lostAfter, seen: map[string][]time.Time{
		protocol.RoleWorker:    make([]time.Time, workers),
		protocol.RoleScheduler: make([]time.Time, schedulers),
	}}
}

// beat notes that the node at place of role was heard from at now.
func (l *liveness) beat(role string, place int, now time.Time) { l.seen[role][place] = now }

// heardAll counts every node as heard from at now: after the
// coordinator's own reconnect, silences count from it.
func (l *liveness) heardAll(now time.Time) {
	for _, seen := range l.seen {
		for k := range seen {
			seen[k] = now
		}
	}
}

// reset forgets every node's last beat: silences count from the next look
// (the rounds' restart after a rollback).
func (l *liveness) reset() {
	for _, seen := range l.seen {
		clear(seen)
	}
}

// silent returns the nodes silent for lostAfter at now, and the least
// silence of a node. A node not heard from yet counts from now: the
// rounds start.
func (l *liveness) silent(now time.Time) (lost []protocol.Node, freshest time.Duration) {
	freshest = l.lostAfter
	for _, role := range []string{protocol.RoleWorker, protocol.RoleScheduler} {
		for k, t := range l.seen[role] {
			if t.IsZero() {
				l.seen[role][k] = now
				freshest = 0
				continue
			}
			d := now.Sub(t)
			freshest = min(freshest, d)
			if d >= l.lostAfter {
				lost = append(lost, protocol.Node{Role: role, Place: k})
			}
		}
	}
	return lost, freshest
}

// lost returns the nodes silent for lostAfter at now, but none when no
// node at all was heard from within half of it: that silence is the
// coordinator's own (its process or connection stalled), not every node
// lost at once.
func (l *liveness) lost(now time.Time) []protocol.Node {
	lost, freshest := l.silent(now)
	if freshest >= l.lostAfter/2 {
		return nil
	}
	return lost
}

// silence returns how long the node at place of role has been silent at
// now.
func (l *liveness) silence(role string, place int, now time.Time) time.Duration {
	return now.Sub(l.seen[role][place])
}
