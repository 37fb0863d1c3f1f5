package nnls

import (
	"fmt"
	"math"

	"github.com/strads-go/strads/wire"
)

// snapshotVersion is the version of the encoding of the roles' snapshots
// (schmp.Snapshotter).
const snapshotVersion = 1

// schedulerState is a Scheduler's snapshot: the plans it made, and its
// range, to check that it is restored into the same part.
type schedulerState struct {
	Version uint8 `msgpack:"version"`
	First   int   `msgpack:"first"`
	Cols    int   `msgpack:"cols"`
	Plans   int   `msgpack:"plans"`
}

// Snapshot implements schmp.Snapshotter: the number of plans made.
func (s *Scheduler) Snapshot() ([]byte, error) {
	return wire.Marshal(schedulerState{Version: snapshotVersion, First: s.first, Cols: s.cols, Plans: s.plans})
}

// Restore implements schmp.Snapshotter.
func (s *Scheduler) Restore(b []byte) error {
	var st schedulerState
	if err := wire.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("nnls: restore: %w", err)
	}
	switch {
	case st.Version != snapshotVersion:
		return fmt.Errorf("nnls: restore: snapshot of version %d, want %d", st.Version, snapshotVersion)
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
	Version uint8         `msgpack:"version"`
	First   int           `msgpack:"first"`
	Cols    int           `msgpack:"cols"`
	R       wire.Float64s `msgpack:"r"`
}

// Snapshot implements schmp.Snapshotter: the residual over the worker's
// rows.
func (w *Worker) Snapshot() ([]byte, error) {
	return wire.Marshal(workerState{Version: snapshotVersion, First: w.lo, Cols: len(w.x), R: w.r})
}

// Restore implements schmp.Snapshotter. A residual over another number of
// rows (another shard) is an error.
func (w *Worker) Restore(b []byte) error {
	var st workerState
	if err := wire.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("nnls: restore: %w", err)
	}
	switch {
	case st.Version != snapshotVersion:
		return fmt.Errorf("nnls: restore: snapshot of version %d, want %d", st.Version, snapshotVersion)
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
	Version uint8         `msgpack:"version"`
	Beta    wire.Float64s `msgpack:"beta"`
}

// Snapshot implements schmp.Snapshotter: β (Start gives the rest again).
func (c *Coordinator) Snapshot() ([]byte, error) {
	return wire.Marshal(coordinatorState{Version: snapshotVersion, Beta: c.beta})
}

// Restore implements schmp.Snapshotter.
func (c *Coordinator) Restore(b []byte) error {
	var st coordinatorState
	if err := wire.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("nnls: restore: %w", err)
	}
	switch {
	case st.Version != snapshotVersion:
		return fmt.Errorf("nnls: restore: snapshot of version %d, want %d", st.Version, snapshotVersion)
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
