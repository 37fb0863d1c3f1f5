package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/strads-go/strads/schmp"
)

// Checkpointer takes a job's checkpoints with a core (Config.Checkpoints,
// DESIGN "Checkpoints"). The checkpoint of round C is a cut of every role's state:
//
//   - the coordinator's: its app's state right after the pull of round C
//     (Save), and the core's (Snapshot, in the CheckpointTaken action);
//   - each worker's: its state when it takes task C+1, which carries
//     Task.Checkpoint = C, before it applies the task's updates: the state
//     after it pushed round C;
//   - each scheduler part's: its state when it takes its first plan
//     request of a round after C, which carries PlanRequest.Checkpoint =
//     C, before it plans: having planned its rounds up to C and none after.
//
// The checkpoint of round C is decided when the plan of round C+1 is asked
// for, the first of these events (at depth D, at the pull of round C+1−D,
// or at Start): with rounds in flight, task C+1 may be sent before round C
// is pulled. A resumed core (Resume) asks again for the plans of the rounds
// after C that were asked for, with the same requests, and sends their
// tasks again: nothing of round C and before is sent again, and the
// workers and parts restored from their pieces compute the same plans and
// partials as the first time.
type Checkpointer interface {
	// Due reports whether to take the checkpoint of round, asked when the
	// plan of round+1 is asked for, once a round at most, and never while
	// another checkpoint's cut is under way (its requests and task not all
	// sent, or its round not pulled). A checkpoint that Due took may still
	// be abandoned (the CheckpointAbandoned action): a stop decided before
	// its cut is complete.
	Due(round uint64, now time.Time) bool
	// Save returns the app's coordinator's state (schmp.Snapshotter) at
	// the cut of the checkpoint of round, right after its pull. An error
	// fails the job.
	Save(round uint64) ([]byte, error)
}

// Snapshot is a core's state at a checkpoint's cut (DESIGN "Checkpoints"): just after
// the pull of round Round, with no stop decided, the plans of the rounds
// after it up to Round+Depth at most asked for, and some of those rounds
// perhaps sent already. Together with the app's state at the
// same cut (Checkpointer), it is all that a resumed job needs to go on as
// the job it was taken from would have: Resume builds a core that asks for
// the same plans with the same requests and sends the same tasks.
//
// A Snapshot is a plain value that msgpack encodes (U being a message
// type), so that it can be stored and read back by another process.
type Snapshot[U any] struct {
	// Round is the round just pulled, the cut's.
	Round uint64 `msgpack:"round"`
	// Elapsed is the time from Start to the pull of Round, from which a
	// resumed job's clock goes on.
	Elapsed time.Duration `msgpack:"elapsed"`
	// Through is the last round whose update the task of Round carried
	// (or an earlier task): the workers hold the state after it at the
	// cut.
	Through uint64 `msgpack:"through"`
	// Pending holds the updates that the tasks after Round carry, of the
	// rounds PendingRounds (0: Start's), in order: those of rounds up to
	// Round that task Round had not carried.
	Pending       []U      `msgpack:"pending"`
	PendingRounds []uint64 `msgpack:"pending_rounds"`
	// Asks holds the feedback of the plan requests of rounds Round+1,
	// Round+2, …, every one asked for at the cut, in order.
	Asks [][]schmp.Feedback `msgpack:"asks"`
	// Feedback holds, by scheduler part, the feedback not sent yet.
	Feedback [][]schmp.Feedback `msgpack:"fb"`
	// Marks holds when the last rounds up to Round were pulled, and the
	// updates made by then, which date the reports still to come.
	Marks []Mark `msgpack:"marks"`
	// The stop tests' memory: the previous report's objective and the
	// round it showed, the lowest objective and its round.
	Prev      float64 `msgpack:"prev"`
	PrevRound uint64  `msgpack:"prev_round"`
	HavePrev  bool    `msgpack:"have_prev"`
	Low       float64 `msgpack:"low"`
	LowRound  uint64  `msgpack:"low_round"`
	HaveLow   bool    `msgpack:"have_low"`
	// The status: updates and candidates counted, the last report, every
	// report, the stops refuted, the most rounds and variables in flight.
	Updates         int64          `msgpack:"updates"`
	Candidates      int64          `msgpack:"candidates"`
	Rejected        int64          `msgpack:"rejected"`
	Deferred        int64          `msgpack:"deferred"`
	Capacity        int64          `msgpack:"capacity"`
	Final           schmp.Progress `msgpack:"final"`
	Trace           []schmp.Sample `msgpack:"trace"`
	Refuted         int            `msgpack:"refuted"`
	MaxInFlight     int            `msgpack:"max_in_flight"`
	MaxVarsInFlight int            `msgpack:"max_vars_in_flight"`
}

