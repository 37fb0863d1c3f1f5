package logreg

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/strads-go/strads/apps/internal/colshard"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
)

// The roles' snapshots (schmp.Snapshotter) are sealed envelopes
// (schmp.Seal): the role's kind, the encoding's version and the msgpack
// body, followed by the CRC-32C of all of it, so that a snapshot of
// another role or version, truncated or corrupted, is an error, never a
// state. Restore checks the body against the role (its shard, its sizes)
// before it changes anything. The schedulers' are package columnar's, the
// path's package lasso's.

// snapshotVersion is the version of the encoding of the roles' snapshots.
// Up to version 2 they were bare msgpack with a version field, which
// Unseal refuses (their last bytes are no checksum of the rest).
const snapshotVersion = 3

// The kinds of role that a snapshot is of.
const (
	kindWorker         = "logreg/worker"
	kindCoordinator    = "logreg/coordinator"
	kindColWorker      = "logreg/colworker"
	kindColCoordinator = "logreg/colcoordinator"
)

// seal encodes v as the snapshot of a role of kind.
func seal(kind string, v any) ([]byte, error) { return schmp.Seal(kind, snapshotVersion, v) }

// unseal decodes b, a snapshot of a role of kind, into v.
func unseal(b []byte, kind string, v any) error { return schmp.Unseal(b, kind, snapshotVersion, v) }

// restoreErr wraps the error of a Restore.
func restoreErr(err error) error { return fmt.Errorf("logreg: restore: %w", err) }

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// workerState is a row layout Worker's snapshot: the margins (the rows'
// other values are functions of them), their sums as Apply keeps them,
// w and b as the worker has them, the number of features that Start's
// update tells, and the loss changes not pushed yet; its rows and columns,
// to check that it is restored into the same shard.
type workerState struct {
	First    int            `msgpack:"first"`
	Cols     int            `msgpack:"cols"`
	Z        codec.Float64s `msgpack:"z"`
	SumR     float64        `msgpack:"sum_r"`
	SumD     float64        `msgpack:"sum_d"`
	W        codec.Float64s `msgpack:"w"`
	B        float64        `msgpack:"b"`
	Features int            `msgpack:"features"`
	AsOf     uint64         `msgpack:"as_of"`
	Rounds   []uint64       `msgpack:"rounds"`
	Change   codec.Float64s `msgpack:"change"`
}

// Snapshot implements schmp.Snapshotter.
func (w *Worker) Snapshot() ([]byte, error) {
	st := workerState{
		First: w.lo, Cols: w.x.Cols, Z: make(codec.Float64s, len(w.rows)),
		SumR: w.sumR, SumD: w.sumD, W: w.w, B: w.b, Features: w.features, AsOf: w.asOf, Rounds: w.rounds, Change: w.change,
	}
	for i, r := range w.rows {
		st.Z[i] = r.z
	}
	return seal(kindWorker, st)
}

// Restore implements schmp.Snapshotter. A snapshot of another shard, or
// with numbers that are not finite, is an error.
func (w *Worker) Restore(b []byte) error {
	var st workerState
	if err := unseal(b, kindWorker, &st); err != nil {
		return err
	}
	switch {
	case st.First != w.lo || len(st.Z) != len(w.rows) || st.Cols != w.x.Cols:
		return restoreErr(fmt.Errorf("snapshot of the worker of rows [%d, %d) and %d columns, this one has [%d, %d) and %d",
			st.First, st.First+len(st.Z), st.Cols, w.lo, w.lo+len(w.rows), w.x.Cols))
	case st.Features < w.x.Cols || len(st.W) > st.Features || len(st.Rounds) != len(st.Change):
		return restoreErr(fmt.Errorf("snapshot of %d features (the shard has %d) with %d weights, and %d rounds with %d loss changes",
			st.Features, w.x.Cols, len(st.W), len(st.Rounds), len(st.Change)))
	case !finite(st.SumR) || !finite(st.SumD) || !finite(st.B) || !allFinite(st.Z) || !allFinite(st.W) || !allFinite(st.Change):
		return restoreErr(errors.New("snapshot with numbers that are not finite"))
	}
	for i, z := range st.Z {
		s, q, d := row(w.y[i], z)
		w.rows[i] = rowState{z: z, r: -w.y[i] * q, d: d, s: s}
	}
	w.sumR, w.sumD, w.w, w.b, w.features = st.SumR, st.SumD, st.W, st.B, st.Features
	w.asOf, w.rounds, w.change = st.AsOf, st.Rounds, st.Change
	return nil
}

