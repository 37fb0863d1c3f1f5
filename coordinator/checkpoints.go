package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// coordPiece is the coordinator's piece of a checkpoint: its app's state
// and the pipeline's, each encoded.
type coordPiece struct {
	App  []byte `msgpack:"app"`
	Core []byte `msgpack:"core"`
}

// checkpointer collects the pieces of the coordinator's checkpoints and
// commits each once all are in (DESIGN "Checkpoints"). Its stores and commits run in
// the background: the rounds never wait for them.
type checkpointer struct {
	store   *checkpoint.Store
	c       *wire.Conn
	log     *slog.Logger
	keep    int
	timeout time.Duration
	base    checkpoint.Manifest // the job's fields of every manifest
	pieces  []string            // the names of a checkpoint's pieces
	want    int                 // how many

	mu        sync.Mutex
	cur       *checkpoint.Manifest // the checkpoint being collected, nil if none
	have      int                  // its pieces in
	began     time.Time            // when it began
	rechecked time.Time            // when the store was last looked in for its pieces
	committed int
	last      uint64 // the round of the last checkpoint committed
	abandoned uint64 // the round of the last checkpoint abandoned
	failed    int    // checkpoints that failed, and why the last did
	failure   string

	// commitMu orders the commits: one at a time, never an older
	// checkpoint after a newer one.
	commitMu sync.Mutex
	// committedHook, if set, is called after each commit.
	committedHook func()

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// job is the job's context, never cancelled: that of the removal of
	// the pieces not committed, once ctx is.
	job context.Context
}

// reset abandons the checkpoint being collected, and makes the next ones
// of run.
func (k *checkpointer) reset(run string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cur = nil
	k.base.Run = run
}

// recheck looks in the store, in the background, for the pieces of the
// checkpoint being collected whose news has not come (lost in an outage,
// say): a piece stored is as good as its news, the store having computed
// its digest. It does so at most every 100 ms, and not in the checkpoint's
// first 100 ms, when the news is on its way. It is called with k.mu held.
func (k *checkpointer) recheck() {
	m := k.cur
	if m == nil || time.Since(k.began) < recheckEvery || time.Since(k.rechecked) < recheckEvery {
		return
	}
	k.rechecked = time.Now()
	var missing []string
	for _, p := range k.pieces {
		if _, ok := m.Pieces[p]; !ok {
			missing = append(missing, p)
		}
	}
	round := m.Round
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		ctx, cancel := context.WithTimeout(k.ctx, k.timeout)
		defer cancel()
		for _, p := range missing {
			if d, size, err := k.store.Stat(ctx, round, p); err == nil {
				k.stored(p, round, d, size, "")
			}
		}
	}()
}

// overdue reports whether the checkpoint being collected has had its
// time (the timeout) and may be abandoned for a new one.
func (k *checkpointer) overdue() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur != nil && time.Since(k.began) >= k.timeout
}

// recheckEvery is the least time between two looks in the store for the
// pieces of a checkpoint.
const recheckEvery = 100 * time.Millisecond

// late looks in the store for the pieces of the checkpoint being collected
// whose news has not come: after a reconnect, whose outage may have lost
// it.
func (k *checkpointer) late() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.recheck()
}

// state returns the round of the checkpoint being collected (0 if none),
// of the last committed and of the last abandoned.
func (k *checkpointer) state() (collecting, last, abandoned uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur != nil {
		collecting = k.cur.Round
	}
	return collecting, k.last, k.abandoned
}

// fail records that the checkpoint of round failed, for err.
func (k *checkpointer) fail(round uint64, msg string, err error) {
	k.log.Warn(msg, "round", round, "err", err)
	k.mu.Lock()
	k.failed, k.failure = k.failed+1, fmt.Sprintf("round %d: %v", round, err)
	k.mu.Unlock()
	k.abandon(round)
}

// abandon records that the checkpoint of round will not be committed.
func (k *checkpointer) abandon(round uint64) {
	k.mu.Lock()
	k.abandoned = max(k.abandoned, round)
	k.mu.Unlock()
	if k.committedHook != nil {
		k.committedHook()
	}
}