// Mark is when a round was pulled (the time since Start), and the number
// of variable updates made up to it.
type Mark struct {
	Round   uint64        `msgpack:"round"`
	Time    time.Duration `msgpack:"time"`
	Updates int64         `msgpack:"updates"`
}

// cut is a checkpoint under way in the core: decided (Checkpointer.Due),
// and not yet all of the requests and the task that carry it sent, or its
// round not yet pulled.
type cut struct {
	round uint64
	taken bool   // the round pulled and the snapshot taken
	task  bool   // task round+1 sent
	parts []bool // the scheduler parts whose next request is still to carry it
}

// complete reports whether every piece of the cut has been asked for.
func (k *cut) complete() bool {
	return k.taken && k.task && !slices.Contains(k.parts, true)
}

// decide asks Config.Checkpoints whether to take the checkpoint of round,
// as the plan of round+1 is about to be asked for: only while no other is
// under way and no stop is decided, and before round is pulled, or as it
// is pulled (pulling: at depth 1, its pull asks for round+1).
func (c *Core[P, R, U, S]) decide(round uint64, pulling bool, now time.Time) {
	k := c.cfg.Checkpoints
	if k == nil || c.cut != nil || round == 0 || round < c.pulled || round == c.pulled && !pulling ||
		c.st.Reason != "" || c.check != nil || c.final != nil {
		return
	}
	if !k.Due(round, now) {
		return
	}
	c.cut = &cut{round: round, parts: make([]bool, c.cfg.Parts)}
	for p := range c.cut.parts {
		c.cut.parts[p] = true
	}
}

// abandonCut gives up the checkpoint under way, if any, that is not
// complete: a stop decided, whose rounds the parts may never be asked for,
// or whose cut comes after the stop's decision.
func (c *Core[P, R, U, S]) abandonCut() {
	if c.cut == nil || c.cut.complete() {
		return
	}
	c.ready = append(c.ready, Action[P, U]{Kind: CheckpointAbandoned, Round: c.cut.round})
	c.cut = nil
}

// takeCut takes the snapshot of the checkpoint under way, whose round was
// just pulled, with the app's state.
func (c *Core[P, R, U, S]) takeCut(now time.Time) error {
	k := c.cut
	if c.st.Reason != "" {
		c.abandonCut()
		return nil
	}
	app, err := c.cfg.Checkpoints.Save(k.round)
	if err != nil {
		return fmt.Errorf("round %d: checkpoint: %w", k.round, err)
	}
	s := &Snapshot[U]{
		Round: c.pulled, Elapsed: c.marks[c.pulled].time, Through: c.through, Feedback: slices.Clone(c.fb),
		Prev: c.prev, PrevRound: c.prevRound, HavePrev: c.havePrev,
		Low: c.low, LowRound: c.lowRound, HaveLow: c.haveLow,
		Updates: c.st.Updates, Candidates: c.st.Candidates, Final: c.st.Final, Trace: c.st.Trace,
		Rejected: c.st.Rejected, Deferred: c.st.Deferred, Capacity: c.st.Capacity,
		Refuted: c.st.Refuted, MaxInFlight: c.win.maxRounds, MaxVarsInFlight: c.win.maxVars,
	}
	// The updates that the tasks after the cut carry: those that the
	// rounds sent already took, then those waiting.
	for r := c.pulled + 1; r <= c.sent; r++ {
		f := c.flight[r]
		if r == c.pulled+1 {
			s.Through = f.from
		}
		for _, p := range f.took {
			s.Pending, s.PendingRounds = append(s.Pending, p.u), append(s.PendingRounds, p.round)
		}
	}
	for _, p := range c.updates {
		s.Pending, s.PendingRounds = append(s.Pending, p.u), append(s.PendingRounds, p.round)
	}
	for r := c.pulled + 1; r <= c.last; r++ {
		s.Asks = append(s.Asks, c.requests[r])
	}
	for _, r := range slices.Sorted(maps.Keys(c.marks)) {
		m := c.marks[r]
		s.Marks = append(s.Marks, Mark{Round: r, Time: m.time, Updates: m.updates})
	}
	k.taken = true
	c.ready = append(c.ready, Action[P, U]{Kind: CheckpointTaken, Round: k.round, Snapshot: s, App: app})
	if k.complete() {
		c.cut = nil
	}
	return nil
}

