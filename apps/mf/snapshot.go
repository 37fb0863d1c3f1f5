package mf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// Checkpoints (schmp.Snapshotter, DESIGN "Checkpoints"). Every role saves what its
// constructor (and the coordinator's Start) does not rebuild from the
// settings and its own shard:
//   - a worker: its users' factors W and biases b, and what each
//     algorithm keeps of the items between two updates: on the rotation
//     the block of H (with its item biases) that it holds (on the ring,
//     the one it took for the next sub-round; on the star none: the next
//     update brings it); with CCD++ all of H and c, which an update
//     changes a column at a time, and the residuals; with ALS and the
//     unscheduled SGD nothing, since every update carries all of H and c;
//     and its round and whether the reports carry the factors;
//   - a coordinator: H and the item biases, the work counted, the
//     evaluations (the model's trace), the validation's state (the best
//     evaluation, its factors, the stop) and the last progress, the round
//     the runtime said is the last, and whether the job writes the
//     factors (Model.Factors);
//   - a scheduler: nothing but its settings, which Restore checks.
//
// The update of the cut's round, which the next task carries, is the
// runtime's part of the checkpoint (pipeline.Snapshot), not the roles'.
//
// The bytes are a sealed envelope: the role's kind, the encoding's version
// and the msgpack body, followed by the CRC-32C of all of it, so that a
// snapshot of another role or version, truncated or corrupted, is an
// error, never a state. Restore checks the body against the role (its
// shard, its sizes) before it changes anything.

// snapshotVersion is the version of the encoding of the roles' snapshots.
const snapshotVersion = 1

// The kinds of role that a snapshot is of.
const (
	kindRotationWorker         = "mf/rotation-worker"
	kindUnscheduledWorker      = "mf/unscheduled-worker"
	kindCCDWorker              = "mf/ccd-worker"
	kindALSWorker              = "mf/als-worker"
	kindRotationCoordinator    = "mf/rotation-coordinator"
	kindUnscheduledCoordinator = "mf/unscheduled-coordinator"
	kindCCDCoordinator         = "mf/ccd-coordinator"
	kindALSCoordinator         = "mf/als-coordinator"
	kindStepper                = "mf/stepper"
)

// seal encodes v as the snapshot of a role of kind.
func seal(kind string, v any) ([]byte, error) { return schmp.Seal(kind, snapshotVersion, v) }

// unseal decodes b, a snapshot of a role of kind, into v.
func unseal(b []byte, kind string, v any) error { return schmp.Unseal(b, kind, snapshotVersion, v) }

// finite reports the first value of v that is not a finite number.
func finite(what string, v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s[%d] = %v", what, i, x)
		}
	}
	return nil
}

// sized checks that v holds n finite values.
func sized(what string, v []float64, n int) error {
	if len(v) != n {
		return fmt.Errorf("%s has %d values, want %d", what, len(v), n)
	}
	return finite(what, v)
}

// workerState is a worker's snapshot.
type workerState struct {
	// The shard, which Restore checks: its index of Workers, the
	// fingerprint of the training data's index and its sizes.
	Shard       int    `msgpack:"shard"`
	Workers     int    `msgpack:"workers"`
	Fingerprint uint64 `msgpack:"fingerprint"`
	Users       int    `msgpack:"users"`
	Items       int    `msgpack:"items"`
	Train       int    `msgpack:"train"`
	Rank        int    `msgpack:"rank"`
	Biased      bool   `msgpack:"biased"`
	// Round is the rounds whose updates the state reflects; Factors says
	// that the reports carry the users' factors; Started that the first
	// update is in.
	Round   uint64 `msgpack:"round"`
	Factors bool   `msgpack:"factors"`
	Started bool   `msgpack:"started"`
	// W holds the users' factors, row by row (CCD++: column by column),
	// and B their biases (nil without biases).
	W codec.Float64s `msgpack:"w"`
	B codec.Float64s `msgpack:"b,omitempty"`
	// Block, on the rotation, is the block of H held (−1: all of H; −2:
	// none), whose rows are H and biases C. With CCD++, H is all of H,
	// column by column, C all the item biases, Res the residuals and Cur
	// the slot they leave out.
	Block int            `msgpack:"block"`
	H     codec.Float64s `msgpack:"h,omitempty"`
	C     codec.Float64s `msgpack:"c,omitempty"`
	Res   codec.Float64s `msgpack:"res,omitempty"`
	Cur   int            `msgpack:"cur"`
}

