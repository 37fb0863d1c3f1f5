package coordinator

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/strads-go/strads/protocol"
)

// roster is the coordinator's admission of nodes, with no network: which
// node ID holds each place of each role, who waits as a spare (DESIGN
// "Spares and replacement"), and the data fingerprint that every node
// must agree on. It is not safe for concurrent use.
type roster struct {
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
	spares     map[string][]spareNode
	spareCount map[string]int
	// started is set once every node is ready: joins are refused from
	// then on (spares aside), without failing the job.
	started bool
	// data is the data fingerprint that the nodes must agree on, and
	// dataFrom whose it is (the manifest's, or the first node's to send
	// one).
	data, dataFrom string
}

// spareNode is a spare admitted (Options.Spares): its ID and who it is.
type spareNode struct {
	id   string
	run  string // the run id of its join, which its assignment carries
	node protocol.Node
}

// newRoster returns the roster of a job of manifest with that many
// workers and scheduler parts, admitting up to spares spares of each role.
func newRoster(manifest protocol.Manifest, workers, schedulers, spares int) *roster {
	r := &roster{
		manifest:   manifest,
		limit:      map[string]int{protocol.RoleWorker: workers, protocol.RoleScheduler: schedulers},
		maxSpares:  spares,
		places:     map[string]map[string]int{},
		nodes:      map[string][]protocol.Node{},
		ids:        map[string][]string{},
		spares:     map[string][]spareNode{},
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

// verdict is what a join gets.
type verdict int

const (
	// admitted: a place, new, or the node's own again (a join sent twice).
	admitted verdict = iota
	// spare: every place is taken, and the node waits as a spare.
	spare
	// mismatch: the node's manifest differs from the job's; the job fails,
	// since it would wait for that node in vain.
	mismatch
	// spareMismatch: a spare whose manifest differs, refused alone.
	spareMismatch
	// running: the job runs, and takes no join (a replay, or a node of
	// another job of this name); it goes on.
	running
	// full: every place is taken, and no more spares are admitted.
	full
)

// admission is the answer to a join: its verdict, the place (admitted),
// and the mismatch (mismatch, spareMismatch).
type admission struct {
	verdict verdict
	place   int
	err     error
}

// join admits the node that sends req (valid), in the run run: each new
// ID gets the next free place of its role, an ID that joined before its
// own place again, and once every place is taken up to maxSpares IDs wait
// as spares, even once the job runs.
func (r *roster) join(req protocol.JoinRequest, run string) admission {
	role := cmp.Or(req.Role, protocol.RoleWorker)
	have := r.places[role]
	place, ok := have[req.ID]
	free := !ok && len(have) < r.limit[role]
	again := slices.ContainsFunc(r.spares[role], func(s spareNode) bool { return s.id == req.ID })
	isSpare := !ok && !free && (again || r.spareCount[role] < r.maxSpares)
	var bad error
	if !r.started && (ok || free) || isSpare {
		bad = r.check(protocol.Node{Role: role, Place: -1, Host: req.Host, PID: req.PID}, req.Manifest)
	}
	switch {
	case isSpare && bad != nil:
		return admission{verdict: spareMismatch, err: bad}
	case isSpare:
		if !again {
			r.spareCount[role]++
			r.spares[role] = append(r.spares[role], spareNode{id: req.ID, run: run, node: protocol.Node{Role: role, Host: req.Host, PID: req.PID}})
		}
		return admission{verdict: spare}
	case r.started:
		return admission{verdict: running}
	case bad != nil:
		return admission{verdict: mismatch, err: bad}
	case free:
		place = len(have)
		have[req.ID] = place
		fallthrough
	case ok:
		r.nodes[role][place] = protocol.Node{Role: role, Place: place, Host: req.Host, PID: req.PID}
		r.ids[role][place] = req.ID
		return admission{verdict: admitted, place: place}
	}
	return admission{verdict: full}
}

// check returns why node, whose manifest is m, must be refused, as a
// message that names it, or nil; a node's data fingerprint becomes the
// one that all must agree on if it is the first.
func (r *roster) check(node protocol.Node, m protocol.Manifest) error {
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

// holds says whether the node id holds place of role: a ready or a
// heartbeat counts only from it.
func (r *roster) holds(role string, place int, id string) bool {
	ids := r.ids[role]
	return place >= 0 && place < len(ids) && ids[place] != "" && ids[place] == id
}

// who returns the node at place of role, as it joined (without host and
// pid if none has, or if there is no such place).
func (r *roster) who(role string, place int) protocol.Node {
	if nodes := r.nodes[role]; place >= 0 && place < len(nodes) && nodes[place].Role != "" {
		return nodes[place]
	}
	return protocol.Node{Role: role, Place: place}
}

// start marks every node ready: joins are refused from now on, spares
// aside.
func (r *roster) start() { r.started = true }

// sparesFor says whether a spare of its role waits for each node of lost.
func (r *roster) sparesFor(lost []protocol.Node) bool {
	for role, k := range byRole(lost) {
		if len(r.spares[role]) < k {
			return false
		}
	}
	return true
}

// replace gives each place of lost to the first spare of its role waiting
// (sparesFor(lost) must hold), and returns the spares in the order of lost.
func (r *roster) replace(lost []protocol.Node) []spareNode {
	taken := make([]spareNode, len(lost))
	for i, l := range lost {
		s := r.spares[l.Role][0]
		r.spares[l.Role] = r.spares[l.Role][1:]
		s.node.Place = l.Place
		r.ids[l.Role][l.Place] = s.id
		r.nodes[l.Role][l.Place] = s.node
		taken[i] = s
	}
	return taken
}

// waiting returns every spare admitted and not used.
func (r *roster) waiting() []spareNode {
	var all []spareNode
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

// readySet is the readies of one run (the job's start, or a rollback's):
// each place counts once.
type readySet struct {
	got   map[string][]bool // by role and place
	count int
}

func newReadySet(workers, schedulers int) *readySet {
	return &readySet{got: map[string][]bool{protocol.RoleWorker: make([]bool, workers), protocol.RoleScheduler: make([]bool, schedulers)}}
}

// places returns the number of places of role.
func (s *readySet) places(role string) int { return len(s.got[role]) }

// take counts the ready of place of role (a valid place), and reports
// false if it counted already.
func (s *readySet) take(role string, place int) bool {
	if s.got[role][place] {
		return false
	}
	s.got[role][place] = true
	s.count++
	return true
}

// all reports whether every place is ready.
func (s *readySet) all() bool {
	return s.count == len(s.got[protocol.RoleWorker])+len(s.got[protocol.RoleScheduler])
}

// missing returns the places of role not ready, in order.
func (s *readySet) missing(role string) []int {
	var m []int
	for i, ok := range s.got[role] {
		if !ok {
			m = append(m, i)
		}
	}
	return m
}

// String says how many nodes of each role are ready: "workers 1/2,
// schedulers 0/1".
func (s *readySet) String() string {
	var parts []string
	for _, role := range []string{protocol.RoleWorker, protocol.RoleScheduler} {
		k := s.places(role) - len(s.missing(role))
		parts = append(parts, fmt.Sprintf("%ss %d/%d", role, k, s.places(role)))
	}
	return strings.Join(parts, ", ")
}
