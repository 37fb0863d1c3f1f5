package pipeline

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
)

// Core is the state machine of a job's rounds, around the app's
// coordinator, which it calls (Pull, Objective, and schmp.Staged's methods)
// as the rules say. Create it with New, call Start once, then Step it with
// every event and perform, in order, the actions that Ready returns after
// each call. A Core is not safe for concurrent use; it is deterministic: the
// same events in the same order give the same actions, and the same events
// in any order that the network allows give the same plans, tasks and
// updates, the same reports and the same stop.
type Core[P, R, U, S any] struct {
	cfg    Config
	app    schmp.Coordinator[P, R, U, S]
	staged schmp.Staged
	iter   schmp.Iterated // the app's, or nil

	start   time.Time
	started bool
	win     *window
	asked   map[uint64]time.Time // rounds whose plan is awaited → when asked
	last    uint64               // the last round asked for
	// requests holds the feedback of the plan requests of the rounds
	// asked for and not pulled yet.
	requests map[uint64][]schmp.Feedback
	plans    map[uint64]planned[P]          // plans received, not yet sent
	flight   map[uint64]*flight[P, R, U, S] // rounds sent, not yet pulled
	sent     uint64                         // the last round sent
	pulled   uint64                         // the last round pulled
	through  uint64                         // the last round whose update was sent
	updates  []pending[U]                   // pulled, not yet sent
	fb       [][]schmp.Feedback             // per scheduler part, not yet sent
	check    *flight[P, R, U, S]            // the check task in flight (DESIGN "Pipelining")
	final    *flight[P, R, U, S]            // the final request in flight (Config.Final)
	finals   []S                            // the final reports, once all came
	done     bool
	marks    map[uint64]mark // the last rounds pulled, for the reports that show them
	cut      *cut            // the checkpoint under way (Config.Checkpoints)

	prev      float64 // the objective of the previous report…
	prevRound uint64  // …which showed the state after this round
	havePrev  bool
	low       float64 // the lowest objective reported so far…
	lowRound  uint64  // …in the report of this round
	haveLow   bool

	st    Status
	ready []Action[P, U]
}

// Status is where a job stands.
type Status struct {
	// Rounds is the number of rounds pulled.
	Rounds uint64
	// Updates is the number of variable updates made (the plans'
	// PlanInfo.Selected), and Candidates the number of candidates the
	// schedulers examined, in the rounds pulled.
	Updates, Candidates int64
	// Rejected, Deferred and Capacity are the sums of the plans'
	// PlanInfo fields of the same names, in the rounds pulled.
	Rejected, Deferred, Capacity int64
	// Final is the progress of the last report.
	Final schmp.Progress
	// Trace holds every report, in order.
	Trace []schmp.Sample
	// Reason is the stop, once decided ("" before, and again after a
	// check refuted it); Decided the round whose pull decided it, and Last
	// the last round of the job.
	Reason        schmp.Reason
	Decided, Last uint64
	// AppReason, with StopApp, is the app's text (schmp.Progress.Stop) of
	// the report that decided the stop, and once the check confirmed it,
	// of the check's report.
	AppReason string
	// Refuted counts the stops (Target, Tol, App) that a check refuted: the
	// report of the state after Last did not pass the test, and the job
	// went on.
	Refuted int
	// Done is set once the job is over.
	Done bool
	// MaxInFlight is the most rounds that were in flight at once, and
	// MaxVarsInFlight the most variables.
	MaxInFlight, MaxVarsInFlight int
}

// planned is a plan received, waiting for its turn to be sent.
type planned[P any] struct {
	plan P
	info schmp.PlanInfo
}

// flight is a round sent and not yet pulled, or the check task.
type flight[P, R, U, S any] struct {
	round    uint64
	through  uint64 // the workers hold the state after this round when they report
	from     uint64 // …and after this one before the task's updates
	took     []pending[U]
	plan     P
	info     schmp.PlanInfo
	report   bool
	sent     time.Time
	got      []bool
	count    int
	partials []R
	reports  []S
}