// state returns the part of a worker's snapshot that the shard fixes.
func (s *shard) state() workerState {
	return workerState{
		Shard: s.p, Workers: s.cfg.Workers, Fingerprint: s.ix.Fingerprint, Users: len(s.users), Items: len(s.ix.ItemIDs),
		Train: s.train.len(), Rank: s.cfg.Rank, Biased: s.cfg.biased(),
	}
}

// check reports the first part of st that does not fit the shard, or
// whose W and B do not.
func (s *shard) check(st *workerState) error {
	want := s.state()
	switch {
	case st.Shard != want.Shard || st.Workers != want.Workers:
		return fmt.Errorf("the snapshot is of worker shard %d of %d, this is shard %d of %d", st.Shard, st.Workers, want.Shard, want.Workers)
	case st.Fingerprint != want.Fingerprint:
		return fmt.Errorf("the snapshot is of other training data (fingerprint %x, this worker's %x)", st.Fingerprint, want.Fingerprint)
	case st.Users != want.Users || st.Items != want.Items || st.Train != want.Train || st.Rank != want.Rank || st.Biased != want.Biased:
		return fmt.Errorf("the snapshot is of a shard of %d users, %d items, %d ratings, rank %d, biases %v; this one has %d, %d, %d, %d, %v",
			st.Users, st.Items, st.Train, st.Rank, st.Biased, want.Users, want.Items, want.Train, want.Rank, want.Biased)
	}
	if err := sized("W", st.W, len(s.users)*s.cfg.Rank); err != nil {
		return err
	}
	if !s.cfg.biased() {
		if st.B != nil || st.C != nil {
			return errors.New("biases in the snapshot of a model without biases")
		}
		return nil
	}
	return sized("the user biases", st.B, len(s.users))
}

// resetRun drops what the shard learnt from the updates of a run, the
// folded fit of round 0's, which a snapshot after round 0 never needs: a
// worker restored in place is then as one just built.
func (s *shard) resetRun() { s.foldB, s.foldC = nil, nil }

// fail wraps the error of a Restore of kind.
func fail(kind string, err error) error { return fmt.Errorf("%s snapshot: %w", kind, err) }

// Snapshot implements schmp.Snapshotter.
func (w *rotationWorker) Snapshot() ([]byte, error) {
	st := w.state()
	st.Round, st.Factors, st.Started = w.round, w.factors, true
	st.W, st.B, st.Block = w.w, w.bs.b, w.block
	switch {
	case w.block == -1:
		st.H, st.C = w.h, w.bs.c
	case w.block >= 0:
		k := w.cfg.Rank
		lo, hi := w.ix.Block(w.block)
		st.H, st.C = w.h[lo*k:hi*k], w.bs.items(lo, hi)
	}
	return seal(kindRotationWorker, &st)
}