// Resume returns a core, as New does, that goes on from snapshot s, taken
// from a core of the same configuration, at now: its clock reads
// s.Elapsed at now. Its Ready holds the plan requests of the rounds after
// s.Round that the core s was taken from had asked for, the same requests
// (without their Checkpoint); it sends their tasks again as the plans
// come. Start must not be called.
//
// app must hold the state of the snapshot's cut (restored with
// schmp.Snapshotter), and so must the workers and the scheduler parts, to
// which nothing of s.Round and before is sent again.
func Resume[P, R, U, S any](cfg Config, app schmp.Coordinator[P, R, U, S], hooks any, s Snapshot[U], now time.Time) (*Core[P, R, U, S], error) {
	c, err := New(cfg, app, hooks)
	if err != nil {
		return nil, err
	}
	last := s.Round + uint64(len(s.Asks))
	switch {
	case s.Round == 0:
		return nil, errors.New("pipeline: resume from round 0")
	case len(s.Feedback) != c.cfg.Parts:
		return nil, fmt.Errorf("pipeline: the snapshot has feedback for %d scheduler parts, the job has %d", len(s.Feedback), c.cfg.Parts)
	case len(s.Asks) == 0:
		// Every cut has round Round+1 asked for: a snapshot of the
		// format before checkpoints with rounds in flight has none.
		return nil, fmt.Errorf("pipeline: the snapshot of round %d asked for no plan (taken by an older version of strads, whose snapshots this one does not read?)", s.Round)
	case len(s.Asks) > c.cfg.Depth:
		return nil, fmt.Errorf("pipeline: the snapshot of round %d asked for %d plans, the job's depth is %d", s.Round, len(s.Asks), c.cfg.Depth)
	case len(s.Pending) != len(s.PendingRounds):
		return nil, fmt.Errorf("pipeline: the snapshot has %d updates of %d rounds", len(s.Pending), len(s.PendingRounds))
	case c.cfg.MaxRounds > 0 && last > c.cfg.MaxRounds:
		return nil, fmt.Errorf("pipeline: the snapshot of round %d asked for round %d, past the job's last (%d)", s.Round, last, c.cfg.MaxRounds)
	}
	for i, r := range s.PendingRounds {
		if r > s.Round || i > 0 && r <= s.PendingRounds[i-1] {
			return nil, fmt.Errorf("pipeline: the snapshot of round %d holds the update of round %d out of order", s.Round, r)
		}
	}
	c.started, c.start = true, now.Add(-s.Elapsed)
	c.sent, c.pulled, c.through = s.Round, s.Round, s.Through
	for i, u := range s.Pending {
		c.updates = append(c.updates, pending[U]{s.PendingRounds[i], u})
	}
	c.fb = s.Feedback
	c.marks = map[uint64]mark{}
	for _, m := range s.Marks {
		c.marks[m.Round] = mark{time: m.Time, updates: m.Updates}
	}
	c.prev, c.prevRound, c.havePrev = s.Prev, s.PrevRound, s.HavePrev
	c.low, c.lowRound, c.haveLow = s.Low, s.LowRound, s.HaveLow
	c.st = Status{Rounds: s.Round, Updates: s.Updates, Candidates: s.Candidates, Final: s.Final,
		Rejected: s.Rejected, Deferred: s.Deferred, Capacity: s.Capacity,
		Trace: s.Trace, Refuted: s.Refuted}
	c.win.maxRounds, c.win.maxVars = s.MaxInFlight, s.MaxVarsInFlight
	for i, fb := range s.Asks {
		c.request(s.Round+1+uint64(i), fb, now)
	}
	return c, nil
}
