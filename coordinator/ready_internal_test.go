package coordinator

import (
	"fmt"
	"testing"

	"github.com/strads-go/strads/protocol"
)

// TestReadySet counts readies once per place, and says who is missing.
func TestReadySet(t *testing.T) {
	s := newReadySet(3, 1)
	if s.all() || s.String() != "workers 0/3, schedulers 0/1" {
		t.Fatalf("empty: all %v, %q", s.all(), s)
	}
	w, sc := protocol.RoleWorker, protocol.RoleScheduler
	for _, st := range []struct {
		role  string
		place int
		took  bool
	}{{w, 1, true}, {w, 1, false}, {sc, 0, true}, {w, 0, true}, {sc, 0, false}} {
		if got := s.take(st.role, st.place); got != st.took {
			t.Fatalf("take(%s, %d) = %v, want %v", st.role, st.place, got, st.took)
		}
	}
	if s.all() || fmt.Sprint(s.missing(w)) != "[2]" || len(s.missing(sc)) != 0 || s.String() != "workers 2/3, schedulers 1/1" {
		t.Fatalf("all %v, missing %v and %v, %q", s.all(), s.missing(w), s.missing(sc), s)
	}
	s.take(w, 2)
	if !s.all() {
		t.Fatal("every place ready, and not all")
	}
}
