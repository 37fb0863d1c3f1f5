package columnar

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/wire"
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
	fb := BlockPlan{Blocks: []wire.Int32s{{0, 2}, {7}}}.Feedback()
	if !slices.Equal(fb.Vars, []int32{0, 2, 7}) || !slices.Equal(fb.Delta, []float64{0, 0, 0}) {
		t.Errorf("feedback %v %v, want [0 2 7] [0 0 0]", fb.Vars, fb.Delta)
	}
}

// TestBlockSchedulerDataErrors checks that what the column count finds
// wrong with the data does not fail the scheduler's start, where it could
// overtake a worker's report of the first bad line, but its first plan.
func TestBlockSchedulerDataErrors(t *testing.T) {
	for _, tt := range []struct{ name, data, want string }{
		{"bad token", "1 1:1 2:3\nnan 1:1 x\n", ":2: token"},
		{"no features", "1\n2\n", "no features"},
		{"too few columns", "1 1:1\n2 1:3\n", "1 features are too few for 2 workers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "data.svm")
			if err := os.WriteFile(path, []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := NewBlockScheduler(path, BlockConfig{Engine: scheduler.Config{Policy: scheduler.Cyclic}}, 2, 0, 1)
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			if _, _, err := s.Schedule(1, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("first plan: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestBlockSchedulerNoBlocks checks BlockConfig.NoBlocks: empty blocks for
// every worker, without reading the file.
func TestBlockSchedulerNoBlocks(t *testing.T) {
	s, err := NewBlockScheduler(filepath.Join(t.TempDir(), "missing.svm"), BlockConfig{NoBlocks: true}, 3, 0, 1)
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
