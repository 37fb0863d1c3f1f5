package protocol

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// TestOpen checks that Open takes a message of its type and run, and
// tells garbage, messages of another type and of another run apart.
func TestOpen(t *testing.T) {
	task, _ := codec.Marshal(Task[int, int]{Header: Header{Type: TypeTask, Run: "r"}, Round: 2})
	for _, tc := range []struct {
		name string
		data []byte
		typ  string
		want string // the drop reason; "" to take it
	}{
		{"a task", task, TypeTask, ""},
		{"a task as a partial", task, TypePartial, DropGarbage},
		{"random bytes", []byte{0xc1, 0x00, 0xff}, TypeTask, DropGarbage},
		{"truncated", task[:len(task)/2], TypeTask, DropGarbage},
		{"another run", mustMarshal(t, Task[int, int]{Header: Header{Type: TypeTask, Run: "s"}}), TypeTask, DropForeign},
		{"no run", mustMarshal(t, Task[int, int]{Header: Header{Type: TypeTask}}), TypeTask, DropForeign},
	} {
		var m Task[int, int]
		if tc.typ == TypePartial {
			var p Partial[int, int]
			err := Open(tc.data, &p, tc.typ, "r")
			if got := Reason(err); got != tc.want {
				t.Errorf("%s: %v (%q), want %q", tc.name, err, got, tc.want)
			}
			continue
		}
		err := Open(tc.data, &m, tc.typ, "r")
		if got := Reason(err); got != tc.want || (tc.want == "") != (err == nil) {
			t.Errorf("%s: %v (%q), want %q", tc.name, err, got, tc.want)
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := codec.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestValidate checks the runtime's checks of every message: what it can
// know (rounds, places, variables listed once, finite feedback) makes an
// error matching ErrInvalid that says what is wrong.
func TestValidate(t *testing.T) {
	fb := func(round uint64, vars []int32, delta []float64) schmp.Feedback {
		return schmp.Feedback{Round: round, Vars: vars, Delta: delta}
	}
	for _, tc := range []struct {
		name string
		err  error
		want string // a part of the error; "" for none
	}{
		{"join", (&JoinRequest{ID: "a", Role: RoleScheduler}).Validate(), ""},
		{"join without an ID", (&JoinRequest{}).Validate(), "an ID of 0 bytes"},
		{"join of a long ID", (&JoinRequest{ID: strings.Repeat("a", 300)}).Validate(), "an ID of 300 bytes"},
		{"join as a coordinator", (&JoinRequest{ID: "a", Role: "coordinator"}).Validate(), `role "coordinator"`},
		{"ready", (&Ready[int]{ID: "a", Shard: 1}).Validate(2), ""},
		{"ready of shard 2 of 2", (&Ready[int]{ID: "a", Shard: 2}).Validate(2), "worker 2 in a job of 2"},
		{"ready of shard -1", (&Ready[int]{ID: "a", Shard: -1}).Validate(2), "worker -1"},
		{"plan request", (&PlanRequest{Round: 5, Feedback: []schmp.Feedback{fb(1, []int32{3, 1}, []float64{1, 2}), fb(3, nil, nil)}}).Validate(0, 2), ""},
		{"plan request of another part", (&PlanRequest{Round: 4}).Validate(0, 2), "round 4, which scheduler 0 of 2 does not plan"},
		{"plan request of round 0", (&PlanRequest{}).Validate(0, 1), "round 0"},
		{"stop", (&PlanRequest{Stop: true}).Validate(0, 1), ""},
		{"NaN feedback", (&PlanRequest{Round: 2, Feedback: []schmp.Feedback{fb(1, []int32{7}, []float64{math.NaN()})}}).Validate(0, 1), "variable 7 moved by NaN"},
		{"infinite feedback", (&PlanRequest{Round: 2, Feedback: []schmp.Feedback{fb(1, []int32{7}, []float64{math.Inf(-1)})}}).Validate(0, 1), "moved by -Inf"},
		{"feedback twice", (&PlanRequest{Round: 3, Feedback: []schmp.Feedback{fb(1, []int32{4, 4}, []float64{1, 1})}}).Validate(0, 1), "variable 4 listed twice"},
		{"feedback of variable -1", (&PlanRequest{Round: 3, Feedback: []schmp.Feedback{fb(1, []int32{-1}, []float64{1})}}).Validate(0, 1), "variable -1"},
		{"feedback of a later round", (&PlanRequest{Round: 3, Feedback: []schmp.Feedback{fb(3, nil, nil)}}).Validate(0, 1), "feedback of round 3"},
		{"feedback out of order", (&PlanRequest{Round: 9, Feedback: []schmp.Feedback{fb(3, nil, nil), fb(1, nil, nil)}}).Validate(0, 1), "feedback of round 1 (after round 3)"},
		{"feedback lengths", (&PlanRequest{Round: 3, Feedback: []schmp.Feedback{fb(1, []int32{1}, nil)}}).Validate(0, 1), "1 variables and 0 changes"},
		{"plan", (&PlanReply[int]{Round: 2, Part: 1, Info: schmp.PlanInfo{Vars: []int32{5, 2}}}).Validate(2), ""},
		{"plan listing a variable 4 times", (&PlanReply[int]{Round: 1, Info: schmp.PlanInfo{Vars: []int32{5, 5, 5, 5}}}).Validate(1), "variable 5 listed twice"},
		{"plan of part 3 of 2", (&PlanReply[int]{Round: 1, Part: 3}).Validate(2), "scheduler 3 in a job of 2"},
		{"plan of negative counts", (&PlanReply[int]{Round: 1, Info: schmp.PlanInfo{Selected: -1}}).Validate(1), "negative counts"},
		{"task", (&Task[int, int]{Round: 1, Check: true}).Validate(), ""},
		{"task of round 0", (&Task[int, int]{}).Validate(), "round 0"},
		{"abort", (&Task[int, int]{Abort: "x"}).Validate(), ""},
		{"check and stop", (&Task[int, int]{Round: 1, Check: true, Stop: true}).Validate(), "both a check and a stop"},
		{"partial", (&Partial[int, int]{Round: 1, Shard: 1}).Validate(2), ""},
		{"partial of shard 2 of 2", (&Partial[int, int]{Round: 1, Shard: 2}).Validate(2), "worker shard 2 in a job of 2"},
		{"partial of negative time", (&Partial[int, int]{Round: 1, Nanos: -1}).Validate(1), "-1 ns"},
		{"pass", (&Pass[int]{Round: 3, From: 1, To: 0}).Validate(0, 2), ""},
		{"pass of round 0", (&Pass[int]{From: 1}).Validate(0, 2), "a pass of round 0"},
		{"pass from worker 2 of 2", (&Pass[int]{Round: 1, From: 2}).Validate(0, 2), "from worker 2 to worker 0 in a job of 2"},
		{"pass from itself", (&Pass[int]{Round: 1, From: 0}).Validate(0, 2), "from worker 0 to worker 0"},
		{"pass for another worker", (&Pass[int]{Round: 1, From: 1, To: 2}).Validate(0, 3), "for worker 2, received by worker 0"},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v", tc.name, tc.err)
		case tc.want != "" && (!errors.Is(tc.err, ErrInvalid) || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("%s: %v, want ErrInvalid saying %q", tc.name, tc.err, tc.want)
		}
	}
}

// TestLedger checks that a ledger tells a replay from a conflict.
func TestLedger(t *testing.T) {
	l := NewLedger()
	a, b := l.Hash([]byte("a")), l.Hash([]byte("b"))
	if taken, err := l.Check(3, a); taken || err != nil {
		t.Fatalf("empty: %t, %v", taken, err)
	}
	l.Take(3, a)
	if taken, err := l.Check(3, a); !taken || err != nil {
		t.Errorf("replay: %t, %v", taken, err)
	}
	if taken, err := l.Check(3, b); !taken || !errors.Is(err, ErrConflict) {
		t.Errorf("conflict: %t, %v", taken, err)
	}
	if taken, err := l.Check(2, b); taken || err != nil {
		t.Errorf("another round: %t, %v", taken, err)
	}
}

// TestPlanPart checks PlanPart against the rule of DESIGN "Pipelining".
func TestPlanPart(t *testing.T) {
	for _, tc := range []struct {
		round uint64
		parts int
		want  int
	}{{1, 1, 0}, {1, 3, 0}, {3, 3, 2}, {4, 3, 0}, {7, 0, 0}} {
		if got := PlanPart(tc.round, tc.parts); got != tc.want {
			t.Errorf("PlanPart(%d, %d) = %d, want %d", tc.round, tc.parts, got, tc.want)
		}
	}
}

// TestSequences checks that a sender's sequence numbers are taken only
// when newer than every one taken from it, each sender apart.
func TestSequences(t *testing.T) {
	var q Sequences
	for i, tc := range []struct {
		sender string
		seq    uint64
		want   bool
	}{
		{"a", 1, true}, {"a", 1, false}, {"a", 3, true}, {"a", 2, false},
		{"b", 2, true}, {"a", 4, true}, {"b", 1, false}, {"b", 3, true},
	} {
		if got := q.Take(tc.sender, tc.seq); got != tc.want {
			t.Errorf("step %d: Take(%q, %d) = %v, want %v", i, tc.sender, tc.seq, got, tc.want)
		}
	}
}
