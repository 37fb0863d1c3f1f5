package pipeline

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// toyState is the toy app's coordinator's state, its piece of a
// checkpoint.
type toyState struct {
	Pulls   []uint64 `msgpack:"pulls"`
	Reports int      `msgpack:"reports"`
}

// toyCheckpointer takes a checkpoint at every round that is a multiple of
// every.
type toyCheckpointer struct {
	app   *toyApp
	every uint64
	due   func(round uint64)
}

func (k *toyCheckpointer) Due(round uint64, _ time.Time) bool {
	if round%k.every != 0 {
		return false
	}
	k.due(round)
	return true
}

func (k *toyCheckpointer) Save(uint64) ([]byte, error) {
	return codec.Marshal(toyState{Pulls: k.app.pulls, Reports: k.app.reports})
}

// cutPieces collects the pieces of a checkpoint as the roles would store
// them.
type cutPieces struct {
	round   uint64
	core    []byte  // the coordinator's: the core's snapshot…
	app     []byte  // …and the app's state
	workers []int64 // every worker's state before task round+1
	parts   []bool  // the scheduler parts asked for their piece
	through uint64  // the snapshot's Through
}

func (p *cutPieces) complete() bool {
	return p.core != nil && p.workers != nil && !slices.Contains(p.parts, false)
}

// outcome is what a run computed: every plan request and task by round
// (the last sent of each, without the checkpoint it asks for), the
// reports, the status, the pulls and the workers' states. A run resumed
// from a checkpoint must have the outcome of the run never interrupted.
type outcome struct {
	asks, sends map[string]string
	trace       []string
	status      string
	pulls       []uint64
	states      []int64
}

func outcomeOf(s *sim) outcome {
	o := outcome{asks: map[string]string{}, sends: map[string]string{}, pulls: s.app.pulls, states: s.states}
	for _, a := range s.actions {
		switch a.Kind {
		case AskPlan:
			var fb []uint64
			for _, f := range a.Request.Feedback {
				fb = append(fb, f.Round)
			}
			o.asks[fmt.Sprint(a.Round)] = fmt.Sprintf("part %d fb %v", a.Part, fb)
		case SendTask:
			key := fmt.Sprintf("%d check %v stop %v", a.Task.Round, a.Task.Check, a.Task.Stop)
			o.sends[key] = fmt.Sprintf("updates %v plan %v report %v final %v through %d", a.Task.Updates, a.Task.Plan, a.Task.Report, a.Task.Final, a.Through)
		}
	}
	st := s.core.Status()
	for _, smp := range st.Trace {
		o.trace = append(o.trace, fmt.Sprintf("%d: %v gap %v updates %d", smp.Round, smp.Objective, smp.Gap, smp.Updates))
	}
	o.status = fmt.Sprintf("rounds %d updates %d candidates %d reason %s (%s) decided %d last %d refuted %d done %v",
		st.Rounds, st.Updates, st.Candidates, st.Reason, st.AppReason, st.Decided, st.Last, st.Refuted, st.Done)
	return o
}

func (o outcome) diff(w outcome) string {
	switch {
	case !maps.Equal(o.asks, w.asks):
		return fmt.Sprintf("plan requests\n%v\nwant\n%v", o.asks, w.asks)
	case !maps.Equal(o.sends, w.sends):
		return fmt.Sprintf("tasks\n%v\nwant\n%v", o.sends, w.sends)
	case !slices.Equal(o.trace, w.trace):
		return fmt.Sprintf("reports\n%v\nwant\n%v", o.trace, w.trace)
	case o.status != w.status:
		return fmt.Sprintf("status\n%s\nwant\n%s", o.status, w.status)
	case !slices.Equal(o.pulls, w.pulls):
		return fmt.Sprintf("pulls %v, want %v", o.pulls, w.pulls)
	case !slices.Equal(o.states, w.states):
		return fmt.Sprintf("worker states %v, want %v", o.states, w.states)
	}
	return ""
}

