package lasso

import (
	"strings"
	"testing"

	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/wire"
)

// leaderCoordinator returns a column-layout coordinator started for 2
// workers over 4 rows and 10 columns (worker 0, the leader, owns [0, 5),
// worker 1 [5, 10)).
func leaderCoordinator(t *testing.T) *ColCoordinator {
	t.Helper()
	c := NewColCoordinator(Config{Data: "test.svm", Lambda: 0.1})
	shards := []ColSummary{
		{Rows: 4, Features: 10, First: 0, Cols: 5, Y: wire.Float64s{1, 2, 3, 4}, ColSum: make(wire.Float64s, 5)},
		{Rows: 4, Features: 10, First: 5, Cols: 5, ColSum: make(wire.Float64s, 5)},
	}
	if _, err := c.Start(shards); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLeaderPull checks the coordinator of several workers: only the
// leader changes β, over its columns and those handed to it; the others
// hand it columns of their own, each once, which the update forwards to
// the leader alone.
func TestLeaderPull(t *testing.T) {
	plan := ColPlan{Blocks: []wire.Int32s{{0, 1}, {5, 6}}}
	hand := func(ids ...int32) columnar.Columns {
		var c columnar.Columns
		for _, j := range ids {
			c.Add(j, []int32{0, 3}, []float64{1, 2})
		}
		return c
	}
	change := func(vars ...int32) ColPartial {
		p := ColPartial{Dir: make(wire.Float64s, 4), Vars: vars, Value: make(wire.Float64s, len(vars))}
		for k := range p.Value {
			p.Value[k] = 0.5
			p.Dir[k%4] = 0.5
		}
		return p
	}
	cases := []struct {
		name   string
		rounds [][]ColPartial // the partials of successive rounds
		errHas string         // of the last round; "" for no error
	}{
		{"handing", [][]ColPartial{{{}, {Cols: hand(5, 8)}}}, ""},
		{"the leader changes a handed column", [][]ColPartial{{{}, {Cols: hand(8)}}, {change(1, 8), {}}}, ""},
		{"the leader changes a column not handed", [][]ColPartial{{{}, {Cols: hand(8)}}, {change(1, 7), {}}}, "column 7, outside its columns [0, 5) and those it holds"},
		{"a worker changes β", [][]ColPartial{{{}, change(6)}}, "worker shard 1 changed the model, which only the leader (shard 0) does"},
		{"the leader hands itself columns", [][]ColPartial{{{Cols: hand(2)}, {}}}, "the leader, handed itself 1 columns"},
		{"a column handed twice", [][]ColPartial{{{}, {Cols: hand(8)}}, {{}, {Cols: hand(8)}}}, "column 8 a second time"},
		{"another's column", [][]ColPartial{{{}, {Cols: hand(3)}}}, "column 3, outside its columns [5, 10)"},
		{"bad data", [][]ColPartial{{{}, {Cols: columnar.Columns{IDs: []int32{6}, Ptr: []int32{0, 1}, Rows: []int32{4}, Vals: []float64{1}}}}}, "row 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := leaderCoordinator(t)
			var err error
			for r, parts := range tc.rounds {
				var u ColUpdate
				u, _, err = c.Pull(uint64(r+1), plan, parts)
				if err != nil {
					break
				}
				var n int
				for _, p := range parts {
					n += p.Cols.Len()
				}
				if u.Cols.Len() != n {
					t.Errorf("round %d: the update forwards %d columns, want %d", r+1, u.Cols.Len(), n)
				}
				if got := u.ForShard(1).Cols.Len(); got != 0 {
					t.Errorf("round %d: worker 1's part of the update has %d columns", r+1, got)
				}
				if got := u.ForShard(columnar.Leader).Cols.Len(); got != n {
					t.Errorf("round %d: the leader's part of the update has %d columns, want %d", r+1, got, n)
				}
			}
			switch {
			case tc.errHas == "" && err != nil:
				t.Fatalf("Pull: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Fatalf("Pull: %v, want an error containing %q", err, tc.errHas)
			}
		})
	}
}

// TestLeaderTakes checks what the leader accepts as handed columns: not
// its own, nor one it holds already.
func TestLeaderTakes(t *testing.T) {
	pr := newProblem(t, 12, 20, 3)
	cases := []struct {
		name   string
		ids    []int32
		errHas string
	}{
		{"foreign", []int32{11, 15}, ""},
		{"its own", []int32{2}, "column 2, which it holds already"},
		{"twice", []int32{11, 11}, "column 11 sent twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewColWorker(Config{Data: pr.path, Lambda: 0.1}, columnar.Leader, 2)
			if err != nil {
				t.Fatal(err)
			}
			var cols columnar.Columns
			for _, j := range tc.ids {
				cols.Add(j, []int32{1, 4}, []float64{0.5, -1})
			}
			err = w.Apply(ColUpdate{Alpha: 1, Lambda: 0.1, Cols: cols})
			switch {
			case tc.errHas == "" && err != nil:
				t.Fatalf("Apply: %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Fatalf("Apply: %v, want an error containing %q", err, tc.errHas)
			}
			if err == nil && w.held.Len() != len(tc.ids) {
				t.Errorf("the leader holds %d columns, want %d", w.held.Len(), len(tc.ids))
			}
		})
	}
}

// TestLeaderLineSearch checks that a change of the leader's that would
// raise the objective is not taken whole: the coordinator's line search
// shortens it (here to nothing: the objective rises from the start).
func TestLeaderLineSearch(t *testing.T) {
	c := leaderCoordinator(t)
	plan := ColPlan{Blocks: []wire.Int32s{{0, 1}, {5, 6}}}
	up := ColPartial{Dir: wire.Float64s{0.5, 0, 0, 0}, Vars: wire.Int32s{1}, Value: wire.Float64s{100}}
	u, _, err := c.Pull(1, plan, []ColPartial{up, {}})
	if err != nil {
		t.Fatal(err)
	}
	if u.Alpha != 0 || c.Shortened != 1 || c.Beta()[1] != 0 {
		t.Errorf("step %v (%d shortened), β_1 = %v: want the change dropped", u.Alpha, c.Shortened, c.Beta()[1])
	}
}
