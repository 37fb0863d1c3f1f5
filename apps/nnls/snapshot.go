package nnls

import (
	"fmt"
	"math"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// The roles' snapshots (schmp.Snapshotter) are sealed envelopes
// (schmp.Seal): the role's kind, the encoding's version and the msgpack
// body, followed by the CRC-32C of all of it, so that a snapshot of
// another role or version, truncated or corrupted, is an error, never a
// state. Restore then checks the body against the role before it changes
// anything.

// snapshotVersion is the version of the encoding of the roles' snapshots.
// Version 1 was bare msgpack with a version field, which Unseal refuses
// (its last bytes are no checksum of the rest).
const snapshotVersion = 2

// The kinds of role that a snapshot is of.
const (
	kindScheduler   = "nnls/scheduler"
	kindWorker      = "nnls/worker"
	kindCoordinator = "nnls/coordinator"
)

// seal encodes v as the snapshot of a role of kind.
func seal(kind string, v any) ([]byte, error) { return schmp.Seal(kind, snapshotVersion, v) }

// unseal decodes b, a snapshot of a role of kind, into v.
func unseal(b []byte, kind string, v any) error { return schmp.Unseal(b, kind, snapshotVersion, v) }

// schedulerState is a Scheduler's snapshot: the plans it made, and its
// range, to check that it is restored into the same part.
type schedulerState struct {
	First int `msgpack:"first"`
	Cols  int `msgpack:"cols"`
	Plans int `msgpack:"plans"`
}

// Snapshot implements schmp.Snapshotter: the number of plans made.
func (s *Scheduler) Snapshot() ([]byte, error) {
	return seal(kindScheduler, schedulerState{First: s.first, Cols: s.cols, Plans: s.plans})
}

// Restore implements schmp.Snapshotter.
func (s *Scheduler) Restore(b []byte) error {
	var st schedulerState
	if err := unseal(b, kindScheduler, &st); err != nil {
		return err
	}
	switch {
	case st.First != s.first || st.Cols != s.cols:
		return fmt.Errorf("nnls: restore: snapshot of the scheduler of coordinates [%d, %d), this one has [%d, %d)", st.First, st.First+st.Cols, s.first, s.first+s.cols)
	case st.Plans < 0:
		return fmt.Errorf("nnls: restore: snapshot after %d plans", st.Plans)
	}
	s.plans = st.Plans
	return nil
}

// workerState is a Worker's snapshot: its residual, and its rows and
// columns, to check that it is restored into the same shard.
type workerState struct {
	First int            `msgpack:"first"`
	Cols  int            `msgpack:"cols"`
	R     codec.Float64s `msgpack:"r"`
}

// Snapshot implements schmp.Snapshotter: the residual over the worker's
// rows.
func (w *Worker) Snapshot() ([]byte, error) {
	return seal(kindWorker, workerState{First: w.lo, Cols: len(w.x), R: w.r})
}

// Restore implements schmp.Snapshotter. A residual over another number of
// rows (another shard) is an error.
func (w *Worker) Restore(b []byte) error {
	var st workerState
	if err := unseal(b, kindWorker, &st); err != nil {
		return err
	}
	switch {
	case st.First != w.lo || len(st.R) != len(w.r) || st.Cols != len(w.x):
		return fmt.Errorf("nnls: restore: snapshot of the worker of rows [%d, %d) and %d columns, this one has [%d, %d) and %d",
			st.First, st.First+len(st.R), st.Cols, w.lo, w.lo+len(w.r), len(w.x))
	case !allFinite(st.R):
		return fmt.Errorf("nnls: restore: a residual that is not finite")
	}
	copy(w.r, st.R)
	return nil
}

// coordinatorState is a Coordinator's snapshot: β.
type coordinatorState struct {
	Beta codec.Float64s `msgpack:"beta"`
}

// Snapshot implements schmp.Snapshotter: β (Start gives the rest again).
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
		return fmt.Errorf("nnls: restore: snapshot of %d coefficients, want %d", len(st.Beta), len(c.beta))
	case !nonNegative(st.Beta):
		return fmt.Errorf("nnls: restore: coefficients that are not finite and ≥ 0")
	}
	copy(c.beta, st.Beta)
	return nil
}

// allFinite reports whether every element of xs is finite.
func allFinite(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