// Restore implements schmp.Snapshotter, on a worker just built or one
// that has gone on.
func (w *rotationWorker) Restore(b []byte) error {
	var st workerState
	if err := unseal(b, kindRotationWorker, &st); err != nil {
		return err
	}
	if err := w.check(&st); err != nil {
		return fail(kindRotationWorker, err)
	}
	k, lo, hi := w.cfg.Rank, 0, 0
	switch {
	case st.Block == -1:
		hi = len(w.ix.ItemIDs)
	case st.Block >= 0 && st.Block < w.ix.Blocks:
		lo, hi = w.ix.Block(st.Block)
	case st.Block != -2:
		return fail(kindRotationWorker, fmt.Errorf("block %d of %d held", st.Block, w.ix.Blocks))
	}
	if err := sized("H", st.H, (hi-lo)*k); err != nil {
		return fail(kindRotationWorker, err)
	}
	if w.bs.on() {
		if err := sized("the item biases", st.C, hi-lo); err != nil {
			return fail(kindRotationWorker, err)
		}
	}
	// A worker that has gone on (a rollback restores in place, DESIGN "Spares and replacement")
	// holds H and the item biases as a new one does: the block restored,
	// zeros elsewhere.
	w.resetRun()
	clear(w.h)
	clear(w.bs.c)
	w.round, w.factors, w.block = st.Round, st.Factors, st.Block
	copy(w.w, st.W)
	copy(w.bs.b, st.B)
	copy(w.h[lo*k:hi*k], st.H)
	if w.bs.on() {
		copy(w.bs.c[lo:hi], st.C)
	}
	return nil
}

// snapshotFull returns the snapshot of a worker that receives all of H
// and c with every update (ALS, the unscheduled SGD), which it therefore
// does not save.
func (s *shard) snapshotFull(kind string, f *fullH, w []float64) ([]byte, error) {
	st := s.state()
	st.Round, st.Factors, st.Started = f.round, f.factors, f.started
	st.W, st.B, st.Block = w, f.bs.b, -2
	return seal(kind, &st)
}

// restoreFull restores a worker that snapshotFull saved.
func (s *shard) restoreFull(kind string, b []byte, f *fullH, w []float64) error {
	var st workerState
	if err := unseal(b, kind, &st); err != nil {
		return err
	}
	if err := s.check(&st); err != nil {
		return fail(kind, err)
	}
	if st.H != nil || st.C != nil || st.Res != nil {
		return fail(kind, errors.New("item factors in the snapshot of a worker that receives them with every update"))
	}
	// A worker that has gone on (a rollback restores in place, DESIGN "Spares and replacement")
	// holds no items, as a new one: the next update brings them.
	s.resetRun()
	clear(f.h)
	clear(f.bs.c)
	f.round, f.factors, f.started = st.Round, st.Factors, st.Started
	copy(w, st.W)
	copy(f.bs.b, st.B)
	return nil
}

// Snapshot implements schmp.Snapshotter.
func (w *unscheduledWorker) Snapshot() ([]byte, error) {
	return w.snapshotFull(kindUnscheduledWorker, &w.fullH, w.w)
}

// Restore implements schmp.Snapshotter, on a worker just built or one
// that has gone on.
func (w *unscheduledWorker) Restore(b []byte) error {
	return w.restoreFull(kindUnscheduledWorker, b, &w.fullH, w.w)
}

// Snapshot implements schmp.Snapshotter.
func (w *alsWorker) Snapshot() ([]byte, error) { return w.snapshotFull(kindALSWorker, &w.fullH, w.w) }

// Restore implements schmp.Snapshotter, on a worker just built or one
// that has gone on.
func (w *alsWorker) Restore(b []byte) error {
	return w.restoreFull(kindALSWorker, b, &w.fullH, w.w)
}

// Snapshot implements schmp.Snapshotter.
func (w *ccdWorker) Snapshot() ([]byte, error) {
	st := w.state()
	st.Round, st.Factors, st.Started = w.round, w.factors, w.h != nil
	st.W, st.B, st.Block = slices.Concat(w.w...), w.bs.b, -2
	st.H, st.C, st.Res, st.Cur = slices.Concat(w.h...), w.bs.c, w.res, w.cur
	return seal(kindCCDWorker, &st)
}