// pending is the update of a pulled round, waiting to be sent.
type pending[U any] struct {
	round uint64 // 0 for Start's
	u     U
}

// mark is when a round was pulled, and the updates made up to it.
type mark struct {
	time    time.Duration // since Start
	updates int64
}

// New returns a core for a job with configuration cfg around app. hooks
// is the app's own coordinator (app may wrap it), in which the core looks
// for the optional interfaces schmp.Staged and schmp.Iterated; nil for none.
func New[P, R, U, S any](cfg Config, app schmp.Coordinator[P, R, U, S], hooks any) (*Core[P, R, U, S], error) {
	if app == nil {
		return nil, errors.New("pipeline: no app coordinator")
	}
	staged, _ := hooks.(schmp.Staged)
	iter, _ := hooks.(schmp.Iterated)
	if cfg.Period == 0 && iter != nil {
		cfg.Period = iter.RoundsPerIteration()
		if cfg.Period == 0 {
			return nil, errors.New("pipeline: the app's RoundsPerIteration is 0")
		}
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Core[P, R, U, S]{
		cfg: cfg, app: app, staged: staged, iter: iter,
		win:      newWindow(),
		asked:    map[uint64]time.Time{},
		requests: map[uint64][]schmp.Feedback{},
		plans:    map[uint64]planned[P]{},
		flight:   map[uint64]*flight[P, R, U, S]{},
		fb:       make([][]schmp.Feedback, cfg.Parts),
		marks:    map[uint64]mark{0: {}},
	}, nil
}

// Config returns the configuration, with its defaults filled in.
func (c *Core[P, R, U, S]) Config() Config { return c.cfg }

// Start starts the job at now with u, the update of the app's Start, which
// goes to the workers with the first task: it asks for the plans of the
// first Depth rounds.
func (c *Core[P, R, U, S]) Start(now time.Time, u U) {
	if c.started {
		panic("pipeline: Start called twice")
	}
	c.started, c.start = true, now
	c.updates = []pending[U]{{0, u}}
	for r := uint64(1); r <= uint64(c.cfg.Depth) && c.mayAsk(r); r++ {
		c.decide(r-1, false, now)
		c.ask(r, now)
	}
}

// Ready returns the actions that the last calls produced, in the order in
// which they must be performed, and forgets them.
func (c *Core[P, R, U, S]) Ready() []Action[P, U] {
	a := c.ready
	c.ready = nil
	return a
}

// Status returns where the job stands. Its Trace is shared with the core:
// read it, do not change it.
func (c *Core[P, R, U, S]) Status() Status {
	s := c.st
	s.MaxInFlight, s.MaxVarsInFlight = c.win.maxRounds, c.win.maxVars
	return s
}

// InFlight returns the number of rounds in flight.
func (c *Core[P, R, U, S]) InFlight() int { return len(c.flight) }

// Deadline returns the earliest time by which something awaited must
// arrive (a plan, or a round's partials), and what, as the error that a
// Tick past it returns would say; ok is false when nothing is awaited or
// Config.Timeout is 0.
func (c *Core[P, R, U, S]) Deadline() (deadline time.Time, what string, ok bool) {
	if c.cfg.Timeout <= 0 {
		return time.Time{}, "", false
	}
	var first uint64 // the round of what, the earlier of two at the same time
	consider := func(d time.Time, round uint64, desc func() string) {
		if !ok || d.Before(deadline) || d.Equal(deadline) && round < first {
			deadline, what, first, ok = d, desc(), round, true
		}
	}
	for r, t := range c.asked {
		consider(t.Add(c.cfg.Timeout), r, func() string {
			return fmt.Sprintf("round %d: no plan from %s", r, c.name(protocol.RoleScheduler, c.part(r)))
		})
	}
	fs := make([]*flight[P, R, U, S], 0, len(c.flight)+1)
	for _, f := range c.flight {
		fs = append(fs, f)
	}
	for _, f := range []*flight[P, R, U, S]{c.check, c.final} {
		if f != nil {
			fs = append(fs, f)
		}
	}
	for _, f := range fs {
		consider(f.sent.Add(c.cfg.Timeout), f.round, func() string {
			var who []string
			for k, got := range f.got {
				if !got {
					who = append(who, c.name(protocol.RoleWorker, k))
				}
			}
			return fmt.Sprintf("round %d: no answer from %s", f.round, strings.Join(who, ", "))
		})
	}
	if ok {
		what = fmt.Sprintf("%s within %s", what, c.cfg.Timeout)
	}
	return deadline, what, ok
}

// name names place of role in errors (Config.Name).
func (c *Core[P, R, U, S]) name(role string, place int) string {
	if c.cfg.Name != nil {
		return c.cfg.Name(role, place)
	}
	return protocol.Node{Role: role, Place: place}.String()
}

// Step takes event e in. It returns an error wrapping ErrRefused for an
// event that it ignores (the core is unchanged); any other error fails the
// job (a plan that collides with a round in flight, a failed Pull or
// Objective, feedback that does not name the plan's variables, a model
// that diverged (ErrDiverged), a deadline passed (ErrTimeout)), and the
// core must not be stepped again.
func (c *Core[P, R, U, S]) Step(e Event[P, R, S]) error {
	if !c.started {
		return errors.New("pipeline: Step before Start")
	}
	switch e.Kind {
	case PlanArrived:
		return c.onPlan(e)
	case PartialArrived:
		return c.onPartial(e)
	case Tick:
		if d, what, ok := c.Deadline(); ok && !e.Time.Before(d) {
			return protocol.Timeout(errors.New(what))
		}
		return nil
	}
	return fmt.Errorf("pipeline: unknown event kind %d", e.Kind)
}

// part returns the scheduler part that plans round.
func (c *Core[P, R, U, S]) part(round uint64) int { return Part(round, c.cfg.Parts) }

// mayAsk reports whether round may still be asked for: once the stop is
// decided, only the rounds up to its last.
func (c *Core[P, R, U, S]) mayAsk(round uint64) bool {
	if c.st.Reason != "" && round > c.st.Last {
		return false
	}
	return c.cfg.MaxRounds == 0 || round <= c.cfg.MaxRounds
}

// landing returns the last round of a stop decided now: the last round
// asked for, rounded up to the end of its iteration (Config.Period), and
// no later than MaxRounds.
func (c *Core[P, R, U, S]) landing() uint64 {
	last := c.last
	if p := c.cfg.Period; p > 1 && last%p != 0 {
		last += p - last%p
	}
	if c.cfg.MaxRounds > 0 {
		last = min(last, c.cfg.MaxRounds)
	}
	return last
}

// ask asks round's scheduler part for its plan, with the feedback waiting
// for that part.
func (c *Core[P, R, U, S]) ask(round uint64, now time.Time) {
	p := c.part(round)
	fb := c.fb[p]
	c.fb[p] = nil
	c.request(round, fb, now)
}

// request asks round's scheduler part for its plan with feedback fb. The
// part's first request after a checkpoint was decided carries it.
func (c *Core[P, R, U, S]) request(round uint64, fb []schmp.Feedback, now time.Time) {
	p := c.part(round)
	req := Ask{Round: round, Feedback: fb}
	if k := c.cut; k != nil && k.parts[p] && round > k.round {
		req.Checkpoint, k.parts[p] = k.round, false
		if k.complete() {
			c.cut = nil
		}
	}
	c.ready = append(c.ready, Action[P, U]{Kind: AskPlan, Round: round, Part: p, Request: req})
	c.requests[round] = fb
	c.asked[round] = now
	c.last = round
}

// onPlan takes a plan in and sends every round that is ready, in order.
func (c *Core[P, R, U, S]) onPlan(e Event[P, R, S]) error {
	if _, ok := c.asked[e.Round]; !ok {
		return fmt.Errorf("plan of round %d from scheduler %d: not asked for: %w", e.Round, e.From, ErrRefused)
	}
	if p := c.part(e.Round); e.From != p {
		return fmt.Errorf("plan of round %d from scheduler %d: scheduler %d plans it: %w", e.Round, e.From, p, ErrRefused)
	}
	delete(c.asked, e.Round)
	c.plans[e.Round] = planned[P]{e.Plan, e.Info}
	for {
		p, ok := c.plans[c.sent+1]
		if !ok {
			return nil
		}
		delete(c.plans, c.sent+1)
		if err := c.send(c.sent+1, p, e.Time); err != nil {
			return err
		}
	}
}

// send puts round in flight: it sends the workers the plan, with Start's
// update and the updates of the rounds up to round−depth not sent yet.
// Fresher updates wait for the next task even if already pulled, so that
// what a worker computes does not depend on timing: the run is
// deterministic at every depth.
func (c *Core[P, R, U, S]) send(round uint64, p planned[P], now time.Time) error {
	if err := c.win.admit(round, p.info.Vars); err != nil {
		return fmt.Errorf("scheduler %d: %w", c.part(round), err)
	}
	report := (round-1)%uint64(c.cfg.ReportEvery) == 0
	k := 0
	for k < len(c.updates) && (c.updates[k].round == 0 || c.updates[k].round+uint64(c.cfg.Depth) <= round) {
		k++
	}
	from, took := c.through, c.updates[:k:k]
	task := Task[P, U]{Round: round, Updates: c.take(k), Plan: p.plan, Report: report}
	if cut := c.cut; cut != nil && round == cut.round+1 {
		// The workers save their state before they apply its updates.
		task.Checkpoint, cut.task = cut.round, true
		if cut.complete() {
			c.cut = nil
		}
	}
	c.ready = append(c.ready, Action[P, U]{Kind: SendTask, Round: round, Task: task, Through: c.through})
	w := c.cfg.Workers
	c.flight[round] = &flight[P, R, U, S]{
		round: round, through: c.through, from: from, took: took, plan: p.plan, info: p.info, report: report, sent: now,
		got: make([]bool, w), partials: make([]R, w), reports: make([]S, w),
	}
	c.sent = round
	return nil
}

// take removes the first k updates waiting to be sent and returns them.
func (c *Core[P, R, U, S]) take(k int) []U {
	us := make([]U, k)
	for i, p := range c.updates[:k] {
		us[i] = p.u
		c.through = p.round
	}
	c.updates = c.updates[k:]
	return us
}

// onPartial takes a worker's partial in and pulls every round that is
// complete, in order.
func (c *Core[P, R, U, S]) onPartial(e Event[P, R, S]) error {
	f, ok := c.flight[e.Round]
	if !ok && c.check != nil && e.Round == c.check.round {
		f, ok = c.check, true
	}
	if e.Final {
		f, ok = c.final, c.final != nil && e.Round == c.final.round
	}
	switch {
	case !ok && e.Final:
		return fmt.Errorf("final report of round %d from worker shard %d: none was asked for: %w", e.Round, e.From, ErrRefused)
	case !ok:
		return fmt.Errorf("partial of round %d from worker shard %d: the round is not in flight: %w", e.Round, e.From, ErrRefused)
	case e.From < 0 || e.From >= c.cfg.Workers:
		return fmt.Errorf("partial of round %d from worker shard %d: no such shard in a job of %d: %w", e.Round, e.From, c.cfg.Workers, ErrRefused)
	case f.got[e.From]:
		return fmt.Errorf("partial of round %d from worker shard %d: a duplicate: %w", e.Round, e.From, ErrRefused)
	}
	f.got[e.From] = true
	f.count++
	f.partials[e.From] = e.Partial
	if e.HasReport {
		f.reports[e.From] = e.Report
	}
	if f.count < c.cfg.Workers {
		return nil
	}
	if f == c.final {
		c.final, c.finals = nil, f.reports
		c.end()
		return nil
	}
	if f == c.check {
		return c.checked(e.Time)
	}
	for {
		f, ok := c.flight[c.pulled+1]
		if !ok || f.count < c.cfg.Workers {
			break
		}
		if err := c.pull(f, e.Time); err != nil {
			return err
		}
	}
	if c.st.Reason != "" && c.pulled == c.st.Last && c.check == nil {
		c.sendCheck(e.Time)
	}
	return nil
}

// pull evaluates round f's reports, decides whether to stop, combines its
// partials, and asks for the plan that takes its place in the pipeline.
func (c *Core[P, R, U, S]) pull(f *flight[P, R, U, S], now time.Time) error {
	round := f.round
	converged, reached, app := false, false, ""
	if f.report {
		// The workers reported before pushing, having applied the updates
		// the task carried: of rounds up to round−depth (after a refuted
		// check, up to the check's round).
		prog, err := c.record(f.through, f.reports, false)
		if err != nil {
			return err
		}
		converged, reached = c.meets(prog, f.through)
		app = prog.Stop
		if c.staged != nil && !c.staged.FinalStage() {
			reached = false
			if converged && c.st.Reason == "" {
				// The stage is done, not the job: the app moves to the next
				// stage, which this round's update carries to the workers.
				converged = false
				if err := c.staged.EndStage(c.st.Trace[len(c.st.Trace)-1], string(schmp.StopConverged)); err != nil {
					return fmt.Errorf("round %d: end of stage: %w", round, err)
				}
				c.havePrev, c.haveLow = false, false
			}
		}
	}
	var why schmp.Reason
	if c.st.Reason == "" {
		switch {
		case reached:
			why = schmp.StopTarget
		case converged:
			why = schmp.StopConverged
		case app != "":
			why = schmp.StopApp
		case c.cfg.MaxRounds > 0 && round >= c.cfg.MaxRounds:
			why = schmp.StopMaxRounds
		case c.cfg.TimeLimit > 0 && now.Sub(c.start) >= c.cfg.TimeLimit:
			why = schmp.StopTimeLimit
		}
	}
	var last uint64
	if why != "" {
		// Every round asked for so far is run, and those up to the end of
		// the iteration; none after. The app learns of its last round
		// before it pulls this one, which may be it.
		last = c.landing()
		if c.iter != nil {
			if err := c.iter.LastRound(last); err != nil {
				return fmt.Errorf("round %d: last round %d: %w", round, last, err)
			}
		}
	}
	u, fb, err := c.app.Pull(round, f.plan, f.partials)
	if err != nil {
		return fmt.Errorf("round %d: pull: %w", round, err)
	}
	if err := c.win.checkFeedback(round, fb); err != nil {
		return fmt.Errorf("round %d: pull: %w", round, err)
	}
	c.win.release(round)
	delete(c.flight, round)
	delete(c.requests, round)
	fb.Round = round
	p := c.part(round)
	c.fb[p] = append(c.fb[p], fb)
	c.updates = append(c.updates, pending[U]{round, u})
	c.pulled = round
	c.st.Rounds = round
	if fb.Updates > 0 {
		c.st.Updates += fb.Updates
	} else {
		c.st.Updates += int64(f.info.Selected)
	}
	c.st.Candidates += int64(f.info.Candidates)
	c.st.Rejected += int64(f.info.Rejected)
	c.st.Deferred += int64(f.info.Deferred)
	c.st.Capacity += int64(f.info.Capacity)
	c.marks[round] = mark{time: now.Sub(c.start), updates: c.st.Updates}
	if d := uint64(c.cfg.Depth); round >= d {
		delete(c.marks, round-d) // no report to come shows it
	}
	c.ready = append(c.ready, Action[P, U]{Kind: RoundPulled, Round: round, Info: f.info})

	if why != "" {
		c.st.Reason, c.st.Decided, c.st.Last = why, round, last
		if why == schmp.StopApp {
			c.st.AppReason = app
		}
		c.ready = append(c.ready, Action[P, U]{Kind: StopDecided, Round: round, Reason: why, Last: last})
		c.abandonCut()
	}
	if next := round + uint64(c.cfg.Depth); c.mayAsk(next) {
		c.decide(next-1, true, now)
		c.ask(next, now)
	}
	if k := c.cut; k != nil && k.round == round {
		return c.takeCut(now)
	}
	return nil
}

// meets runs the certified stop tests (Config.Tol, Config.Target) on
// prog, the report of the state after round asOf, and makes it the
// previous report of the relative-change test.
func (c *Core[P, R, U, S]) meets(prog schmp.Progress, asOf uint64) (converged, reached bool) {
	switch {
	case c.cfg.Tol == 0: // off
	case prog.HasGap:
		converged = prog.Gap <= c.cfg.Tol*math.Abs(prog.Objective)
	default:
		// A report of the state that the previous one showed (in the
		// first depth rounds, all show Start's) is no change.
		converged = c.havePrev && asOf != c.prevRound && relChange(c.prev, prog.Objective) < c.cfg.Tol
	}
	c.prev, c.prevRound, c.havePrev = prog.Objective, asOf, true
	reached = c.cfg.HasTarget && prog.Objective <= c.cfg.Target
	return converged, reached
}

// sendCheck sends the check task, once the stop is decided and every round
// up to its last is pulled: the workers apply the updates not sent yet,
// report the state after the last round, and wait for the next task
// without pushing (DESIGN "Pipelining").
func (c *Core[P, R, U, S]) sendCheck(now time.Time) {
	round := c.sent + 1
	task := Task[P, U]{Round: round, Updates: c.take(len(c.updates)), Report: true, Check: true}
	c.ready = append(c.ready, Action[P, U]{Kind: SendTask, Round: round, Task: task, Through: c.through})
	w := c.cfg.Workers
	c.check = &flight[P, R, U, S]{round: round, through: c.through, report: true, sent: now,
		got: make([]bool, w), partials: make([]R, w), reports: make([]S, w)}
}

// checked takes the check's report, of exactly the state after the last
// round pulled, which the app's coordinator holds. A stop that a report
// decided (Target, Tol, App) holds only if this report passes a test too
// (Target, Tol, or asks to stop: schmp.Progress.Stop):
// then, or for any other stop, the job ends here; otherwise the stop is
// refuted and the rounds go on, unless MaxRounds or TimeLimit now stop the
// job. Which it is depends on the reports and the configuration only
// (TimeLimit aside).
func (c *Core[P, R, U, S]) checked(now time.Time) error {
	f := c.check
	c.check = nil
	prog, err := c.record(f.through, f.reports, true)
	if err != nil {
		return err
	}
	if why := c.st.Reason; why != schmp.StopTarget && why != schmp.StopConverged && why != schmp.StopApp {
		return c.stop(now)
	}
	c.st.AppReason = ""
	switch converged, reached := c.meets(prog, f.through); {
	case reached:
		c.st.Reason = schmp.StopTarget
		return c.stop(now)
	case converged:
		c.st.Reason = schmp.StopConverged
		return c.stop(now)
	case prog.Stop != "":
		c.st.Reason, c.st.AppReason = schmp.StopApp, prog.Stop
		return c.stop(now)
	}
	c.st.Refuted++
	c.ready = append(c.ready, Action[P, U]{Kind: Resumed, Round: c.pulled, Reason: c.st.Reason})
	c.st.Reason, c.st.Decided, c.st.Last = "", 0, 0
	var why schmp.Reason
	switch {
	case c.cfg.MaxRounds > 0 && c.pulled >= c.cfg.MaxRounds:
		why = schmp.StopMaxRounds
	case c.cfg.TimeLimit > 0 && now.Sub(c.start) >= c.cfg.TimeLimit:
		why = schmp.StopTimeLimit
	}
	if why != "" {
		c.st.Reason, c.st.Decided, c.st.Last = why, c.pulled, c.pulled
		c.ready = append(c.ready, Action[P, U]{Kind: StopDecided, Round: c.pulled, Reason: why, Last: c.pulled})
		c.abandonCut()
		return c.stop(now)
	}
	// Refill the pipeline: the workers hold the state after the last round
	// pulled, from which the next depth rounds push.
	for r := c.pulled + 1; r <= c.pulled+uint64(c.cfg.Depth) && c.mayAsk(r); r++ {
		c.decide(r-1, false, now)
		c.ask(r, now)
	}
	return nil
}

// stop ends the job after the check: the stop task carries nothing (the
// check carried every update) and needs no answer, unless it asks for the
// final reports (Config.Final), of exactly the state the check reported:
// then the job is done once they are all in.
func (c *Core[P, R, U, S]) stop(now time.Time) error {
	round := c.sent + 1
	task := Task[P, U]{Round: round, Stop: true}
	if c.cfg.Final {
		task.Report, task.Final = true, true
		w := c.cfg.Workers
		c.final = &flight[P, R, U, S]{round: round, through: c.through, report: true, sent: now,
			got: make([]bool, w), partials: make([]R, w), reports: make([]S, w)}
	}
	c.ready = append(c.ready, Action[P, U]{Kind: SendTask, Round: round, Task: task, Through: c.through})
	if c.staged != nil {
		if err := c.staged.EndStage(c.st.Trace[len(c.st.Trace)-1], string(c.st.Reason)); err != nil {
			return fmt.Errorf("end of stage: %w", err)
		}
	}
	if !c.cfg.Final {
		c.end()
	}
	return nil
}

// end marks the job done.
func (c *Core[P, R, U, S]) end() {
	c.done, c.st.Done = true, true
	c.ready = append(c.ready, Action[P, U]{Kind: JobDone, Round: c.pulled, Reason: c.st.Reason})
}

// Finals returns the workers' final reports (Config.Final), indexed by
// shard, once the job is done; nil before, or without Config.Final.
func (c *Core[P, R, U, S]) Finals() []S { return c.finals }

// relChange returns |a−b|/|b| (∞ when b is 0 and a is not).
func relChange(a, b float64) float64 {
	d := math.Abs(a - b)
	if d == 0 {
		return 0
	}
	return d / math.Abs(b)
}

// record computes the objective from the reports, for the state after
// round rounds, and appends it to the trace. It fails, with ErrDiverged, on
// a report that shows the model diverged.
func (c *Core[P, R, U, S]) record(round uint64, reports []S, final bool) (schmp.Progress, error) {
	prog, err := c.app.Objective(reports)
	if err != nil {
		return prog, fmt.Errorf("objective after round %d: %w", round, err)
	}
	// The reports show the state after round, which may be older than the
	// last round pulled: date them by when round was pulled.
	at, ok := c.marks[round]
	if !ok {
		at = mark{time: c.marks[c.pulled].time, updates: c.st.Updates}
	}
	s := schmp.Sample{Time: at.time, Round: round, Progress: prog, Updates: at.updates}
	c.st.Trace = append(c.st.Trace, s)
	c.st.Final = prog
	c.ready = append(c.ready, Action[P, U]{Kind: RecordReport, Round: round, Sample: s, Final: final})
	return prog, c.checkDiverged(round, prog)
}

// checkDiverged returns an error wrapping ErrDiverged if prog, the report
// of the state after round rounds, shows that the model diverged: its
// objective or gap is not finite, or, with Config.RiseTol, its objective
// rose above the lowest so far by more than the tolerance. Every stop test
// comes after it, so that no stop is ever taken on such a report.
func (c *Core[P, R, U, S]) checkDiverged(round uint64, prog schmp.Progress) error {
	f := prog.Objective
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return fmt.Errorf("round %d: the objective is not finite (%v): %w", round, f, ErrDiverged)
	case prog.HasGap && (math.IsNaN(prog.Gap) || math.IsInf(prog.Gap, 0)):
		return fmt.Errorf("round %d: the gap is not finite (%v; objective %v): %w", round, prog.Gap, f, ErrDiverged)
	case c.cfg.RiseTol > 0 && c.haveLow && f-c.low > c.cfg.RiseTol*max(math.Abs(c.low), smallestNormal):
		return fmt.Errorf("round %d: the objective rose from %v (round %d) to %v, more than the tolerance %v allows: %w",
			round, c.low, c.lowRound, f, c.cfg.RiseTol, ErrDiverged)
	}
	if !c.haveLow || f < c.low {
		c.low, c.lowRound, c.haveLow = f, round, true
	}
	return nil
}
