package protocol

import "time"

// Heartbeats (DESIGN "How a job fails"): once admitted, every node publishes a Heartbeat
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

// Heartbeat says that a node is alive: the node ID (a worker's or a
// scheduler's, as it joined; none for the coordinator) at Place of Role.
// Seq counts the sender's beats from 1: a beat not newer than one taken
// from the same sender (Sequences) is a replay, dropped, so that with a
// job key nobody keeps a dead node alive by sending its old beats again.
type Heartbeat struct {
	Header
	Role  string `msgpack:"role"`
	Place int    `msgpack:"place"`
	ID    string `msgpack:"id,omitempty"`
	Seq   uint64 `msgpack:"seq"`
}

// Sequences remembers the last sequence number taken from each sender of
// periodic messages (heartbeats), to drop replays. It is not safe for
// concurrent use.
type Sequences struct{ last map[string]uint64 }

// Take reports whether seq is newer than every one taken from sender, and
// if so takes it.
func (q *Sequences) Take(sender string, seq uint64) bool {
	if q.last == nil {
		q.last = map[string]uint64{}
	}
	if last, ok := q.last[sender]; ok && seq <= last {
		return false
	}
	q.last[sender] = seq
	return true
}
