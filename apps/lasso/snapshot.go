package lasso

import (
	"errors"
	"fmt"
	"math"

	"github.com/strads-go/strads/apps/internal/colshard"
	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
)

// The roles' snapshots (schmp.Snapshotter) and the path's are sealed
// envelopes (schmp.Seal): the role's kind, the encoding's version and the
// msgpack body, followed by the CRC-32C of all of it, so that a snapshot
// of another role or version, truncated or corrupted, is an error, never
// a state. Restore checks the body against the role (its shard, its
// sizes) before it changes anything. The schedulers' are package
// columnar's.

// snapshotVersion is the version of the encoding of the snapshots. Up to
// version 2 they were bare msgpack with a version field, which Unseal
// refuses (their last bytes are no checksum of the rest).
const snapshotVersion = 3

// The kinds of role that a snapshot is of.
const (
	kindWorker         = "lasso/worker"
	kindCoordinator    = "lasso/coordinator"
	kindColWorker      = "lasso/colworker"
	kindColCoordinator = "lasso/colcoordinator"
	kindPath           = "lasso/path"
)

// seal encodes v as the snapshot of a role of kind.
func seal(kind string, v any) ([]byte, error) { return schmp.Seal(kind, snapshotVersion, v) }

// unseal decodes b, a snapshot of a role of kind, into v.
func unseal(b []byte, kind string, v any) error { return schmp.Unseal(b, kind, snapshotVersion, v) }

// restoreErr wraps the error of a Restore.
func restoreErr(err error) error { return fmt.Errorf("lasso: restore: %w", err) }

// workerState is a row layout Worker's snapshot: its residual and its β,
// and the centering of Start's update, which a restored worker does not
// apply; its data and rows, to check that it is restored into the same
// shard.
type workerState struct {
	Data     libsvm.Fingerprint `msgpack:"data"`
	First    int                `msgpack:"first"`
	Rows     int                `msgpack:"rows"`
	Features int                `msgpack:"features"`
	MeanY    float64            `msgpack:"mean_y"`
	MeanX    codec.Float64s     `msgpack:"mean_x"`
	Q        codec.Float64s     `msgpack:"q"`
	SumQ     float64            `msgpack:"sum_q"`
	S        float64            `msgpack:"s"`
	Beta     codec.Float64s     `msgpack:"beta"`
}

// Snapshot implements schmp.Snapshotter.
func (w *Worker) Snapshot() ([]byte, error) {
	return seal(kindWorker, workerState{
		Data: w.data, First: w.lo, Rows: w.x.Rows, Features: w.features,
		MeanY: w.meanY, MeanX: w.meanX, Q: w.q, SumQ: w.sumQ, S: w.s, Beta: w.beta,
	})
}

// Restore implements schmp.Snapshotter. A snapshot of another shard or
// data, or with numbers that are not finite, is an error.
func (w *Worker) Restore(b []byte) error {
	var st workerState
	if err := unseal(b, kindWorker, &st); err != nil {
		return err
	}
	switch {
	case st.Data != w.data || st.First != w.lo || st.Rows != w.x.Rows || len(st.Q) != len(w.q):
		return restoreErr(fmt.Errorf("snapshot of the worker of rows [%d, %d) of %v, this one has [%d, %d) of %v",
			st.First, st.First+st.Rows, st.Data, w.lo, w.lo+w.x.Rows, w.data))
	case st.Features < w.x.Cols || len(st.MeanX) != 0 && len(st.MeanX) != st.Features || len(st.Beta) > st.Features:
		return restoreErr(fmt.Errorf("snapshot of %d features (the shard has %d) with %d means and %d coefficients",
			st.Features, w.x.Cols, len(st.MeanX), len(st.Beta)))
	case !finite(st.MeanY) || !finite(st.SumQ) || !finite(st.S) || !allFinite(st.MeanX) || !allFinite(st.Q) || !allFinite(st.Beta):
		return restoreErr(errors.New("snapshot with numbers that are not finite"))
	}
	w.features, w.meanY, w.meanX = st.Features, st.MeanY, st.MeanX
	copy(w.q, st.Q)
	w.sumQ, w.s, w.beta = st.SumQ, st.S, st.Beta
	return nil
}

