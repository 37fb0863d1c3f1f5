package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/member"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// ErrDiverged is wrapped in the error of a job whose model diverged: a
// report's objective, or its gap (schmp.Progress.HasGap), was not finite,
// or the objective rose by more than Options.RiseTol allows. The error
// names the round whose state the report shows, and the cause. It is
// pipeline.ErrDiverged.
var ErrDiverged = pipeline.ErrDiverged

// The other kinds of failure of a job (errors.Is); they are package
// protocol's, which the worker and scheduler nodes share.
var (
	// ErrTimeout: a node gave no answer in time (Options.Timeout,
	// Options.JoinTimeout). The error names the round, the node(s) and
	// what was awaited.
	ErrTimeout = protocol.ErrTimeout
	// ErrAborted: another node failed and told the coordinator so (a
	// worker's failed load, Apply or Push, a scheduler's failed plan).
	// The error is also a *NodeError, which names that node (its role,
	// place, host and pid) and the round, and has the node's cause as text.
	ErrAborted = protocol.ErrAborted
	// ErrManifest: a node's manifest differed from the job's
	// (Options.Manifest), and the coordinator refused it at join and
	// failed the job, which would otherwise wait for that node.
	ErrManifest = protocol.ErrManifest
)

// NodeError names the node whose failure failed the job; it is
// protocol.NodeError.
type NodeError = protocol.NodeError

// Run runs a coordinator node on c until the job stops or fails, or ctx is
// done. newCoordinator builds the app's coordinator. On success the model is
// at opts.Out (or in the files that the app's schmp.Outputter lists) and
// the metrics at opts.Metrics, committed together; on failure none of these
// files is left behind, and every other node of the job is told to stop.
// The files are created before the job starts, so that a bad path fails
// it at once.
//
// The node is the I/O loop around a pipeline.Core, which holds the rules of
// the rounds: it decodes the schedulers' plans and the workers' partials,
// steps the core with them, and performs the core's actions (publishing
// plan requests and tasks, writing metrics rows), timing each phase.
func Run[P, R, U, S any](ctx context.Context, c *wire.Conn, newCoordinator func(ctx context.Context) (schmp.Coordinator[P, R, U, S], error), opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.fill()
	n := &node[P, R, U, S]{c: c, opts: opts, log: opts.Logger.With("role", "coordinator"), runID: nuid.Next(),
		roster:  member.NewRoster(opts.Manifest, opts.Workers, opts.Schedulers, opts.Spares),
		gate:    NewGate[P, R, U, S](opts.Schedulers, opts.Workers),
		dropped: map[string]int{},
		asked:   map[uint64]outbound{},
		tasks:   map[taskKey][]outbound{},
		live:    newLiveness(opts.Workers, opts.Schedulers, opts.LostAfter),
	}
	n.res.Run = n.runID
	c.OnDrop(func(msg *nats.Msg, err error) { n.drop(msg, "", protocol.Reason(err), err) })
	res, err := n.run(ctx, newCoordinator)
	if err != nil {
		n.abort(err)
		n.releaseSpares(err)
		return nil, err
	}
	n.releaseSpares(nil)
	return res, nil
}

type node[P, R, U, S any] struct {
	c    *wire.Conn
	opts Options
	log  *slog.Logger
	// runID is the run id, which every message of the job carries (DESIGN
	// "Roles, subjects and messages"): the join replies hand it out.
	runID string
	app   schmp.Coordinator[P, R, U, S]
	// staged is app when it runs in stages (schmp.Staged), nil otherwise.
	staged schmp.Staged
	core   *pipeline.Core[P, R, U, S]
	done   bool // the core's JobDone came

	// Checkpoints (DESIGN "Checkpoints"): the job's store, open when the job takes
	// checkpoints or resumes; the checkpointer that collects and commits
	// them (nil when it takes none); the app as a Snapshotter. resume is
	// the manifest of the checkpoint the job resumes from (nil for a job
	// started afresh), resumePiece the coordinator's piece of it.
	store       *checkpoint.Store
	ckpt        *checkpointer
	snap        schmp.Snapshotter
	resume      *checkpoint.Manifest
	resumePiece coordPiece
	// final is the cause of the interrupt of a job that takes checkpoints,
	// which then takes a final one (of round finalRound, once known;
	// ^0: none can be) before it stops.
	final      error
	finalRound uint64
	succeeded  bool      // the job succeeded: its checkpoints are of no more use
	ckptAt     time.Time // when the last checkpoint began (or the rounds started)
	// live holds when each node was last heard from (its heartbeat), once
	// the rounds run.
	live    *liveness
	beats   protocol.Sequences // the nodes' heartbeats taken, by run, role and ID
	aliveAt time.Time          // when checkAlive last looked at them
	// What a rollback to a checkpoint needs (replace): the app's
	// constructor, the pipeline's configuration, the stop of the
	// coordinator's heartbeats, and by checkpoint round the size of the
	// metrics CSV written at its pull.
	newApp   func(ctx context.Context) (schmp.Coordinator[P, R, U, S], error)
	cfg      pipeline.Config
	stopBeat func()

	// mu guards roster, live, beats, dropped and runID, which the
	// subscriptions' callbacks (joins, heartbeats, drops) share with the
	// loop.
	mu sync.Mutex
	// roster holds who holds each place, and the spares waiting.
	roster *member.Roster
	// dropped counts the messages dropped unused, by reason (DESIGN "Hostile traffic").
	dropped map[string]int
	// fail fails the job with its cause (a refused join).
	fail context.CancelCauseFunc

	box *wire.Mailbox // plans and partials
	// gate admits the plans and partials, and knows the last check task.
	gate *Gate[P, R, U, S]
	// incomplete is the last chunked message dropped, which may explain a
	// deadline missed.
	incomplete error
	// asked and tasks hold, encoded, the plan requests whose plans have
	// not come, by round, and the tasks whose partials are awaited, to be
	// sent again after a reconnect (DESIGN "NATS outages").
	asked map[uint64]outbound
	tasks map[taskKey][]outbound
	// reconnected is set by a reconnect, which starts the resends of the
	// unanswered messages.
	reconnected atomic.Bool
	resends     resends

	// outputs are the model's files, written after the stop; files holds
	// them and then the metrics CSV, committed together.
	outputs []schmp.Output
	files   *atomicfile.Group
	csv     *metricsCSV // nil without Options.Metrics
	start   time.Time
	res     Result

	// Accounting.
	stats      stats
	lastRow    stats // stats at the previous metrics row
	lastRound  uint64
	prog       progress               // what the progress lines remember
	monUpdates int64                  // the updates the monitor counted
	npulled    uint64                 // the rounds pulled, as the actions told
	timing     map[uint64]*roundTimes // rounds sent, not yet pulled
	waited     time.Duration          // time spent waiting for messages
	nats0      nats.Statistics
}

