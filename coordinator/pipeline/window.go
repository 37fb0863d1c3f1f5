package pipeline

import "fmt"

// window is the bookkeeping of the rounds in flight (DESIGN §3): which
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