// coordinatorState is a row layout Coordinator's snapshot: β (Start gives
// the rest again).
type coordinatorState struct {
	Beta codec.Float64s `msgpack:"beta"`
}

// Snapshot implements schmp.Snapshotter.
func (c *Coordinator) Snapshot() ([]byte, error) {
	return seal(kindCoordinator, coordinatorState{Beta: c.beta})
}

// Restore implements schmp.Snapshotter.
func (c *Coordinator) Restore(b []byte) error {
	var st coordinatorState
	if err := unseal(b, kindCoordinator, &st); err != nil {
		return err
	}
	switch {
	case len(st.Beta) != len(c.beta):
		return restoreErr(fmt.Errorf("snapshot of %d coefficients, want %d", len(st.Beta), len(c.beta)))
	case !allFinite(st.Beta):
		return restoreErr(errors.New("snapshot with coefficients that are not finite"))
	}
	copy(c.beta, st.Beta)
	return nil
}

// colWorkerState is a ColWorker's snapshot: the replica of q and β, and
// what it saves of its shard (colshard.Saved, whose fields it holds around
// its own).
type colWorkerState struct {
	Data   libsvm.Fingerprint   `msgpack:"data"`
	Shard  int                  `msgpack:"shard"`
	First  int                  `msgpack:"first"`
	Cols   int                  `msgpack:"cols"`
	Lambda float64              `msgpack:"lambda"`
	RelTol float64              `msgpack:"rel_tol"`
	Q      codec.Float64s       `msgpack:"q"`
	Beta   codec.Float64s       `msgpack:"beta"` // own columns, then held ones
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
	return seal(kindColWorker, colWorkerState{
		Data: v.Data, Shard: v.Shard, First: v.First, Cols: v.Cols, Lambda: v.Lambda, RelTol: v.RelTol,
		Q: w.q, Beta: w.beta, Screen: v.Screen, Held: v.Held, Seen: v.Seen,
	})
}

// Restore implements schmp.Snapshotter. A snapshot of another shard or
// data, a working set of columns not the worker's, or numbers that are not
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
	if err := w.sh.Check(v, len(st.Q), len(st.Beta), "coefficients", allFinite(st.Q) && allFinite(st.Beta)); err != nil {
		return restoreErr(err)
	}
	drop := func(nc int) { w.colSum, w.curv, w.trial = w.colSum[:nc:nc], w.curv[:nc:nc], w.trial[:nc:nc] }
	err := w.sh.Restore(v, drop, func(vals []float64) {
		sum, a := w.colStats(vals)
		w.colSum = append(w.colSum, sum)
		w.curv = append(w.curv, a)
		w.trial = append(w.trial, 0)
	})
	if err != nil {
		return restoreErr(err)
	}
	copy(w.q, st.Q)
	w.beta = st.Beta
	return nil
}

// colCoordinatorState is a ColCoordinator's snapshot: its replica of q,
// β, the columns shared, the merges' record and the regularization path's
// progress (Start gives the rest again).
type colCoordinatorState struct {
	Q         codec.Float64s `msgpack:"q"`
	Beta      codec.Float64s `msgpack:"beta"`
	Shared    []bool         `msgpack:"shared"`
	Shortened int            `msgpack:"shortened"`
	MinAlpha  float64        `msgpack:"min_alpha"`
	Path      []byte         `msgpack:"path"` // nil without a path
}

// Snapshot implements schmp.Snapshotter.
func (c *ColCoordinator) Snapshot() ([]byte, error) {
	st := colCoordinatorState{Q: c.q, Beta: c.beta, Shared: c.shared, Shortened: c.Shortened, MinAlpha: c.MinAlpha}
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
	if len(st.Q) != len(c.q) || len(st.Beta) != len(c.beta) || len(st.Shared) != len(c.shared) {
		return restoreErr(fmt.Errorf("snapshot of %d rows and %d coefficients (%d marked shared), want %d and %d",
			len(st.Q), len(st.Beta), len(st.Shared), len(c.q), len(c.beta)))
	}
	if err := c.CheckPath(st.Path); err != nil {
		return restoreErr(err)
	}
	if !allFinite(st.Q) || !allFinite(st.Beta) || !(st.MinAlpha >= 0 && st.MinAlpha <= 1) || st.Shortened < 0 {
		return restoreErr(errors.New("snapshot with numbers that are not finite, or out of range"))
	}
	if err := c.RestorePath(st.Path); err != nil {
		return restoreErr(err)
	}
	copy(c.q, st.Q)
	copy(c.beta, st.Beta)
	copy(c.shared, st.Shared)
	c.Shortened, c.MinAlpha = st.Shortened, st.MinAlpha
	return nil
}