// taskKey names a task: its round, and its kind.
type taskKey struct {
	round uint64
	kind  taskKind
}

// taskKind tells the tasks of one round apart: a round's, its check's
// (DESIGN "Pipelining"), or the final request (the stop that asks for the final
// reports), which has the check's round.
type taskKind int

const (
	roundTask taskKind = iota
	checkTask
	finalTask
)

// kindOf returns the kind of task that a task or a partial with these
// flags is or answers.
func kindOf(check, final bool) taskKind {
	switch {
	case check:
		return checkTask
	case final:
		return finalTask
	}
	return roundTask
}

// roundTimes is the timing of a round sent and not yet pulled.
type roundTimes struct {
	sent        time.Time
	first, last time.Time // the first and the last partial's arrival
	nanos       int64     // the slowest worker's compute
	pull        time.Duration
	pulled      time.Time // the end of its Pull
}

// timedApp is the app's coordinator as the core sees it: it times Pull and
// Objective for the node's accounting.
type timedApp[P, R, U, S any] struct {
	schmp.Coordinator[P, R, U, S]
	n *node[P, R, U, S]
}

func (a timedApp[P, R, U, S]) Pull(round uint64, plan P, partials []R) (u U, fb schmp.Feedback, err error) {
	t0 := time.Now()
	err = protocol.Guard("Pull", func() (err error) { u, fb, err = a.Coordinator.Pull(round, plan, partials); return err })
	end := time.Now()
	if rt := a.n.timing[round]; rt != nil {
		rt.pull, rt.pulled = end.Sub(t0), end
	}
	return u, fb, err
}

func (a timedApp[P, R, U, S]) Objective(reports []S) (prog schmp.Progress, err error) {
	t0 := time.Now()
	err = protocol.Guard("Objective", func() (err error) { prog, err = a.Coordinator.Objective(reports); return err })
	d := time.Since(t0)
	a.n.stats.objective += d
	if m := a.n.opts.Monitor; m != nil {
		m.PhaseSeconds.WithLabelValues("objective").Add(d.Seconds())
	}
	return prog, err
}