// Restore implements schmp.Snapshotter, on a worker just built or one
// that has gone on.
func (w *ccdWorker) Restore(b []byte) error {
	var st workerState
	if err := unseal(b, kindCCDWorker, &st); err != nil {
		return err
	}
	if err := w.check(&st); err != nil {
		return fail(kindCCDWorker, err)
	}
	k, n := w.cfg.Rank, len(w.ix.ItemIDs)
	if !st.Started {
		return fail(kindCCDWorker, errors.New("a snapshot before the first update"))
	}
	if err := sized("H", st.H, n*k); err != nil {
		return fail(kindCCDWorker, err)
	}
	if err := sized("the residuals", st.Res, w.train.len()); err != nil {
		return fail(kindCCDWorker, err)
	}
	if w.bs.on() {
		if err := sized("the item biases", st.C, n); err != nil {
			return fail(kindCCDWorker, err)
		}
	}
	if st.Cur < ccdBias || st.Cur >= k || (st.Cur == ccdBias && !w.bs.on()) {
		return fail(kindCCDWorker, fmt.Errorf("slot %d of rank %d", st.Cur, k))
	}
	// A worker that has gone on (a rollback restores in place, DESIGN "Spares and replacement")
	// has all of its state set below.
	w.resetRun()
	u := len(w.users)
	for t := range k {
		copy(w.w[t], st.W[t*u:(t+1)*u])
	}
	w.h = make([][]float64, k)
	for t := range k {
		w.h[t] = slices.Clone(st.H[t*n : (t+1)*n])
	}
	copy(w.bs.b, st.B)
	copy(w.bs.c, st.C)
	copy(w.res, st.Res)
	w.cur, w.round, w.factors = st.Cur, st.Round, st.Factors
	return nil
}

// coordState is a coordinator's snapshot.
type coordState struct {
	// The job's sizes, which Restore checks.
	Workers int   `msgpack:"workers"`
	Users   []int `msgpack:"users"` // by worker
	Items   int   `msgpack:"items"`
	Train   int   `msgpack:"train"`
	Rank    int   `msgpack:"rank"`
	Biased  bool  `msgpack:"biased"`
	// The accounting: the rounds pulled, the time from Start to the pull,
	// the work and the workers' compute time, the last progress, and the
	// last round (LastRound; 0 before).
	Pulled    uint64         `msgpack:"pulled"`
	Elapsed   time.Duration  `msgpack:"elapsed"`
	Work      float64        `msgpack:"work"`
	Nanos     int64          `msgpack:"nanos"`
	Last      schmp.Progress `msgpack:"last"`
	LastRound uint64         `msgpack:"last_round"`
	// The model's record: whether it keeps factors, its evaluations, the
	// best one and the validation stop, and the factors kept (nil where
	// none).
	Factors bool             `msgpack:"factors"`
	Trace   []Eval           `msgpack:"trace"`
	BestAt  int              `msgpack:"best_at"`
	Stopped bool             `msgpack:"stopped"`
	KeptW   []codec.Float64s `msgpack:"kept_w,omitempty"`
	KeptB   []codec.Float64s `msgpack:"kept_b,omitempty"`
	KeptH   codec.Float64s   `msgpack:"kept_h,omitempty"`
	KeptC   codec.Float64s   `msgpack:"kept_c,omitempty"`
	// H holds the item factors (row by row; CCD++: column by column) and
	// C the item biases (nil without biases).
	H codec.Float64s `msgpack:"h"`
	C codec.Float64s `msgpack:"c,omitempty"`
}

// state returns the snapshot of what every coordinator shares, with h
// (flat) and c.
func (b *base) state(h, c []float64) coordState {
	m := b.m
	st := coordState{
		Workers: b.cfg.Workers, Items: len(m.ItemIDs), Train: m.Train, Rank: b.cfg.Rank, Biased: m.Biased,
		Pulled: b.pulled, Elapsed: time.Since(b.t0), Work: b.work, Nanos: b.nanos, Last: b.last, LastRound: b.lastRound,
		Factors: m.Factors, Trace: m.Trace, BestAt: m.BestAt, Stopped: m.Stopped, KeptH: m.H, KeptC: m.C,
		H: h, C: c,
	}
	for _, u := range m.Users {
		st.Users = append(st.Users, len(u))
	}
	for _, w := range m.W {
		st.KeptW = append(st.KeptW, w)
	}
	for _, bu := range m.B {
		st.KeptB = append(st.KeptB, bu)
	}
	return st
}