// pendingState is a round whose realized change a Coordinator waits for.
type pendingState struct {
	Round     uint64  `msgpack:"round"`
	Penalty   float64 `msgpack:"penalty"`
	Predicted float64 `msgpack:"predicted"`
}

// coordinatorState is a row layout Coordinator's snapshot: w, b, the
// joint-step safeguard's state and the intercept's schedule, and the
// records of the reports (Start gives the rest again).
type coordinatorState struct {
	W         codec.Float64s `msgpack:"w"`
	B         float64        `msgpack:"b"`
	Theta     float64        `msgpack:"theta"`
	MinTheta  float64        `msgpack:"min_theta"`
	Pending   []pendingState `msgpack:"pending"` // by round
	Guard     Safeguard      `msgpack:"guard"`
	BiasRound uint64         `msgpack:"bias_round"`
	Work      int64          `msgpack:"work"`
	Records   []Record       `msgpack:"records"`
}

// Snapshot implements schmp.Snapshotter.
func (c *Coordinator) Snapshot() ([]byte, error) {
	st := coordinatorState{
		W: c.w, B: c.b, Theta: c.theta, MinTheta: c.minTheta, Guard: c.guard,
		BiasRound: c.biasRound, Work: c.work, Records: c.records,
	}
	for r, p := range c.pending {
		st.Pending = append(st.Pending, pendingState{Round: r, Penalty: p.penalty, Predicted: p.predicted})
	}
	slices.SortFunc(st.Pending, func(a, b pendingState) int { return cmp.Compare(a.Round, b.Round) })
	return seal(kindCoordinator, st)
}

// Restore implements schmp.Snapshotter.
func (c *Coordinator) Restore(b []byte) error {
	var st coordinatorState
	if err := unseal(b, kindCoordinator, &st); err != nil {
		return err
	}
	switch {
	case len(st.W) != len(c.w):
		return restoreErr(fmt.Errorf("snapshot of %d weights, want %d", len(st.W), len(c.w)))
	case !allFinite(st.W) || !finite(st.B) || !(st.Theta > 0 && st.Theta <= 1) || !(st.MinTheta > 0 && st.MinTheta <= 1) ||
		st.Work < 0 || st.Guard.Rounds < 0 || st.Guard.Rose < 0 || !finite(st.Guard.MaxRise):
		return restoreErr(errors.New("snapshot with numbers that are not finite, or out of range"))
	}
	for k, p := range st.Pending {
		if k > 0 && p.Round <= st.Pending[k-1].Round || !finite(p.Penalty) || !finite(p.Predicted) {
			return restoreErr(fmt.Errorf("snapshot with a pending round %d out of order or not finite", p.Round))
		}
	}
	copy(c.w, st.W)
	c.b, c.theta, c.minTheta, c.guard = st.B, st.Theta, st.MinTheta, st.Guard
	c.pending = make(map[uint64]pending, len(st.Pending))
	for _, p := range st.Pending {
		c.pending[p.Round] = pending{penalty: p.Penalty, predicted: p.Predicted}
	}
	c.biasRound, c.work, c.records = st.BiasRound, st.Work, st.Records
	return nil
}

// colWorkerState is a ColWorker's snapshot: the margins (the rows' other
// values and losses are functions of them), w (of its own columns, then
// those it holds) and b, the round of the last update and whether the next
// round is joint, and what it saves of its shard (colshard.Saved, whose
// fields it holds around its own).
type colWorkerState struct {
	Data   libsvm.Fingerprint   `msgpack:"data"`
	Shard  int                  `msgpack:"shard"`
	First  int                  `msgpack:"first"`
	Cols   int                  `msgpack:"cols"`
	Lambda float64              `msgpack:"lambda"`
	RelTol float64              `msgpack:"rel_tol"`
	Z      codec.Float64s       `msgpack:"z"`
	W      codec.Float64s       `msgpack:"w"` // own columns, then held ones
	B      float64              `msgpack:"b"`
	AsOf   uint64               `msgpack:"as_of"`
	Joint  bool                 `msgpack:"joint"`
	Screen columnar.ScreenState `msgpack:"screen"`
	Held   columnar.Columns     `msgpack:"held"`
	Seen   []uint8              `msgpack:"seen"`
}