// newCheckpointer returns the checkpointer of a job with base's fields.
func newCheckpointer(ctx context.Context, c *wire.Conn, store *checkpoint.Store, base checkpoint.Manifest, pieces []string, keep int, timeout time.Duration, log *slog.Logger) *checkpointer {
	k := &checkpointer{store: store, c: c, log: log, keep: keep, timeout: timeout, base: base, pieces: pieces, want: len(pieces)}
	k.job = context.WithoutCancel(ctx)
	k.ctx, k.cancel = context.WithCancel(k.job)
	return k
}

// begin starts the checkpoint of round, decided; data is the job's data
// fingerprint. It reports false, and does nothing, while another
// checkpoint is still being collected. The coordinator's piece comes later
// (put), at the pull of round, which may come after the roles' news of
// theirs.
func (k *checkpointer) begin(round uint64, data string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur != nil {
		k.recheck()
		if time.Since(k.began) < k.timeout {
			k.log.Debug("checkpoint skipped: the one before is still being stored", "round", round, "before", k.cur.Round)
			return false
		}
		// Its pieces cannot come any more (a store takes at most the
		// timeout): a node's news was lost, say in an outage.
		k.log.Warn("checkpoint abandoned: pieces missing", "round", k.cur.Round, "have", k.have, "want", k.want)
		k.abandoned = max(k.abandoned, k.cur.Round)
		k.failed, k.failure = k.failed+1, fmt.Sprintf("round %d: %d of %d pieces stored", k.cur.Round, k.have, k.want)
	}
	m := k.base
	m.Round, m.Data, m.Pieces, m.Settings = round, data, map[string]string{}, maps.Clone(k.base.Settings)
	k.cur, k.have, k.began = &m, 0, time.Now()
	return true
}

// put stores piece, the coordinator's of the checkpoint of round, in the
// background, unless that checkpoint was abandoned meanwhile.
func (k *checkpointer) put(round uint64, piece []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur == nil || k.cur.Round != round {
		k.log.Debug("the coordinator's piece of a checkpoint not being collected", "round", round)
		return
	}
	// Its timeout runs from here: with rounds in flight, round was decided
	// up to depth−1 rounds before its pull, however long they took.
	k.began = time.Now()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		ctx, cancel := context.WithTimeout(k.ctx, k.timeout)
		defer cancel()
		var d string
		err := checkpoint.Retry(ctx, k.c, func(ctx context.Context) (err error) {
			d, err = k.store.Put(ctx, round, checkpoint.CoordinatorPiece, piece)
			return err
		})
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		k.stored(checkpoint.CoordinatorPiece, round, d, int64(len(piece)), errText)
	}()
}

// drop abandons the checkpoint of round, if it is being collected, for
// why: the pieces stored of it are removed with the next commit, or at the
// job's end (close).
func (k *checkpointer) drop(round uint64, why string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	if k.cur == nil || k.cur.Round != round {
		k.mu.Unlock()
		return
	}
	k.cur = nil
	k.mu.Unlock()
	k.log.Info("checkpoint abandoned", "round", round, "why", why)
	k.abandon(round)
}