// pathState is a Path's snapshot: the stage being solved, the round after
// which it started, and the points found so far (NewPath gives the
// penalties again).
type pathState struct {
	Len    int         `msgpack:"len"`
	Stage  int         `msgpack:"stage"`
	From   uint64      `msgpack:"from"`
	Points []pathPoint `msgpack:"points"`
}

// pathPoint is a PathPoint in a snapshot, its report a field of its own:
// the Stop of the point and the Stop of its report's Progress would share
// a name if the report were inlined.
type pathPoint struct {
	Step   int           `msgpack:"step"`
	Lambda float64       `msgpack:"lambda"`
	Sample schmp.Sample  `msgpack:"sample"`
	Rounds uint64        `msgpack:"rounds"`
	Stop   string        `msgpack:"stop"`
	Model  *linear.Model `msgpack:"model"`
}

// Snapshot returns the path's progress, encoded: the penalty being solved
// and what the path found at those before. A Path restored from it, built
// by NewPath with the same arguments, goes on as p does.
func (p *Path) Snapshot() ([]byte, error) {
	st := pathState{Len: len(p.lambdas), Stage: p.stage, From: p.from}
	for _, pt := range p.points {
		st.Points = append(st.Points, pathPoint{Step: pt.Step, Lambda: pt.Lambda, Sample: pt.Sample, Rounds: pt.Rounds, Stop: pt.Stop, Model: pt.Model})
	}
	return seal(kindPath, st)
}

// Restore sets p, just built by NewPath and with no point recorded, to the
// progress of b, a Snapshot of a path of the same penalties taken while
// the job ran (every stage before the one being solved converged). A
// snapshot of another path, or points that do not fit it, are an error.
func (p *Path) Restore(b []byte) error {
	var st pathState
	if err := unseal(b, kindPath, &st); err != nil {
		return err
	}
	switch {
	case len(p.points) != 0 || p.stage != 0:
		return errors.New("path: restore of a path that has gone on")
	case st.Len != len(p.lambdas):
		return fmt.Errorf("path: snapshot of a path of %d penalties, this one has %d", st.Len, len(p.lambdas))
	case st.Stage < 0 || st.Stage >= len(p.lambdas) || len(st.Points) != st.Stage:
		return fmt.Errorf("path: snapshot at penalty %d of %d with %d points", st.Stage+1, len(p.lambdas), len(st.Points))
	}
	for k, pt := range st.Points {
		switch {
		case pt.Step != k+1 || math.Float64bits(pt.Lambda) != math.Float64bits(p.lambdas[k]) || pt.Stop != "converged" || pt.Sample.Round > st.From:
			return fmt.Errorf("path: snapshot with point %d of step %d at λ %v (%s, round %d), want step %d at λ %v, converged by round %d",
				k+1, pt.Step, pt.Lambda, pt.Stop, pt.Sample.Round, k+1, p.lambdas[k], st.From)
		case pt.Model == nil:
			return fmt.Errorf("path: snapshot with point %d without a model", k+1)
		}
		if err := pt.Model.Check(); err != nil {
			return fmt.Errorf("path: snapshot with point %d: %w", k+1, err)
		}
	}
	p.stage, p.from, p.points = st.Stage, st.From, nil
	for _, pt := range st.Points {
		p.points = append(p.points, PathPoint{Step: pt.Step, Lambda: pt.Lambda, Sample: pt.Sample, Rounds: pt.Rounds, Stop: pt.Stop, Model: pt.Model})
	}
	return nil
}
