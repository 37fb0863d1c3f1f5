package columnar

import (
	"fmt"

	"github.com/strads-go/strads/schmp"
)

// The schedulers' snapshots (schmp.Snapshotter) are sealed envelopes
// (schmp.Seal): the scheduler's kind, the encoding's version and the
// msgpack body, followed by the CRC-32C of all of it, so that a snapshot
// of another scheduler or version, truncated or corrupted, is an error,
// never a state. Restore then checks the body against the scheduler
// before it changes anything.

// snapshotVersion is the version of the encoding of the schedulers'
// snapshots. Version 1 was bare msgpack with a version field, which
// Unseal refuses (its last bytes are no checksum of the rest).
const snapshotVersion = 2

// The kinds of scheduler that a snapshot is of.
const (
	kindScheduler      = "columnar/scheduler"
	kindBlockScheduler = "columnar/blockscheduler"
)

// seal encodes v as the snapshot of a scheduler of kind.
func seal(kind string, v any) ([]byte, error) { return schmp.Seal(kind, snapshotVersion, v) }

// unseal decodes b, a snapshot of a scheduler of kind, into v.
func unseal(b []byte, kind string, v any) error { return schmp.Unseal(b, kind, snapshotVersion, v) }

// schedulerState is a Scheduler's snapshot: its range of the columns, to
// check that it is restored into the same part, and its engine's state.
type schedulerState struct {
	First  int32  `msgpack:"first"`
	Vars   int32  `msgpack:"vars"`
	Engine []byte `msgpack:"engine"`
}

// Snapshot implements schmp.Snapshotter: the state of the engine.
func (s *Scheduler) Snapshot() ([]byte, error) {
	e, err := s.d.Snapshot()
	if err != nil {
		return nil, err
	}
	return seal(kindScheduler, schedulerState{First: s.first, Vars: s.vars, Engine: e})
}

// Restore implements schmp.Snapshotter. A snapshot of another part (other
// columns), of another scheduler or of another version is an error.
func (s *Scheduler) Restore(b []byte) error {
	var st schedulerState
	if err := unseal(b, kindScheduler, &st); err != nil {
		return err
	}
	if st.First != s.first || st.Vars != s.vars {
		return fmt.Errorf("columnar: restore: snapshot of the scheduler of columns [%d, %d), this one has [%d, %d)",
			st.First, int64(st.First)+int64(st.Vars), s.first, s.first+s.vars)
	}
	return s.d.Restore(st.Engine)
}

// blockState is a BlockScheduler's snapshot. The snapshots of older
// versions, which could also run an engine per worker, are unsealed, and
// Restore refuses them.
type blockState struct {
	Workers int `msgpack:"workers"`
}

// Snapshot implements schmp.Snapshotter: the number of workers, which is
// all the scheduler has.
func (s *BlockScheduler) Snapshot() ([]byte, error) {
	return seal(kindBlockScheduler, blockState{Workers: s.workers})
}

// Restore implements schmp.Snapshotter. A snapshot of a scheduler for
// another number of workers, of another scheduler or of another version
// (one that ran engines among them) is an error.
func (s *BlockScheduler) Restore(b []byte) error {
	var st blockState
	if err := unseal(b, kindBlockScheduler, &st); err != nil {
		return err
	}
	if st.Workers != s.workers {
		return fmt.Errorf("columnar: restore: snapshot of a block scheduler for %d workers, this one is for %d", st.Workers, s.workers)
	}
	return nil
}

// Restore sets h to the held columns cols over rows rows: it empties h (it
// may hold columns: a rollback restores a worker in place, DESIGN "Spares and replacement") and
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