// stored takes in the news that piece of the checkpoint of round was
// stored (or why not: errText), and commits the checkpoint
// once every piece is in.
func (k *checkpointer) stored(piece string, round uint64, digest string, bytes int64, errText string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.cur
	switch {
	case m == nil || m.Round != round:
		k.log.Debug("checkpoint piece of no checkpoint being collected", "piece", piece, "round", round)
		return
	case errText != "":
		k.log.Warn("checkpoint abandoned", "round", round, "piece", piece, "err", errText)
		k.cur = nil
		k.abandoned = max(k.abandoned, round)
		k.failed, k.failure = k.failed+1, fmt.Sprintf("round %d: %s: %s", round, piece, errText)
		if k.committedHook != nil {
			go k.committedHook()
		}
		return
	}
	if _, ok := m.Pieces[piece]; ok {
		return // a duplicate
	}
	m.Pieces[piece], m.Bytes = digest, m.Bytes+bytes
	if k.have++; k.have < k.want {
		return
	}
	k.cur = nil
	m.Time = time.Now()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		ctx, cancel := context.WithTimeout(k.ctx, k.timeout)
		defer cancel()
		k.commitMu.Lock()
		defer k.commitMu.Unlock()
		if _, last, _ := k.state(); last >= m.Round {
			k.abandon(m.Round) // a newer one is committed: this one is of no use
			return
		}
		// The digests come from the roles' notices, which anyone on the
		// job's subjects can forge: the manifest names those the store
		// computed as the pieces came.
		var changed []string
		err := checkpoint.Retry(ctx, k.c, func(ctx context.Context) (err error) { changed, err = k.store.Settle(ctx, m); return err })
		if err != nil {
			k.fail(m.Round, "checkpoint not committed: a piece is not in the store", err)
			return
		}
		if len(changed) > 0 {
			k.log.Warn("checkpoint pieces whose notice named another digest than the store's (forged?)", "round", m.Round, "pieces", changed)
		}
		commit := func(ctx context.Context) error { return k.store.Commit(ctx, *m, k.keep) }
		err = checkpoint.Retry(ctx, k.c, commit)
		if errors.Is(err, checkpoint.ErrLost) {
			// The pieces are in: the server lost only what came before.
			k.log.Error("the NATS server lost the job's checkpoints (restarted without its store?): they start again from this one", "round", m.Round, "err", err)
			if err = k.store.Recreate(ctx); err == nil {
				err = checkpoint.Retry(ctx, k.c, commit)
			}
		}
		if err != nil {
			k.fail(m.Round, "checkpoint not committed", err)
			return
		}
		k.mu.Lock()
		k.committed++
		k.last = max(k.last, m.Round)
		k.mu.Unlock()
		k.log.Info("checkpoint committed", "round", m.Round, "bytes", m.Bytes, "pieces", len(m.Pieces))
		if k.committedHook != nil {
			k.committedHook()
		}
	}()
}

// close waits for the stores and commits in progress, up to wait, then
// abandons them; removes the pieces of the checkpoints not committed
// (abandoned, or still being collected), which no commit to come would
// remove, for at most removeWait, unless it abandoned a store or commit
// (one cut short may yet land in the store, a manifest naming pieces
// that the removal would take); and returns the checkpoints committed and
// the last one's round.
func (k *checkpointer) close(wait time.Duration) (committed int, last uint64) {
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	cutShort := false
	select {
	case <-done:
	case <-time.After(wait):
		cutShort = true
	}
	k.cancel()
	<-done
	k.mu.Lock()
	committed, last = k.committed, k.last
	failed, failure := k.failed, k.failure
	k.mu.Unlock()
	if failed > 0 {
		// Each was a warning as it came: the end says what they add up to.
		k.log.Error("checkpoints failed", "failed", failed, "committed", committed, "last_committed", last, "last_failure", failure)
	}
	if cutShort {
		k.log.Info("the pieces of checkpoints not committed are left in the store: a store or commit was abandoned")
	} else {
		k.removeUncommitted()
	}
	return committed, last
}

// removeWait bounds the removal of the pieces not committed at a job's
// end (and the timeout, if shorter).
const removeWait = 5 * time.Second

// removeUncommitted removes the pieces of the checkpoints that no manifest
// kept names, for at most removeWait: a failure leaves them in the store,
// until a later commit of the job, and is only logged, never the job's.
// A piece that a role still stores as the job ends may come after it
// (DESIGN "Checkpoints").
func (k *checkpointer) removeUncommitted() {
	ctx, cancel := context.WithTimeout(k.job, min(k.timeout, removeWait))
	defer cancel()
	if err := k.store.RemoveUncommitted(ctx); err != nil {
		k.log.Warn("the pieces of checkpoints not committed are left in the store", "err", err)
		return
	}
	k.log.Debug("the pieces of checkpoints not committed removed")
}

