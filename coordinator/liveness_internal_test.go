package coordinator

import (
	"slices"
	"testing"
	"time"

	"github.com/strads-go/strads/protocol"
)

// TestLiveness drives the coordinator's view of its nodes' heartbeats in
// virtual time: who is lost when, and when the silence is the
// coordinator's own.
func TestLiveness(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := func(k int) protocol.Node { return protocol.Node{Role: protocol.RoleWorker, Place: k} }
	s := func(k int) protocol.Node { return protocol.Node{Role: protocol.RoleScheduler, Place: k} }
	type step struct {
		beat []protocol.Node // heartbeats at ms
		all  bool            // heardAll at ms
		rst  bool            // reset at ms
		ms   int
		lost []protocol.Node // lost at ms, after the beats
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"not heard yet counts from the first look", []step{
			{ms: 0}, {ms: 999}, {beat: []protocol.Node{w(0), s(0)}, ms: 1000, lost: []protocol.Node{w(1)}},
		}},
		{"a node silent for lostAfter", []step{
			{beat: []protocol.Node{w(0), w(1), s(0)}, ms: 0},
			{beat: []protocol.Node{w(0), s(0)}, ms: 600},
			{beat: []protocol.Node{w(0), s(0)}, ms: 999},
			{beat: []protocol.Node{w(0)}, ms: 1000, lost: []protocol.Node{w(1)}},
			// No node heard for half of lostAfter: the silence is the
			// coordinator's, and nobody is lost until one is heard again.
			{ms: 1700},
			{beat: []protocol.Node{w(0)}, ms: 2000, lost: []protocol.Node{w(1), s(0)}},
		}},
		{"everyone silent: the coordinator's own stall", []step{
			{beat: []protocol.Node{w(0), w(1), s(0)}, ms: 0},
			{ms: 5000},
		}},
		{"a reconnect: silences count from it", []step{
			{beat: []protocol.Node{w(0), w(1), s(0)}, ms: 0},
			{all: true, ms: 900},
			{beat: []protocol.Node{w(0), s(0)}, ms: 1500},
			{beat: []protocol.Node{w(0), s(0)}, ms: 1899},
			{beat: []protocol.Node{w(0), s(0)}, ms: 1900, lost: []protocol.Node{w(1)}},
		}},
		{"a rollback's reset", []step{
			{beat: []protocol.Node{w(0), s(0)}, ms: 0},
			{rst: true, ms: 900},
			{beat: []protocol.Node{w(0), s(0)}, ms: 1200},
			{beat: []protocol.Node{w(0), s(0)}, ms: 2199},
			{beat: []protocol.Node{w(0), s(0)}, ms: 2200, lost: []protocol.Node{w(1)}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLiveness(2, 1, time.Second)
			for _, st := range tt.steps {
				now := at(st.ms)
				if st.all {
					l.heardAll(now)
				}
				if st.rst {
					l.reset()
				}
				for _, b := range st.beat {
					l.beat(b.Role, b.Place, now)
				}
				if st.all || st.rst {
					continue
				}
				if got := l.lost(now); !slices.Equal(got, st.lost) {
					t.Fatalf("at %d ms: lost %v, want %v", st.ms, got, st.lost)
				}
			}
		})
	}
	l := newLiveness(1, 1, time.Second)
	l.beat(protocol.RoleWorker, 0, at(0))
	if d := l.silence(protocol.RoleWorker, 0, at(1500)); d != 1500*time.Millisecond {
		t.Errorf("silence %v, want 1.5s", d)
	}
}
