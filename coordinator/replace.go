package coordinator

import (
	"context"
	"fmt"
	"maps"
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

// spareNode is a spare admitted (Options.Spares): its ID and who it is.
type spareNode struct {
	id   string
	run  string // the run id of its join, which its assignment carries
	node protocol.Node
}

// replace gives the place of lost, a worker or scheduler part taken for
// lost, to a spare of its role, and takes the whole job back to its last
// checkpoint (DESIGN "Spares and replacement"): every node restores its app from its piece (the
// others in place, the spare having loaded the lost node's shard), and the
// coordinator rebuilds its own, under a new run id,
// so that no message of the rounds after the checkpoint counts; the
// rounds after it run again, and the job ends with the model it would
// have ended with had no node been lost. It returns lostErr, the job's
// failure, when there is no spare or no checkpoint.
func (n *node[P, R, U, S]) replace(ctx context.Context, lost protocol.Node, lostErr error) error {
	round := n.res.Resumed
	if n.ckpt != nil {
		if _, last, _ := n.ckpt.state(); last > 0 {
			round = last
		}
	}
	var spares []spareNode
	if round > 0 {
		spares = n.awaitSpare(ctx, lost)
	}
	switch {
	case len(spares) == 0:
		return lostErr
	case round == 0:
		return fmt.Errorf("%w (a spare waits, but there is no checkpoint to go back to: --checkpoint-every)", lostErr)
	}
	n.log.Warn("replacing a lost node", "node", n.who(lost.Role, lost.Place), "round", round, "err", lostErr)
	sctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	// Each read is a request whose answer an outage may lose, as in
	// checkpoint.Restore, which the other roles' rollbacks run: Retry
	// sends it again after the reconnect.
	var m checkpoint.Manifest
	err := checkpoint.Retry(sctx, n.c, func(ctx context.Context) (err error) {
		m, err = n.store.Manifest(ctx, round)
		return err
	})
	if err == nil && m.Round != round {
		err = fmt.Errorf("the manifest is of round %d", m.Round)
	}
	var b []byte
	if err == nil {
		err = checkpoint.Retry(sctx, n.c, func(ctx context.Context) (err error) {
			b, err = n.store.Get(ctx, round, checkpoint.CoordinatorPiece, m.Pieces[checkpoint.CoordinatorPiece])
			return err
		})
	}
	var piece coordPiece
	if err == nil {
		err = codec.Unmarshal(b, &piece)
	}
	if err != nil {
		return fmt.Errorf("%w (no spare could take over: the checkpoint of round %d: %v)", lostErr, round, err)
	}

	// The new run: every message of the old one is dropped from now on.
	old, run := n.runID, nuid.Next()
	spare := spares[0]
	n.mu.Lock()
	n.spares[lost.Role] = spares[1:]
	n.runID = run
	spare.node.Place = lost.Place
	n.ids[lost.Role][lost.Place] = spare.id
	n.nodes[lost.Role][lost.Place] = spare.node
	n.mu.Unlock()
	rb := &protocol.Rollback{Round: round, Run: run}
	limit := map[string]int{protocol.RoleWorker: n.opts.Workers, protocol.RoleScheduler: n.opts.Schedulers}[lost.Role]
	assign := protocol.Assign{Header: protocol.Header{Type: protocol.TypeAssign, Run: spare.run}, Shard: lost.Place, Shards: limit, Rollback: rb}
	if err := wire.Publish(n.c, protocol.SubjectSpare(spare.id), assign); err != nil {
		return fmt.Errorf("%w (the spare: %v)", lostErr, err)
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
	summaries, err := n.awaitReady(ctx, n.readies)
	if err != nil {
		return fmt.Errorf("%w; then, rolling back to the checkpoint of round %d: %w", lostErr, round, err)
	}
	if err := n.rebuild(ctx, summaries, piece, round); err != nil {
		return fmt.Errorf("%w; then, rolling back to the checkpoint of round %d: %w", lostErr, round, err)
	}
	n.res.Replaced++
	n.log.Info("rolled back; going on", "round", round, "node", n.who(lost.Role, lost.Place))
	return n.perform()
}

// awaitSpare returns the spares of lost's role. When none waits but the
// job admits spares (Options.Spares), it waits up to JoinTimeout for one to
// join: a worker (or scheduler) started after the loss takes the place.
func (n *node[P, R, U, S]) awaitSpare(ctx context.Context, lost protocol.Node) []spareNode {
	deadline := time.Now().Add(n.opts.JoinTimeout)
	for said := false; ; said = true {
		n.mu.Lock()
		spares := n.spares[lost.Role]
		n.mu.Unlock()
		if len(spares) > 0 || n.opts.Spares == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return spares
		}
		if !said {
			n.log.Warn("waiting for a spare to take the place of a lost node: start one", "node", n.who(lost.Role, lost.Place), "within", n.opts.JoinTimeout)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// forget forgets everything of the rounds in flight and the messages of the
// old run: the ledgers, the tasks and requests awaiting answers, the
// checkpoint being collected, the heartbeats.
func (n *node[P, R, U, S]) forget() {
	n.gate = NewGate[P, R, U, S](n.opts.Schedulers, n.opts.Workers)
	n.asked, n.tasks = map[uint64]outbound{}, map[taskKey][]outbound{}
	n.timing = map[uint64]*roundTimes{}
	n.incomplete, n.resending = nil, false
	if n.ckpt != nil {
		n.ckpt.reset(n.runID)
	}
	n.mu.Lock()
	for _, seen := range n.seen {
		clear(seen) // counted from the restart of the rounds
	}
	n.mu.Unlock()
}

// rebuild builds the app's coordinator anew, starts it with the workers'
// summaries, restores it and the pipeline from the coordinator's piece of
// the checkpoint of round, and rewinds the metrics to that round.
func (n *node[P, R, U, S]) rebuild(ctx context.Context, summaries []S, piece coordPiece, round uint64) error {
	var app schmp.Coordinator[P, R, U, S]
	if err := protocol.Guard("NewCoordinator", func() (err error) { app, err = n.newApp(ctx); return err }); err != nil {
		return err
	}
	snap, ok := app.(schmp.Snapshotter)
	if !ok {
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
	if err := protocol.Guard("Start", func() (err error) { _, err = app.Start(summaries); return err }); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if err := protocol.Guard("Restore", func() error { return snap.Restore(piece.App) }); err != nil {
		return err
	}
	var s pipeline.Snapshot[U]
	if err := codec.Unmarshal(piece.Core, &s); err != nil {
		return fmt.Errorf("the pipeline's state: %w", err)
	}
	core, err := pipeline.Resume(n.cfg, schmp.Coordinator[P, R, U, S](timedApp[P, R, U, S]{app, n}), guardedHooks(app), s, time.Now())
	if err != nil {
		return err
	}
	if n.metrics != nil {
		mark, ok := n.metricMarks[round]
		if !ok {
			return fmt.Errorf("the metrics written up to round %d are not known", round)
		}
		if err := n.metrics.Rewind(mark); err != nil {
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
	all := maps.Clone(n.spares)
	n.mu.Unlock()
	for _, spares := range all {
		for _, s := range spares {
			a := protocol.Assign{Header: protocol.Header{Type: protocol.TypeAssign, Run: s.run}, Stop: true}
			if cause != nil {
				a.Abort = cause.Error()
			}
			if err := wire.Publish(n.c, protocol.SubjectSpare(s.id), a); err != nil {
				n.log.Warn("release a spare", "id", s.id, "err", err)
			}
		}
	}
	if len(all) > 0 {
		if err := n.c.Flush(n.opts.Timeout); err != nil {
			n.log.Warn("flush", "err", err)
		}
	}
}
