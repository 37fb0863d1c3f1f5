package pipeline

import (
	"fmt"

	"github.com/strads-go/strads/schmp"
)

// window is the bookkeeping of the rounds in flight (DESIGN "Pipelining"): which
// variables each one updates. It refuses a round that would update a
// variable already in flight, so that none is ever updated by two rounds at
// once. It is plain data: the core drives it.
type window struct {
	busy   map[int32]uint64   // variable → the round in flight that updates it
	rounds map[uint64][]int32 // round in flight → its variables

	maxRounds int // the most rounds in flight at once
	maxVars   int // the most variables in flight at once
}

func newWindow() *window {
	return &window{busy: map[int32]uint64{}, rounds: map[uint64][]int32{}}
}

// admit puts round in flight with its variables, or refuses it, unchanged,
// if one of them is already in flight or listed twice.
func (w *window) admit(round uint64, vars []int32) error {
	if _, ok := w.rounds[round]; ok {
		return fmt.Errorf("round %d is already in flight", round)
	}
	for k, j := range vars {
		if r, ok := w.busy[j]; ok {
			for _, v := range vars[:k] {
				delete(w.busy, v)
			}
			if r == round {
				return fmt.Errorf("the plan of round %d lists variable %d twice", round, j)
			}
			return fmt.Errorf("the plan of round %d updates variable %d, which round %d in flight updates too", round, j, r)
		}
		w.busy[j] = round
	}
	w.rounds[round] = vars
	w.maxRounds = max(w.maxRounds, len(w.rounds))
	w.maxVars = max(w.maxVars, len(w.busy))
	return nil
}

// release takes round out of flight.
func (w *window) release(round uint64) {
	for _, j := range w.rounds[round] {
		delete(w.busy, j)
	}
	delete(w.rounds, round)
}

// checkFeedback checks that fb, the feedback of round in flight, names
// every variable of the round's plan (PlanInfo.Vars), each once, and no
// other, with a change for each (DESIGN "Pipelining"): a variable left out would stay
// busy in a scheduler that waits for its feedback (scheduler.Dynamic),
// never to be planned again. Feedback of a plan without variables is
// empty.
func (w *window) checkFeedback(round uint64, fb schmp.Feedback) error {
	if len(fb.Delta) != len(fb.Vars) {
		return fmt.Errorf("the feedback names %d variables and %d changes", len(fb.Vars), len(fb.Delta))
	}
	seen := make(map[int32]struct{}, len(fb.Vars))
	for _, j := range fb.Vars {
		if r, ok := w.busy[j]; !ok || r != round {
			return fmt.Errorf("the feedback names variable %d, which the plan does not update", j)
		}
		if _, ok := seen[j]; ok {
			return fmt.Errorf("the feedback names variable %d twice", j)
		}
		seen[j] = struct{}{}
	}
	if vars := w.rounds[round]; len(seen) < len(vars) {
		for _, j := range vars {
			if _, ok := seen[j]; !ok {
				return fmt.Errorf("the feedback omits variable %d of the plan", j)
			}
		}
	}
	return nil
}
