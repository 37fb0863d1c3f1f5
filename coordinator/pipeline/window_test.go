package pipeline

import (
	"strings"
	"testing"
)

func TestWindow(t *testing.T) {
	w := newWindow()
	steps := []struct {
		admit   uint64 // 0: release instead
		release uint64
		vars    []int32
		err     string
	}{
		{admit: 1, vars: []int32{1, 2, 3}},
		{admit: 2, vars: []int32{4, 5}},
		{admit: 3, vars: []int32{6, 2}, err: "variable 2, which round 1 in flight"},
		{admit: 3, vars: []int32{7, 7}, err: "lists variable 7 twice"},
		{admit: 2, vars: []int32{9}, err: "round 2 is already in flight"},
		{release: 1},
		{admit: 3, vars: []int32{6, 2}}, // 6 was not left busy by the refusals
		{admit: 4, vars: []int32{1, 3, 7}},
		{release: 2},
		{release: 3},
		{admit: 5, vars: []int32{2, 4, 5, 6}},
	}
	for i, s := range steps {
		if s.admit == 0 {
			w.release(s.release)
			continue
		}
		err := w.admit(s.admit, s.vars)
		switch {
		case s.err == "" && err != nil:
			t.Fatalf("step %d: %v", i, err)
		case s.err != "" && (err == nil || !strings.Contains(err.Error(), s.err)):
			t.Fatalf("step %d: error %v, want %q", i, err, s.err)
		}
	}
	if w.maxRounds != 3 || w.maxVars != 7 {
		t.Errorf("at most %d rounds and %d variables in flight, want 3 and 7", w.maxRounds, w.maxVars)
	}
}