// check reports the first part of st that does not fit the job.
func (b *base) check(st *coordState) error {
	m := b.m
	if m.Users == nil {
		return errors.New("restore before Start")
	}
	users := make([]int, len(m.Users))
	for p, u := range m.Users {
		users[p] = len(u)
	}
	n, k := len(m.ItemIDs), b.cfg.Rank
	switch {
	case st.Workers != b.cfg.Workers || !slices.Equal(st.Users, users) || st.Items != n || st.Train != m.Train || st.Rank != k || st.Biased != m.Biased:
		return fmt.Errorf("the snapshot is of a job of %d workers with %v users, %d items, %d ratings, rank %d, biases %v; this one has %d, %v, %d, %d, %d, %v",
			st.Workers, st.Users, st.Items, st.Train, st.Rank, st.Biased, b.cfg.Workers, users, n, m.Train, k, m.Biased)
	case st.Elapsed < 0 || st.Nanos < 0 || st.Work < 0 || math.IsNaN(st.Work):
		return errors.New("negative or undefined counters")
	case st.BestAt < -1 || st.BestAt >= len(st.Trace):
		return fmt.Errorf("best evaluation %d of %d", st.BestAt, len(st.Trace))
	}
	if err := sized("H", st.H, n*k); err != nil {
		return err
	}
	if m.Biased {
		if err := sized("the item biases", st.C, n); err != nil {
			return err
		}
	} else if st.C != nil || st.KeptB != nil || st.KeptC != nil {
		return errors.New("biases in the snapshot of a model without biases")
	}
	// The factors kept, all or none.
	if st.KeptW == nil && st.KeptH == nil && st.KeptB == nil && st.KeptC == nil {
		return nil
	}
	if len(st.KeptW) != len(users) || m.Biased && len(st.KeptB) != len(users) {
		return fmt.Errorf("factors kept of %d and biases of %d workers, want %d", len(st.KeptW), len(st.KeptB), len(users))
	}
	for p, u := range users {
		if err := sized(fmt.Sprintf("worker %d's factors kept", p), st.KeptW[p], u*k); err != nil {
			return err
		}
		if m.Biased {
			if err := sized(fmt.Sprintf("worker %d's biases kept", p), st.KeptB[p], u); err != nil {
				return err
			}
		}
	}
	if err := sized("the item factors kept", st.KeptH, n*k); err != nil {
		return err
	}
	if m.Biased {
		return sized("the item biases kept", st.KeptC, n)
	}
	return nil
}

// restore sets what every coordinator shares from st (checked), and h
// and c (nil without biases), as they are.
func (b *base) restore(st *coordState, h, c []float64) {
	m := b.m
	b.pulled, b.t0, b.work, b.nanos, b.last, b.lastRound = st.Pulled, time.Now().Add(-st.Elapsed), st.Work, st.Nanos, st.Last, st.LastRound
	m.Factors, m.Trace, m.BestAt, m.Stopped = st.Factors, st.Trace, st.BestAt, st.Stopped
	m.W, m.B, m.H, m.C = nil, nil, st.KeptH, st.KeptC
	for _, w := range st.KeptW {
		m.W = append(m.W, w)
	}
	for _, bu := range st.KeptB {
		m.B = append(m.B, bu)
	}
	copy(h, st.H)
	copy(c, st.C)
}

// restoreCoordinator restores the coordinator of kind, whose base is b and
// whose item factors (flat) and biases are h and c.
func (b *base) restoreCoordinator(kind string, data []byte, h, c []float64) error {
	var st coordState
	if err := unseal(data, kind, &st); err != nil {
		return err
	}
	if err := b.check(&st); err != nil {
		return fail(kind, err)
	}
	if b.pulled != 0 {
		return fmt.Errorf("%s snapshot: restore on a coordinator that has pulled rounds", kind)
	}
	b.restore(&st, h, c)
	return nil
}

