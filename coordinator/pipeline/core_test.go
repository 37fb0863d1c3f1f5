package pipeline

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/schmp"
)

// The toy program of these tests. An update is the number of the round that
// made it (Start's is 0); a worker's state is the last update it applied
// (−1 before any), its partial and its report that state.
type (
	plan    = uint64 // the round
	partial = int64  // the worker's state when it pushed
	update  = uint64 // the round that made it
	report  = int64  // the worker's state when it reported
)

// toyApp is the app's coordinator. It records every Pull and checks that
// every worker pushed round t from the state after round max(t−depth, 0).
type toyApp struct {
	t       *testing.T
	depth   int
	pulls   []uint64
	reports int
	// script, if set, gives the progress of report k (0 the first), which
	// shows state; otherwise the objective is 1 + 2^−state.
	script func(k int, state int64) schmp.Progress
	// failPull, if > 0, makes the Pull of that round fail.
	failPull uint64
	// vars, if set, gives the variables of the plan of a round
	// (PlanInfo.Vars), which the feedback names; nil plans none.
	vars func(round uint64) []int32
	// feedback, if set, replaces the feedback of a round.
	feedback func(round uint64) schmp.Feedback
	// through holds, by round, the state the round's task left the
	// workers in (the sim's record); without it, the state after
	// max(round−depth, 0).
	through map[uint64]int64
}

func (a *toyApp) Start([]report) (update, error) { return 0, nil }

func (a *toyApp) Pull(round uint64, p plan, partials []partial) (update, schmp.Feedback, error) {
	if p != round {
		a.t.Errorf("Pull(%d) with the plan of round %d", round, p)
	}
	want := int64(0)
	if round > uint64(a.depth) {
		want = int64(round) - int64(a.depth)
	}
	if th, ok := a.through[round]; ok {
		want = th
	}
	for k, s := range partials {
		if s != want {
			a.t.Errorf("round %d: worker %d pushed from the state after round %d, want %d", round, k, s, want)
		}
	}
	a.pulls = append(a.pulls, round)
	if round == a.failPull {
		return 0, schmp.Feedback{}, errors.New("boom")
	}
	if a.feedback != nil {
		return round, a.feedback(round), nil
	}
	var fb schmp.Feedback
	if a.vars != nil {
		fb.Vars = a.vars(round)
		fb.Delta = make([]float64, len(fb.Vars))
	}
	return round, fb, nil
}

func (a *toyApp) Objective(reports []report) (schmp.Progress, error) {
	for k, r := range reports {
		if r != reports[0] {
			a.t.Errorf("report %d: worker %d shows state %d, worker 0 state %d", a.reports, k, r, reports[0])
		}
	}
	k := a.reports
	a.reports++
	if a.script != nil {
		return a.script(k, reports[0]), nil
	}
	return schmp.Progress{Objective: 1 + math.Pow(2, -float64(reports[0]))}, nil
}

func (a *toyApp) WriteModel(io.Writer) error { return nil }

type (
	toyEvent  = Event[plan, partial, report]
	toyAction = Action[plan, update]
	toyCore   = Core[plan, partial, update, report]
)

// sim drives a core with simulated schedulers and workers. Plans and
// partials wait until the test's order delivers them: in order (plans
// first), or at random.
type sim struct {
	t       *testing.T
	app     *toyApp
	core    *toyCore
	now     time.Time
	tick    time.Duration // the time each event takes
	states  []int64       // each worker's state
	pending []toyEvent    // plans and partials not yet delivered
	rng     *rand.Rand    // nil: in order

	log []string // what the core asked for, in order: the run's outcome
	// beforeSend, if set, sees every task before the workers take it.
	beforeSend func(toyAction)
	actions    []toyAction
	inFlight   int // rounds sent and not pulled
	maxIn      int
	done       bool
}

func newSim(t *testing.T, cfg Config, app *toyApp, seed uint64) *sim {
	t.Helper()
	return newSimHooks(t, cfg, app, nil, seed)
}

// newSimHooks is newSim with hooks, the app's optional interfaces (New).
func newSimHooks(t *testing.T, cfg Config, app *toyApp, hooks any, seed uint64) *sim {
	t.Helper()
	app.t, app.depth = t, max(cfg.Depth, 1)
	core, err := New(cfg, schmp.Coordinator[plan, partial, update, report](app), hooks)
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{t: t, app: app, core: core, now: time.Unix(1000, 0), tick: time.Millisecond, states: make([]int64, cfg.Workers)}
	for k := range s.states {
		s.states[k] = -1
	}
	if seed > 0 {
		s.rng = rand.New(rand.NewPCG(seed, 1))
	}
	return s
}

// start starts the job.
func (s *sim) start() {
	s.core.Start(s.now, 0)
	s.perform()
}