// runCuts runs a job of cfg taking a checkpoint every `every` rounds, and
// moves it to a core resumed from the first `restores` checkpoints once
// each is complete (the roles restored from their pieces, every message
// in flight lost), as a rollback does. It returns the run, the rounds
// restored from and the checkpoints abandoned.
func runCuts(t *testing.T, cfg Config, script func(int, int64) schmp.Progress, seed, every uint64, restores int) (s *sim, restored, abandoned []uint64) {
	t.Helper()
	app := &toyApp{script: script}
	cuts := map[uint64]*cutPieces{} // under way, by round
	k := &toyCheckpointer{app: app, every: every, due: func(round uint64) {
		cuts[round] = &cutPieces{round: round, parts: make([]bool, max(cfg.Parts, 1))}
	}}
	cfg.Checkpoints = k
	s = newSim(t, cfg, app, seed)
	s.beforeSend = func(a toyAction) {
		if a.Task.Checkpoint == 0 {
			return
		}
		cur := cuts[a.Task.Checkpoint]
		if cur == nil || a.Task.Round != cur.round+1 || cur.workers != nil {
			t.Fatalf("task %d asks for the checkpoint of round %d, under way: %+v", a.Task.Round, a.Task.Checkpoint, cur)
		}
		cur.workers = slices.Clone(s.states)
	}
	seen := 0
	look := func() {
		for _, a := range s.actions[seen:] {
			switch {
			case a.Kind == AskPlan && a.Request.Checkpoint != 0:
				c := a.Request.Checkpoint
				cur := cuts[c]
				if cur == nil || cur.parts[a.Part] {
					t.Fatalf("round %d asks part %d for the checkpoint of round %d, under way: %+v", a.Round, a.Part, c, cur)
				}
				// The part's first round after the checkpoint's.
				if a.Round <= c || a.Round > c+uint64(len(cur.parts)) {
					t.Fatalf("round %d asks part %d for the checkpoint of round %d", a.Round, a.Part, c)
				}
				cur.parts[a.Part] = true
			case a.Kind == CheckpointTaken:
				cur := cuts[a.Round]
				if cur == nil || cur.core != nil || a.Snapshot.Round != a.Round {
					t.Fatalf("checkpoint of round %d taken, under way: %+v", a.Round, cur)
				}
				b, err := codec.Marshal(*a.Snapshot)
				if err != nil {
					t.Fatal(err)
				}
				cur.core, cur.app, cur.through = b, a.App, a.Snapshot.Through
			case a.Kind == CheckpointAbandoned:
				cur := cuts[a.Round]
				if cur == nil || cur.complete() {
					t.Fatalf("checkpoint of round %d abandoned, under way: %+v", a.Round, cur)
				}
				abandoned = append(abandoned, a.Round)
				delete(cuts, a.Round)
			}
		}
		seen = len(s.actions)
	}
	s.start()
	look()
	for !s.done {
		if len(s.pending) == 0 {
			t.Fatalf("nothing to deliver, and the job is not done: %v", s.log)
		}
		if err := s.deliver(); err != nil {
			t.Fatal(err)
		}
		look()
		var cur *cutPieces
		for _, r := range slices.Sorted(maps.Keys(cuts)) {
			if cuts[r].complete() {
				cur = cuts[r]
				break
			}
		}
		if cur == nil {
			continue
		}
		delete(cuts, cur.round)
		for w, st := range cur.workers {
			if st != int64(cur.through) {
				t.Fatalf("checkpoint %d: worker %d saved state %d, the core's snapshot says %d", cur.round, w, st, cur.through)
			}
		}
		if len(restored) < restores {
			var snap Snapshot[update]
			var st toyState
			if err := codec.Unmarshal(cur.core, &snap); err != nil {
				t.Fatal(err)
			}
			if err := codec.Unmarshal(cur.app, &st); err != nil {
				t.Fatal(err)
			}
			app.pulls, app.reports = st.Pulls, st.Reports
			core, err := Resume(cfg, schmp.Coordinator[plan, partial, update, report](app), nil, snap, s.now)
			if err != nil {
				t.Fatal(err)
			}
			s.core, s.states, s.pending, s.inFlight = core, cur.workers, nil, 0
			s.log = append(s.log, fmt.Sprintf("restored %d", cur.round))
			restored = append(restored, cur.round)
			clear(cuts) // their pieces are of the rounds rolled back
			s.perform()
			seen = len(s.actions)
		}
	}
	return s, restored, abandoned
}

