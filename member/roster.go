package member

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/strads-go/strads/protocol"
)

// Roster is a job's admission of nodes, with no network: which
// node ID holds each place of each role, who waits as a spare (DESIGN
// "Spares and replacement"), and the data fingerprint that every node
// must agree on. It is not safe for concurrent use.
type Roster struct {
	manifest  protocol.Manifest
	limit     map[string]int // places, by role
	maxSpares int            // spares ever admitted, by role
	// places holds, by role, the place of each node ID that joined;
	// nodes and ids, by role and place, the node that holds it (Host and
	// PID empty, ID "" before any).
	places map[string]map[string]int
	nodes  map[string][]protocol.Node
	ids    map[string][]string
	// spares holds, by role, the spares admitted and not used, in the
	// order they came; spareCount the spares ever admitted.
	spares     map[string][]Spare
	spareCount map[string]int
	// started is set once every node is ready: joins are refused from
	// then on (spares aside), without failing the job.
	started bool
	// data is the data fingerprint that the nodes must agree on, and
	// dataFrom whose it is (the manifest's, or the first node's to send
	// one).
	data, dataFrom string
}

// Spare is a spare admitted: its ID and who it is.
type Spare struct {
	ID   string
	Run  string // the run id of its join, which its assignment carries
	Node protocol.Node
}

// NewRoster returns the Roster of a job of manifest with that many
// workers and scheduler parts, admitting up to spares spares of each role.
func NewRoster(manifest protocol.Manifest, workers, schedulers, spares int) *Roster {
	r := &Roster{
		manifest:   manifest,
		limit:      map[string]int{protocol.RoleWorker: workers, protocol.RoleScheduler: schedulers},
		maxSpares:  spares,
		places:     map[string]map[string]int{},
		nodes:      map[string][]protocol.Node{},
		ids:        map[string][]string{},
		spares:     map[string][]Spare{},
		spareCount: map[string]int{},
	}
	for role, k := range r.limit {
		r.places[role] = map[string]int{}
		r.nodes[role] = make([]protocol.Node, k)
		r.ids[role] = make([]string, k)
	}
	if manifest.Data != "" {
		r.data, r.dataFrom = manifest.Data, "the job's"
	}
	return r
}

// Verdict is what a join gets.
type Verdict int

const (
	// Admitted: a place, new, or the node's own again (a join sent twice).
	Admitted Verdict = iota
	// Spared: every place is taken, and the node waits as a spare.
	Spared
	// Mismatch: the node's manifest differs from the job's; the job fails,
	// since it would wait for that node in vain.
	Mismatch
	// SpareMismatch: a spare whose manifest differs, refused alone.
	SpareMismatch
	// Running: the job runs, and takes no join (a replay, or a node of
	// another job of this name); it goes on.
	Running
	// Full: every place is taken, and no more spares are admitted.
	Full
)

// Admission is the answer to a join: its Verdict, the place (admitted),
// and the mismatch (mismatch, spareMismatch).
type Admission struct {
	Verdict Verdict
	Place   int
	Err     error
}

