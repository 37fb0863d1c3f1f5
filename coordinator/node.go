package coordinator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// ErrDiverged is wrapped in the error of a job whose model diverged: a
// report's objective, or its gap (schmp.Progress.HasGap), was not finite,
// or the objective rose by more than Options.RiseTol allows. The error
// names the round whose state the report shows, and the cause.
var ErrDiverged = errors.New("the model diverged")

// smallestNormal is the smallest positive normal float64, the floor of the
// scale of Options.RiseTol.
const smallestNormal = 0x1p-1022

// Run runs a coordinator node on c until the job stops or fails, or ctx is
// done. newCoordinator builds the app's coordinator. On success the model is
// at opts.Out and the metrics at opts.Metrics; on failure neither file is
// left behind, and every other node of the job is told to stop.
func Run[P, R, U, S any](ctx context.Context, c *wire.Conn, newCoordinator func(ctx context.Context) (schmp.Coordinator[P, R, U, S], error), opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.fill()
	n := &node[P, R, U, S]{c: c, opts: opts, log: opts.Logger.With("role", "coordinator")}
	res, err := n.run(ctx, newCoordinator)
	if err != nil {
		n.abort(err)
		return nil, err
	}
	return res, nil
}

type node[P, R, U, S any] struct {
	c    *wire.Conn
	opts Options
	log  *slog.Logger
	app  schmp.Coordinator[P, R, U, S]
	// staged is app when it runs in stages (Staged), nil otherwise.
	staged Staged

	box     *wire.Mailbox // plans and partials
	metrics *atomicfile.File
	// metricNames are the app's metrics, fixed by the first report; nil
	// before it.
	metricNames []string
	start       time.Time
	res         Result

	// The pipeline.
	win      *window
	planned  uint64                      // the last round whose plan was asked for
	sent     uint64                      // the last round sent to the workers
	pulled   uint64                      // the last round pulled
	asked    map[uint64]time.Time        // rounds whose plan is awaited → when asked
	plans    map[uint64]*planned[P]      // plans received, not yet sent
	flight   map[uint64]*flight[P, R, S] // rounds sent, not yet pulled
	updates  []pulledUpdate[U]           // pulled, not yet sent to the workers
	feedback [][]schmp.Feedback          // per scheduler part, not yet sent
	stopping bool
	marks    map[uint64]mark // the last rounds pulled, for the reports that show them
	prev     float64         // the objective of the previous report
	havePrev bool
	low      float64 // the lowest objective reported so far…
	lowRound uint64  // …in the report of this round
	haveLow  bool

	// Accounting.
	stats     stats
	lastRow   stats // stats at the previous metrics row
	lastRound uint64
	waited    time.Duration // time spent waiting for messages
	nats0     nats.Statistics
}

// mark is when a round was pulled, and the updates made up to it.
type mark struct {
	time    time.Duration // since the first round
	updates int64
}

// pulledUpdate is the update of a round, waiting to be sent to the workers.
type pulledUpdate[U any] struct {
	round uint64 // 0 for Start's
	u     U
}

// planned is a plan received from a scheduler.
type planned[P any] struct {
	plan  P
	info  schmp.PlanInfo
	nanos int64
}

// flight is a round sent to the workers and not yet pulled.
type flight[P, R, S any] struct {
	plan     P
	info     schmp.PlanInfo
	report   bool
	sent     time.Time
	first    time.Time // the first partial's arrival
	last     time.Time // the last partial's arrival
	got      []bool
	count    int
	partials []R
	reports  []S
	nanos    int64 // the slowest worker's compute
}