func (n *node[P, R, U, S]) run(ctx context.Context, newCoordinator func(ctx context.Context) (schmp.Coordinator[P, R, U, S], error)) (*Result, error) {
	// A refused join fails the job through this context: its cause is
	// the refusal.
	ctx, n.fail = context.WithCancelCause(ctx)
	defer n.fail(nil)
	if !n.opts.Private {
		present, err := n.claim(ctx)
		if err != nil {
			return nil, err
		}
		defer present.Unsubscribe()
	}
	if err := n.openCheckpoints(ctx); err != nil {
		return nil, err
	}
	if n.ckpt != nil {
		// A failed job waits for the checkpoints being stored, which a
		// resume may use, up to the timeout; one that succeeded has no
		// more use for them, and gives them a moment only.
		defer func() {
			wait := n.opts.Timeout
			if n.succeeded {
				wait = min(wait, time.Second)
			}
			n.res.Checkpoints, n.res.LastCheckpoint = n.ckpt.close(wait)
		}()
	}
	readies, err := wire.NewMailbox(n.c, protocol.SubjectReady)
	if err != nil {
		return nil, err
	}
	defer readies.Close()
	n.newApp = newCoordinator
	if n.box, err = wire.NewMailbox(n.c, protocol.SubjectPlanned, protocol.SubjectPartial, protocol.SubjectStored); err != nil {
		return nil, err
	}
	defer n.box.Close()
	stopWatch := n.c.Watch(func(e wire.Event) {
		wire.LogEvents(n.log)(e)
		if e.Kind == wire.Reconnected {
			n.reconnected.Store(true)
			n.box.Wake()
		}
	})
	defer stopWatch()
	joins, err := n.admit()
	if err != nil {
		return nil, err
	}
	defer joins.Unsubscribe()
	if n.opts.Heartbeat > 0 {
		n.restartBeat()
		defer func() { n.stopBeat() }()
		beats, err := n.followBeats()
		if err != nil {
			return nil, err
		}
		defer beats.Unsubscribe()
	}
	if n.opts.Claimed != nil {
		// The server has the subscription to joins once this returns.
		if err := n.c.NATS().Flush(); err != nil {
			return nil, fmt.Errorf("coordinator: %w", err)
		}
		n.opts.Claimed()
	}

	// The app's methods are called through protocol.Guard (Pull and
	// Objective through timedApp): a panic fails the job as an error does
	// (DESIGN "How a job fails").
	if err = protocol.Guard("NewCoordinator", func() (err error) { n.app, err = newCoordinator(ctx); return err }); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	n.staged, _ = n.app.(schmp.Staged)
	if n.store != nil {
		var ok bool
		if n.snap, ok = n.app.(schmp.Snapshotter); !ok {
			return nil, fmt.Errorf("coordinator: app %s takes no checkpoints: its coordinator is no schmp.Snapshotter", cmp.Or(n.opts.Manifest.App, "of the job"))
		}
	}
	cfg := n.opts.pipeline()
	cfg.Name = func(role string, place int) string { return n.who(role, place).String() }
	_, cfg.Final = n.app.(schmp.Finisher[S])
	if n.ckpt != nil {
		cfg.Checkpoints = cutter[P, R, U, S]{n}
	}
	n.cfg = cfg
	if n.core, err = pipeline.New(cfg, schmp.Coordinator[P, R, U, S](timedApp[P, R, U, S]{n.app, n}), guardedHooks(n.app)); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	// Create the outputs now, so that a bad path fails before the job runs.
	if err := n.createOutputs(); err != nil {
		return nil, err
	}
	defer n.files.Abort()

	summaries, err := n.awaitReady(ctx, readies)
	if err != nil {
		return nil, err
	}
	// Nothing reads it while the rounds run, where a replayed ready would
	// hold bytes of the connection's budget (wire.MaxHeld): a rollback
	// opens its own.
	readies.Close()
	var u U
	if err := protocol.Guard("Start", func() (err error) { u, err = n.app.Start(summaries); return err }); err != nil {
		return nil, fmt.Errorf("coordinator: start: %w", err)
	}
	if n.resume != nil {
		if err := n.restore(cfg); err != nil {
			return nil, err
		}
	}
	n.log.Info("workers and schedulers ready; starting", "workers", n.opts.Workers, "schedulers", n.opts.Schedulers, "depth", n.opts.Depth)
	if err := n.rounds(ctx, u); err != nil {
		return nil, err
	}
	if err := n.finish(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.res.Dropped = n.dropped
	n.mu.Unlock()
	n.succeeded = true
	return &n.res, nil
}

// drop counts and logs a message dropped unused for reason (DESIGN "Hostile traffic"):
// msg, on its subject, from the sender from ("" if unknown).
func (n *node[P, R, U, S]) drop(msg *nats.Msg, from, reason string, err error) {
	n.mu.Lock()
	n.dropped[reason]++
	n.mu.Unlock()
	n.opts.Monitor.Drop("coordinator", reason)
	subject, reply := "", ""
	if msg != nil {
		subject, reply = msg.Subject, msg.Reply
	}
	if reason == protocol.DropIncomplete {
		// It may be the job's own message lost: a deadline missed then
		// says so.
		n.log.Warn("message dropped", "reason", reason, "err", err)
		return
	}
	n.log.Debug("message dropped", "subject", subject, "reply", reply, "from", from, "reason", reason, "err", err)
}

// invalid returns the error of the job when a message on msg's subject
// from the node from is invalid or conflicts with one taken (err): the
// error names them (DESIGN "Hostile traffic").
func (n *node[P, R, U, S]) invalid(msg *nats.Msg, what string, from protocol.Node, err error) error {
	return fmt.Errorf("coordinator: %s on %s from %s: %w", what, msg.Subject, from, err)
}

// admit answers join requests: each new worker ID gets the next shard, each
// new scheduler ID the next part of the variables, and every accepted node
// the job's settings. A node whose manifest differs from the job's
// (Options.Manifest; DESIGN "Roles, subjects and messages") is refused, with a message naming the
// node and the field, and the job fails with the same message (ErrManifest):
// it would wait for that node in vain. A node that comes once every place
// is taken is refused without failing the job. With a job key (DESIGN "Hostile traffic"),
// a join whose MAC fails is refused, and one without this coordinator's
// ticket is answered with it as a challenge, to be sent again with it.
func (n *node[P, R, U, S]) admit() (*nats.Subscription, error) {
	decide := func(req protocol.JoinRequest) (rep protocol.JoinReply, then func()) {
		role := cmp.Or(req.Role, protocol.RoleWorker)
		n.mu.Lock()
		run := n.runID
		a := n.roster.Join(req, run)
		n.mu.Unlock()
		switch a.Verdict {
		case member.SpareMismatch:
			rep.Err, rep.Mismatch = a.Err.Error(), true
			n.log.Warn("spare refused", "err", a.Err)
		case member.Running:
			// A replay, or a node of another job of this name: the job
			// runs, and goes on.
			rep.Err = "the job is running"
			n.drop(nil, protocol.Node{Role: role, Place: -1, Host: req.Host, PID: req.PID}.String(), protocol.DropUnexpected, errors.New(rep.Err))
		case member.Mismatch:
			rep.Err, rep.Mismatch = a.Err.Error(), true
			n.log.Warn("join refused", "err", a.Err)
			// Answered first: the job's failure ends the coordinator.
			then = func() { n.fail(protocol.Mismatch(fmt.Errorf("coordinator: refused %w", a.Err))) }
		case member.Admitted, member.Spared:
			rep.Run, rep.Shards = run, n.roster.Limit(role)
			rep.Settings = n.opts.Manifest.Settings
			rep.Checkpoints = n.ckpt != nil
			if n.opts.Heartbeat > 0 {
				rep.Heartbeat, rep.LostAfter = n.opts.Heartbeat, n.opts.LostAfter
			}
			if a.Verdict == member.Spared {
				rep.Spare = true
				n.log.Info("spare admitted", "node", role, "id", req.ID, "host", req.Host, "pid", req.PID)
			} else {
				rep.Shard = a.Place
				if n.resume != nil {
					rep.Resume, rep.Digest = n.resume.Round, n.resume.Pieces[checkpoint.Piece(role, a.Place)]
				}
			}
		default:
			rep.Err = fmt.Sprintf("the job already has its %d %ss", n.roster.Limit(role), role)
		}
		return rep, then
	}
	sub, err := member.ServeJoins(n.c, decide, func(msg *nats.Msg, reason string, err error) { n.drop(msg, "", reason, err) }, n.log)
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	return sub, nil
}

// who returns the node at place of role, as it joined (without host and
// pid if it has not, or if there is no such place).
func (n *node[P, R, U, S]) who(role string, place int) protocol.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.roster.Who(role, place)
}

// failed returns the error of the job when the node at place of role
// failed in round (0: outside a round) and sent cause: that node's
// failure, which aborted the job.
func (n *node[P, R, U, S]) failed(role string, place int, round uint64, cause string) error {
	return protocol.Aborted(&NodeError{Node: n.who(role, place), Round: round, Err: errors.New(cause)})
}

