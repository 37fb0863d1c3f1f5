package coordinator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strads-go/strads/protocol"
)

// TestRosterJoin drives the admission of joins, with no network: each step
// is a join (or the start of the job) and the admission it must get.
func TestRosterJoin(t *testing.T) {
	job := protocol.Manifest{App: "nnls", Version: protocol.Version, Settings: map[string]string{"lambda": "0.1"}}
	type step struct {
		start   bool   // mark the job started instead of a join
		id      string // the joining node's ID
		role    string
		data    string // its data fingerprint
		lambda  string // its --lambda, if it names one
		want    verdict
		place   int
		errLike string // for the mismatches: a part of the error
	}
	w := protocol.RoleWorker
	s := protocol.RoleScheduler
	tests := []struct {
		name            string
		workers, scheds int
		spares          int
		jobData         string
		steps           []step
	}{
		{"places in order, the same ID its own place again", 2, 1, 0, "", []step{
			{id: "a", role: w, want: admitted, place: 0},
			{id: "b", role: w, want: admitted, place: 1},
			{id: "a", role: w, want: admitted, place: 0},
			{id: "x", role: s, want: admitted, place: 0},
			{id: "c", role: w, want: full},
			{id: "y", role: s, want: full},
		}},
		{"an empty role is a worker", 1, 1, 0, "", []step{
			{id: "a", want: admitted, place: 0},
			{id: "b", want: full},
		}},
		{"spares up to the limit, the same spare again", 1, 1, 2, "", []step{
			{id: "a", role: w, want: admitted},
			{id: "b", role: w, want: spare},
			{id: "b", role: w, want: spare},
			{id: "c", role: w, want: spare},
			{id: "d", role: w, want: full},
			{id: "x", role: s, want: admitted},
			{id: "y", role: s, want: spare},
		}},
		{"once started: joins refused, spares still taken", 1, 1, 1, "", []step{
			{id: "a", role: w, want: admitted},
			{id: "x", role: s, want: admitted},
			{start: true},
			{id: "a", role: w, want: running},
			{id: "b", role: w, want: spare},
			{id: "c", role: w, want: running},
		}},
		{"another setting: the job fails, a spare alone is refused", 1, 1, 1, "", []step{
			{id: "a", role: w, lambda: "0.2", want: mismatch, errLike: `pid 1): setting "lambda" is 0.2, the job's is 0.1`},
			{id: "a", role: w, lambda: "0.1", want: admitted},
			{id: "b", role: w, lambda: "0.2", want: spareMismatch, errLike: "lambda"},
			{id: "b", role: w, want: spare},
		}},
		{"the first fingerprint is the one all agree on", 2, 1, 0, "", []step{
			{id: "x", role: s, want: admitted},
			{id: "a", role: w, data: "10-aaaa", want: admitted},
			{id: "b", role: w, data: "10-bbbb", want: mismatch, errLike: "data fingerprint is 10-bbbb, that of worker"},
			{id: "b", role: w, data: "10-aaaa", want: admitted, place: 1},
		}},
		{"the job's fingerprint first", 1, 1, 0, "10-cccc", []step{
			{id: "a", role: w, data: "10-aaaa", want: mismatch, errLike: "the job's is 10-cccc"},
			{id: "a", role: w, data: "10-cccc", want: admitted},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := job
			m.Data = tt.jobData
			r := newRoster(m, tt.workers, tt.scheds, tt.spares)
			for i, st := range tt.steps {
				if st.start {
					r.start()
					continue
				}
				req := protocol.JoinRequest{ID: st.id, Role: st.role, Host: "h", PID: i + 1,
					Manifest: protocol.Manifest{App: "nnls", Version: protocol.Version, Data: st.data}}
				if st.lambda != "" {
					req.Manifest.Settings = map[string]string{"lambda": st.lambda}
				}
				a := r.join(req, "run1")
				if a.verdict != st.want || st.want == admitted && a.place != st.place {
					t.Fatalf("step %d (%s): verdict %d place %d, want %d place %d", i, st.id, a.verdict, a.place, st.want, st.place)
				}
				switch {
				case st.errLike == "" && a.err != nil:
					t.Fatalf("step %d: unexpected error %v", i, a.err)
				case st.errLike != "" && (a.err == nil || !strings.Contains(a.err.Error(), st.errLike)):
					t.Fatalf("step %d: error %v, want one with %q", i, a.err, st.errLike)
				}
				if st.want == admitted {
					role := st.role
					if role == "" {
						role = w
					}
					if !r.holds(role, st.place, st.id) {
						t.Fatalf("step %d: %s does not hold %s %d", i, st.id, role, st.place)
					}
					if got := r.who(role, st.place); got.PID != i+1 || got.Place != st.place {
						t.Fatalf("step %d: who = %+v", i, got)
					}
				}
			}
		})
	}
}

// TestRosterReplace gives lost places to the spares waiting, first come
// first taken, and checks who holds them after.
func TestRosterReplace(t *testing.T) {
	m := protocol.Manifest{Version: protocol.Version}
	r := newRoster(m, 3, 1, 2)
	join := func(id, role string) admission {
		return r.join(protocol.JoinRequest{ID: id, Role: role, Manifest: m}, "run-"+id)
	}
	for i := range 3 {
		join(fmt.Sprint("w", i), protocol.RoleWorker)
	}
	join("s0", protocol.RoleScheduler)
	r.start()
	join("spare1", protocol.RoleWorker)
	join("spare2", protocol.RoleScheduler)
	join("spare3", protocol.RoleWorker)

	lost := []protocol.Node{{Role: protocol.RoleWorker, Place: 2}, {Role: protocol.RoleScheduler, Place: 0}, {Role: protocol.RoleWorker, Place: 0}}
	if !r.sparesFor(lost) {
		t.Fatal("sparesFor: three spares wait for three lost places")
	}
	if more := append(lost, protocol.Node{Role: protocol.RoleWorker, Place: 1}); r.sparesFor(more) {
		t.Fatal("sparesFor: two worker spares for three workers lost")
	}
	taken := r.replace(lost)
	want := []string{"spare1", "spare2", "spare3"}
	for i, s := range taken {
		if s.id != want[i] || s.run != "run-"+want[i] || s.node.Place != lost[i].Place {
			t.Errorf("spare %d: %+v, want %s at %v", i, s, want[i], lost[i])
		}
		if !r.holds(lost[i].Role, lost[i].Place, want[i]) {
			t.Errorf("%s does not hold %v", want[i], lost[i])
		}
	}
	if r.holds(protocol.RoleWorker, 2, "w2") {
		t.Error("the lost worker still holds its place")
	}
	if !r.holds(protocol.RoleWorker, 1, "w1") {
		t.Error("a survivor lost its place")
	}
	if w := r.waiting(); len(w) != 0 {
		t.Errorf("waiting after the replacement: %v", w)
	}
	if r.sparesFor(lost[:1]) {
		t.Error("sparesFor: none left")
	}
	// The limit counts the spares of a role ever admitted: no third worker.
	if a := join("spare4", protocol.RoleWorker); a.verdict != running {
		t.Errorf("a third worker spare: verdict %d, want running", a.verdict)
	}
	for _, bad := range []struct {
		role  string
		place int
	}{{protocol.RoleWorker, -1}, {protocol.RoleWorker, 3}, {"other", 0}} {
		if r.holds(bad.role, bad.place, "w1") {
			t.Errorf("holds(%s, %d)", bad.role, bad.place)
		}
	}
}

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
