package columnar

import (
	"errors"
	"fmt"

	"github.com/strads-go/strads/wire"
)

// snapshotVersion is the version of the encoding of the schedulers'
// snapshots.
const snapshotVersion = 1

// schedulerState is a Scheduler's snapshot: its range of the columns, to
// check that it is restored into the same part, and its engine's state.
type schedulerState struct {
	Version uint8  `msgpack:"version"`
	First   int32  `msgpack:"first"`
	Vars    int32  `msgpack:"vars"`
	Engine  []byte `msgpack:"engine"`
}

// Snapshot implements schmp.Snapshotter: the state of the engine.
func (s *Scheduler) Snapshot() ([]byte, error) {
	e, err := s.d.Snapshot()
	if err != nil {
		return nil, err
	}
	return wire.Marshal(schedulerState{Version: snapshotVersion, First: s.first, Vars: s.vars, Engine: e})
}

// Restore implements schmp.Snapshotter. A snapshot of another part (other
// columns) or of another version is an error.
func (s *Scheduler) Restore(b []byte) error {
	var st schedulerState
	if err := wire.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("columnar: restore: %w", err)
	}
	switch {
	case st.Version != snapshotVersion:
		return fmt.Errorf("columnar: restore: snapshot of version %d, want %d", st.Version, snapshotVersion)
	case st.First != s.first || st.Vars != s.vars:
		return fmt.Errorf("columnar: restore: snapshot of the scheduler of columns [%d, %d), this one has [%d, %d)",
			st.First, int64(st.First)+int64(st.Vars), s.first, s.first+s.vars)
	}
	return s.d.Restore(st.Engine)
}

// blockState is a BlockScheduler's snapshot. NoBlocks is always true: it
// tells the snapshots of this scheduler from those of older versions,
// which could also run an engine per worker, and which Restore rejects.
type blockState struct {
	Version  uint8 `msgpack:"version"`
	NoBlocks bool  `msgpack:"no_blocks"`
	Workers  int   `msgpack:"workers"`
}

// Snapshot implements schmp.Snapshotter: the number of workers, which is
// all the scheduler has.
func (s *BlockScheduler) Snapshot() ([]byte, error) {
	return wire.Marshal(blockState{Version: snapshotVersion, NoBlocks: true, Workers: s.workers})
}

// Restore implements schmp.Snapshotter. A snapshot of a scheduler for
// another number of workers, of one that ran engines, or of another
// version is an error.
func (s *BlockScheduler) Restore(b []byte) error {
	var st blockState
	if err := wire.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("columnar: restore: %w", err)
	}
	switch {
	case st.Version != snapshotVersion:
		return fmt.Errorf("columnar: restore: snapshot of version %d, want %d", st.Version, snapshotVersion)
	case !st.NoBlocks:
		return errors.New("columnar: restore: snapshot of a block scheduler that ran an engine per worker, which this version does not")
	case st.Workers != s.workers:
		return fmt.Errorf("columnar: restore: snapshot of a block scheduler for %d workers, this one is for %d", st.Workers, s.workers)
	}
	return nil
}

// Restore sets h to the held columns cols over rows rows: it empties h (it
// may hold columns: a rollback restores a worker in place, DESIGN §6) and
// takes cols as Take does, calling added for each. The caller drops its
// per-column state of the columns h held before. Columns that do not fit
// (as for Take) are an error; h is then empty, or holds some of cols.
func (h *Held) Restore(cols Columns, rows int, added func(vals []float64)) error {
	if err := cols.Check(rows, h.total); err != nil {
		return err
	}
	h.reset()
	if cols.Len() != 0 {
		return h.Take(&cols, rows, false, added)
	}
	return nil
}

// reset empties h, as NewHeld made it.
func (h *Held) reset() {
	for _, j := range h.IDs {
		h.where[j] = 0
	}
	h.Columns = Columns{}
}