// awaitReady waits until every worker and every scheduler part is ready,
// and returns the workers' shard summaries. A ready counts only from the
// node that joined at its place, with the job's run id; others are
// dropped (DESIGN "Hostile traffic").
func (n *node[P, R, U, S]) awaitReady(ctx context.Context, readies *wire.Mailbox) ([]S, error) {
	summaries := make([]S, n.opts.Workers)
	ready := newReadySet(n.opts.Workers, n.opts.Schedulers)
	jctx, cancel := context.WithTimeout(ctx, n.opts.JoinTimeout)
	defer cancel()
	start := time.Now()
	for !ready.all() {
		// While the nodes read their data (minutes, for a big file), a
		// progress line says so every ProgressEvery, at most once a
		// second.
		wctx, wcancel := jctx, context.CancelFunc(func() {})
		if n.opts.Progress != nil {
			wctx, wcancel = context.WithTimeout(jctx, max(n.opts.ProgressEvery, time.Second))
		}
		msg, err := readies.Next(wctx)
		wcancel()
		if err != nil && jctx.Err() == nil && wctx.Err() != nil {
			fmt.Fprintf(n.opts.Progress, "loading  elapsed %s  ready: %s (the nodes read their data)\n",
				time.Since(start).Round(100*time.Millisecond), ready)
			continue
		}
		if errors.Is(err, wire.ErrIncomplete) {
			n.drop(nil, "", protocol.DropIncomplete, err)
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, n.notReady(ready)
			}
			return nil, fmt.Errorf("coordinator: %w", err)
		}
		var r protocol.Ready[S]
		if err := protocol.Open(msg.Data, &r, protocol.TypeReady, n.runID); err != nil {
			n.drop(msg, "", protocol.Reason(err), err)
			continue
		}
		role := cmp.Or(r.Role, protocol.RoleWorker)
		from := n.who(role, r.Shard)
		if err := r.Validate(ready.places(role)); err != nil {
			return nil, n.invalid(msg, "a ready", from, err)
		}
		n.mu.Lock()
		joined := n.roster.Holds(role, r.Shard, r.ID)
		n.mu.Unlock()
		var ack protocol.Ack
		switch {
		case !joined:
			ack.Err = fmt.Sprintf("%s is not the node that joined there", from)
		case r.Err != "":
			ack.Err = "noted"
		}
		if msg.Reply != "" {
			if err := wire.Reply(n.c, msg, ack); err != nil {
				n.log.Warn("ready reply", "err", err)
			}
		}
		switch {
		case !joined:
			n.drop(msg, from.String(), protocol.DropUnexpected, errors.New(ack.Err))
			continue
		case r.Err != "":
			return nil, n.failed(role, r.Shard, 0, r.Err)
		case !ready.take(role, r.Shard):
			n.drop(msg, from.String(), protocol.DropDuplicate, errors.New("ready already"))
			continue
		}
		if role == protocol.RoleWorker {
			summaries[r.Shard] = r.Summary
		}
		n.log.Info("ready", "node", role, "place", r.Shard, "id", r.ID)
	}
	n.mu.Lock()
	n.roster.Start()
	n.mu.Unlock()
	return summaries, nil
}

// notReady returns the error of a job whose nodes were not all ready in
// time: it lists the places missing, and the nodes that joined them.
func (n *node[P, R, U, S]) notReady(ready *readySet) error {
	var parts, loading []string
	var nodes []protocol.Node
	for _, role := range []string{protocol.RoleWorker, protocol.RoleScheduler} {
		m := ready.missing(role)
		if len(m) > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d %ss ready (missing %v)", ready.places(role)-len(m), ready.places(role), role, m))
		}
		for _, k := range m {
			who := n.who(role, k)
			if who.Host != "" || who.PID != 0 {
				loading = append(loading, who.String())
			}
			nodes = append(nodes, protocol.Node{Role: role, Place: k, Host: who.Host, PID: who.PID})
		}
	}
	msg := fmt.Sprintf("coordinator: after %s only %s", n.opts.JoinTimeout, strings.Join(parts, ", "))
	if len(loading) > 0 {
		msg += "; joined but not ready: " + strings.Join(loading, ", ")
	}
	return &notReadyError{err: protocol.Timeout(errors.New(msg)), nodes: nodes}
}

// notReadyError is awaitReady's error when nodes were not ready in time:
// after a rollback, they are lost, and spares may take their places.
type notReadyError struct {
	err   error
	nodes []protocol.Node
}

func (e *notReadyError) Error() string { return e.err.Error() }
func (e *notReadyError) Unwrap() error { return e.err }