// openCheckpoints opens the job's checkpoint store when the job takes
// checkpoints or resumes, and, to resume, reads the last checkpoint's
// manifest and the coordinator's piece, checking that the checkpoint is
// of this job.
func (n *node[P, R, U, S]) openCheckpoints(ctx context.Context) error {
	if !n.opts.Checkpointing() && !n.opts.Resume {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	store, err := checkpoint.OpenConn(ctx, n.c, n.opts.Checkpointing())
	if err != nil {
		return fmt.Errorf("coordinator: %w", n.nothingToResume(err))
	}
	n.store = store
	if n.opts.Checkpointing() {
		base := checkpoint.Manifest{Job: n.c.Job(), Run: n.runID, App: n.opts.Manifest.App,
			Workers: n.opts.Workers, Schedulers: n.opts.Schedulers, Settings: n.opts.Manifest.Settings}
		n.ckpt = newCheckpointer(ctx, n.c, store, base, n.pieces(), n.opts.CheckpointKeep, n.opts.Timeout, n.log)
		// An interrupted job waits for its final checkpoint's commit.
		n.ckpt.committedHook = func() { n.box.Wake() }
	}
	if !n.opts.Resume {
		n.earlier(ctx)
		return nil
	}
	// The reads go through Retry, as a rollback's do (replace): an outage
	// that loses an answer makes them be sent again after the reconnect.
	var m checkpoint.Manifest
	err = checkpoint.Retry(ctx, n.c, func(ctx context.Context) (err error) {
		m, err = store.Latest(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("coordinator: resume: %w", n.nothingToResume(err))
	}
	if err := n.sameJob(m); err != nil {
		return fmt.Errorf("coordinator: resume from the checkpoint of round %d (run %s, %s): %w", m.Round, m.Run, m.Time.Format(time.RFC3339), err)
	}
	var b []byte
	err = checkpoint.Retry(ctx, n.c, func(ctx context.Context) (err error) {
		b, err = store.Get(ctx, m.Round, checkpoint.CoordinatorPiece, m.Pieces[checkpoint.CoordinatorPiece])
		return err
	})
	if err != nil {
		return fmt.Errorf("coordinator: resume: %w", err)
	}
	var piece coordPiece
	if err := codec.Unmarshal(b, &piece); err != nil {
		return fmt.Errorf("coordinator: resume: the coordinator's piece of round %d: %w", m.Round, err)
	}
	n.resume, n.resumePiece = &m, piece
	n.res.Resumed = m.Round
	n.log.Info("resuming", "round", m.Round, "run", m.Run, "taken", m.Time)
	return nil
}

// nothingToResume says what a resume that finds no checkpoint (err
// matches checkpoint.ErrNone) needs; other errors are returned as they are.
func (n *node[P, R, U, S]) nothingToResume(err error) error {
	if !n.opts.Resume || !errors.Is(err, checkpoint.ErrNone) {
		return err
	}
	return fmt.Errorf("--resume: job %q has no checkpoint on this server: the interrupted run's --job, and its server (a whole job's --store), are needed, and its --checkpoint-every: %w", n.c.Job(), err)
}

// earlier warns when the store holds the checkpoints of an earlier job of
// the job's name, which this one's replace: a user who meant to go on from
// them learns it while the job starts, not after it.
func (n *node[P, R, U, S]) earlier(ctx context.Context) {
	m, err := n.store.Latest(ctx)
	switch {
	case errors.Is(err, checkpoint.ErrNone):
	case err != nil:
		n.log.Warn("the store holds checkpoints of an earlier job of this name that cannot be read (another key?); this job's replace them", "job", n.c.Job(), "err", err)
	default:
		n.log.Warn("the store holds the checkpoints of an earlier job of this name; this job's replace them (--resume goes on from them instead)",
			"job", n.c.Job(), "round", m.Round, "taken", m.Time.Format(time.RFC3339))
	}
}

// sameJob returns why the job cannot resume from the checkpoint m
// describes, or nil: it was taken by a job of another app, with other
// numbers of workers or scheduler parts, other settings, or pieces
// missing. (The data are compared once the roles joined: resumeData.)
func (n *node[P, R, U, S]) sameJob(m checkpoint.Manifest) error {
	switch {
	case m.App != n.opts.Manifest.App:
		return fmt.Errorf("it is of app %q, the job's is %q", m.App, n.opts.Manifest.App)
	case m.Workers != n.opts.Workers:
		return fmt.Errorf("it has %d workers, the job %d", m.Workers, n.opts.Workers)
	case m.Schedulers != n.opts.Schedulers:
		return fmt.Errorf("it has %d schedulers, the job %d", m.Schedulers, n.opts.Schedulers)
	}
	if err := (protocol.Manifest{Settings: m.Settings}).Check(protocol.Manifest{Settings: n.opts.Manifest.Settings}); err != nil {
		return fmt.Errorf("the job's settings differ from its: %w", err)
	}
	if err := (protocol.Manifest{Settings: n.opts.Manifest.Settings}).Check(protocol.Manifest{Settings: m.Settings}); err != nil {
		return fmt.Errorf("its settings differ from the job's: %w", err)
	}
	for _, p := range n.pieces() {
		if _, ok := m.Pieces[p]; !ok {
			return fmt.Errorf("it lacks the piece %s", p)
		}
	}
	return nil
}

// pieces returns the names of a checkpoint's pieces.
func (n *node[P, R, U, S]) pieces() []string {
	ps := []string{checkpoint.CoordinatorPiece}
	for k := range n.opts.Workers {
		ps = append(ps, checkpoint.Piece(protocol.RoleWorker, k))
	}
	for p := range n.opts.Schedulers {
		ps = append(ps, checkpoint.Piece(protocol.RoleScheduler, p))
	}
	return ps
}

// checkpointDue reports whether the checkpoint of round is due, as the
// plan of round+1 is asked for (DESIGN "Checkpoints"): every CheckpointEvery rounds,
// CheckpointInterval after the last one began, or at once when an
// interrupted job takes its final one.
func (n *node[P, R, U, S]) checkpointDue(round uint64) bool {
	switch {
	case n.ckpt == nil:
		return false
	case n.final != nil:
		return n.finalRound == 0
	case n.opts.CheckpointEvery > 0 && round%n.opts.CheckpointEvery == 0:
		return true
	}
	return n.opts.CheckpointInterval > 0 && time.Since(n.ckptAt) >= n.opts.CheckpointInterval
}

// cutter is the node as the core's pipeline.Checkpointer: it decides the
// checkpoints and saves the app's state at their cuts.
type cutter[P, R, U, S any] struct{ n *node[P, R, U, S] }

// Due decides the checkpoint of round (checkpointDue), unless the one
// before is still being stored: it begins collecting its pieces, which
// the roles may store before round is pulled.
func (k cutter[P, R, U, S]) Due(round uint64, _ time.Time) bool {
	n := k.n
	if !n.checkpointDue(round) {
		return false
	}
	if collecting, _, _ := n.ckpt.state(); collecting != 0 && n.final == nil {
		// Still storing the one before: begin would skip this one (or
		// abandon that one, which it may look in the store for first).
		n.ckpt.late()
		if !n.ckpt.overdue() {
			n.log.Debug("checkpoint skipped: the one before is still being stored", "round", round, "before", collecting)
			return false
		}
	}
	n.mu.Lock()
	data := n.roster.Data()
	n.mu.Unlock()
	if !n.ckpt.begin(round, data) {
		return false
	}
	n.ckptAt = time.Now()
	if n.final != nil && n.finalRound == 0 {
		n.finalRound = round
	}
	return true
}

// Save returns the app's state at the cut of the checkpoint of round.
func (k cutter[P, R, U, S]) Save(round uint64) ([]byte, error) {
	var app []byte
	err := protocol.Guard("Snapshot", func() (err error) { app, err = k.n.snap.Snapshot(); return err })
	return app, err
}

// checkpointTaken stores the coordinator's piece of the checkpoint of
// round, just pulled: the core's snapshot and the app's state (app),
// encoded; and marks where the metrics stand, which a rollback to it
// rewinds to.
func (n *node[P, R, U, S]) checkpointTaken(round uint64, snap *pipeline.Snapshot[U], app []byte) error {
	core, err := codec.Marshal(*snap)
	if err != nil {
		return fmt.Errorf("coordinator: checkpoint of round %d: %w", round, err)
	}
	piece, err := codec.Marshal(coordPiece{App: app, Core: core})
	if err != nil {
		return fmt.Errorf("coordinator: checkpoint of round %d: %w", round, err)
	}
	if n.csv != nil {
		// A rollback to this checkpoint rewinds the metrics here.
		if err := n.csv.markRound(round, n.opts.CheckpointKeep+2); err != nil {
			return fmt.Errorf("coordinator: checkpoint of round %d: %w", round, err)
		}
	}
	n.ckpt.put(round, piece)
	return nil
}

// onStored takes in a role's news of its piece of a checkpoint.
func (n *node[P, R, U, S]) onStored(msg *nats.Msg) error {
	var s protocol.Stored
	if err := protocol.Open(msg.Data, &s, protocol.TypeStored, n.runID); err != nil {
		n.drop(msg, "", protocol.Reason(err), err)
		return nil
	}
	if err := s.Validate(n.opts.Workers, n.opts.Schedulers); err != nil {
		n.drop(msg, "", protocol.DropGarbage, err)
		return nil
	}
	if n.ckpt == nil {
		n.drop(msg, n.who(s.Role, s.Place).String(), protocol.DropUnexpected, errors.New("a checkpoint piece in a job that takes none"))
		return nil
	}
	n.ckpt.stored(checkpoint.Piece(s.Role, s.Place), s.Round, s.Digest, s.Bytes, s.Err)
	return nil
}

// restore restores the app and the core from the checkpoint the job
// resumes from, once Start has run: the app from its state, the core from
// its, with cfg.
func (n *node[P, R, U, S]) restore(cfg pipeline.Config) error {
	m := n.resume
	n.mu.Lock()
	data := n.roster.Data()
	n.mu.Unlock()
	if m.Data != "" && data != "" && m.Data != data {
		return fmt.Errorf("coordinator: resume from the checkpoint of round %d: its data fingerprint is %s, the job's %s", m.Round, m.Data, data)
	}
	if err := protocol.Guard("Restore", func() error { return n.snap.Restore(n.resumePiece.App) }); err != nil {
		return fmt.Errorf("coordinator: resume from the checkpoint of round %d: %w", m.Round, err)
	}
	var snap pipeline.Snapshot[U]
	if err := codec.Unmarshal(n.resumePiece.Core, &snap); err != nil {
		return fmt.Errorf("coordinator: resume from the checkpoint of round %d: the pipeline's state: %w", m.Round, err)
	}
	if snap.Round != m.Round {
		return fmt.Errorf("coordinator: resume from the checkpoint of round %d: the pipeline's state is of round %d", m.Round, snap.Round)
	}
	core, err := pipeline.Resume(cfg, schmp.Coordinator[P, R, U, S](timedApp[P, R, U, S]{n.app, n}), guardedHooks(n.app), snap, time.Now())
	if err != nil {
		return fmt.Errorf("coordinator: resume from the checkpoint of round %d: %w", m.Round, err)
	}
	n.core = core
	n.npulled, n.lastRound = m.Round, m.Round
	return nil
}

// interrupt starts the final checkpoint of a job that takes checkpoints and
// was interrupted (ctx done, with cause): the rounds go on until the
// checkpoint being collected, or the one decided at the next plan asked for, is
// committed (finalDone), for at most the timeout.
func (n *node[P, R, U, S]) interrupt(cause error) {
	n.final = cause
	if collecting, _, _ := n.ckpt.state(); collecting != 0 {
		n.finalRound = collecting
	} else if n.core.Status().Reason != "" {
		n.finalRound = ^uint64(0) // the job stops: no cut comes
	}
	n.log.Info("interrupted: taking a final checkpoint before stopping", "cause", cause)
}

// finalDone reports whether the final checkpoint of an interrupted job is
// committed, or will not be (abandoned, or none could be taken).
func (n *node[P, R, U, S]) finalDone() bool {
	switch _, last, abandoned := n.ckpt.state(); {
	case n.finalRound == ^uint64(0):
		return true
	case n.finalRound == 0:
		return false
	case last >= n.finalRound:
		n.log.Info("final checkpoint committed", "round", n.finalRound)
		n.final = fmt.Errorf("%w (the state after round %d is checkpointed: the same command with --resume goes on from it)", n.final, n.finalRound)
		return true
	case abandoned >= n.finalRound:
		n.log.Warn("final checkpoint abandoned", "round", n.finalRound)
		n.final = fmt.Errorf("%w (its final checkpoint, of round %d, could not be stored; the last stored is of round %d)", n.final, n.finalRound, last)
		return true
	}
	return false
}

// awaitFinal waits, until ctx is done, for the final checkpoint of an
// interrupted job that stopped before it was committed: it takes in the
// roles' news of their pieces (the roles store them as they stop), and
// drops anything else.
func (n *node[P, R, U, S]) awaitFinal(ctx context.Context) error {
	for !n.finalDone() {
		msg, err := n.box.Next(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("%w (no final checkpoint: %v)", n.final, context.Cause(ctx))
		case err != nil || msg == nil:
			continue
		case msg.Subject == n.c.Subject(protocol.SubjectStored):
			if err := n.onStored(msg); err != nil {
				return err
			}
		default:
			n.drop(msg, "", protocol.DropUnexpected, errors.New("the job is over"))
		}
	}
	return n.final
}