// perform performs the core's actions as schedulers and workers would.
func (s *sim) perform() {
	for _, a := range s.core.Ready() {
		s.actions = append(s.actions, a)
		switch a.Kind {
		case AskPlan:
			var fb []uint64
			for _, f := range a.Request.Feedback {
				fb = append(fb, f.Round)
			}
			s.log = append(s.log, fmt.Sprintf("ask %d part %d fb %v", a.Round, a.Part, fb))
			info := schmp.PlanInfo{Selected: 1, Candidates: 2}
			if s.app.vars != nil {
				info.Vars = s.app.vars(a.Round)
			}
			s.pending = append(s.pending, toyEvent{Kind: PlanArrived, Round: a.Round, From: a.Part, Plan: a.Round, Info: info})
		case SendTask:
			if s.beforeSend != nil {
				s.beforeSend(a)
			}
			s.log = append(s.log, fmt.Sprintf("send %d updates %v report %v check %v stop %v final %v through %d", a.Task.Round, a.Task.Updates, a.Task.Report, a.Task.Check, a.Task.Stop, a.Task.Final, a.Through))
			if !a.Task.Stop && !a.Task.Check {
				s.inFlight++
				s.maxIn = max(s.maxIn, s.inFlight)
				if s.app.through == nil {
					s.app.through = map[uint64]int64{}
				}
				s.app.through[a.Task.Round] = int64(a.Through)
			}
			for k := range s.states {
				for _, u := range a.Task.Updates {
					if int64(u) != s.states[k]+1 {
						s.t.Fatalf("worker %d in state %d applies the update of round %d", k, s.states[k], u)
					}
					s.states[k] = int64(u)
				}
				if int64(a.Through) != s.states[k] {
					s.t.Fatalf("task %d: through %d, the worker is in state %d", a.Task.Round, a.Through, s.states[k])
				}
				if a.Task.Stop && !a.Task.Report {
					continue // no answer
				}
				e := toyEvent{Kind: PartialArrived, Round: a.Task.Round, From: k, Partial: s.states[k]}
				if a.Task.Report {
					e.Report, e.HasReport, e.Final = s.states[k], true, a.Task.Final
				}
				s.pending = append(s.pending, e)
			}
		case RecordReport:
			s.log = append(s.log, fmt.Sprintf("record %d final %v", a.Sample.Round, a.Final))
		case RoundPulled:
			s.inFlight--
			s.log = append(s.log, fmt.Sprintf("pulled %d", a.Round))
		case StopDecided:
			s.log = append(s.log, fmt.Sprintf("stop %s at %d last %d", a.Reason, a.Round, a.Last))
		case JobDone:
			s.log = append(s.log, fmt.Sprintf("done %s", a.Reason))
			s.done = true
		case Resumed:
			s.log = append(s.log, fmt.Sprintf("resumed %s at %d", a.Reason, a.Round))
		}
	}
}

// deliver steps the core with the next pending event: in order, plans
// before partials, or at random.
func (s *sim) deliver() error {
	i := slices.IndexFunc(s.pending, func(e toyEvent) bool { return e.Kind == PlanArrived })
	if i < 0 {
		i = 0
	}
	if s.rng != nil {
		i = s.rng.IntN(len(s.pending))
	}
	e := s.pending[i]
	s.pending = slices.Delete(s.pending, i, i+1)
	s.now = s.now.Add(s.tick)
	e.Time = s.now
	err := s.core.Step(e)
	s.perform()
	return err
}

// run runs the job to its end, or to its first error.
func (s *sim) run() error {
	s.start()
	for !s.done {
		if len(s.pending) == 0 {
			s.t.Fatalf("nothing to deliver, and the job is not done: %v", s.log)
		}
		if err := s.deliver(); err != nil {
			return err
		}
	}
	return nil
}

