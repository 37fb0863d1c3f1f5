package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nuid"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/member"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// replace gives the places of the nodes lost, workers or scheduler parts
// taken for lost, to spares of their roles, and takes the whole job back
// to its last checkpoint (DESIGN "Spares and replacement"), or to its
// start when none is committed: every node restores its app from its
// piece (the others in place, a spare having loaded the lost node's shard)
// or builds it anew, and the coordinator rebuilds its own, under a new run
// id, so that no message of the rounds after the checkpoint counts; the
// rounds after it run again, and the job ends with the model it would
// have ended with had no node been lost. It returns lostErr, the job's
// failure, when there are not spares enough.
func (n *node[P, R, U, S]) replace(ctx context.Context, lost []protocol.Node, lostErr error) error {
	if n.opts.Spares == 0 {
		return lostErr
	}
	lost, lostErr = n.settle(ctx, lost, lostErr)
	round := n.res.Resumed
	if n.ckpt != nil {
		if _, last, _ := n.ckpt.state(); last > 0 {
			round = last
		}
	}
	if !n.awaitSpares(ctx, lost) {
		return lostErr
	}
	n.log.Warn("replacing lost nodes", "nodes", len(lost), "round", round, "err", lostErr)
	var piece *coordPiece
	if round > 0 {
		var err error
		if piece, err = n.coordPiece(ctx, round); err != nil {
			return fmt.Errorf("%w (no spare could take over: the checkpoint of round %d: %v)", lostErr, round, err)
		}
	}

	// The readies of the new run, subscribed to before anyone learns of it.
	readies, err := wire.NewMailbox(n.c, protocol.SubjectReady)
	if err != nil {
		return fmt.Errorf("%w (the rollback: %v)", lostErr, err)
	}
	defer readies.Close()

	// The new run: every message of the old one is dropped from now on.
	old, run := n.runID, nuid.Next()
	rb := &protocol.Rollback{Round: round, Run: run}
	n.mu.Lock()
	n.runID = run
	taken := n.roster.Replace(lost)
	n.mu.Unlock()
	for i, l := range lost {
		s := taken[i]
		n.log.Warn("a spare takes a lost node's place", "node", s.Node, "round", round)
		a := protocol.Assign{Header: protocol.Header{Type: protocol.TypeAssign, Run: s.Run}, Shard: l.Place, Shards: n.roster.Limit(l.Role), Rollback: rb}
		if err := wire.Publish(n.c, protocol.SubjectSpare(s.ID), a); err != nil {
			return fmt.Errorf("%w (the spare: %v)", lostErr, err)
		}
	}
	task := protocol.Task[P, U]{Header: protocol.Header{Type: protocol.TypeTask, Run: old}, Rollback: rb}
	if err := wire.Publish(n.c, protocol.SubjectTask, task); err != nil {
		return fmt.Errorf("%w (the rollback: %v)", lostErr, err)
	}
	for p := range n.opts.Schedulers {
		req := protocol.PlanRequest{Header: protocol.Header{Type: protocol.TypePlanRequest, Run: old}, Rollback: rb}
		if err := wire.Publish(n.c, protocol.SubjectPlan(p), req); err != nil {
			return fmt.Errorf("%w (the rollback: %v)", lostErr, err)
		}
	}
	n.forget()
	n.restartBeat()
	summaries, err := n.awaitReady(ctx, readies)
	if nr := (*notReadyError)(nil); errors.As(err, &nr) && n.sparesFor(nr.nodes) {
		// A node lost during the rollback (a spare that died before it
		// was ready, or a survivor that died restoring): never ready, it
		// is lost in turn, and the spares waiting roll the job back again
		// (with none, the job has waited long enough: it fails).
		n.log.Warn("nodes not ready after the rollback: replacing them too", "nodes", len(nr.nodes), "round", round)
		readies.Close()
		return n.replace(ctx, nr.nodes, fmt.Errorf("%w; then, rolling back to round %d: %w", lostErr, round, err))
	}
	if err != nil {
		return fmt.Errorf("%w; then, rolling back to round %d: %w", lostErr, round, err)
	}
	if err := n.rebuild(ctx, summaries, piece, round); err != nil {
		return fmt.Errorf("%w; then, rolling back to round %d: %w", lostErr, round, err)
	}
	n.res.Replaced += len(lost)
	n.log.Info("rolled back; going on", "round", round, "replaced", len(lost))
	return n.perform()
}

