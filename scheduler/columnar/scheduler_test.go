package columnar

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// TestScheduler checks that each part plans only its own range of the
// columns, with and without the dependency check, and refuses feedback for
// columns of another part.
func TestScheduler(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.svm")
	data := "1 1:1 3:2 10:1\n2 2:1 4:1\n0 5:3 9:1 10:0\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rho := range []float64{0.5, 1} {
		c := scheduler.Config{Policy: scheduler.Cyclic, Candidates: 4, Block: 2, Warmup: -1, Rho: rho, Workers: 1, Seed: 1}
		for part, want := range [][2]int32{{0, 5}, {5, 10}} { // 10 columns: the last non-zero is 10:1
			s, err := NewScheduler(path, false, c, part, 2)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int32]bool{}
			var fb []schmp.Feedback // every round is fed back with the next
			for round := uint64(1); round <= 10; round++ {
				p, info, err := s.Schedule(round, fb)
				if err != nil || len(p.Vars) == 0 || len(info.Vars) != len(p.Vars) {
					t.Fatalf("rho %v part %d round %d: %v %v %v", rho, part, round, p, info, err)
				}
				for _, j := range p.Vars {
					if j < want[0] || j >= want[1] {
						t.Fatalf("rho %v part %d planned column %d outside [%d, %d)", rho, part, j, want[0], want[1])
					}
					seen[j] = true
				}
				fb = []schmp.Feedback{{Round: round, Vars: p.Vars, Delta: make([]float64, len(p.Vars))}}
			}
			if len(seen) != int(want[1]-want[0]) {
				t.Errorf("rho %v part %d reached %d of %d columns", rho, part, len(seen), want[1]-want[0])
			}
			_, _, err = s.Schedule(99, []schmp.Feedback{{Round: 98, Vars: []int32{want[1]}, Delta: []float64{1}}})
			if err == nil || !strings.Contains(err.Error(), "outside") {
				t.Errorf("feedback for another part's column: %v", err)
			}
		}
	}
}