// filter returns the entries of log that begin with one of the prefixes.
func filter(log []string, prefixes ...string) []string {
	var out []string
	for _, l := range log {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// TestRules runs jobs at depths 1 to 4 with 1 to 3 scheduler parts and 1
// to 3 workers, delivering plans and partials in order and in random
// orders, and checks the rules of the package doc: parts plan in turn, each
// with the feedback of its own rounds pulled since it was last asked; round
// t+depth is asked for when round t is pulled; every worker pushes round t
// from the state after round max(t−depth, 0) (the toy app checks that) and
// applies every update once, in order, Start's with the first task; rounds
// are pulled in order; reports come every ReportEvery rounds and show the
// state depth rounds back; at most depth rounds are in flight; and what is
// asked, sent and pulled does not depend on the order of delivery.
func TestRules(t *testing.T) {
	for depth := 1; depth <= 4; depth++ {
		for parts := 1; parts <= 3; parts++ {
			for workers := 1; workers <= 3; workers++ {
				t.Run(fmt.Sprintf("depth=%d/parts=%d/workers=%d", depth, parts, workers), func(t *testing.T) {
					cfg := Config{Workers: workers, Parts: parts, Depth: depth, ReportEvery: 3, MaxRounds: 20}
					s := newSim(t, cfg, &toyApp{}, 0)
					if err := s.run(); err != nil {
						t.Fatal(err)
					}
					checkRules(t, s, cfg)
					if s.maxIn != depth || s.core.Status().MaxInFlight != depth {
						t.Errorf("at most %d rounds in flight (the core says %d), want %d", s.maxIn, s.core.Status().MaxInFlight, depth)
					}
					want := filter(s.log, "ask", "send", "pulled", "record", "stop", "done")
					for seed := uint64(1); seed <= 20; seed++ {
						r := newSim(t, cfg, &toyApp{}, seed)
						if err := r.run(); err != nil {
							t.Fatal(err)
						}
						checkRules(t, r, cfg)
						// The log is in the order of the actions: a reordering
						// may change how asks and sends interleave with pulls,
						// not what each one carries.
						for _, kind := range []string{"ask", "send", "pulled", "record", "stop", "done"} {
							if got, want := filter(r.log, kind), filter(want, kind); !slices.Equal(got, want) {
								t.Fatalf("seed %d: %s\n%v\nin order:\n%v", seed, kind, got, want)
							}
						}
					}
				})
			}
		}
	}
}

func checkRules(t *testing.T, s *sim, cfg Config) {
	t.Helper()
	st := s.core.Status()
	if !st.Done || st.Reason != schmp.StopMaxRounds || st.Rounds != 20 || !slices.Equal(s.app.pulls, seq(1, 20)) {
		t.Fatalf("status %+v, pulls %v; want 20 rounds pulled in order, stopped by max-rounds", st, s.app.pulls)
	}
	if st.Updates != 20 || st.Candidates != 40 {
		t.Errorf("%d updates, %d candidates; want 20, 40", st.Updates, st.Candidates)
	}
	asks := 0
	pulled := map[uint64]bool{}
	lastFed := make([]uint64, cfg.Parts)
	for _, a := range s.actions {
		switch a.Kind {
		case RoundPulled:
			pulled[a.Round] = true
		case AskPlan:
			asks++
			r := a.Round
			if a.Part != int((r-1)%uint64(cfg.Parts)) {
				t.Errorf("round %d asked of part %d", r, a.Part)
			}
			if r > uint64(cfg.Depth) && !pulled[r-uint64(cfg.Depth)] || r > uint64(cfg.Depth)+1 && pulled[r-uint64(cfg.Depth)+1] {
				t.Errorf("round %d asked for when round %d was not just pulled", r, r-uint64(cfg.Depth))
			}
			// The feedback: this part's rounds pulled since it was last
			// asked, in order.
			var want []uint64
			for q := lastFed[a.Part] + 1; q < r; q++ {
				if pulled[q] && Part(q, cfg.Parts) == a.Part {
					want = append(want, q)
				}
			}
			var got []uint64
			for _, f := range a.Request.Feedback {
				got = append(got, f.Round)
			}
			if !slices.Equal(got, want) {
				t.Errorf("round %d: part %d fed back %v, want %v", r, a.Part, got, want)
			}
			if len(got) > 0 {
				lastFed[a.Part] = got[len(got)-1]
			}
		}
	}
	if asks != 20 {
		t.Errorf("%d plans asked for, want 20", asks)
	}
	for k, st := range s.states {
		if st != 20 {
			t.Errorf("worker %d ends in state %d, want 20", k, st)
		}
	}
	// Reports with rounds 1, 4, 7, … show the state depth rounds back; the
	// final one the state after round 20.
	var want []uint64
	for r := uint64(1); r <= 20; r += 3 {
		want = append(want, uint64(max(int64(r)-int64(cfg.Depth), 0)))
	}
	want = append(want, 20)
	var got []uint64
	for _, smp := range st.Trace {
		got = append(got, smp.Round)
		if smp.Objective != 1+math.Pow(2, -float64(smp.Round)) || smp.Updates != int64(smp.Round) {
			t.Errorf("report %+v: want the objective and the updates of the state after round %d", smp, smp.Round)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("reports of the states after rounds %v, want %v", got, want)
	}
}

func seq(a, b uint64) []uint64 {
	var s []uint64
	for r := a; r <= b; r++ {
		s = append(s, r)
	}
	return s
}

// TestStops checks every stop at depths 1 to 4: the round whose pull
// decides it (the first whose report meets it), the last round
// (min(decided+depth−1, MaxRounds)), the final state and report, in order
// and in random orders of delivery.
func TestStops(t *testing.T) {
	// gap returns a script whose reports have gap 0 from the state after
	// round s0 on, and gap 1 before.
	gap := func(s0 int64) func(int, int64) schmp.Progress {
		return func(_ int, s int64) schmp.Progress {
			p := schmp.Progress{Objective: 1 + math.Pow(2, -float64(s)), HasGap: true, Gap: 1}
			if s >= s0 {
				p.Gap = 0
			}
			return p
		}
	}
	cases := []struct {
		name   string
		cfg    Config
		script func(int, int64) schmp.Progress
		reason schmp.Reason
		// meets reports whether a report of state s meets the stop, after
		// one of state prev (−1: none).
		meets func(prev, s int64) bool
	}{
		{"max-rounds", Config{Workers: 2, MaxRounds: 7}, nil, schmp.StopMaxRounds, func(int64, int64) bool { return false }},
		// The objective is 1 + 2^−s: its relative change from the state
		// before falls below 1e-3 with state 10. Two reports of the same
		// state (at depth > 1, the first rounds all show state 0) are not
		// compared.
		{"tol, relative change", Config{Workers: 2, Tol: 1e-3}, nil, schmp.StopConverged, func(prev, s int64) bool { return prev >= 0 && prev != s && s >= 10 }},
		{"tol, gap", Config{Workers: 3, Tol: 1e-9}, gap(6), schmp.StopConverged, func(_, s int64) bool { return s >= 6 }},
		// Reports every 4 rounds: the stop waits for a report.
		{"tol between reports", Config{Workers: 1, Tol: 1e-9, ReportEvery: 4}, gap(6), schmp.StopConverged, func(_, s int64) bool { return s >= 6 }},
		{"target", Config{Workers: 2, Target: 1 + 0x1p-5, HasTarget: true}, nil, schmp.StopTarget, func(_, s int64) bool { return s >= 5 }},
		{"target before tol", Config{Workers: 2, Tol: 1e-9, Target: 2, HasTarget: true}, gap(0), schmp.StopTarget, func(int64, int64) bool { return true }},
		// At depth 4 the stop is decided at round 9 and would land on
		// round 12: MaxRounds 10 caps it.
		{"tol capped by max-rounds", Config{Workers: 1, Tol: 1e-9, MaxRounds: 10}, gap(5), schmp.StopConverged, func(_, s int64) bool { return s >= 5 }},
		// The app asks to stop from state 7 on, as mf's validation stop
		// does once it has chosen; Tol and Target come first.
		{"app", Config{Workers: 2}, appStop(7), schmp.StopApp, func(_, s int64) bool { return s >= 7 }},
		{"app between reports", Config{Workers: 2, ReportEvery: 3}, appStop(7), schmp.StopApp, func(_, s int64) bool { return s >= 7 }},
		{"app capped by max-rounds", Config{Workers: 1, MaxRounds: 10}, appStop(5), schmp.StopApp, func(_, s int64) bool { return s >= 5 }},
		{"tol before app", Config{Workers: 2, Tol: 1e-3}, appStop(10), schmp.StopConverged, func(prev, s int64) bool { return prev >= 0 && prev != s && s >= 10 }},
	}
	for _, tc := range cases {
		for depth := 1; depth <= 4; depth++ {
			t.Run(fmt.Sprintf("%s/depth=%d", tc.name, depth), func(t *testing.T) {
				cfg := tc.cfg
				cfg.Depth = depth
				every := uint64(max(cfg.ReportEvery, 1))
				var decided uint64
				for r, prev := uint64(1), int64(-1); decided == 0; r++ {
					if (r-1)%every == 0 {
						s := int64(max(int(r)-depth, 0))
						if tc.meets(prev, s) {
							decided = r
						}
						prev = s
					}
					if cfg.MaxRounds > 0 && r >= cfg.MaxRounds {
						decided = r
					}
				}
				last := decided + uint64(depth-1)
				if cfg.MaxRounds > 0 {
					last = min(last, cfg.MaxRounds)
				}
				var logs [][]string
				for seed := uint64(0); seed <= 10; seed++ {
					s := newSim(t, cfg, &toyApp{script: tc.script}, seed)
					if err := s.run(); err != nil {
						t.Fatal(err)
					}
					st := s.core.Status()
					if st.Reason != tc.reason || st.Decided != decided || st.Last != last || st.Rounds != last {
						t.Fatalf("seed %d: stopped (%s) at round %d, last %d, %d rounds; want %s at %d, last %d",
							seed, st.Reason, st.Decided, st.Last, st.Rounds, tc.reason, decided, last)
					}
					if want := appText(tc.reason, last); st.AppReason != want {
						t.Fatalf("seed %d: the app's reason is %q, want %q", seed, st.AppReason, want)
					}
					final := st.Trace[len(st.Trace)-1]
					if final.Round != last || s.states[0] != int64(last) {
						t.Fatalf("seed %d: final report of the state after round %d, workers in state %d; want %d", seed, final.Round, s.states[0], last)
					}
					logs = append(logs, s.log)
				}
				for _, l := range logs[1:] {
					for _, kind := range []string{"send", "record", "stop", "done"} {
						if got, want := filter(l, kind), filter(logs[0], kind); !slices.Equal(got, want) {
							t.Fatalf("the runs differ:\n%v\n%v", got, want)
						}
					}
				}
			})
		}
	}
}

// appStop returns a script whose report of state s asks to stop from
// state s0 on, saying which state it saw (appText).
func appStop(s0 int64) func(int, int64) schmp.Progress {
	return func(_ int, s int64) schmp.Progress {
		p := schmp.Progress{Objective: 1 + math.Pow(2, -float64(s))}
		if s >= s0 {
			p.Stop = fmt.Sprintf("enough at state %d", s)
		}
		return p
	}
}

// appText returns the app's reason of a job that stops for reason with
// the check's report of the state after round last: appStop's text of that
// state with schmp.StopApp, "" otherwise.
func appText(reason schmp.Reason, last uint64) string {
	if reason != schmp.StopApp {
		return ""
	}
	return fmt.Sprintf("enough at state %d", last)
}

// TestCheck checks the check of a stop that a report decided: the report
// of exactly the state after the stop's last round must pass a stop test
// too, or the stop is refuted and the rounds go on from that state, the
// next depth rounds all pushing from it; MaxRounds then still applies.
// What happens is a function of the reports and the configuration alone,
// in every order of delivery.
func TestCheck(t *testing.T) {
	// gapAt returns a script whose report of state s has gap 0 where
	// zero(s), and objective 1 + 2^−s, or 0.5 where low(s).
	gapAt := func(zero, low func(int64) bool) func(int, int64) schmp.Progress {
		return func(_ int, s int64) schmp.Progress {
			p := schmp.Progress{Objective: 1 + math.Pow(2, -float64(s)), HasGap: true, Gap: 1}
			if zero(s) {
				p.Gap = 0
			}
			if low != nil && low(s) {
				p.Objective = 0.5
			}
			return p
		}
	}
	never := func(int64) bool { return false }
	cases := []struct {
		name   string
		cfg    Config
		script func(int, int64) schmp.Progress
		// The outcome at depth d: the reason, the checks refuted and the
		// last round.
		reason  schmp.Reason
		refuted int
		last    func(d uint64) uint64
	}{
		// The report of state 6 comes with round 6+d and decides the stop,
		// which lands at 6+2d−1 ≤ 13 < 25: refuted. The next d rounds
		// report state 6+2d−1 again, then one newer state a round: state
		// 25 comes with round 25+d.
		{"refuted, then confirmed", Config{Workers: 2, Tol: 1e-9},
			gapAt(func(s int64) bool { return s == 6 || s >= 25 }, nil), schmp.StopConverged, 1,
			func(d uint64) uint64 { return 25 + 2*d - 1 }},
		{"refuted, then max-rounds", Config{Workers: 2, Tol: 1e-9, MaxRounds: 20},
			gapAt(func(s int64) bool { return s == 6 }, nil), schmp.StopMaxRounds, 1, func(uint64) uint64 { return 20 }},
		// The stop lands on round min(6+2d−1, 10): at depths 1 and 2 rounds
		// are left, at depths 3 and 4 none.
		{"refuted with no round left", Config{Workers: 1, Tol: 1e-9, MaxRounds: 10},
			gapAt(func(s int64) bool { return s == 6 }, nil), schmp.StopMaxRounds, 1, func(uint64) uint64 { return 10 }},
		{"target refuted", Config{Workers: 2, Target: 0.9, HasTarget: true, MaxRounds: 15},
			gapAt(never, func(s int64) bool { return s == 5 }), schmp.StopMaxRounds, 1, func(uint64) uint64 { return 15 }},
		// Target decided at state 5, whose gap is 1; the check's state has
		// gap 0: converged.
		{"target refuted, converged confirmed", Config{Workers: 2, Tol: 1e-9, Target: 0.9, HasTarget: true},
			gapAt(func(s int64) bool { return s >= 6 }, func(s int64) bool { return s == 5 }), schmp.StopConverged, 0,
			func(d uint64) uint64 { return 5 + 2*d - 1 }},
		// The app asks to stop at state 6 only: the check's report of the
		// state after 6+2d−1 does not, and the job goes on to MaxRounds.
		{"app refuted, then max-rounds", Config{Workers: 2, MaxRounds: 20},
			appWhere(func(s int64) bool { return s == 6 }), schmp.StopMaxRounds, 1, func(uint64) uint64 { return 20 }},
		// State 6, and from 25 on: refuted once, then confirmed, as Tol.
		{"app refuted, then confirmed", Config{Workers: 2},
			appWhere(func(s int64) bool { return s == 6 || s >= 25 }), schmp.StopApp, 1,
			func(d uint64) uint64 { return 25 + 2*d - 1 }},
	}
	for _, tc := range cases {
		for depth := 1; depth <= 4; depth++ {
			t.Run(fmt.Sprintf("%s/depth=%d", tc.name, depth), func(t *testing.T) {
				cfg := tc.cfg
				cfg.Depth = depth
				last := tc.last(uint64(depth))
				var logs [][]string
				for seed := uint64(0); seed <= 10; seed++ {
					s := newSim(t, cfg, &toyApp{script: tc.script}, seed)
					if err := s.run(); err != nil {
						t.Fatal(err)
					}
					st := s.core.Status()
					if st.Reason != tc.reason || st.Refuted != tc.refuted || st.Rounds != last || st.Last != last {
						t.Fatalf("seed %d: stopped (%s) after %d rounds, last %d, %d refuted; want %s after %d, %d refuted\n%v",
							seed, st.Reason, st.Rounds, st.Last, st.Refuted, tc.reason, last, tc.refuted, s.log)
					}
					final := st.Trace[len(st.Trace)-1]
					if final.Round != last || s.states[0] != int64(last) {
						t.Fatalf("seed %d: final report of the state after round %d, workers in state %d; want %d", seed, final.Round, s.states[0], last)
					}
					if want := appText(tc.reason, last); st.AppReason != want {
						t.Fatalf("seed %d: the app's reason is %q, want %q", seed, st.AppReason, want)
					}
					if got := len(filter(s.log, "resumed")); got != tc.refuted {
						t.Errorf("seed %d: resumed %d times, want %d", seed, got, tc.refuted)
					}
					logs = append(logs, s.log)
				}
				for _, l := range logs[1:] {
					for _, kind := range []string{"send", "record", "stop", "resumed", "done"} {
						if got, want := filter(l, kind), filter(logs[0], kind); !slices.Equal(got, want) {
							t.Fatalf("the runs differ:\n%v\n%v", got, want)
						}
					}
				}
			})
		}
	}
}

// appWhere returns a script whose report of state s asks to stop where
// stop(s), with appStop's text.
func appWhere(stop func(int64) bool) func(int, int64) schmp.Progress {
	return func(_ int, s int64) schmp.Progress {
		p := schmp.Progress{Objective: 1 + math.Pow(2, -float64(s))}
		if stop(s) {
			p.Stop = fmt.Sprintf("enough at state %d", s)
		}
		return p
	}
}

// TestTimeLimit checks that a time limit is decided at the first pull at or
// past it, and that the job then runs the rounds already asked for, and no
// others.
func TestTimeLimit(t *testing.T) {
	for depth := 1; depth <= 4; depth++ {
		for seed := uint64(0); seed <= 5; seed++ {
			s := newSim(t, Config{Workers: 2, Depth: depth, Parts: 2, TimeLimit: 50 * time.Millisecond}, &toyApp{}, seed)
			if err := s.run(); err != nil {
				t.Fatal(err)
			}
			st := s.core.Status()
			var at time.Time
			for _, a := range s.actions {
				if a.Kind == StopDecided {
					at = s.now
				}
			}
			if st.Reason != schmp.StopTimeLimit || st.Last != st.Decided+uint64(depth-1) || st.Rounds != st.Last || at.IsZero() {
				t.Fatalf("depth %d, seed %d: %+v", depth, seed, st)
			}
			// One event a millisecond: the decision comes with the
			// 50th event.
			if d := st.Trace[len(st.Trace)-1]; d.Round != st.Last {
				t.Errorf("final report of round %d, want %d", d.Round, st.Last)
			}
		}
	}
}

// TestStartUpdate checks that Start's update goes with round 1 at every
// depth, alone.
func TestStartUpdate(t *testing.T) {
	for depth := 1; depth <= 4; depth++ {
		s := newSim(t, Config{Workers: 1, Depth: depth, MaxRounds: 8}, &toyApp{}, 0)
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
		for _, a := range s.actions {
			if a.Kind != SendTask || a.Task.Stop || a.Task.Check {
				continue
			}
			var want []uint64
			switch r := a.Task.Round; {
			case r == 1:
				want = []uint64{0}
			case r > uint64(depth):
				want = []uint64{r - uint64(depth)}
			}
			if !slices.Equal(a.Task.Updates, want) {
				t.Errorf("depth %d: task %d carries the updates of rounds %v, want %v", depth, a.Task.Round, a.Task.Updates, want)
			}
		}
	}
}

// TestRefusals checks that the core ignores, unchanged, a plan not asked
// for or from the wrong part, a partial of a round not in flight, from a
// shard that does not exist or that already answered, and that the job
// then goes on as if they had not come.
func TestRefusals(t *testing.T) {
	cfg := Config{Workers: 2, Parts: 2, Depth: 2, MaxRounds: 6}
	ref := newSim(t, cfg, &toyApp{}, 0)
	if err := ref.run(); err != nil {
		t.Fatal(err)
	}
	s := newSim(t, cfg, &toyApp{}, 0)
	s.start()
	bad := []struct {
		e    toyEvent
		want string
	}{
		{toyEvent{Kind: PlanArrived, Round: 3, From: 0}, "plan of round 3 from scheduler 0: not asked for"},
		{toyEvent{Kind: PlanArrived, Round: 2, From: 0}, "plan of round 2 from scheduler 0: scheduler 1 plans it"},
		{toyEvent{Kind: PartialArrived, Round: 1, From: 0}, "partial of round 1 from worker shard 0: the round is not in flight"},
	}
	try := func() {
		for _, b := range bad {
			b.e.Time = s.now
			err := s.core.Step(b.e)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("Step(%+v) = %v, want a refusal: %s", b.e, err, b.want)
			}
			if a := s.core.Ready(); len(a) != 0 {
				t.Fatalf("a refused event gave actions %v", a)
			}
		}
	}
	try()
	// Deliver the two plans, then one partial of round 1 twice, and
	// partials of rounds not in flight.
	for range 2 {
		if err := s.deliver(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.deliver(); err != nil {
		t.Fatal(err)
	}
	bad = []struct {
		e    toyEvent
		want string
	}{
		{toyEvent{Kind: PartialArrived, Round: 1, From: 0, Partial: 0}, "partial of round 1 from worker shard 0: a duplicate"},
		{toyEvent{Kind: PartialArrived, Round: 1, From: 2}, "partial of round 1 from worker shard 2: no such shard in a job of 2"},
		{toyEvent{Kind: PartialArrived, Round: 1, From: -1}, "no such shard"},
		{toyEvent{Kind: PartialArrived, Round: 3, From: 1}, "partial of round 3 from worker shard 1: the round is not in flight"},
		{toyEvent{Kind: PlanArrived, Round: 1, From: 0}, "plan of round 1 from scheduler 0: not asked for"},
	}
	try()
	for !s.done {
		if err := s.deliver(); err != nil {
			t.Fatal(err)
		}
	}
	// A pulled round's partial, and anything after the end.
	bad = []struct {
		e    toyEvent
		want string
	}{
		{toyEvent{Kind: PartialArrived, Round: 2, From: 1}, "partial of round 2 from worker shard 1: the round is not in flight"},
		{toyEvent{Kind: PartialArrived, Round: 7, From: 1}, "partial of round 7 from worker shard 1: the round is not in flight"},
	}
	try()
	if !slices.Equal(s.log, ref.log) {
		t.Errorf("with refusals:\n%v\nwithout:\n%v", s.log, ref.log)
	}
}

// TestCollision checks that a plan that updates a variable of a round in
// flight fails the job, naming both rounds, and that strict rounds take the
// same plans.
func TestCollision(t *testing.T) {
	seven := func(uint64) []int32 { return []int32{7} }
	s := newSim(t, Config{Workers: 1, Depth: 2, MaxRounds: 10}, &toyApp{vars: seven}, 0)
	err := s.run()
	if err == nil || !strings.Contains(err.Error(), "scheduler 0: the plan of round 2 updates variable 7, which round 1 in flight updates too") {
		t.Fatalf("error %v, want a refused plan", err)
	}
	s = newSim(t, Config{Workers: 1, Depth: 1, MaxRounds: 10}, &toyApp{vars: seven}, 0)
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
}

// TestFeedback checks the rule of a Pull's feedback: it names every
// variable of the round's plan (PlanInfo.Vars), in any order, each once, and
// no other, with a change for each; otherwise the job fails, naming the
// round and the variable.
func TestFeedback(t *testing.T) {
	three := func(r uint64) []int32 { return []int32{int32(10 * r), int32(10*r + 1), int32(10*r + 2)} }
	fb := func(vs ...int32) schmp.Feedback { return schmp.Feedback{Vars: vs, Delta: make([]float64, len(vs))} }
	cases := []struct {
		name string
		vars func(uint64) []int32 // the plan's variables
		bad  uint64               // the round whose feedback is wrong (0: none)
		fb   func(r int32) schmp.Feedback
		want string // the error; "": none
	}{
		{"every variable, in another order", three, 3, func(r int32) schmp.Feedback { return fb(10*r+2, 10*r, 10*r+1) }, ""},
		{"a plan without variables", nil, 0, nil, ""},
		{"omits one", three, 3, func(r int32) schmp.Feedback { return fb(10*r, 10*r+2) },
			"round 3: pull: the feedback omits variable 31 of the plan"},
		{"empty", three, 5, func(int32) schmp.Feedback { return schmp.Feedback{} },
			"round 5: pull: the feedback omits variable 50 of the plan"},
		{"one not planned", three, 2, func(r int32) schmp.Feedback { return fb(10*r, 10*r+1, 10*r+2, 99) },
			"round 2: pull: the feedback names variable 99, which the plan does not update"},
		// Round 4 is in flight (at depth ≥ 2) when round 3 is pulled: its
		// variables are not round 3's.
		{"one of the next round", three, 3, func(r int32) schmp.Feedback { return fb(10*r, 10*r+1, 10*r+2, 40) },
			"round 3: pull: the feedback names variable 40, which the plan does not update"},
		{"one twice", three, 4, func(r int32) schmp.Feedback { return fb(10*r, 10*r+1, 10*r+1, 10*r+2) },
			"round 4: pull: the feedback names variable 41 twice"},
		{"a variable of an empty plan", nil, 2, func(int32) schmp.Feedback { return fb(7) },
			"round 2: pull: the feedback names variable 7, which the plan does not update"},
		{"changes missing", three, 2, func(r int32) schmp.Feedback {
			return schmp.Feedback{Vars: []int32{10 * r, 10*r + 1, 10*r + 2}, Delta: []float64{1}}
		}, "round 2: pull: the feedback names 3 variables and 1 changes"},
	}
	for _, tc := range cases {
		for depth := 1; depth <= 3; depth++ {
			t.Run(fmt.Sprintf("%s/depth=%d", tc.name, depth), func(t *testing.T) {
				app := &toyApp{vars: tc.vars, feedback: func(r uint64) schmp.Feedback {
					if r == tc.bad {
						return tc.fb(int32(r))
					}
					var vs []int32
					if tc.vars != nil {
						vs = tc.vars(r)
					}
					return fb(vs...)
				}}
				s := newSim(t, Config{Workers: 2, Depth: depth, MaxRounds: 8}, app, 0)
				err := s.run()
				switch {
				case tc.want == "" && err != nil:
					t.Fatal(err)
				case tc.want != "" && (err == nil || err.Error() != tc.want):
					t.Fatalf("error %v, want %q", err, tc.want)
				}
			})
		}
	}
}

// TestDeadline checks that a tick fails the job only at or past the
// deadline of what is awaited, naming it.
func TestDeadline(t *testing.T) {
	s := newSim(t, Config{Workers: 3, Depth: 2, Timeout: time.Second}, &toyApp{}, 0)
	s.start()
	d, what, ok := s.core.Deadline()
	if !ok || !d.Equal(s.now.Add(time.Second)) || what != "round 1: no plan from scheduler 0 within 1s" {
		t.Fatalf("deadline %v %q %v", d, what, ok)
	}
	// The plans, and the partials of round 1 from shards 0 and 2.
	if err := s.deliver(); err != nil {
		t.Fatal(err)
	}
	sent := s.now // round 1 is sent with its plan
	if err := s.deliver(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{0, 2} {
		i := slices.IndexFunc(s.pending, func(e toyEvent) bool { return e.Round == 1 && e.From == k })
		e := s.pending[i]
		s.pending = slices.Delete(s.pending, i, i+1)
		if err := s.core.Step(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.core.Step(toyEvent{Kind: Tick, Time: sent.Add(time.Second - 1)}); err != nil {
		t.Fatalf("tick before the deadline: %v", err)
	}
	err := s.core.Step(toyEvent{Kind: Tick, Time: sent.Add(time.Second)})
	if err == nil || err.Error() != "round 1: no answer from worker shard 1 within 1s" || !errors.Is(err, ErrTimeout) {
		t.Fatalf("tick at the deadline: %v, want a timeout", err)
	}
	if _, _, ok := (&toyCore{}).Deadline(); ok {
		t.Error("a deadline without a timeout")
	}
}

// TestDiverged checks that a report that shows the model diverged fails
// the job with ErrDiverged, naming the round whose state it shows, at every
// depth.
func TestDiverged(t *testing.T) {
	for depth := 1; depth <= 4; depth++ {
		for _, tc := range []struct {
			script func(int, int64) schmp.Progress
			cfg    Config
			want   string
		}{
			{func(_ int, s int64) schmp.Progress { return schmp.Progress{Objective: 1 / float64(3-s)} }, Config{}, "round 3: the objective is not finite (+Inf)"},
			{func(_ int, s int64) schmp.Progress {
				return schmp.Progress{Objective: 1, HasGap: true, Gap: math.Log(float64(4 - s))}
			}, Config{}, "round 4: the gap is not finite (-Inf; objective 1)"},
			{func(_ int, s int64) schmp.Progress { return schmp.Progress{Objective: math.Abs(float64(s) - 2)} }, Config{RiseTol: 1e-9},
				"round 3: the objective rose from 0 (round 2) to 1, more than the tolerance 1e-09 allows"},
		} {
			cfg := tc.cfg
			cfg.Workers, cfg.Depth, cfg.MaxRounds = 2, depth, 30
			s := newSim(t, cfg, &toyApp{script: tc.script}, 0)
			err := s.run()
			if !errors.Is(err, ErrDiverged) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("depth %d: error %v, want %q…", depth, err, tc.want)
			}
		}
	}
}

// TestPullFails checks that an app's failed Pull fails the job, naming the
// round.
func TestPullFails(t *testing.T) {
	s := newSim(t, Config{Workers: 2, Depth: 3, MaxRounds: 30}, &toyApp{failPull: 5}, 0)
	if err := s.run(); err == nil || err.Error() != "round 5: pull: boom" {
		t.Fatalf("error %v", err)
	}
}

// stagedApp is the toy app in stages: a report with gap 0 ends a stage.
type stagedApp struct {
	*toyApp
	stages, stage int
	ends          []string
}

func (a *stagedApp) Stage() string    { return fmt.Sprint(a.stage) }
func (a *stagedApp) FinalStage() bool { return a.stage == a.stages-1 }
func (a *stagedApp) EndStage(s schmp.Sample, stop string) error {
	a.ends = append(a.ends, fmt.Sprintf("%s %d at %d", stop, a.stage, s.Round))
	if stop == string(schmp.StopConverged) && !a.FinalStage() {
		a.stage++
	}
	return nil
}

// TestStaged checks that a converged report ends a stage that is not the
// final one, before the pull of its round, and the job in the final stage.
func TestStaged(t *testing.T) {
	app := &stagedApp{toyApp: &toyApp{script: func(int, int64) schmp.Progress {
		return schmp.Progress{Objective: 1, HasGap: true}
	}}, stages: 3}
	app.t, app.depth = t, 1
	core, err := New(Config{Workers: 1, Tol: 1e-9}, schmp.Coordinator[plan, partial, update, report](app), app)
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{t: t, app: app.toyApp, core: core, now: time.Unix(0, 0), tick: time.Millisecond, states: []int64{-1}}
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	want := []string{"converged 0 at 0", "converged 1 at 1", "converged 2 at 3"}
	if !reflect.DeepEqual(app.ends, want) || s.core.Status().Rounds != 3 {
		t.Errorf("EndStage calls %v after %d rounds, want %v after 3", app.ends, s.core.Status().Rounds, want)
	}
}

// TestConfig checks New's defaults and refusals.
func TestConfig(t *testing.T) {
	app := schmp.Coordinator[plan, partial, update, report](&toyApp{})
	c, err := New(Config{Workers: 1}, app, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.Config(); cfg.Parts != 1 || cfg.Depth != 1 || cfg.ReportEvery != 1 {
		t.Errorf("defaults %+v", cfg)
	}
	for _, cfg := range []Config{{}, {Workers: 1, Depth: MaxDepth + 1}, {Workers: 1, Tol: -1}, {Workers: 1, RiseTol: math.NaN()},
		{Workers: 1, HasTarget: true, Target: math.Inf(1)}, {Workers: 1, Timeout: -1}} {
		if _, err := New(cfg, app, nil); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
	if err := c.Step(toyEvent{Kind: Tick}); err == nil {
		t.Error("Step before Start: no error")
	}
}

// TestFeedbackUpdates checks that the updates a pull's feedback counts (the
// workers chose the variables) replace the plan's Selected in the status,
// round by round, and that a feedback without them keeps Selected.
func TestFeedbackUpdates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		updates func(round uint64) int64
		want    int64
	}{
		{"workers", func(round uint64) int64 { return int64(round) }, 210},
		{"plans", func(uint64) int64 { return 0 }, 20},
		{"mixed", func(round uint64) int64 { return int64(round % 2 * 5) }, 10*5 + 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Workers: 2, Parts: 1, Depth: 1, ReportEvery: 3, MaxRounds: 20}
			app := &toyApp{feedback: func(round uint64) schmp.Feedback {
				return schmp.Feedback{Updates: tc.updates(round)}
			}}
			s := newSim(t, cfg, app, 0)
			if err := s.run(); err != nil {
				t.Fatal(err)
			}
			if st := s.core.Status(); st.Rounds != 20 || st.Updates != tc.want {
				t.Errorf("%d rounds, %d updates; want 20, %d", st.Rounds, st.Updates, tc.want)
			}
		})
	}
}
