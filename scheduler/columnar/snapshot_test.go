package columnar

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/sealtest"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// sealed returns v sealed as a snapshot of kind, of this version.
func sealed(t *testing.T, kind string, v any) []byte {
	t.Helper()
	b, err := seal(kind, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// snapshotter is a scheduler's schmp.Snapshotter.
type snapshotter interface {
	Snapshot() ([]byte, error)
	Restore([]byte) error
}

// TestSchedulerSnapshot checks that a Scheduler restored from its
// snapshot plans as it does, and that a snapshot of another part, or of
// an engine that is not the part's, is an error.
func TestSchedulerSnapshot(t *testing.T) {
	path := testhelper.WriteFile(t, "x.svm", "1 1:1 3:2 10:1\n2 2:1 4:1\n0 5:3 9:1 10:0\n")
	c := scheduler.Config{Policy: scheduler.Priority, Gamma: 1, Eta: 0.01, Candidates: 3, Block: 2, Warmup: 1, Rho: 1, Workers: 1, Seed: 1}
	newPart := func(part int) *Scheduler {
		s, err := NewScheduler(path, false, c, part, 2)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s, twin, other := newPart(0), newPart(0), newPart(1)
	var fb []schmp.Feedback
	round := uint64(1)
	for ; round <= 4; round++ {
		p, _, err := s.Schedule(round, fb)
		if err != nil {
			t.Fatal(err)
		}
		fb = []schmp.Feedback{{Round: round, Vars: p.Vars, Delta: make([]float64, len(p.Vars))}}
	}
	b, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := twin.Restore(b); err != nil {
		t.Fatal(err)
	}
	for ; round <= 8; round++ {
		p, _, err := s.Schedule(round, fb)
		q, _, err2 := twin.Schedule(round, fb)
		if err != nil || err2 != nil || !slices.Equal(p.Vars, q.Vars) {
			t.Fatalf("round %d: %v (%v), restored %v (%v)", round, p.Vars, err, q.Vars, err2)
		}
		fb = []schmp.Feedback{{Round: round, Vars: p.Vars, Delta: make([]float64, len(p.Vars))}}
	}
	var st schedulerState
	if err := unseal(b, kindScheduler, &st); err != nil {
		t.Fatal(err)
	}
	badEngine := st
	badEngine.Engine = bytes.Clone(st.Engine)
	badEngine.Engine[len(badEngine.Engine)/2] ^= 0x10
	if err := other.Restore(b); err == nil || !strings.Contains(err.Error(), "columns [0, 5), this one has [5, 10)") {
		t.Errorf("another part's: %v", err)
	}
	if err := newPart(0).Restore(sealed(t, kindScheduler, badEngine)); err == nil || !strings.Contains(err.Error(), "scheduler/dynamic snapshot: checksum") {
		t.Errorf("an engine corrupted: %v", err)
	}
}

// TestRestoreSealed checks that the schedulers' snapshots are sealed: that
// their own body sealed again restores, and that a snapshot of another
// kind or version, an unsealed one of version 1, a truncated one or one
// with a byte changed is an error that names the kind, and leaves the
// scheduler as it was.
func TestRestoreSealed(t *testing.T) {
	path := testhelper.WriteFile(t, "x.svm", "1 1:1 3:2 10:1\n2 2:1 4:1\n")
	c := scheduler.Config{Policy: scheduler.Cyclic, Candidates: 4, Block: 2, Warmup: -1, Rho: 1, Workers: 1, Seed: 1}
	s, err := NewScheduler(path, false, c, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Schedule(1, nil); err != nil {
		t.Fatal(err)
	}
	bs, err := NewBlockScheduler(3, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind, other string
		s           snapshotter
	}{
		{kindScheduler, kindBlockScheduler, s},
		{kindBlockScheduler, kindScheduler, bs},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			sealed := sealtest.Sealed{Kind: tc.kind, Version: snapshotVersion, Others: []string{tc.other},
				Unsealed: map[string]any{"version": 1, "no_blocks": true}, Reencodes: true}
			sealed.Check(t, tc.s)
		})
	}
}
