package member

import (
	"testing"

	"github.com/strads-go/strads/protocol"
)

// TestPulseDropsReplays checks that the coordinator's beats count only
// when newer than the last one taken of their run: a beat sent again (a
// replay, valid under the job's key) does not keep a lost coordinator
// alive, while a new run (a rollback) starts its count again.
func TestPulseDropsReplays(t *testing.T) {
	var p Pulse
	beat := func(run string, seq uint64) protocol.Heartbeat {
		return protocol.Heartbeat{Header: protocol.Header{Type: protocol.TypeHeartbeat, Run: run}, Role: "coordinator", Seq: seq}
	}
	for i, tc := range []struct {
		h    protocol.Heartbeat
		want bool
	}{
		{beat("r1", 1), true}, {beat("r1", 2), true}, {beat("r1", 2), false}, {beat("r1", 1), false},
		{beat("r2", 1), true}, {beat("r1", 3), true}, {beat("r2", 1), false},
	} {
		if got := p.fresh(tc.h); got != tc.want {
			t.Errorf("step %d: beat %d of %s taken %v, want %v", i, tc.h.Seq, tc.h.Run, got, tc.want)
		}
	}
}