// Snapshot implements schmp.Snapshotter.
func (w *ColWorker) Snapshot() ([]byte, error) {
	v, err := w.sh.Save()
	if err != nil {
		return nil, err
	}
	st := colWorkerState{
		Data: v.Data, Shard: v.Shard, First: v.First, Cols: v.Cols, Lambda: v.Lambda, RelTol: v.RelTol,
		Z: make(codec.Float64s, len(w.rows)), W: w.w, B: w.b, AsOf: w.asOf, Joint: w.sh.Joint,
		Screen: v.Screen, Held: v.Held, Seen: v.Seen,
	}
	for i, r := range w.rows {
		st.Z[i] = r.z
	}
	return seal(kindColWorker, st)
}

// Restore implements schmp.Snapshotter. A snapshot of another shard or
// data, a working set of columns not the worker's, columns held that do
// not fit (as for an update that shares them), or numbers that are not
// finite, are an error.
func (w *ColWorker) Restore(b []byte) error {
	var st colWorkerState
	if err := unseal(b, kindColWorker, &st); err != nil {
		return err
	}
	v := colshard.Saved{
		Data: st.Data, Shard: st.Shard, First: st.First, Cols: st.Cols, Lambda: st.Lambda, RelTol: st.RelTol,
		Screen: st.Screen, Held: st.Held, Seen: st.Seen,
	}
	if err := w.sh.Check(v, len(st.Z), len(st.W), "weights", finite(st.B) && allFinite(st.Z) && allFinite(st.W)); err != nil {
		return restoreErr(err)
	}
	drop := func(nc int) { w.trial = w.trial[:nc:nc] }
	if err := w.sh.Restore(v, drop, func([]float64) { w.trial = append(w.trial, 0) }); err != nil {
		return restoreErr(err)
	}
	for i, z := range st.Z {
		y := w.y[i]
		w.rows[i] = at(y, z)
		w.loss[i] = lossAt(y, z)
	}
	w.w, w.b, w.asOf, w.sh.Joint = st.W, st.B, st.AsOf, st.Joint
	return nil
}

// colCoordinatorState is a ColCoordinator's snapshot: its replica of the
// margins, w and b, the columns shared, the rounds that decide whether a
// partial is stale, what the merges did, the records of the reports and
// the regularization path's progress (Start gives the rest again).
type colCoordinatorState struct {
	Z         codec.Float64s `msgpack:"z"`
	W         codec.Float64s `msgpack:"w"`
	B         float64        `msgpack:"b"`
	Shared    []bool         `msgpack:"shared"`
	LastMoved uint64         `msgpack:"last_moved"`
	Taken     []uint64       `msgpack:"taken"`
	Stats     ColStats       `msgpack:"stats"`
	Records   []Record       `msgpack:"records"`
	Path      []byte         `msgpack:"path"` // nil without a path
}

// Snapshot implements schmp.Snapshotter.
func (c *ColCoordinator) Snapshot() ([]byte, error) {
	st := colCoordinatorState{
		Z: c.z, W: c.w, B: c.b, Shared: c.shared, LastMoved: c.lastMoved, Taken: c.taken,
		Stats: c.stats, Records: c.records,
	}
	var err error
	if st.Path, err = c.SnapshotPath(); err != nil {
		return nil, err
	}
	return seal(kindColCoordinator, st)
}

// Restore implements schmp.Snapshotter.
func (c *ColCoordinator) Restore(b []byte) error {
	var st colCoordinatorState
	if err := unseal(b, kindColCoordinator, &st); err != nil {
		return err
	}
	if len(st.Z) != len(c.z) || len(st.W) != len(c.w) || len(st.Shared) != len(c.shared) || len(st.Taken) != len(c.taken) {
		return restoreErr(fmt.Errorf("snapshot of %d rows, %d weights (%d marked shared) and %d workers, want %d, %d and %d",
			len(st.Z), len(st.W), len(st.Shared), len(st.Taken), len(c.z), len(c.w), len(c.taken)))
	}
	if err := c.CheckPath(st.Path); err != nil {
		return restoreErr(err)
	}
	if !allFinite(st.Z) || !allFinite(st.W) || !finite(st.B) || !(st.Stats.MinAlpha >= 0 && st.Stats.MinAlpha <= 1) {
		return restoreErr(errors.New("snapshot with numbers that are not finite, or out of range"))
	}
	if err := c.RestorePath(st.Path); err != nil {
		return restoreErr(err)
	}
	for i, z := range st.Z {
		c.setRow(i, z)
	}
	copy(c.w, st.W)
	copy(c.shared, st.Shared)
	copy(c.taken, st.Taken)
	c.b, c.lastMoved, c.stats, c.records = st.B, st.LastMoved, st.Stats, st.Records
	return nil
}