// rounds runs the pipeline from Start's update u until the core is done:
// every round up to the stop's last is pulled, the check's report is in and
// confirmed the stop, and the stop task is sent.
func (n *node[P, R, U, S]) rounds(ctx context.Context, u U) error {
	n.timing = map[uint64]*roundTimes{}
	n.stats.init(n.opts.Workers, n.opts.Schedulers)
	n.nats0 = n.c.NATS().Stats()
	n.start = time.Now()
	n.ckptAt = n.start
	lastProgress := n.start
	if n.resume == nil {
		n.core.Start(n.start, u)
		if n.csv != nil {
			// A spare that takes a place before the first checkpoint
			// starts the job again: the metrics go back to their start.
			if err := n.csv.markRound(0, n.opts.CheckpointKeep+2); err != nil {
				return fmt.Errorf("coordinator: %w", err)
			}
		}
	} else {
		// The reports before the checkpoint, as the job it resumes wrote
		// them.
		for _, s := range n.core.Status().Trace {
			if err := n.record(s); err != nil {
				return err
			}
		}
		if n.csv != nil {
			if err := n.csv.markRound(n.res.Resumed, n.opts.CheckpointKeep+2); err != nil {
				return fmt.Errorf("coordinator: %w", err)
			}
		}
	}
	n.monUpdates = n.core.Status().Updates // a resumed job's are not this process's
	n.prog.at, n.prog.updates = n.start, n.monUpdates
	if err := n.perform(); err != nil {
		return err
	}
	wctx := ctx // the context of the waits
	for !n.done {
		msg, err := n.next(wctx)
		if err != nil && n.ckpt != nil && n.final == nil && ctx.Err() != nil {
			// Interrupted: the job goes on until its final checkpoint is
			// committed, for at most a timeout (DESIGN "Checkpoints").
			n.interrupt(context.Cause(ctx))
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), n.opts.Timeout)
			defer cancel()
			continue
		}
		if err != nil {
			if n.final != nil {
				return fmt.Errorf("%w (no final checkpoint: %v)", n.final, err)
			}
			return err
		}
		if err := n.resend(); err != nil {
			return err
		}
		if msg != nil {
			switch strings.TrimPrefix(msg.Subject, n.c.Subject("")) {
			case protocol.SubjectPlanned:
				err = n.onPlan(msg)
			case protocol.SubjectPartial:
				err = n.onPartial(msg)
			case protocol.SubjectStored:
				err = n.onStored(msg)
			}
			if err == nil {
				err = n.perform()
			}
			if err != nil {
				return err
			}
		}
		if n.final != nil && n.finalDone() {
			return n.final
		}
		if lost, err := n.checkAlive(); err != nil {
			if err := n.replace(ctx, lost, err); err != nil {
				return err
			}
		}
		if n.opts.Progress != nil && !n.done && time.Since(lastProgress) >= n.opts.ProgressEvery {
			lastProgress = time.Now()
			n.progressLine()
		}
	}
	if n.final != nil {
		// The job ended before its final checkpoint was committed: it was
		// interrupted all the same, and writes nothing.
		return n.awaitFinal(wctx)
	}
	return nil
}

