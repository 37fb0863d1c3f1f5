package scheduler

import (
	"testing"

	"github.com/strads-go/strads/schmp"
)

func TestRotation(t *testing.T) {
	for _, p := range []int{1, 2, 3, 5} {
		r := Rotation{Workers: p}
		visits := make([][]int, p) // visits[worker][block]
		for w := range visits {
			visits[w] = make([]int, p)
		}
		for sub := uint64(0); sub < uint64(3*p); sub++ {
			held := make([]bool, p)
			for w := range p {
				b := r.Block(w, sub)
				if held[b] {
					t.Fatalf("P=%d sub-round %d: block %d held twice", p, sub, b)
				}
				held[b] = true
				if o := r.Owner(b, sub); o != w {
					t.Fatalf("P=%d sub-round %d: Owner(%d) = %d, want %d", p, sub, b, o, w)
				}
				visits[w][b]++
			}
		}
		for w := range p {
			for b := range p {
				if visits[w][b] != 3 {
					t.Fatalf("P=%d: worker %d visited block %d %d times in 3 sweeps", p, w, b, visits[w][b])
				}
			}
		}
	}
	if _, err := NewRotation(2, 0, 2); err == nil {
		t.Error("NewRotation with two parts: no error")
	}
}

// TestRotationSnapshot checks that a rotation restores from its own
// snapshot and refuses another rotation's and malformed bytes.
func TestRotationSnapshot(t *testing.T) {
	var _ schmp.Snapshotter = Rotation{}
	b, err := Rotation{Workers: 3}.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := (Rotation{Workers: 3}).Restore(b); err != nil {
		t.Errorf("restore: %v", err)
	}
	for _, bad := range [][]byte{nil, {}, {2, 3}, {1}, {1, 0x80}, append(b, 0), b[:1]} {
		if err := (Rotation{Workers: 3}).Restore(bad); err == nil {
			t.Errorf("restore of %x: no error", bad)
		}
	}
	if err := (Rotation{Workers: 2}).Restore(b); err == nil {
		t.Error("a rotation of 2 workers restored a snapshot of 3")
	}
}
