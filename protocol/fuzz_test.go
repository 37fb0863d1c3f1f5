package protocol

import (
	"testing"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// The type parameters of the fuzzed messages: shaped like the apps' (slices
// that travel as raw words, nested structs, pointers, maps).
type (
	fuzzPlan   struct{ Vars codec.Int32s }
	fuzzUpdate struct {
		Vars   codec.Int32s
		Delta  codec.Float64s
		Center *struct{ MeanX codec.Float64s }
	}
	fuzzPartial struct {
		Dot    codec.Float64s
		Rounds []uint64
	}
	fuzzSummary struct {
		Rows  int
		ColSq codec.Float64s
		Names map[string]float64
	}
)

// FuzzMessages decodes any bytes as every message of the protocol, as the
// nodes do (Open, then Validate): none may panic, and a message that Open
// takes must encode again.
func FuzzMessages(f *testing.F) {
	for _, m := range []any{
		Task[fuzzPlan, fuzzUpdate]{Header: Header{Type: TypeTask, Run: "r"}, Round: 3, Plan: fuzzPlan{Vars: codec.Int32s{1, 2}},
			Updates: []fuzzUpdate{{Vars: codec.Int32s{1}, Delta: codec.Float64s{0.5}}}, Report: true},
		Partial[fuzzPartial, fuzzSummary]{Header: Header{Type: TypePartial, Run: "r"}, Round: 3, Shard: 1,
			Partial: fuzzPartial{Dot: codec.Float64s{1, 2}}, Report: fuzzSummary{Rows: 2, ColSq: codec.Float64s{4}}, HasReport: true},
		PlanRequest{Header: Header{Type: TypePlanRequest, Run: "r"}, Round: 4,
			Feedback: []schmp.Feedback{{Round: 2, Vars: codec.Int32s{3}, Delta: codec.Float64s{0.1}}}},
		PlanReply[fuzzPlan]{Header: Header{Type: TypePlanReply, Run: "r"}, Round: 4, Part: 1, Plan: fuzzPlan{Vars: codec.Int32s{7}},
			Info: schmp.PlanInfo{Vars: codec.Int32s{7}, Candidates: 3, Selected: 1}},
		Ready[fuzzSummary]{Header: Header{Type: TypeReady, Run: "r"}, ID: "id", Shard: 1, Summary: fuzzSummary{Names: map[string]float64{"a": 1}}},
		JoinRequest{Header: Header{Type: TypeJoin}, ID: "id", Role: RoleScheduler, Manifest: Manifest{App: "lasso", Version: Version, Settings: map[string]string{"lambda": "0.1"}}},
		JoinReply{Shard: 1, Shards: 2, Run: "r", Settings: map[string]string{"tol": "0"}},
		Presence{Header: Header{Type: TypePresence}, Ticket: "t", Since: 1, Running: true},
	} {
		data, err := codec.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(m message, typ string, validate func() error) {
			run := "r"
			if typ == TypeJoin || typ == TypePresence {
				run = "" // sent before the node knows the run
			}
			if err := Open(data, m, typ, run); err != nil {
				if Reason(err) == "" {
					t.Fatalf("Open: %v has no drop reason", err)
				}
				return
			}
			_ = validate()
			if _, err := codec.Marshal(m); err != nil {
				t.Fatalf("a %s taken does not encode: %v", typ, err)
			}
		}
		var task Task[fuzzPlan, fuzzUpdate]
		check(&task, TypeTask, task.Validate)
		var p Partial[fuzzPartial, fuzzSummary]
		check(&p, TypePartial, func() error { return p.Validate(4) })
		var req PlanRequest
		check(&req, TypePlanRequest, func() error { return req.Validate(1, 3) })
		var rep PlanReply[fuzzPlan]
		check(&rep, TypePlanReply, func() error { return rep.Validate(3) })
		var ready Ready[fuzzSummary]
		check(&ready, TypeReady, func() error { return ready.Validate(4) })
		var join JoinRequest
		check(&join, TypeJoin, join.Validate)
		var pres Presence
		check(&pres, TypePresence, func() error { return nil })
		var reply JoinReply
		_ = codec.Unmarshal(data, &reply)
	})
}