// Snapshot implements schmp.Snapshotter.
func (c *rotationCoordinator) Snapshot() ([]byte, error) {
	st := c.state(c.h, c.c)
	return seal(kindRotationCoordinator, &st)
}

// Restore implements schmp.Snapshotter, on a coordinator just started.
func (c *rotationCoordinator) Restore(b []byte) error {
	return c.restoreCoordinator(kindRotationCoordinator, b, c.h, c.c)
}

// Snapshot implements schmp.Snapshotter.
func (c *unscheduledCoordinator) Snapshot() ([]byte, error) {
	st := c.state(c.h, c.c)
	return seal(kindUnscheduledCoordinator, &st)
}

// Restore implements schmp.Snapshotter, on a coordinator just started.
func (c *unscheduledCoordinator) Restore(b []byte) error {
	return c.restoreCoordinator(kindUnscheduledCoordinator, b, c.h, c.c)
}

// Snapshot implements schmp.Snapshotter.
func (c *alsCoordinator) Snapshot() ([]byte, error) {
	st := c.state(c.h, c.c)
	return seal(kindALSCoordinator, &st)
}

// Restore implements schmp.Snapshotter, on a coordinator just started.
func (c *alsCoordinator) Restore(b []byte) error {
	return c.restoreCoordinator(kindALSCoordinator, b, c.h, c.c)
}

// Snapshot implements schmp.Snapshotter: H column by column.
func (c *ccdCoordinator) Snapshot() ([]byte, error) {
	st := c.state(slices.Concat(c.h...), c.c)
	return seal(kindCCDCoordinator, &st)
}

// Restore implements schmp.Snapshotter, on a coordinator just started.
func (c *ccdCoordinator) Restore(b []byte) error {
	h := make([]float64, len(c.m.ItemIDs)*c.cfg.Rank)
	if err := c.restoreCoordinator(kindCCDCoordinator, b, h, c.c); err != nil {
		return err
	}
	n := len(c.m.ItemIDs)
	for t := range c.h {
		copy(c.h[t], h[t*n:(t+1)*n])
	}
	return nil
}

// stepperState is the snapshot of the scheduler of CCD++, ALS and the
// unscheduled SGD: its settings alone.
type stepperState struct {
	Algo     string `msgpack:"algo"`
	Schedule string `msgpack:"schedule"`
	Rounds   int    `msgpack:"rounds"` // an iteration's
}

// Snapshot implements schmp.Snapshotter: the scheduler has no state
// beyond its settings, which Restore checks.
func (s stepper) Snapshot() ([]byte, error) {
	return seal(kindStepper, &stepperState{Algo: s.cfg.Algo, Schedule: s.cfg.Schedule, Rounds: s.cfg.RoundsPerIter()})
}

// Restore implements schmp.Snapshotter.
func (s stepper) Restore(b []byte) error {
	var st stepperState
	if err := unseal(b, kindStepper, &st); err != nil {
		return err
	}
	if st.Algo != s.cfg.Algo || st.Schedule != s.cfg.Schedule || st.Rounds != s.cfg.RoundsPerIter() {
		return fmt.Errorf("%s snapshot: of %s/%s with %d rounds an iteration, the job is %s/%s with %d", kindStepper,
			st.Algo, st.Schedule, st.Rounds, s.cfg.Algo, s.cfg.Schedule, s.cfg.RoundsPerIter())
	}
	return nil
}

// The roles are Snapshotters.
var (
	_ schmp.Snapshotter = (*rotationWorker)(nil)
	_ schmp.Snapshotter = (*unscheduledWorker)(nil)
	_ schmp.Snapshotter = (*ccdWorker)(nil)
	_ schmp.Snapshotter = (*alsWorker)(nil)
	_ schmp.Snapshotter = (*rotationCoordinator)(nil)
	_ schmp.Snapshotter = (*unscheduledCoordinator)(nil)
	_ schmp.Snapshotter = (*ccdCoordinator)(nil)
	_ schmp.Snapshotter = (*alsCoordinator)(nil)
	_ schmp.Snapshotter = stepper{}
)
