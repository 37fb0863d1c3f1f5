package coordinator

import (
	"fmt"
	"strings"

	"github.com/strads-go/strads/protocol"
)

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
