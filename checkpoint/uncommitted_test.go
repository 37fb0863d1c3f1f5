package checkpoint_test

import (
	"context"
	"testing"
	"time"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/internal/testhelper"
)

// TestRemoveUncommitted removes the pieces of the checkpoints that no
// manifest kept names, before and after the last committed, and keeps
// those of the checkpoints kept.
func TestRemoveUncommitted(t *testing.T) {
	for _, tc := range []struct {
		name      string
		committed []uint64 // committed in this order, 2 kept
		stored    []uint64 // stored after, not committed
		kept      []uint64
	}{
		{"none committed", nil, []uint64{10, 20}, nil},
		{"after the last", []uint64{10, 20, 30}, []uint64{40}, []uint64{20, 30}},
		{"a resumed run's", []uint64{10, 20}, []uint64{15, 30}, []uint64{10, 20}},
		{"nothing to remove", []uint64{10}, nil, []uint64{10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := checkpoint.Open(ctx, testhelper.InProcess(t, true), "j", true)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.committed {
				if err := s.Commit(ctx, put(t, s, r, "coordinator", "worker-0"), 2); err != nil {
					t.Fatal(err)
				}
			}
			for _, r := range tc.stored {
				put(t, s, r, "worker-0")
			}
			if err := s.RemoveUncommitted(ctx); err != nil {
				t.Fatal(err)
			}
			kept := map[uint64]bool{}
			for _, r := range tc.kept {
				kept[r] = true
				m, err := s.Manifest(ctx, r)
				if err == nil {
					err = s.Verify(ctx, m)
				}
				if err != nil {
					t.Errorf("the checkpoint of round %d, kept: %v", r, err)
				}
			}
			for _, r := range append(tc.committed, tc.stored...) {
				_, _, err := s.Stat(ctx, r, "worker-0")
				if kept[r] != (err == nil) {
					t.Errorf("round %d: kept %t, its piece: %v", r, kept[r], err)
				}
			}
			if m, err := s.Latest(ctx); len(tc.kept) > 0 && (err != nil || m.Round != tc.kept[len(tc.kept)-1]) {
				t.Errorf("latest: round %d, %v", m.Round, err)
			}
		})
	}
}
