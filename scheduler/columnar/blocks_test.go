package columnar

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/strads-go/strads/codec"
)

// TestCheckChange checks a column-layout worker's change against its
// columns, its values and the rows: worker 1 of 2 owns columns [5, 10).
func TestCheckChange(t *testing.T) {
	cases := []struct {
		name   string
		vars   []int32
		vals   []float64
		dir    int
		moved  bool
		errHas string // "" for no error
	}{
		{"no change", nil, nil, 0, false, ""},
		{"a change", []int32{5, 9}, []float64{1, -2}, 4, true, ""},
		{"values without a direction", []int32{6}, []float64{0}, 0, false, ""},
		{"fewer values", []int32{5, 6}, []float64{1}, 4, false, "2 variables and 1 values"},
		{"another's column", []int32{4}, []float64{1}, 4, false, "column 4, outside its columns [5, 10)"},
		{"past the columns", []int32{10}, []float64{1}, 4, false, "outside"},
		{"NaN", []int32{7}, []float64{math.NaN()}, 4, false, "set column 7 to NaN"},
		{"Inf", []int32{7}, []float64{math.Inf(-1)}, 4, false, "to -Inf"},
		{"short direction", []int32{7}, []float64{1}, 3, false, "direction over 3 rows, want 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			moved, err := CheckChange(1, 2, 10, 4, tc.vars, tc.vals, tc.dir)
			switch {
			case tc.errHas == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Fatalf("error %v, want one with %q", err, tc.errHas)
			case moved != tc.moved:
				t.Errorf("moved %v, want %v", moved, tc.moved)
			}
		})
	}
}

// TestPlanFeedback checks that a plan's feedback names its columns in order,
// with no change yet.
func TestPlanFeedback(t *testing.T) {
	fb := BlockPlan{Blocks: []codec.Int32s{{0, 2}, {7}}}.Feedback()
	if !slices.Equal(fb.Vars, []int32{0, 2, 7}) || !slices.Equal(fb.Delta, []float64{0, 0, 0}) {
		t.Errorf("feedback %v %v, want [0 2 7] [0 0 0]", fb.Vars, fb.Delta)
	}
}

// TestBlockScheduler checks the column layout's plans: empty blocks for
// every worker.
func TestBlockScheduler(t *testing.T) {
	s, err := NewBlockScheduler(3, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for round := uint64(1); round <= 2; round++ {
		p, info, err := s.Schedule(round, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Blocks) != 3 || len(info.Vars) != 0 || info.Selected != 0 {
			t.Fatalf("round %d: plan %+v, info %+v: want 3 empty blocks", round, p, info)
		}
		for k, b := range p.Blocks {
			if len(b) != 0 {
				t.Errorf("round %d: worker %d's block %v", round, k, b)
			}
		}
	}
}

// TestBlockSchedulerSnapshot checks the scheduler's snapshots: one restores
// into a scheduler for as many workers; one for other workers, or an
// unsealed one of version 1 (with or without the fields of the engines it
// could run), is an error. A job takes one scheduler part.
func TestBlockSchedulerSnapshot(t *testing.T) {
	s, err := NewBlockScheduler(2, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(b); err != nil {
		t.Errorf("own snapshot: %v", err)
	}
	// The encoding of version 1 of the block scheduler's state, bare
	// msgpack.
	type old struct {
		Version  uint8        `msgpack:"version"`
		NoBlocks bool         `msgpack:"no_blocks"`
		Workers  int          `msgpack:"workers"`
		First    codec.Int32s `msgpack:"first"`
		Vars     codec.Int32s `msgpack:"vars"`
		Engines  [][]byte     `msgpack:"engines"`
	}
	bare := func(st old) []byte {
		b, err := codec.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name, errHas string
		b            []byte
	}{
		{"other workers", "for 3 workers, this one is for 2", sealed(t, kindBlockScheduler, blockState{Workers: 3})},
		{"version 1, no blocks", "checksum", bare(old{Version: 1, NoBlocks: true, Workers: 2})},
		{"version 1, engines", "checksum", bare(old{Version: 1, Workers: 2, First: codec.Int32s{0, 5}, Vars: codec.Int32s{5, 5}, Engines: [][]byte{{1}, {2}}})},
		{"bad bytes", "too short", []byte{0xc1}},
	} {
		err = s.Restore(tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.errHas)
		}
	}
	if _, err := NewBlockScheduler(2, 0, 2); err == nil {
		t.Error("two scheduler parts: no error")
	}
	if _, err := NewBlockScheduler(0, 0, 1); err == nil {
		t.Error("no workers: no error")
	}
}
