package coordinator

import "time"

// Resending after a reconnect: at once, then after resendFirst, doubling
// up to resendMax, for a Timeout after the last reconnect. The other nodes
// reconnect on their own, some later than the coordinator, and a message
// sent to a node not yet back is lost again. (A message from a node is no
// sign that it is back: it may have waited in the coordinator's queue
// since before the outage.)
const (
	resendFirst = 100 * time.Millisecond
	resendMax   = 2 * time.Second
)

// resends is the schedule of the sends of the unanswered messages after
// a reconnect (DESIGN "NATS outages"). It is plain data: the node gives it
// the time.
type resends struct {
	on    bool      // sending again
	at    time.Time // the next send
	until time.Time // the last
	every time.Duration
}

// reconnected starts the schedule at now, for timeout.
func (r *resends) reconnected(now time.Time, timeout time.Duration) {
	*r = resends{on: true, at: now, until: now.Add(timeout), every: resendFirst}
}

// stop ends the schedule (a rollback forgets the old run's messages).
func (r *resends) stop() { r.on = false }

// next returns when the next send is due; ok is false when none is.
func (r *resends) next() (at time.Time, ok bool) { return r.at, r.on }

// due says whether the messages are to be sent again at now, and if so
// schedules the next send.
func (r *resends) due(now time.Time) bool {
	if !r.on || now.Before(r.at) {
		return false
	}
	if now.After(r.until) {
		r.on = false
		return false
	}
	r.at, r.every = now.Add(r.every), min(2*r.every, resendMax)
	return true
}