// next waits for the next plan or partial until the core's deadline. At the
// deadline it ticks the core, which fails the job naming what did not come
// in time; it returns a nil message when the tick is early.
func (n *node[P, R, U, S]) next(ctx context.Context) (*nats.Msg, error) {
	wctx := ctx
	deadline, _, ok := n.core.Deadline()
	if at, on := n.resends.next(); ok && on && at.Before(deadline) {
		deadline = at // an early tick: the core waits on
	}
	if beat := time.Now().Add(n.opts.Heartbeat); n.opts.Heartbeat > 0 && (!ok || beat.Before(deadline)) {
		deadline, ok = beat, true // an early tick, to look for lost nodes
	}
	if ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	t0 := time.Now()
	msg, err := n.box.Next(wctx)
	n.waited += time.Since(t0)
	if err == nil {
		return msg, nil
	}
	if errors.Is(err, wire.ErrIncomplete) {
		n.incomplete = err
		n.drop(nil, "", protocol.DropIncomplete, err)
		return nil, nil
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	if err := n.core.Step(pipeline.Event[P, R, S]{Kind: pipeline.Tick, Time: time.Now()}); err != nil {
		if nc := n.c.NATS(); !nc.IsConnected() {
			// An outage longer than the timeout, not the node's fault.
			return nil, fmt.Errorf("coordinator: %w (the connection to the NATS server at %s is down: %s, %d reconnects so far)",
				err, wire.RedactURL(strings.Join(nc.Servers(), ",")), strings.ToLower(nc.Status().String()), nc.Stats().Reconnects)
		}
		if n.incomplete != nil {
			return nil, fmt.Errorf("coordinator: %w (a message was dropped before: %v)", err, n.incomplete)
		}
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	return nil, nil
}

// step steps the core with e, which msg brought from the node from. A
// refused event is dropped (DropUnexpected): it reports whether e was taken
// in.
func (n *node[P, R, U, S]) step(msg *nats.Msg, from protocol.Node, e pipeline.Event[P, R, S]) (bool, error) {
	err := n.core.Step(e)
	switch {
	case errors.Is(err, pipeline.ErrRefused):
		n.drop(msg, from.String(), protocol.DropUnexpected, err)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("coordinator: %w", err)
	}
	return true, nil
}

// onPlan opens a plan, checks it, and steps the core with it. A plan of
// another run, a replay, or one not asked for is dropped; an invalid plan,
// or one that differs from the plan taken for its round, fails the job
// (DESIGN "Hostile traffic").
func (n *node[P, R, U, S]) onPlan(msg *nats.Msg) error {
	now := time.Now()
	if wire.IsNoResponders(msg) {
		// A plan request sent again while its scheduler is still away
		// (DESIGN "NATS outages"): the next one reaches it.
		n.log.Debug("a plan request found no scheduler", "subject", msg.Subject)
		return nil
	}
	var rep protocol.PlanReply[P]
	if err := protocol.Open(msg.Data, &rep, protocol.TypePlanReply, n.runID); err != nil {
		n.drop(msg, "", protocol.Reason(err), err)
		return nil
	}
	from := n.who(protocol.RoleScheduler, rep.Part)
	adm, err := n.gate.Plan(rep, n.gate.Hash(msg.Data))
	if err := n.refused(msg, "a plan", from, adm.Drop, err); err != nil || adm.Drop != nil {
		return err
	}
	adm.Event.Time = now
	ok, err := n.step(msg, from, adm.Event)
	if ok {
		delete(n.asked, rep.Round)
		adm.Take()
		n.stats.planned(rep.Part, rep.Nanos)
		if m := n.opts.Monitor; m != nil {
			m.PhaseSeconds.WithLabelValues("plan").Add(float64(rep.Nanos) / 1e9)
		}
	}
	return err
}

// refused returns the job's error if the gate refused msg, what came from
// the node from, with err, and drops it if it refused it with drop.
func (n *node[P, R, U, S]) refused(msg *nats.Msg, what string, from protocol.Node, drop *protocol.Drop, err error) error {
	var f *Failed
	switch {
	case errors.As(err, &f):
		return n.failed(f.Role, f.Place, f.Round, f.Cause)
	case err != nil:
		return n.invalid(msg, what, from, err)
	case drop != nil:
		n.drop(msg, from.String(), drop.Reason, drop.Err)
	}
	return nil
}

// onPartial opens a worker's partial, checks it, and steps the core with
// it. A partial of another run, a replay, or one of a task not awaited is
// dropped; an invalid partial, one without the report its task asked for,
// or one that differs from the partial taken for its round from its
// shard, fails the job (DESIGN "Hostile traffic").
func (n *node[P, R, U, S]) onPartial(msg *nats.Msg) error {
	now := time.Now()
	var p protocol.Partial[R, S]
	if err := protocol.Open(msg.Data, &p, protocol.TypePartial, n.runID); err != nil {
		n.drop(msg, "", protocol.Reason(err), err)
		return nil
	}
	from := n.who(protocol.RoleWorker, p.Shard)
	adm, err := n.gate.Partial(p, n.gate.Hash(msg.Data))
	if err := n.refused(msg, "a partial", from, adm.Drop, err); err != nil || adm.Drop != nil {
		return err
	}
	adm.Event.Time = now
	ok, err := n.step(msg, from, adm.Event)
	if ok {
		adm.Take()
		n.stats.work(p.Shard, p.Nanos)
		// The round's pull, if this partial completed it, is accounted
		// for when its action is performed, after this.
		if rt := n.timing[p.Round]; rt != nil && kindOf(p.Check, p.Final) == roundTask {
			if rt.first.IsZero() {
				rt.first = now
			}
			rt.last, rt.nanos = now, max(rt.nanos, p.Nanos)
		}
	}
	return err
}

// perform performs the core's actions, in order.
func (n *node[P, R, U, S]) perform() error {
	for _, a := range n.core.Ready() {
		n.gate.Done(a)
		switch a.Kind {
		case pipeline.AskPlan:
			req := a.Request.Message(n.runID)
			// The feedback is the app's Pull's: a scheduler would refuse
			// it, and blame itself, if it were not finite.
			if err := req.Validate(a.Part, n.opts.Schedulers); err != nil {
				return fmt.Errorf("coordinator: the feedback of the app's Pull: %w", err)
			}
			o, err := n.publish(protocol.SubjectPlan(a.Part), protocol.SubjectPlanned, req)
			if err != nil {
				return fmt.Errorf("coordinator: round %d: %w", a.Round, err)
			}
			n.asked[a.Round] = o
		case pipeline.SendTask:
			if err := n.send(a.Task.Message(n.runID)); err != nil {
				return err
			}
		case pipeline.RecordReport:
			if a.Final {
				delete(n.tasks, taskKey{n.gate.checkRound, checkTask})
			}
			if err := n.record(a.Sample); err != nil {
				return err
			}
		case pipeline.RoundPulled:
			delete(n.tasks, taskKey{a.Round, roundTask})
			n.pulled(a.Round, a.Info)
		case pipeline.CheckpointTaken:
			if err := n.checkpointTaken(a.Round, a.Snapshot, a.App); err != nil {
				return err
			}
		case pipeline.CheckpointAbandoned:
			n.ckpt.drop(a.Round, "a stop is decided before its cut")
		case pipeline.StopDecided:
			n.log.Info("stopping", "reason", a.Reason, "app_reason", n.core.Status().AppReason, "round", a.Round, "last", a.Last)
			if n.final != nil && n.finalRound == 0 {
				// Interrupted while the job stops: no final checkpoint.
				n.finalRound = ^uint64(0)
			}
		case pipeline.Resumed:
			n.log.Info("stop refuted by its check; going on", "reason", a.Reason, "round", a.Round)
		case pipeline.JobDone:
			n.done = true
		}
	}
	return nil
}

// send publishes a task, timing it, and notes whose partials are
// awaited.
func (n *node[P, R, U, S]) send(task protocol.Task[P, U]) error {
	t0 := time.Now()
	if task.Check {
		// One check at a time is sent again after a reconnect.
		delete(n.tasks, taskKey{n.gate.checkRound, checkTask})
	}
	n.gate.Sent(task)
	sent, err := n.publishTask(task)
	if key := (taskKey{task.Round, kindOf(task.Check, task.Final)}); err == nil && (!task.Stop || task.Report) {
		n.tasks[key] = sent
	}
	if err != nil {
		if task.Stop {
			return fmt.Errorf("coordinator: stop: %w", err)
		}
		return fmt.Errorf("coordinator: round %d: %w", task.Round, err)
	}
	if task.Stop || task.Check {
		return nil // not a round
	}
	n.timing[task.Round] = &roundTimes{sent: t0}
	d := time.Since(t0)
	n.stats.dispatch += d
	if m := n.opts.Monitor; m != nil {
		m.PhaseSeconds.WithLabelValues("dispatch").Add(d.Seconds())
		m.InFlight.Set(float64(n.core.InFlight()))
	}
	return nil
}

// publishTask sends task to the workers: one broadcast, or, when one of
// its updates is a schmp.Splitter, to each worker its own parts.
// It returns what it sent, to be sent again after a reconnect.
func (n *node[P, R, U, S]) publishTask(task protocol.Task[P, U]) ([]outbound, error) {
	if !pipeline.Split(task.Updates) {
		o, err := n.publish(protocol.SubjectTask, "", task)
		return []outbound{o}, err
	}
	all := task.Updates
	task.Split = true
	var sent []outbound
	for k := range n.opts.Workers {
		task.Updates, task.Shard = pipeline.ForShard(all, k), k
		o, err := n.publish(protocol.SubjectTaskShard(k), "", task)
		if err != nil {
			return nil, err
		}
		sent = append(sent, o)
	}
	return sent, nil
}

// outbound is a message the coordinator sent, encoded: its subject, its
// reply subject and its bytes.
type outbound struct {
	subject, reply string
	data           []byte
}

// publish encodes v and publishes it on the job subject name, with the
// job subject reply as its reply subject ("" for none), and returns it
// encoded. A publish lost to a broken connection (wire.Lost) is no error:
// the message is sent again after the reconnect (DESIGN "NATS outages").
func (n *node[P, R, U, S]) publish(name, reply string, v any) (outbound, error) {
	data, err := codec.Marshal(v)
	if err != nil {
		return outbound{}, err
	}
	o := outbound{name, reply, data}
	if err := n.c.PublishData(name, reply, data); err != nil {
		if !wire.Lost(err) {
			return outbound{}, err
		}
		n.log.Warn("message not sent; sending it at the reconnect", "subject", name, "err", err)
	}
	return o, nil
}

// resend sends the plan requests and the tasks not answered again, the
// same bytes, after a reconnect of the coordinator (DESIGN "NATS outages"): core NATS
// drops what was in flight when the connection broke. The schedulers and
// workers take a message again as a duplicate, answered again, never
// applied twice, so the job goes on as if nothing had happened.
func (n *node[P, R, U, S]) resend() error {
	now := time.Now()
	if n.reconnected.Swap(false) {
		n.resends.reconnected(now, n.opts.Timeout)
		n.heard(now) // the outage's silence is not the nodes'
	}
	if !n.resends.due(now) {
		return nil
	}
	if n.ckpt != nil {
		n.ckpt.late()
	}
	var all []outbound
	for _, r := range slices.Sorted(maps.Keys(n.asked)) {
		all = append(all, n.asked[r])
	}
	keys := slices.SortedFunc(maps.Keys(n.tasks), func(a, b taskKey) int {
		return cmp.Or(cmp.Compare(a.round, b.round), cmp.Compare(a.kind, b.kind))
	})
	for _, k := range keys {
		all = append(all, n.tasks[k]...)
	}
	n.log.Debug("sending the unanswered messages again", "messages", len(all))
	for _, o := range all {
		if err := n.c.PublishData(o.subject, o.reply, o.data); err != nil {
			if wire.Lost(err) {
				// The connection broke again: the next reconnect sends them.
				n.log.Warn("messages not sent again; sending them at the reconnect", "subject", o.subject, "err", err)
				return nil
			}
			return fmt.Errorf("coordinator: send again after a reconnect: %w", err)
		}
	}
	return nil
}

// pulled accounts for round, just pulled.
func (n *node[P, R, U, S]) pulled(round uint64, info schmp.PlanInfo) {
	n.npulled = round
	n.stats.plans.add(info)
	rt := n.timing[round]
	delete(n.timing, round)
	if rt == nil {
		return
	}
	latency, wait, push := rt.pulled.Sub(rt.sent), rt.last.Sub(rt.first), time.Duration(rt.nanos)
	n.res.RoundTimes = append(n.res.RoundTimes, latency)
	n.stats.round(push, wait, rt.pull, latency)
	if m := n.opts.Monitor; m != nil {
		m.Rounds.Inc()
		// The core's count: the plans' variables, or the updates the
		// app's Feedback counts (the column layouts').
		if u := n.core.Status().Updates; u > n.monUpdates {
			m.Updates.Add(float64(u - n.monUpdates))
			n.monUpdates = u
		}
		m.PlanCapacity.Add(float64(info.Capacity))
		m.PlanDeferred.Add(float64(info.Deferred))
		m.PlanRejected.Add(float64(info.Rejected))
		m.RoundSeconds.Observe(latency.Seconds())
		m.PhaseSeconds.WithLabelValues("push").Add(push.Seconds())
		m.PhaseSeconds.WithLabelValues("wait").Add(wait.Seconds())
		m.PhaseSeconds.WithLabelValues("pull").Add(rt.pull.Seconds())
		m.InFlight.Set(float64(n.core.InFlight()))
	}
}

// record writes a report to the monitor and the metrics CSV.
func (n *node[P, R, U, S]) record(s schmp.Sample) error {
	if m := n.opts.Monitor; m != nil {
		gap := math.NaN()
		if s.HasGap {
			gap = s.Gap
		}
		app := make(map[string]float64, len(s.Metrics))
		for _, a := range s.Metrics {
			app[a.Name] = a.Value
		}
		m.Report(s.Objective, gap, float64(s.NNZ), app)
	}
	if n.csv == nil {
		return nil
	}
	n.stats.nats = n.natsDelta()
	if err := n.csv.write(s, n.stats.since(&n.lastRow, n.npulled-n.lastRound)); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	n.lastRow, n.lastRound = n.stats.copy(), n.npulled
	return nil
}

// markWritten marks the metrics CSV's row of the model written: the last
// report's, or the kept one's (schmp.Kept).
func (n *node[P, R, U, S]) markWritten() error {
	if n.csv == nil {
		return nil
	}
	var round uint64
	var kept bool
	if k, ok := n.app.(schmp.Kept); ok {
		if err := protocol.Guard("KeptRound", func() error { round, kept = k.KeptRound(); return nil }); err != nil {
			return fmt.Errorf("coordinator: %w", err)
		}
	}
	if err := n.csv.markWritten(round, kept); err != nil {
		return fmt.Errorf("coordinator: %w", err)
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
	st := n.core.Status()
	pos := position{Rounds: st.Rounds, MaxRounds: n.opts.MaxRounds, Elapsed: time.Since(n.start), TimeLimit: n.opts.TimeLimit, Ended: st.Done}
	if _, ok := n.app.(schmp.Iterated); ok {
		pos.Period = n.core.Config().Period
	}
	line, empty := n.prog.line(lineState{now: time.Now(), pos: pos, final: st.Final, updates: st.Updates, plans: n.stats.plans,
		pulled: n.npulled, reconnects: n.c.NATS().Stats().Reconnects - n.nats0.Reconnects, stage: n.stage()})
	if empty != nil {
		r1 := func(x float64) float64 { return math.Round(10*x) / 10 }
		n.log.Warn("the plans run mostly empty: "+emptyPlans, "selected", r1(empty.selected), "capacity", r1(empty.capacity),
			"deferred", r1(empty.deferred), "rejected", r1(empty.rejected))
	}
	fmt.Fprintln(n.opts.Progress, line)
}

// stage returns the app's description of the stage running, or "" for
// an app that does not run in stages.
func (n *node[P, R, U, S]) stage() string {
	if n.staged == nil {
		return ""
	}
	return n.staged.Stage()
}

// finish stops the schedulers, fills in the result and writes the outputs,
// once the core is done: the workers are told to leave, and the check's
// report showed the state of the app's coordinator.
func (n *node[P, R, U, S]) finish() error {
	st := n.core.Status()
	n.res.Elapsed = time.Since(n.start)
	n.res.Rounds, n.res.Updates, n.res.Candidates = st.Rounds, st.Updates, st.Candidates
	n.res.Rejected, n.res.Deferred, n.res.Capacity = st.Rejected, st.Deferred, st.Capacity
	n.res.Final, n.res.Reason, n.res.AppReason, n.res.Trace = st.Final, st.Reason, st.AppReason, st.Trace
	if _, ok := n.app.(schmp.Iterated); ok {
		n.res.Period = n.core.Config().Period
	}
	n.res.Timing = n.stats.timing(n.res.Elapsed, n.waited, n.natsDelta())
	n.res.MaxInFlight, n.res.MaxVarsInFlight = st.MaxInFlight, st.MaxVarsInFlight
	n.res.App = n.app
	n.res.Reconnects = n.c.NATS().Stats().Reconnects - n.nats0.Reconnects
	for p := range n.opts.Schedulers {
		stop := protocol.PlanRequest{Header: protocol.Header{Type: protocol.TypePlanRequest, Run: n.runID}, Round: st.Rounds + 1, Stop: true}
		if err := wire.Publish(n.c, protocol.SubjectPlan(p), stop); err != nil {
			n.log.Warn("stop scheduler", "part", p, "err", err)
		}
	}
	// The stops, and the stop task before them, must reach the others
	// even if the server is away for a moment (DESIGN "How a job fails").
	if err := n.c.Flush(n.opts.Timeout); err != nil {
		n.log.Warn("flush", "err", err)
	}
	if n.opts.Progress != nil {
		n.progressLine()
		stage := n.stage()
		if stage != "" {
			stage = "  " + stage
		}
		fmt.Fprintf(n.opts.Progress, "stopped: %s after %d rounds, %d updates, %s%s\n",
			n.res.Why(), n.res.Rounds, n.res.Updates, n.res.Elapsed.Round(time.Millisecond), stage)
	}
	if f, ok := n.app.(schmp.Finisher[S]); ok {
		if err := protocol.Guard("Finish", func() error { return f.Finish(n.core.Finals()) }); err != nil {
			return fmt.Errorf("coordinator: finish: %w", err)
		}
	}
	return n.commit()
}

// createOutputs creates the model's files and the metrics CSV, which
// commit writes and commits together once the job is done.
func (n *node[P, R, U, S]) createOutputs() error {
	err := protocol.Guard("Outputs", func() (err error) { n.outputs, err = schmp.ModelOutputs(n.app, n.opts.Out); return err })
	if err != nil {
		return fmt.Errorf("coordinator: outputs: %w", err)
	}
	var paths []string
	for _, o := range n.outputs {
		if o.Path == "" || o.Write == nil {
			return fmt.Errorf("coordinator: outputs: an output without a path or a writer (%q)", o.Path)
		}
		paths = append(paths, o.Path)
	}
	if n.opts.Metrics != "" {
		paths = append(paths, n.opts.Metrics)
	}
	if n.files, err = atomicfile.CreateGroup(paths...); err != nil {
		return err
	}
	if n.opts.Metrics != "" {
		fs := n.files.Files()
		n.csv = newMetricsCSV(fs[len(fs)-1])
	}
	return nil
}

// commit writes the model's files, in order, and commits them with the
// metrics CSV: all or none (DESIGN "Outputs and inputs").
func (n *node[P, R, U, S]) commit() error {
	for i, o := range n.outputs {
		f := n.files.Files()[i]
		if err := protocol.Guard("WriteModel", func() error { return o.Write(f) }); err != nil {
			return fmt.Errorf("coordinator: write %s: %w", o.Path, err)
		}
	}
	if err := n.markWritten(); err != nil {
		return err
	}
	if err := n.files.Commit(); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	return nil
}

// guardedHooks returns the app's optional interfaces for the core
// (pipeline.New's hooks): schmp.Staged as it is, and schmp.Iterated with
// LastRound called through protocol.Guard.
func guardedHooks(app any) any {
	it, ok := app.(schmp.Iterated)
	if !ok {
		return app
	}
	if staged, ok := app.(schmp.Staged); ok {
		return guardedStaged{guardedIter{it}, staged}
	}
	return guardedIter{it}
}

// guardedIter is a schmp.Iterated app whose LastRound is called through
// protocol.Guard.
type guardedIter struct{ it schmp.Iterated }

func (g guardedIter) RoundsPerIteration() uint64 { return g.it.RoundsPerIteration() }
func (g guardedIter) LastRound(last uint64) error {
	return protocol.Guard("LastRound", func() error { return g.it.LastRound(last) })
}

// guardedStaged is a guardedIter that runs in stages too.
type guardedStaged struct {
	guardedIter
	schmp.Staged
}

// abort tells every other node that the job failed.
func (n *node[P, R, U, S]) abort(cause error) {
	msg := cause.Error()
	task := protocol.Task[P, U]{Header: protocol.Header{Type: protocol.TypeTask, Run: n.runID}, Stop: true, Abort: msg}
	if err := wire.Publish(n.c, protocol.SubjectTask, task); err != nil {
		n.log.Warn("abort workers", "err", err)
	}
	for p := range max(n.opts.Schedulers, 1) {
		req := protocol.PlanRequest{Header: protocol.Header{Type: protocol.TypePlanRequest, Run: n.runID}, Stop: true, Abort: msg}
		if err := wire.Publish(n.c, protocol.SubjectPlan(p), req); err != nil {
			n.log.Warn("abort scheduler", "part", p, "err", err)
		}
	}
	if err := n.c.NATS().FlushTimeout(n.opts.Timeout); err != nil {
		n.log.Warn("abort flush", "err", err)
	}
}
