package node

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
)

// counter plans the number of plans it made, and can take snapshots.
type counter struct{ plans int }

func (c *counter) Schedule(round uint64, fb []schmp.Feedback) (int, schmp.PlanInfo, error) {
	c.plans++
	if round == 98 {
		return 0, schmp.PlanInfo{}, errors.New("no plan for round 98")
	}
	return c.plans, schmp.PlanInfo{Selected: len(fb)}, nil
}
func (c *counter) Snapshot() ([]byte, error) { return []byte{byte(c.plans)}, nil }
func (c *counter) Restore(b []byte) error    { c.plans = int(b[0]); return nil }

// TestCore checks a scheduler part's rules, part 1 of 3 (rounds 2, 5, 8,
// …), request by request: each of its rounds planned once, in turn; a
// replay answered again, never planned twice; a forgery, a request not
// the coordinator's, a rollback, a stop and an abort.
func TestCore(t *testing.T) {
	type step struct {
		req         protocol.PlanRequest
		coordinator bool
		plan        int    // the plan replied; 0: none
		drop        string // the drop, if any
		err         error  // errors.Is
		errText     string
		piece       bool
	}
	req := func(round uint64) protocol.PlanRequest { return protocol.PlanRequest{Round: round} }
	cases := []struct {
		name        string
		resume      uint64
		checkpoints bool
		steps       []step
	}{
		{"in turn", 0, false, []step{{req: req(2), coordinator: true, plan: 1}, {req: req(5), coordinator: true, plan: 2}}},
		{"a replay", 0, false, []step{{req: req(2), coordinator: true, plan: 1}, {req: req(2), coordinator: true, drop: protocol.DropDuplicate}, {req: req(5), coordinator: true, plan: 2}}},
		{"a forgery", 0, false, []step{{req: req(2), coordinator: true, plan: 1}, {req: protocol.PlanRequest{Round: 2, Checkpoint: 1}, coordinator: true, err: protocol.ErrConflict}}},
		{"ahead", 0, false, []step{{req: req(5), coordinator: true, drop: protocol.DropUnexpected}, {req: req(2), coordinator: true, plan: 1}}},
		{"not the coordinator's", 0, false, []step{{req: req(2), drop: protocol.DropUnexpected}, {req: req(2), coordinator: true, plan: 1}}},
		{"another part's", 0, false, []step{{req: req(3), coordinator: true, drop: protocol.DropUnexpected}}},
		{"invalid feedback", 0, false, []step{{req: protocol.PlanRequest{Round: 2, Feedback: []schmp.Feedback{{Round: 1}}}, coordinator: true, errText: "feedback of round 1"}}},
		{"a failed plan", 97, false, []step{{req: req(98), coordinator: true, errText: "no plan for round 98"}}},
		{"resumed", 6, false, []step{{req: req(5), coordinator: true, drop: protocol.DropUnexpected}, {req: req(8), coordinator: true, plan: 1}}},
		{"a checkpoint", 0, true, []step{{req: req(2), coordinator: true, plan: 1}, {req: protocol.PlanRequest{Round: 5, Checkpoint: 4}, coordinator: true, plan: 2, piece: true}}},
		{"a checkpoint of a job that takes none", 0, false, []step{{req: protocol.PlanRequest{Round: 2, Checkpoint: 1}, coordinator: true, plan: 1, drop: protocol.DropUnexpected}}},
		{"a rollback", 0, false, []step{{req: protocol.PlanRequest{Rollback: &protocol.Rollback{Round: 4, Run: "r2"}}, errText: "roll"}}},
		{"an invalid rollback", 0, false, []step{{req: protocol.PlanRequest{Rollback: &protocol.Rollback{Round: 4}}, drop: protocol.DropUnexpected}}},
		{"an abort", 0, false, []step{{req: protocol.PlanRequest{Stop: true, Abort: "disk full"}, err: protocol.ErrAborted}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCore[int](&counter{}, CoreConfig{Part: 1, Parts: 3, Resume: tc.resume, Checkpoints: tc.checkpoints})
			for i, s := range tc.steps {
				h := c.Hash(fmt.Appendf(nil, "%+v", s.req))
				out, d, err := c.Request(s.req, h, s.coordinator)
				switch {
				case s.err != nil || s.errText != "":
					if s.err != nil && !errors.Is(err, s.err) || s.errText != "" && (err == nil || !strings.Contains(err.Error(), s.errText)) {
						t.Fatalf("step %d: error %v, want %v %q", i, err, s.err, s.errText)
					}
					continue
				case err != nil:
					t.Fatalf("step %d: %v", i, err)
				}
				gotDrop := ""
				if d != nil {
					gotDrop = d.Reason
				} else if len(out.Drops) > 0 {
					gotDrop = out.Drops[0].Reason
				}
				if gotDrop != s.drop {
					t.Fatalf("step %d: drop %q, want %q", i, gotDrop, s.drop)
				}
				got := 0
				if out.Reply != nil {
					got = out.Reply.Plan
				}
				if got != s.plan || (out.Piece != nil) != s.piece {
					t.Fatalf("step %d: plan %d, piece %v; want %d, %v", i, got, out.Piece, s.plan, s.piece)
				}
			}
		})
	}
}

// TestCoreStop checks that a stop ends the part, planning nothing.
func TestCoreStop(t *testing.T) {
	s := &counter{}
	c := NewCore[int](s, CoreConfig{Part: 0, Parts: 1})
	out, d, err := c.Request(protocol.PlanRequest{Round: 4, Stop: true}, 3, true)
	if err != nil || d != nil || !out.Stop || out.Reply != nil || s.plans != 0 {
		t.Fatalf("stop: %+v, %v, %v, %d plans", out, d, err, s.plans)
	}
}
