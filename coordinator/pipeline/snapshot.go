package pipeline

import (
	"errors"
	"fmt"
	"time"

	"github.com/strads-go/strads/schmp"
)

// Snapshot is a core's state at a checkpoint's cut (DESIGN §6): just after
// the pull of round Round, with no stop decided and nothing else in flight
// than the plan request of the next round. Together with the app's state at
// the same cut (schmp.Snapshotter: the coordinator's after that pull, every
// worker's after it finished the round, every scheduler part's after its
// last plan of a round up to it), it is all that a resumed job needs to go
// on as the job it was taken from would have: Resume builds a core that
// asks for the next plan with the same request and sends the same tasks.
//
// A Snapshot is a plain value that msgpack encodes (U being a message
// type), so that it can be stored and read back by another process.
type Snapshot[U any] struct {
	// Round is the round just pulled, the cut's.
	Round uint64 `msgpack:"round"`
	// Elapsed is the time from Start to the pull of Round, from which a
	// resumed job's clock goes on.
	Elapsed time.Duration `msgpack:"elapsed"`
	// Through is the last round whose update was sent to the workers.
	Through uint64 `msgpack:"through"`
	// Update is round Round's update, which the next task carries.
	Update U `msgpack:"update"`
	// Ask is the plan request of round Round+1, asked at the pull, with
	// the feedback it carries; Part is the scheduler part it went to.
	Ask  []schmp.Feedback `msgpack:"ask"`
	Part int              `msgpack:"part"`
	// Feedback holds, by scheduler part, the feedback not sent yet.
	Feedback [][]schmp.Feedback `msgpack:"fb"`
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
	Final           schmp.Progress `msgpack:"final"`
	Trace           []Sample       `msgpack:"trace"`
	Refuted         int            `msgpack:"refuted"`
	MaxInFlight     int            `msgpack:"max_in_flight"`
	MaxVarsInFlight int            `msgpack:"max_vars_in_flight"`
}

// ErrNoCut is wrapped in the error of Snapshot when the core is not at a
// cut: a checkpoint is then skipped, not failed.
var ErrNoCut = errors.New("not at a checkpoint's cut")

// Snapshot returns the core's state, which must be at a checkpoint's cut:
// the Ready actions of the pull of a round performed, no stop decided, and
// Config.Depth 1 (with more rounds in flight, the rounds sent after the
// pulled one would have to be saved too, which is not built). Otherwise it
// returns an error wrapping ErrNoCut. The snapshot shares the trace and the
// update with the core: encode it before the core is stepped again.
func (c *Core[P, R, U, S]) Snapshot() (Snapshot[U], error) {
	var s Snapshot[U]
	next := c.pulled + 1
	_, asked := c.asked[next]
	switch {
	case !c.started || c.done:
		return s, fmt.Errorf("pipeline: the job is not running: %w", ErrNoCut)
	case c.cfg.Depth != 1:
		return s, fmt.Errorf("pipeline: %d rounds in flight (checkpoints need depth 1): %w", c.cfg.Depth, ErrNoCut)
	case c.st.Reason != "" || c.check != nil || c.final != nil:
		return s, fmt.Errorf("pipeline: a stop is decided: %w", ErrNoCut)
	case c.pulled == 0 || len(c.flight) != 0 || len(c.plans) != 0 || len(c.asked) != 1 || !asked || c.last != next:
		return s, fmt.Errorf("pipeline: round %d is not the last pulled with round %d asked for and nothing else in flight: %w", c.pulled, next, ErrNoCut)
	case len(c.updates) != 1 || c.updates[0].round != c.pulled:
		return s, fmt.Errorf("pipeline: the updates waiting are not round %d's: %w", c.pulled, ErrNoCut)
	}
	m := c.marks[c.pulled]
	s = Snapshot[U]{
		Round: c.pulled, Elapsed: m.time, Through: c.through, Update: c.updates[0].u,
		Ask: c.lastAsk, Part: c.part(next), Feedback: c.fb,
		Prev: c.prev, PrevRound: c.prevRound, HavePrev: c.havePrev,
		Low: c.low, LowRound: c.lowRound, HaveLow: c.haveLow,
		Updates: c.st.Updates, Candidates: c.st.Candidates, Final: c.st.Final, Trace: c.st.Trace,
		Refuted: c.st.Refuted, MaxInFlight: c.win.maxRounds, MaxVarsInFlight: c.win.maxVars,
	}
	return s, nil
}

// Resume returns a core, as New does, that goes on from snapshot s, taken
// from a core of the same configuration, at now: its clock reads
// s.Elapsed at now. Its Ready holds the plan request of round s.Round+1,
// the same as the one s was taken after. Start must not be called.
//
// app must hold the state of the snapshot's cut (restored with
// schmp.Snapshotter), and so must the workers and the scheduler parts, to
// which nothing of s.Round and before is sent again.
func Resume[P, R, U, S any](cfg Config, app schmp.Coordinator[P, R, U, S], hooks any, s Snapshot[U], now time.Time) (*Core[P, R, U, S], error) {
	c, err := New(cfg, app, hooks)
	if err != nil {
		return nil, err
	}
	switch {
	case c.cfg.Depth != 1:
		return nil, fmt.Errorf("pipeline: resume with %d rounds in flight: checkpoints need depth 1", c.cfg.Depth)
	case s.Round == 0:
		return nil, errors.New("pipeline: resume from round 0")
	case len(s.Feedback) != c.cfg.Parts:
		return nil, fmt.Errorf("pipeline: the snapshot has feedback for %d scheduler parts, the job has %d", len(s.Feedback), c.cfg.Parts)
	case s.Part != c.part(s.Round+1):
		return nil, fmt.Errorf("pipeline: the snapshot asked scheduler %d for round %d, which scheduler %d plans", s.Part, s.Round+1, c.part(s.Round+1))
	case c.cfg.MaxRounds > 0 && s.Round >= c.cfg.MaxRounds:
		return nil, fmt.Errorf("pipeline: the snapshot is of round %d, at or past the job's last (%d)", s.Round, c.cfg.MaxRounds)
	}
	c.started, c.start = true, now.Add(-s.Elapsed)
	c.sent, c.pulled, c.through = s.Round, s.Round, s.Through
	c.updates = []pending[U]{{s.Round, s.Update}}
	c.fb = s.Feedback
	c.marks = map[uint64]mark{s.Round: {time: s.Elapsed, updates: s.Updates}}
	c.prev, c.prevRound, c.havePrev = s.Prev, s.PrevRound, s.HavePrev
	c.low, c.lowRound, c.haveLow = s.Low, s.LowRound, s.HaveLow
	c.st = Status{Rounds: s.Round, Updates: s.Updates, Candidates: s.Candidates, Final: s.Final,
		Trace: s.Trace, Refuted: s.Refuted}
	c.win.maxRounds, c.win.maxVars = s.MaxInFlight, s.MaxVarsInFlight
	c.fb[s.Part] = s.Ask
	c.ask(s.Round+1, now)
	return c, nil
}
