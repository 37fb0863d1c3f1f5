package member

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strads-go/strads/protocol"
)

// TestRosterJoin drives the Admission of joins, with no network: each step
// is a join (or the start of the job) and the Admission it must get.
func TestRosterJoin(t *testing.T) {
	job := protocol.Manifest{App: "nnls", Version: protocol.Version, Settings: map[string]string{"lambda": "0.1"}}
	type step struct {
		start   bool   // mark the job started instead of a join
		id      string // the joining node's ID
		role    string
		data    string // its data fingerprint
		lambda  string // its --lambda, if it names one
		want    Verdict
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
			{id: "a", role: w, want: Admitted, place: 0},
			{id: "b", role: w, want: Admitted, place: 1},
			{id: "a", role: w, want: Admitted, place: 0},
			{id: "x", role: s, want: Admitted, place: 0},
			{id: "c", role: w, want: Full},
			{id: "y", role: s, want: Full},
		}},
		{"an empty role is a worker", 1, 1, 0, "", []step{
			{id: "a", want: Admitted, place: 0},
			{id: "b", want: Full},
		}},
		{"spares up to the limit, the same spare again", 1, 1, 2, "", []step{
			{id: "a", role: w, want: Admitted},
			{id: "b", role: w, want: Spared},
			{id: "b", role: w, want: Spared},
			{id: "c", role: w, want: Spared},
			{id: "d", role: w, want: Full},
			{id: "x", role: s, want: Admitted},
			{id: "y", role: s, want: Spared},
		}},
		{"once started: joins refused, spares still taken", 1, 1, 1, "", []step{
			{id: "a", role: w, want: Admitted},
			{id: "x", role: s, want: Admitted},
			{start: true},
			{id: "a", role: w, want: Running},
			{id: "b", role: w, want: Spared},
			{id: "c", role: w, want: Running},
		}},
		{"another setting: the job fails, a spare alone is refused", 1, 1, 1, "", []step{
			{id: "a", role: w, lambda: "0.2", want: Mismatch, errLike: `pid 1): setting "lambda" is 0.2, the job's is 0.1`},
			{id: "a", role: w, lambda: "0.1", want: Admitted},
			{id: "b", role: w, lambda: "0.2", want: SpareMismatch, errLike: "lambda"},
			{id: "b", role: w, want: Spared},
		}},
		{"the first fingerprint is the one all agree on", 2, 1, 0, "", []step{
			{id: "x", role: s, want: Admitted},
			{id: "a", role: w, data: "10-aaaa", want: Admitted},
			{id: "b", role: w, data: "10-bbbb", want: Mismatch, errLike: "data fingerprint is 10-bbbb, that of worker"},
			{id: "b", role: w, data: "10-aaaa", want: Admitted, place: 1},
		}},
		{"the job's fingerprint first", 1, 1, 0, "10-cccc", []step{
			{id: "a", role: w, data: "10-aaaa", want: Mismatch, errLike: "the job's is 10-cccc"},
			{id: "a", role: w, data: "10-cccc", want: Admitted},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := job
			m.Data = tt.jobData
			r := NewRoster(m, tt.workers, tt.scheds, tt.spares)
			for i, st := range tt.steps {
				if st.start {
					r.Start()
					continue
				}
				req := protocol.JoinRequest{ID: st.id, Role: st.role, Host: "h", PID: i + 1,
					Manifest: protocol.Manifest{App: "nnls", Version: protocol.Version, Data: st.data}}
				if st.lambda != "" {
					req.Manifest.Settings = map[string]string{"lambda": st.lambda}
				}
				a := r.Join(req, "run1")
				if a.Verdict != st.want || st.want == Admitted && a.Place != st.place {
					t.Fatalf("step %d (%s): verdict %d place %d, want %d place %d", i, st.id, a.Verdict, a.Place, st.want, st.place)
				}
				switch {
				case st.errLike == "" && a.Err != nil:
					t.Fatalf("step %d: unexpected error %v", i, a.Err)
				case st.errLike != "" && (a.Err == nil || !strings.Contains(a.Err.Error(), st.errLike)):
					t.Fatalf("step %d: error %v, want one with %q", i, a.Err, st.errLike)
				}
				if st.want == Admitted {
					role := st.role
					if role == "" {
						role = w
					}
					if !r.Holds(role, st.place, st.id) {
						t.Fatalf("step %d: %s does not hold %s %d", i, st.id, role, st.place)
					}
					if got := r.Who(role, st.place); got.PID != i+1 || got.Place != st.place {
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
	r := NewRoster(m, 3, 1, 2)
	join := func(id, role string) Admission {
		return r.Join(protocol.JoinRequest{ID: id, Role: role, Manifest: m}, "run-"+id)
	}
	for i := range 3 {
		join(fmt.Sprint("w", i), protocol.RoleWorker)
	}
	join("s0", protocol.RoleScheduler)
	r.Start()
	join("spare1", protocol.RoleWorker)
	join("spare2", protocol.RoleScheduler)
	join("spare3", protocol.RoleWorker)

	lost := []protocol.Node{{Role: protocol.RoleWorker, Place: 2}, {Role: protocol.RoleScheduler, Place: 0}, {Role: protocol.RoleWorker, Place: 0}}
	if !r.SparesFor(lost) {
		t.Fatal("sparesFor: three spares wait for three lost places")
	}
	if more := append(lost, protocol.Node{Role: protocol.RoleWorker, Place: 1}); r.SparesFor(more) {
		t.Fatal("sparesFor: two worker spares for three workers lost")
	}
	taken := r.Replace(lost)
	want := []string{"spare1", "spare2", "spare3"}
	for i, s := range taken {
		if s.ID != want[i] || s.Run != "run-"+want[i] || s.Node.Place != lost[i].Place {
			t.Errorf("spare %d: %+v, want %s at %v", i, s, want[i], lost[i])
		}
		if !r.Holds(lost[i].Role, lost[i].Place, want[i]) {
			t.Errorf("%s does not hold %v", want[i], lost[i])
		}
	}
	if r.Holds(protocol.RoleWorker, 2, "w2") {
		t.Error("the lost worker still holds its place")
	}
	if !r.Holds(protocol.RoleWorker, 1, "w1") {
		t.Error("a survivor lost its place")
	}
	if w := r.Waiting(); len(w) != 0 {
		t.Errorf("waiting after the replacement: %v", w)
	}
	if r.SparesFor(lost[:1]) {
		t.Error("sparesFor: none left")
	}
	// The limit counts the spares of a role ever admitted: no third worker.
	if a := join("spare4", protocol.RoleWorker); a.Verdict != Running {
		t.Errorf("a third worker spare: verdict %d, want running", a.Verdict)
	}
	for _, bad := range []struct {
		role  string
		place int
	}{{protocol.RoleWorker, -1}, {protocol.RoleWorker, 3}, {"other", 0}} {
		if r.Holds(bad.role, bad.place, "w1") {
			t.Errorf("holds(%s, %d)", bad.role, bad.place)
		}
	}
}