// Join admits the node that sends req (valid), in the run run: each new
// ID gets the next free place of its role, an ID that joined before its
// own place again, and once every place is taken up to maxSpares IDs wait
// as spares, even once the job runs.
func (r *Roster) Join(req protocol.JoinRequest, run string) Admission {
	role := cmp.Or(req.Role, protocol.RoleWorker)
	have := r.places[role]
	place, ok := have[req.ID]
	free := !ok && len(have) < r.limit[role]
	again := slices.ContainsFunc(r.spares[role], func(s Spare) bool { return s.ID == req.ID })
	isSpare := !ok && !free && (again || r.spareCount[role] < r.maxSpares)
	var bad error
	if !r.started && (ok || free) || isSpare {
		bad = r.Check(protocol.Node{Role: role, Place: -1, Host: req.Host, PID: req.PID}, req.Manifest)
	}
	switch {
	case isSpare && bad != nil:
		return Admission{Verdict: SpareMismatch, Err: bad}
	case isSpare:
		if !again {
			r.spareCount[role]++
			r.spares[role] = append(r.spares[role], Spare{ID: req.ID, Run: run, Node: protocol.Node{Role: role, Host: req.Host, PID: req.PID}})
		}
		return Admission{Verdict: Spared}
	case r.started:
		return Admission{Verdict: Running}
	case bad != nil:
		return Admission{Verdict: Mismatch, Err: bad}
	case free:
		place = len(have)
		have[req.ID] = place
		fallthrough
	case ok:
		r.nodes[role][place] = protocol.Node{Role: role, Place: place, Host: req.Host, PID: req.PID}
		r.ids[role][place] = req.ID
		return Admission{Verdict: Admitted, Place: place}
	}
	return Admission{Verdict: Full}
}

// Check returns why node, whose manifest is m, must be refused, as a
// message that names it, or nil; a node's data fingerprint becomes the
// one that all must agree on if it is the first.
func (r *Roster) Check(node protocol.Node, m protocol.Manifest) error {
	if err := r.manifest.Check(m); err != nil {
		return fmt.Errorf("%s: %w", node, err)
	}
	switch {
	case m.Data == "":
	case r.data == "":
		r.data, r.dataFrom = m.Data, fmt.Sprintf("that of %s, the first to send one,", node)
	case m.Data != r.data:
		return fmt.Errorf("%s: data fingerprint is %s, %s is %s", node, protocol.Printable(m.Data), r.dataFrom, protocol.Printable(r.data))
	}
	return nil
}

// Holds says whether the node id holds place of role: a ready or a
// heartbeat counts only from it.
func (r *Roster) Holds(role string, place int, id string) bool {
	ids := r.ids[role]
	return place >= 0 && place < len(ids) && ids[place] != "" && ids[place] == id
}

// Who returns the node at place of role, as it joined (without host and
// pid if none has, or if there is no such place).
func (r *Roster) Who(role string, place int) protocol.Node {
	if nodes := r.nodes[role]; place >= 0 && place < len(nodes) && nodes[place].Role != "" {
		return nodes[place]
	}
	return protocol.Node{Role: role, Place: place}
}

// Start marks every node ready: joins are refused from now on, spares
// aside.
func (r *Roster) Start() { r.started = true }

// SparesFor says whether a spare of its role waits for each node of lost.
func (r *Roster) SparesFor(lost []protocol.Node) bool {
	for role, k := range byRole(lost) {
		if len(r.spares[role]) < k {
			return false
		}
	}
	return true
}

// Replace gives each place of lost to the first spare of its role waiting
// (sparesFor(lost) must hold), and returns the spares in the order of lost.
func (r *Roster) Replace(lost []protocol.Node) []Spare {
	taken := make([]Spare, len(lost))
	for i, l := range lost {
		s := r.spares[l.Role][0]
		r.spares[l.Role] = r.spares[l.Role][1:]
		s.Node.Place = l.Place
		r.ids[l.Role][l.Place] = s.ID
		r.nodes[l.Role][l.Place] = s.Node
		taken[i] = s
	}
	return taken
}

// Waiting returns every spare admitted and not used.
func (r *Roster) Waiting() []Spare {
	var all []Spare
	for _, role := range []string{protocol.RoleWorker, protocol.RoleScheduler} {
		all = append(all, r.spares[role]...)
	}
	return all
}

// byRole counts the nodes of each role.
func byRole(nodes []protocol.Node) map[string]int {
	k := map[string]int{}
	for _, l := range nodes {
		k[l.Role]++
	}
	return k
}

// Limit returns the number of places of role.
func (r *Roster) Limit(role string) int { return r.limit[role] }

// Data returns the data fingerprint that the nodes agree on ("" before
// any node or the manifest gave one).
func (r *Roster) Data() string { return r.data }