func (n *node[P, R, U, S]) run(ctx context.Context, newCoordinator func(ctx context.Context) (schmp.Coordinator[P, R, U, S], error)) (*Result, error) {
	var err error
	readies, err := wire.Subscribe[protocol.Ready[S]](n.c, protocol.SubjectReady)
	if err != nil {
		return nil, err
	}
	defer readies.Close()
	if n.box, err = wire.NewMailbox(n.c, protocol.SubjectPlanned, protocol.SubjectPartial); err != nil {
		return nil, err
	}
	defer n.box.Close()
	joins, err := n.admit()
	if err != nil {
		return nil, err
	}
	defer joins.Unsubscribe()

	if n.app, err = newCoordinator(ctx); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	n.staged, _ = n.app.(Staged)
	if n.opts.Metrics != "" {
		// Open now, so that a bad path fails before the job runs.
		if n.metrics, err = atomicfile.Create(n.opts.Metrics); err != nil {
			return nil, err
		}
		defer n.metrics.Abort()
	}

	summaries, err := n.awaitReady(ctx, readies)
	if err != nil {
		return nil, err
	}
	u, err := n.app.Start(summaries)
	if err != nil {
		return nil, fmt.Errorf("coordinator: start: %w", err)
	}
	n.log.Info("workers and schedulers ready; starting", "workers", n.opts.Workers, "schedulers", n.opts.Schedulers, "depth", n.opts.Depth)
	if err := n.rounds(ctx, u); err != nil {
		return nil, err
	}
	if err := n.finish(ctx); err != nil {
		return nil, err
	}
	return &n.res, nil
}