// TestResumeCut checks the checkpoints' cut at depths 1, 2 and 4 with one
// and two scheduler parts: a job that takes checkpoints computes what one
// that takes none does, and so does a job moved, at its first
// checkpoints, to a core resumed from the snapshot with the workers'
// states of the cut, every message in flight lost: the same plan
// requests, tasks (their updates and plans) and reports, the same stop,
// in order and in random orders of delivery. A checkpoint whose cut a stop
// overtakes is abandoned.
func TestResumeCut(t *testing.T) {
	gapAt := func(zero func(int64) bool) func(int, int64) schmp.Progress {
		return func(_ int, s int64) schmp.Progress {
			p := schmp.Progress{Objective: 1 + math.Pow(2, -float64(s)), HasGap: true, Gap: 1}
			if zero(s) {
				p.Gap = 0
			}
			return p
		}
	}
	cases := []struct {
		name   string
		cfg    Config
		script func(int, int64) schmp.Progress
		every  []uint64
	}{
		{"max-rounds", Config{Workers: 2, ReportEvery: 3, MaxRounds: 30}, nil, []uint64{1, 4, 7}},
		// A stop decided at the report of state 6, refuted, then one
		// confirmed from state 25 on: the checkpoints under way at the
		// decisions are abandoned.
		{"refuted", Config{Workers: 3, Tol: 1e-9}, gapAt(func(s int64) bool { return s == 6 || s >= 25 }), []uint64{1, 3, 5}},
		{"relative change", Config{Workers: 1, Tol: 0.02, ReportEvery: 2}, nil, []uint64{2, 5}},
	}
	for _, tc := range cases {
		for _, depth := range []int{1, 2, 4} {
			for _, parts := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/depth=%d/parts=%d", tc.name, depth, parts), func(t *testing.T) {
					cfg := tc.cfg
					cfg.Depth, cfg.Parts = depth, parts
					taken, aband := 0, 0
					for seed := uint64(0); seed <= 6; seed++ {
						base := newSim(t, cfg, &toyApp{script: tc.script}, seed)
						if err := base.run(); err != nil {
							t.Fatal(err)
						}
						want := outcomeOf(base)
						for _, every := range tc.every {
							for _, restores := range []int{0, 1, 3} {
								s, restored, abandoned := runCuts(t, cfg, tc.script, seed, every, restores)
								if d := outcomeOf(s).diff(want); d != "" {
									t.Fatalf("seed %d, a checkpoint every %d, %d restores (from %v): %s\n%v", seed, every, restores, restored, d, s.log)
								}
								if restores > 0 && len(restored) == 0 {
									t.Errorf("seed %d, a checkpoint every %d: never restored", seed, every)
								}
								taken += len(restored)
								aband += len(abandoned)
							}
						}
					}
					t.Logf("%d restores, %d checkpoints abandoned", taken, aband)
					if tc.cfg.Tol > 0 && tc.script != nil && (depth > 1 || parts > 1) && aband == 0 {
						t.Errorf("no checkpoint abandoned, want some: a stop is decided with one under way")
					}
				})
			}
		}
	}
}

// TestResumeRefused checks that Resume refuses a snapshot that does not fit
// the job.
func TestResumeRefused(t *testing.T) {
	app := &toyApp{t: t, depth: 2}
	cfg := Config{Workers: 1, Depth: 2, Parts: 2}
	good := Snapshot[update]{Round: 4, Asks: make([][]schmp.Feedback, 2), Feedback: make([][]schmp.Feedback, 2),
		Pending: []update{3, 4}, PendingRounds: []uint64{3, 4}}
	if _, err := Resume(cfg, schmp.Coordinator[plan, partial, update, report](app), nil, good, time.Now()); err != nil {
		t.Fatalf("a good snapshot: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Snapshot[update])
		cfg  func(*Config)
	}{
		{"round 0", func(s *Snapshot[update]) { s.Round = 0 }, nil},
		{"parts", func(s *Snapshot[update]) { s.Feedback = s.Feedback[:1] }, nil},
		{"no asks", func(s *Snapshot[update]) { s.Asks = nil }, nil},
		{"asks past the depth", func(s *Snapshot[update]) { s.Asks = make([][]schmp.Feedback, 3) }, nil},
		{"updates and rounds", func(s *Snapshot[update]) { s.PendingRounds = s.PendingRounds[:1] }, nil},
		{"update out of order", func(s *Snapshot[update]) { s.PendingRounds = []uint64{4, 3} }, nil},
		{"update after the cut", func(s *Snapshot[update]) { s.PendingRounds = []uint64{3, 5} }, nil},
		{"past max-rounds", nil, func(c *Config) { c.MaxRounds = 5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := good, cfg
			s.PendingRounds = slices.Clone(good.PendingRounds)
			if tc.edit != nil {
				tc.edit(&s)
			}
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			if _, err := Resume(c, schmp.Coordinator[plan, partial, update, report](app), nil, s, time.Now()); err == nil {
				t.Fatal("resumed, want an error")
			}
		})
	}
}