// settle waits two heartbeats more, and returns the nodes lost by then with
// their error: nodes lost at the same moment (a machine that held two)
// fall silent within a heartbeat of each other, and are replaced together.
func (n *node[P, R, U, S]) settle(ctx context.Context, lost []protocol.Node, lostErr error) ([]protocol.Node, error) {
	select {
	case <-ctx.Done():
		return lost, lostErr
	case <-time.After(2 * n.opts.Heartbeat):
	}
	now := time.Now()
	n.mu.Lock()
	more, _ := n.live.silent(now)
	n.mu.Unlock()
	if len(more) <= len(lost) {
		return lost, lostErr
	}
	return more, n.lostError(more, now)
}

// sparesFor says whether a spare of its role waits for each node of lost.
func (n *node[P, R, U, S]) sparesFor(lost []protocol.Node) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.roster.SparesFor(lost)
}

// awaitSpares says whether a spare waits for each node lost. When too few
// wait, it waits up to JoinTimeout for more to join: a worker (or
// scheduler) started after the loss takes the place.
func (n *node[P, R, U, S]) awaitSpares(ctx context.Context, lost []protocol.Node) bool {
	deadline := time.Now().Add(n.opts.JoinTimeout)
	for said := false; ; said = true {
		ok := n.sparesFor(lost)
		if ok || time.Now().After(deadline) || ctx.Err() != nil {
			return ok
		}
		if !said {
			n.log.Warn("waiting for spares to take the places of lost nodes: start them", "nodes", len(lost), "within", n.opts.JoinTimeout)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// coordPiece reads the coordinator's piece of the checkpoint of round.
// Each read is a request whose answer an outage may lose, as in
// checkpoint.Restore, which the other roles' rollbacks run: Retry sends it
// again after the reconnect.
func (n *node[P, R, U, S]) coordPiece(ctx context.Context, round uint64) (*coordPiece, error) {
	ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	var m checkpoint.Manifest
	err := checkpoint.Retry(ctx, n.c, func(ctx context.Context) (err error) {
		m, err = n.store.Manifest(ctx, round)
		return err
	})
	if err == nil && m.Round != round {
		err = fmt.Errorf("the manifest is of round %d", m.Round)
	}
	var b []byte
	if err == nil {
		err = checkpoint.Retry(ctx, n.c, func(ctx context.Context) (err error) {
			b, err = n.store.Get(ctx, round, checkpoint.CoordinatorPiece, m.Pieces[checkpoint.CoordinatorPiece])
			return err
		})
	}
	var piece coordPiece
	if err == nil {
		err = codec.Unmarshal(b, &piece)
	}
	if err != nil {
		return nil, err
	}
	return &piece, nil
}

// forget forgets everything of the rounds in flight and the messages of the
// old run: the ledgers, the tasks and requests awaiting answers, the
// checkpoint being collected, the heartbeats.
func (n *node[P, R, U, S]) forget() {
	n.gate = NewGate[P, R, U, S](n.opts.Schedulers, n.opts.Workers)
	n.asked, n.tasks = map[uint64]outbound{}, map[taskKey][]outbound{}
	n.timing = map[uint64]*roundTimes{}
	n.incomplete = nil
	n.resends.stop()
	if n.ckpt != nil {
		n.ckpt.reset(n.runID)
	}
	n.mu.Lock()
	n.live.reset() // silences count from the restart of the rounds
	n.mu.Unlock()
}

// rebuild builds the app's coordinator anew, starts it with the workers'
// summaries, restores it and the pipeline from the coordinator's piece of
// the checkpoint of round (with no piece, round 0: starts the pipeline
// anew, as at the job's start), and rewinds the metrics to that round.
func (n *node[P, R, U, S]) rebuild(ctx context.Context, summaries []S, piece *coordPiece, round uint64) error {
	var app schmp.Coordinator[P, R, U, S]
	if err := protocol.Guard("NewCoordinator", func() (err error) { app, err = n.newApp(ctx); return err }); err != nil {
		return err
	}
	snap, ok := app.(schmp.Snapshotter)
	if !ok && (piece != nil || n.ckpt != nil) {
		return fmt.Errorf("app %s takes no checkpoints", n.opts.Manifest.App)
	}
	var outputs []schmp.Output
	err := protocol.Guard("Outputs", func() (err error) { outputs, err = schmp.ModelOutputs(app, n.opts.Out); return err })
	if err == nil && len(outputs) != len(n.outputs) {
		err = fmt.Errorf("%d outputs, %d before", len(outputs), len(n.outputs))
	}
	if err != nil {
		return fmt.Errorf("outputs: %w", err)
	}
	var u U
	if err := protocol.Guard("Start", func() (err error) { u, err = app.Start(summaries); return err }); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	timed := schmp.Coordinator[P, R, U, S](timedApp[P, R, U, S]{app, n})
	var core *pipeline.Core[P, R, U, S]
	if piece == nil {
		if core, err = pipeline.New(n.cfg, timed, guardedHooks(app)); err != nil {
			return err
		}
		core.Start(time.Now(), u)
	} else {
		if err := protocol.Guard("Restore", func() error { return snap.Restore(piece.App) }); err != nil {
			return err
		}
		var s pipeline.Snapshot[U]
		if err := codec.Unmarshal(piece.Core, &s); err != nil {
			return fmt.Errorf("the pipeline's state: %w", err)
		}
		if core, err = pipeline.Resume(n.cfg, timed, guardedHooks(app), s, time.Now()); err != nil {
			return err
		}
	}
	if n.csv != nil {
		if err := n.csv.rewind(round); err != nil {
			return err
		}
	}
	n.app, n.snap, n.outputs, n.core = app, snap, outputs, core
	n.staged, _ = app.(schmp.Staged)
	n.npulled, n.lastRound = round, round
	n.done = false
	return nil
}

// restartBeat sends the coordinator's heartbeats under the run id, anew.
func (n *node[P, R, U, S]) restartBeat() {
	if n.opts.Heartbeat <= 0 {
		return
	}
	if n.stopBeat != nil {
		n.stopBeat()
	}
	n.stopBeat = member.Beat(n.c, protocol.SubjectBeatCoordinator, n.opts.Heartbeat, protocol.Heartbeat{Header: protocol.Header{Run: n.runID}, Role: "coordinator"})
}

// releaseSpares ends the wait of the spares not used: the job is over,
// having failed with cause (nil: it succeeded).
func (n *node[P, R, U, S]) releaseSpares(cause error) {
	n.mu.Lock()
	all := n.roster.Waiting()
	n.mu.Unlock()
	for _, s := range all {
		a := protocol.Assign{Header: protocol.Header{Type: protocol.TypeAssign, Run: s.Run}, Stop: true}
		if cause != nil {
			a.Abort = cause.Error()
		}
		if err := wire.Publish(n.c, protocol.SubjectSpare(s.ID), a); err != nil {
			n.log.Warn("release a spare", "id", s.ID, "err", err)
		}
	}
	if len(all) > 0 {
		if err := n.c.Flush(n.opts.Timeout); err != nil {
			n.log.Warn("flush", "err", err)
		}
	}
}