// admit answers join requests: each new worker ID gets the next shard, each
// new scheduler ID the next part of the variables.
func (n *node[P, R, U, S]) admit() (*nats.Subscription, error) {
	var mu sync.Mutex
	places := map[string]map[string]int{protocol.RoleWorker: {}, protocol.RoleScheduler: {}}
	limit := map[string]int{protocol.RoleWorker: n.opts.Workers, protocol.RoleScheduler: n.opts.Schedulers}
	sub, err := n.c.NATS().Subscribe(n.c.Subject(protocol.SubjectJoin), func(msg *nats.Msg) {
		var req protocol.JoinRequest
		var rep protocol.JoinReply
		if err := wire.Unmarshal(msg.Data, &req); err != nil {
			rep.Err = err.Error()
		} else {
			role := cmpOr(req.Role, protocol.RoleWorker)
			mu.Lock()
			have, known := places[role]
			place, ok := have[req.ID]
			if known && !ok && len(have) < limit[role] {
				place, ok = len(have), true
				have[req.ID] = place
			}
			mu.Unlock()
			switch {
			case !known:
				rep.Err = fmt.Sprintf("no role %q", role)
			case ok:
				rep.Shard, rep.Shards = place, limit[role]
			default:
				rep.Err = fmt.Sprintf("the job already has its %d %ss", limit[role], role)
			}
		}
		if err := wire.Reply(n.c, msg, rep); err != nil {
			n.log.Warn("join reply", "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("coordinator: subscribe to joins: %w", err)
	}
	return sub, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// awaitReady waits until every worker and every scheduler part is ready,
// and returns the workers' shard summaries.
func (n *node[P, R, U, S]) awaitReady(ctx context.Context, readies *wire.Inbox[protocol.Ready[S]]) ([]S, error) {
	w, p := n.opts.Workers, n.opts.Schedulers
	summaries := make([]S, w)
	ready := map[string][]bool{protocol.RoleWorker: make([]bool, w), protocol.RoleScheduler: make([]bool, p)}
	count := 0
	jctx, cancel := context.WithTimeout(ctx, n.opts.JoinTimeout)
	defer cancel()
	for count < w+p {
		r, msg, err := readies.Next(jctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				var parts []string
				for _, role := range []string{protocol.RoleWorker, protocol.RoleScheduler} {
					if m := missing(ready[role]); len(m) > 0 {
						parts = append(parts, fmt.Sprintf("%d of %d %ss ready (missing %v)", len(ready[role])-len(m), len(ready[role]), role, m))
					}
				}
				return nil, fmt.Errorf("coordinator: after %s only %s", n.opts.JoinTimeout, strings.Join(parts, ", "))
			}
			return nil, fmt.Errorf("coordinator: %w", err)
		}
		role := cmpOr(r.Role, protocol.RoleWorker)
		got, known := ready[role]
		var ack protocol.Ack
		switch {
		case !known:
			ack.Err = fmt.Sprintf("no role %q", role)
		case r.Shard < 0 || r.Shard >= len(got):
			ack.Err = fmt.Sprintf("no %s %d in a job of %d", role, r.Shard, len(got))
		case r.Err != "":
			ack.Err = "noted"
		}
		if msg.Reply != "" {
			if err := wire.Reply(n.c, msg, ack); err != nil {
				n.log.Warn("ready reply", "err", err)
			}
		}
		if r.Err != "" {
			return nil, errors.New(r.Err)
		}
		if ack.Err != "" || got[r.Shard] {
			continue
		}
		got[r.Shard] = true
		if role == protocol.RoleWorker {
			summaries[r.Shard] = r.Summary
		}
		count++
		n.log.Info("ready", "node", role, "place", r.Shard, "id", r.ID)
	}
	return summaries, nil
}

func missing(ok []bool) []int {
	var m []int
	for i, b := range ok {
		if !b {
			m = append(m, i)
		}
	}
	return m
}

// part returns the scheduler part that plans round.
func (n *node[P, R, U, S]) part(round uint64) int {
	return int((round - 1) % uint64(n.opts.Schedulers))
}

// rounds runs the pipeline until a stop condition holds and every round
// sent has been pulled. u is the update of Start.
func (n *node[P, R, U, S]) rounds(ctx context.Context, u U) error {
	n.win = newWindow()
	n.asked = map[uint64]time.Time{}
	n.plans = map[uint64]*planned[P]{}
	n.flight = map[uint64]*flight[P, R, S]{}
	n.marks = map[uint64]mark{0: {}}
	n.updates = []pulledUpdate[U]{{0, u}}
	n.feedback = make([][]schmp.Feedback, n.opts.Schedulers)
	n.stats.init(n.opts.Workers, n.opts.Schedulers)
	n.nats0 = n.c.NATS().Stats()
	n.start = time.Now()
	lastProgress := n.start
	for r := uint64(1); r <= uint64(n.opts.Depth); r++ {
		if !n.mayPlan(r) {
			break
		}
		if err := n.ask(r); err != nil {
			return err
		}
	}
	for !n.stopping || n.pulled < n.sent {
		if n.stopping && len(n.flight) == 0 {
			break
		}
		if len(n.asked) == 0 && len(n.flight) == 0 {
			// Nothing can arrive: max-rounds reached before a plan.
			break
		}
		msg, err := n.next(ctx)
		if err != nil {
			return err
		}
		switch strings.TrimPrefix(msg.Subject, n.c.Subject("")) {
		case protocol.SubjectPlanned:
			err = n.onPlan(msg)
		case protocol.SubjectPartial:
			err = n.onPartial(msg)
		}
		if err != nil {
			return err
		}
		if n.opts.Progress != nil && time.Since(lastProgress) >= n.opts.ProgressEvery {
			lastProgress = time.Now()
			n.progressLine()
		}
	}
	return nil
}

// mayPlan reports whether round may still be planned.
func (n *node[P, R, U, S]) mayPlan(round uint64) bool {
	return !n.stopping && (n.opts.MaxRounds == 0 || round <= n.opts.MaxRounds)
}

// next waits for the next plan or partial, until the earliest deadline of
// what is awaited.
func (n *node[P, R, U, S]) next(ctx context.Context) (*nats.Msg, error) {
	var deadline time.Time
	what := ""
	for r, t := range n.asked {
		if d := t.Add(n.opts.Timeout); deadline.IsZero() || d.Before(deadline) {
			deadline, what = d, fmt.Sprintf("round %d: no plan from scheduler %d", r, n.part(r))
		}
	}
	for r, f := range n.flight {
		if d := f.sent.Add(n.opts.Timeout); deadline.IsZero() || d.Before(deadline) {
			deadline, what = d, fmt.Sprintf("round %d: no answer from worker shard(s) %v", r, missing(f.got))
		}
	}
	t0 := time.Now()
	wctx, cancel := context.WithDeadline(ctx, deadline)
	msg, err := n.box.Next(wctx)
	cancel()
	n.waited += time.Since(t0)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("coordinator: %s within %s", what, n.opts.Timeout)
	}
	return msg, nil
}

// ask asks round's scheduler part for the plan of round, with the feedback
// waiting for that part.
func (n *node[P, R, U, S]) ask(round uint64) error {
	p := n.part(round)
	req := protocol.PlanRequest{Round: round, Feedback: n.feedback[p]}
	if err := wire.PublishRequest(n.c, protocol.SubjectPlan(p), protocol.SubjectPlanned, req); err != nil {
		return fmt.Errorf("coordinator: round %d: %w", round, err)
	}
	n.feedback[p] = nil
	n.asked[round] = time.Now()
	n.planned = round
	return nil
}

// onPlan takes a plan in and sends every round that is ready, in order.
func (n *node[P, R, U, S]) onPlan(msg *nats.Msg) error {
	var rep protocol.PlanReply[P]
	if err := wire.Unmarshal(msg.Data, &rep); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	if rep.Err != "" {
		return fmt.Errorf("scheduler %d: round %d: %s", rep.Part, rep.Round, rep.Err)
	}
	if _, ok := n.asked[rep.Round]; !ok {
		n.log.Warn("unexpected plan", "round", rep.Round, "part", rep.Part)
		return nil
	}
	delete(n.asked, rep.Round)
	n.stats.planned(rep.Part, rep.Nanos)
	if m := n.opts.Monitor; m != nil {
		m.PhaseSeconds.WithLabelValues("plan").Add(float64(rep.Nanos) / 1e9)
	}
	if n.stopping {
		return nil // the rounds in flight are the last
	}
	n.plans[rep.Round] = &planned[P]{plan: rep.Plan, info: rep.Info, nanos: rep.Nanos}
	for {
		p, ok := n.plans[n.sent+1]
		if !ok {
			return nil
		}
		delete(n.plans, n.sent+1)
		if err := n.send(n.sent+1, p); err != nil {
			return err
		}
	}
}

// send puts round in flight: it sends the workers the plan and the updates
// of the rounds up to round−depth not sent yet. Fresher updates wait for
// the next task even if already pulled, so that what a worker computes does
// not depend on timing: the run is deterministic at every depth.
func (n *node[P, R, U, S]) send(round uint64, p *planned[P]) error {
	if err := n.win.admit(round, p.info.Vars); err != nil {
		return fmt.Errorf("coordinator: scheduler %d: %w", n.part(round), err)
	}
	t0 := time.Now()
	report := (round-1)%uint64(n.opts.ReportEvery) == 0
	k := 0
	for k < len(n.updates) && n.updates[k].round+uint64(n.opts.Depth) <= round {
		k++
	}
	task := protocol.Task[P, U]{Round: round, Updates: n.take(k), Plan: p.plan, Report: report}
	if err := n.publishTask(task); err != nil {
		return fmt.Errorf("coordinator: round %d: %w", round, err)
	}
	w := n.opts.Workers
	n.flight[round] = &flight[P, R, S]{
		plan: p.plan, info: p.info, report: report, sent: t0,
		got: make([]bool, w), partials: make([]R, w), reports: make([]S, w),
	}
	n.sent = round
	d := time.Since(t0)
	n.stats.dispatch += d
	if m := n.opts.Monitor; m != nil {
		m.PhaseSeconds.WithLabelValues("dispatch").Add(d.Seconds())
		m.InFlight.Set(float64(len(n.flight)))
	}
	return nil
}

// publishTask sends task to the workers: one broadcast, or, when one of
// its updates is a schmp.Splitter, to each worker its own parts.
func (n *node[P, R, U, S]) publishTask(task protocol.Task[P, U]) error {
	split := false
	for _, u := range task.Updates {
		if _, ok := any(u).(schmp.Splitter[U]); ok {
			split = true
			break
		}
	}
	if !split {
		return wire.Publish(n.c, protocol.SubjectTask, task)
	}
	all := task.Updates
	for k := range n.opts.Workers {
		own := make([]U, len(all))
		for i, u := range all {
			own[i] = u
			if s, ok := any(u).(schmp.Splitter[U]); ok {
				own[i] = s.ForShard(k)
			}
		}
		task.Updates = own
		if err := wire.Publish(n.c, protocol.SubjectTaskShard(k), task); err != nil {
			return err
		}
	}
	return nil
}

// take removes the first k updates waiting to be sent and returns them.
func (n *node[P, R, U, S]) take(k int) []U {
	us := make([]U, k)
	for i, p := range n.updates[:k] {
		us[i] = p.u
	}
	n.updates = n.updates[k:]
	return us
}

// onPartial takes a worker's partial in and pulls every round that is
// complete, in order.
func (n *node[P, R, U, S]) onPartial(msg *nats.Msg) error {
	now := time.Now()
	var p protocol.Partial[R, S]
	if err := wire.Unmarshal(msg.Data, &p); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	if p.Err != "" {
		return fmt.Errorf("worker shard %d: %s", p.Shard, p.Err)
	}
	f, ok := n.flight[p.Round]
	if !ok || p.Shard < 0 || p.Shard >= n.opts.Workers || f.got[p.Shard] {
		n.log.Warn("unexpected partial", "round", p.Round, "shard", p.Shard)
		return nil
	}
	if f.count == 0 {
		f.first = now
	}
	f.got[p.Shard] = true
	f.count++
	f.partials[p.Shard] = p.Partial
	if p.HasReport {
		f.reports[p.Shard] = p.Report
	}
	f.nanos = max(f.nanos, p.Nanos)
	n.stats.work(p.Shard, p.Nanos)
	if f.count == n.opts.Workers {
		f.last = now
		for {
			f, ok := n.flight[n.pulled+1]
			if !ok || f.count < n.opts.Workers {
				return nil
			}
			if err := n.pull(n.pulled+1, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// pull combines round's partials, decides whether to stop, and asks for the
// plan that takes the round's place in the pipeline.
func (n *node[P, R, U, S]) pull(round uint64, f *flight[P, R, S]) error {
	converged, reached := false, false
	if f.report {
		// The workers reported before pushing, having applied the updates
		// of rounds up to round−depth.
		asOf := uint64(0)
		if round > uint64(n.opts.Depth) {
			asOf = round - uint64(n.opts.Depth)
		}
		prog, err := n.record(asOf, f.reports)
		if err != nil {
			return err
		}
		switch {
		case n.opts.Tol == 0: // off
		case prog.HasGap:
			converged = prog.Gap <= n.opts.Tol*math.Abs(prog.Objective)
		default:
			converged = n.havePrev && relChange(n.prev, prog.Objective) < n.opts.Tol
		}
		n.prev, n.havePrev = prog.Objective, true
		reached = n.opts.HasTarget && prog.Objective <= n.opts.Target
		if n.staged != nil && !n.staged.FinalStage() {
			reached = false
			if converged && !n.stopping {
				// The stage is done, not the job: the app moves to the next
				// stage, which this round's update carries to the workers.
				converged = false
				if err := n.staged.EndStage(n.res.Trace[len(n.res.Trace)-1], "converged"); err != nil {
					return fmt.Errorf("coordinator: round %d: end of stage: %w", round, err)
				}
				n.havePrev, n.haveLow = false, false
			}
		}
	}
	t0 := time.Now()
	u, fb, err := n.app.Pull(round, f.plan, f.partials)
	if err != nil {
		return fmt.Errorf("coordinator: round %d: pull: %w", round, err)
	}
	end := time.Now()
	n.win.release(round)
	delete(n.flight, round)
	fb.Round = round
	part := n.part(round)
	n.feedback[part] = append(n.feedback[part], fb)
	n.updates = append(n.updates, pulledUpdate[U]{round, u})
	n.pulled = round

	n.res.Rounds = round
	n.res.Updates += int64(f.info.Selected)
	n.marks[round] = mark{time: time.Since(n.start), updates: n.res.Updates}
	if d := uint64(n.opts.Depth); round >= d {
		delete(n.marks, round-d) // no report to come shows it
	}
	n.res.Candidates += int64(f.info.Candidates)
	n.res.RoundTimes = append(n.res.RoundTimes, end.Sub(f.sent))
	n.stats.round(time.Duration(f.nanos), f.last.Sub(f.first), end.Sub(t0), end.Sub(f.sent))
	if m := n.opts.Monitor; m != nil {
		m.Rounds.Inc()
		m.Updates.Add(float64(f.info.Selected))
		m.RoundSeconds.Observe(end.Sub(f.sent).Seconds())
		m.PhaseSeconds.WithLabelValues("push").Add(float64(f.nanos) / 1e9)
		m.PhaseSeconds.WithLabelValues("wait").Add(f.last.Sub(f.first).Seconds())
		m.PhaseSeconds.WithLabelValues("pull").Add(end.Sub(t0).Seconds())
		m.InFlight.Set(float64(len(n.flight)))
	}

	if !n.stopping {
		switch {
		case reached:
			n.res.Reason = "target"
		case converged:
			n.res.Reason = "converged"
		case n.opts.MaxRounds > 0 && round >= n.opts.MaxRounds:
			n.res.Reason = "max-rounds"
		case n.opts.TimeLimit > 0 && time.Since(n.start) >= n.opts.TimeLimit:
			n.res.Reason = "time-limit"
		}
		n.stopping = n.res.Reason != ""
	}
	if next := round + uint64(n.opts.Depth); n.mayPlan(next) {
		return n.ask(next)
	}
	return nil
}

// relChange returns |a−b|/|b| (∞ when b is 0 and a is not).
func relChange(a, b float64) float64 {
	d := math.Abs(a - b)
	if d == 0 {
		return 0
	}
	return d / math.Abs(b)
}

// record computes the objective from the reports, for the state after
// round rounds, and appends it to the trace and the metrics. It fails,
// with ErrDiverged, on a report that shows the model diverged.
func (n *node[P, R, U, S]) record(round uint64, reports []S) (schmp.Progress, error) {
	t0 := time.Now()
	prog, err := n.app.Objective(reports)
	if err != nil {
		return prog, fmt.Errorf("coordinator: objective after round %d: %w", round, err)
	}
	n.stats.objective += time.Since(t0)
	if m := n.opts.Monitor; m != nil {
		m.PhaseSeconds.WithLabelValues("objective").Add(time.Since(t0).Seconds())
		m.Objective.Set(prog.Objective)
		m.Gap.Set(prog.Gap)
		m.NNZ.Set(float64(prog.NNZ))
	}
	// The reports show the state after round, which may be older than the
	// last round pulled: date them by when round was pulled.
	at, ok := n.marks[round]
	if !ok {
		at = mark{time: time.Since(n.start), updates: n.res.Updates}
	}
	s := Sample{Time: at.time, Round: round, Progress: prog, Updates: at.updates}
	n.res.Trace = append(n.res.Trace, s)
	n.res.Final = prog
	if n.metrics != nil {
		if err := n.checkMetrics(prog.Metrics); err != nil {
			return prog, fmt.Errorf("coordinator: objective after round %d: %w", round, err)
		}
		n.stats.nats = n.natsDelta()
		writeSample(n.metrics.Writer, s, n.stats.since(&n.lastRow, n.res.Rounds-n.lastRound))
		n.lastRow, n.lastRound = n.stats.copy(), n.res.Rounds
	}
	return prog, n.checkDiverged(round, prog)
}

// checkDiverged returns an error wrapping ErrDiverged if prog, the report
// of the state after round rounds, shows that the model diverged: its
// objective or gap is not finite, or, with Options.RiseTol, its objective
// rose above the lowest so far by more than the tolerance. Every stop test
// comes after it, so that no stop is ever taken on such a report.
func (n *node[P, R, U, S]) checkDiverged(round uint64, prog schmp.Progress) error {
	f := prog.Objective
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return fmt.Errorf("coordinator: round %d: the objective is not finite (%v): %w", round, f, ErrDiverged)
	case prog.HasGap && (math.IsNaN(prog.Gap) || math.IsInf(prog.Gap, 0)):
		return fmt.Errorf("coordinator: round %d: the gap is not finite (%v; objective %v): %w", round, prog.Gap, f, ErrDiverged)
	case n.opts.RiseTol > 0 && n.haveLow && f-n.low > n.opts.RiseTol*max(math.Abs(n.low), smallestNormal):
		return fmt.Errorf("coordinator: round %d: the objective rose from %v (round %d) to %v, more than the tolerance %v allows: %w",
			round, n.low, n.lowRound, f, n.opts.RiseTol, ErrDiverged)
	}
	if !n.haveLow || f < n.low {
		n.low, n.lowRound, n.haveLow = f, round, true
	}
	return nil
}

// checkMetrics writes the metrics CSV header with the app's columns at the
// first report, and checks that later reports name the same metrics.
func (n *node[P, R, U, S]) checkMetrics(ms []schmp.Metric) error {
	if n.metricNames == nil {
		n.metricNames = make([]string, len(ms))
		n.metrics.WriteString(strings.TrimSuffix(metricsHeader, "\n"))
		for i, m := range ms {
			if m.Name == "" || strings.ContainsAny(m.Name, ",\"\n\r") {
				return fmt.Errorf("app metric %q: want a name without commas, quotes or newlines", m.Name)
			}
			n.metricNames[i] = m.Name
			n.metrics.WriteString("," + m.Name)
		}
		n.metrics.WriteString("\n")
		return nil
	}
	if len(ms) != len(n.metricNames) {
		return fmt.Errorf("%d app metrics, %d at the first report", len(ms), len(n.metricNames))
	}
	for i, m := range ms {
		if m.Name != n.metricNames[i] {
			return fmt.Errorf("app metric %d is %q, %q at the first report", i, m.Name, n.metricNames[i])
		}
	}
	return nil
}

// natsDelta returns the coordinator connection's traffic since the first
// round.
func (n *node[P, R, U, S]) natsDelta() nats.Statistics {
	s := n.c.NATS().Stats()
	return nats.Statistics{
		InMsgs: s.InMsgs - n.nats0.InMsgs, OutMsgs: s.OutMsgs - n.nats0.OutMsgs,
		InBytes: s.InBytes - n.nats0.InBytes, OutBytes: s.OutBytes - n.nats0.OutBytes,
	}
}

func (n *node[P, R, U, S]) progressLine() {
	el := time.Since(n.start)
	gap := ""
	if n.res.Final.HasGap {
		gap = fmt.Sprintf("  gap %.2g", n.res.Final.Gap)
	}
	var extra strings.Builder
	for _, m := range n.res.Final.Metrics {
		fmt.Fprintf(&extra, "  %s %.6g", m.Name, m.Value)
	}
	fmt.Fprintf(n.opts.Progress, "round %d  elapsed %s  objective %.9g%s  nnz %d  updates/s %.0f%s%s\n",
		n.res.Rounds, el.Round(10*time.Millisecond), n.res.Final.Objective, gap, n.res.Final.NNZ,
		float64(n.res.Updates)/el.Seconds(), extra.String(), n.stage())
}

// stage returns the app's description of the stage running, after two
// spaces, or "" for an app that does not run in stages.
func (n *node[P, R, U, S]) stage() string {
	if n.staged == nil {
		return ""
	}
	if s := n.staged.Stage(); s != "" {
		return "  " + s
	}
	return ""
}

// finish sends the last updates with the stop, takes the final reports,
// stops the schedulers and writes the outputs.
func (n *node[P, R, U, S]) finish(ctx context.Context) error {
	round := n.sent + 1
	stop := protocol.Task[P, U]{Round: round, Updates: n.take(len(n.updates)), Stop: true}
	if err := n.publishTask(stop); err != nil {
		return fmt.Errorf("coordinator: stop: %w", err)
	}
	w := n.opts.Workers
	f := &flight[P, R, S]{sent: time.Now(), got: make([]bool, w), partials: make([]R, w), reports: make([]S, w)}
	n.flight = map[uint64]*flight[P, R, S]{round: f}
	n.asked = nil
	for f.count < w {
		msg, err := n.next(ctx)
		if err != nil {
			return err
		}
		if strings.HasSuffix(msg.Subject, "."+protocol.SubjectPartial) {
			if err := n.onPartialFinal(msg, round, f); err != nil {
				return err
			}
		}
	}
	n.res.Elapsed = time.Since(n.start)
	if _, err := n.record(n.pulled, f.reports); err != nil {
		return err
	}
	if n.staged != nil {
		if err := n.staged.EndStage(n.res.Trace[len(n.res.Trace)-1], n.res.Reason); err != nil {
			return fmt.Errorf("coordinator: end of stage: %w", err)
		}
	}
	n.res.Timing = n.stats.timing(n.res.Elapsed, n.waited, n.natsDelta())
	n.res.MaxInFlight, n.res.MaxVarsInFlight = n.win.maxRounds, n.win.maxVars
	for p := range n.opts.Schedulers {
		if err := wire.Publish(n.c, protocol.SubjectPlan(p), protocol.PlanRequest{Round: round, Stop: true}); err != nil {
			n.log.Warn("stop scheduler", "part", p, "err", err)
		}
	}
	if err := n.c.NATS().FlushTimeout(n.opts.Timeout); err != nil {
		n.log.Warn("flush", "err", err)
	}
	if n.opts.Progress != nil {
		n.progressLine()
		fmt.Fprintf(n.opts.Progress, "stopped: %s after %d rounds, %d updates, %s%s\n",
			n.res.Reason, n.res.Rounds, n.res.Updates, n.res.Elapsed.Round(time.Millisecond), n.stage())
	}
	if n.opts.Out != "" {
		if err := atomicfile.Write(n.opts.Out, func(w *bufio.Writer) error { return n.app.WriteModel(w) }); err != nil {
			return fmt.Errorf("coordinator: %w", err)
		}
	}
	if n.metrics != nil {
		if err := n.metrics.Commit(); err != nil {
			return fmt.Errorf("coordinator: %w", err)
		}
	}
	return nil
}

// onPartialFinal takes in a worker's answer to the stop task.
func (n *node[P, R, U, S]) onPartialFinal(msg *nats.Msg, round uint64, f *flight[P, R, S]) error {
	var p protocol.Partial[R, S]
	if err := wire.Unmarshal(msg.Data, &p); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	if p.Err != "" {
		return fmt.Errorf("worker shard %d: %s", p.Shard, p.Err)
	}
	if p.Round != round || p.Shard < 0 || p.Shard >= n.opts.Workers || f.got[p.Shard] {
		n.log.Warn("unexpected partial", "round", p.Round, "shard", p.Shard)
		return nil
	}
	f.got[p.Shard] = true
	f.count++
	f.reports[p.Shard] = p.Report
	n.stats.work(p.Shard, p.Nanos)
	return nil
}

// abort tells every other node that the job failed.
func (n *node[P, R, U, S]) abort(cause error) {
	msg := cause.Error()
	if err := wire.Publish(n.c, protocol.SubjectTask, protocol.Task[P, U]{Stop: true, Abort: msg}); err != nil {
		n.log.Warn("abort workers", "err", err)
	}
	for p := range max(n.opts.Schedulers, 1) {
		if err := wire.Publish(n.c, protocol.SubjectPlan(p), protocol.PlanRequest{Stop: true, Abort: msg}); err != nil {
			n.log.Warn("abort scheduler", "part", p, "err", err)
		}
	}
	if err := n.c.NATS().Flush(); err != nil {
		n.log.Warn("abort flush", "err", err)
	}
}
