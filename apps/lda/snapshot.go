package lda

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// Checkpoints (schmp.Snapshotter, DESIGN "Checkpoints"). Every role saves what its
// constructor (and the coordinator's Start) does not rebuild from the
// settings and its own shard:
//   - a worker: its tokens' topics (packed, ⌈log₂ K⌉ bits each), the block
//     of every word (the rotation's layout, which the worker had from
//     Start's update), its random state, topic totals and priors, its
//     counters, and on the ring the block it took for the next sub-round;
//   - a coordinator: the topic totals, the table as it holds it (every
//     block's counts as of its last gather; the baseline's whole table),
//     the priors learned, the reports so far and their clock;
//   - the scheduler: nothing but its settings, which Restore checks.
//
// The update of the cut's round, which the next task carries (the star's
// blocks, the baseline's table, the topic totals), is the runtime's part of
// the checkpoint (pipeline.Snapshot), not the roles'.
//
// The bytes are a sealed envelope: the role's kind, the encoding's
// version and the msgpack body, followed by the CRC-32C of all of it, so
// that a snapshot of another role, of another version, truncated or
// corrupted is an error, never a state. Restore checks the body against
// the role (its shard, its sizes) before it changes anything it would
// have to undo.

// snapshotVersion is the version of the encoding of the roles' snapshots.
const snapshotVersion = 1

// The kinds of role that a snapshot is of.
const (
	kindWorker                 = "lda/worker"
	kindUnscheduledWorker      = "lda/unscheduled-worker"
	kindCoordinator            = "lda/coordinator"
	kindUnscheduledCoordinator = "lda/unscheduled-coordinator"
	kindScheduler              = "lda/scheduler"
)

// seal encodes v as the snapshot of a role of kind.
func seal(kind string, v any) ([]byte, error) { return schmp.Seal(kind, snapshotVersion, v) }

// unseal decodes b, a snapshot of a role of kind, into v.
func unseal(b []byte, kind string, v any) error { return schmp.Unseal(b, kind, snapshotVersion, v) }

// packed is a sequence of N integers in [0, limit), each in Bits bits
// (those of limit−1), little-endian, in Data.
type packed struct {
	Bits int    `msgpack:"b"`
	N    int    `msgpack:"n"`
	Data []byte `msgpack:"d"`
}

// bitsFor returns the bits that the integers in [0, limit) need.
func bitsFor(limit int) int { return bits.Len(uint(max(limit, 1) - 1)) }

// pack packs v, whose values are in [0, limit).
func pack(v []int32, limit int) packed {
	p := packed{Bits: bitsFor(limit), N: len(v)}
	p.Data = make([]byte, 0, (len(v)*p.Bits+7)/8)
	var acc uint64
	n := 0
	for _, x := range v {
		acc |= uint64(uint32(x)) << n
		for n += p.Bits; n >= 8; n -= 8 {
			p.Data = append(p.Data, byte(acc))
			acc >>= 8
		}
	}
	if n > 0 {
		p.Data = append(p.Data, byte(acc))
	}
	return p
}

// unpack fills dst with p's integers, which must be len(dst), each below
// limit.
func (p *packed) unpack(dst []int32, limit int) error {
	switch {
	case p.N != len(dst):
		return fmt.Errorf("%d values, want %d", p.N, len(dst))
	case p.Bits != bitsFor(limit):
		return fmt.Errorf("%d bits a value, want %d", p.Bits, bitsFor(limit))
	case len(p.Data) != (len(dst)*p.Bits+7)/8:
		return fmt.Errorf("%d bytes for %d values of %d bits", len(p.Data), len(dst), p.Bits)
	}
	var acc uint64
	n, j := 0, 0
	mask := uint64(1)<<p.Bits - 1
	for i := range dst {
		for n < p.Bits {
			acc |= uint64(p.Data[j]) << n
			j, n = j+1, n+8
		}
		x := acc & mask
		acc, n = acc>>p.Bits, n-p.Bits
		if x >= uint64(limit) {
			return fmt.Errorf("value %d of %d is %d, out of [0, %d)", i, len(dst), x, limit)
		}
		dst[i] = int32(x)
	}
	return nil
}

// workerState is a worker's snapshot.
type workerState struct {
	// The shard, which Restore checks: its index of Shards, and its sizes.
	Shard  int   `msgpack:"shard"`
	Shards int   `msgpack:"shards"`
	Docs   int   `msgpack:"docs"`
	Tokens int64 `msgpack:"tokens"`
	Words  int   `msgpack:"words"`
	Topics int   `msgpack:"topics"`
	// Layout is the block of every word (the rotation's worker only), Z
	// the topic of every token in the shard's order after the layout.
	Layout *packed `msgpack:"layout,omitempty"`
	Z      packed  `msgpack:"z"`
	// The sampler's random state, topic totals and counters.
	RNG     uint64       `msgpack:"rng"`
	NK      codec.Int32s `msgpack:"nk"`
	Sampled int64        `msgpack:"sampled"`
	Moved   int64        `msgpack:"moved"`
	// The priors as of the last update.
	Alpha codec.Float64s `msgpack:"alpha"`
	Beta  float64        `msgpack:"beta"`
	// The worker's bookkeeping: the last round pushed, its sampling time.
	Pushed      uint64 `msgpack:"pushed"`
	SampleNanos int64  `msgpack:"sample_nanos"`
	// Held is the block the rotation's worker holds (on the ring, the one
	// it took for the next sub-round), and HeldID its index.
	Held   *Sparse `msgpack:"held,omitempty"`
	HeldID int     `msgpack:"held_id"`
}

// state returns the snapshot of the state that both workers share.
func (w *base) state() workerState {
	return workerState{
		Shard: w.shard, Shards: w.p, Docs: w.sh.docs(), Tokens: w.sh.tokens, Words: w.words, Topics: w.cfg.Topics,
		Z:   pack(w.sh.z, w.cfg.Topics),
		RNG: w.s.rng.s, NK: w.s.nk, Sampled: w.s.sampled, Moved: w.s.moved,
		Alpha: w.priors.Alpha, Beta: w.priors.Beta,
		Pushed: w.pushed, SampleNanos: w.sampleNanos, HeldID: -1,
	}
}

// check reports the first part of s that does not fit the worker.
func (w *base) check(s *workerState) error {
	switch {
	case s.Shard != w.shard || s.Shards != w.p:
		return fmt.Errorf("the snapshot is of worker shard %d of %d, this is shard %d of %d", s.Shard, s.Shards, w.shard, w.p)
	case s.Docs != w.sh.docs() || s.Tokens != w.sh.tokens || s.Words != w.words || s.Topics != w.cfg.Topics:
		return fmt.Errorf("the snapshot is of a shard of %d documents, %d tokens, %d words, %d topics; this one has %d, %d, %d, %d",
			s.Docs, s.Tokens, s.Words, s.Topics, w.sh.docs(), w.sh.tokens, w.words, w.cfg.Topics)
	case len(s.NK) != w.cfg.Topics:
		return fmt.Errorf("%d topic totals, want %d", len(s.NK), w.cfg.Topics)
	case s.Sampled < 0 || s.Moved < 0:
		return fmt.Errorf("negative counters")
	}
	for t, n := range s.NK {
		if n < 0 {
			return fmt.Errorf("n_k[%d] = %d < 0", t, n)
		}
	}
	p := Priors{Alpha: s.Alpha, Beta: s.Beta}
	if err := p.check(w.cfg.Topics); err != nil {
		return fmt.Errorf("priors: %w", err)
	}
	return nil
}

// restore sets the state that both workers share from s (checked), with
// z the tokens' topics, unpacked.
func (w *base) restore(s *workerState, z []int32) {
	copy(w.sh.z, z)
	w.s.rng.s = s.RNG
	copy(w.s.nk, s.NK)
	w.s.sampled, w.s.moved = s.Sampled, s.Moved
	w.priors = Priors{Alpha: s.Alpha, Beta: s.Beta}
	w.s.setPriors(w.priors)
	w.pushed, w.sampleNanos = s.Pushed, s.SampleNanos
}

// Snapshot implements schmp.Snapshotter.
func (w *Worker) Snapshot() ([]byte, error) {
	if !w.ready {
		return nil, fmt.Errorf("worker %d: a snapshot before the layout", w.shard)
	}
	s := w.state()
	layout := pack(w.layout, w.p)
	s.Layout = &layout
	if w.held != nil {
		s.Held, s.HeldID = w.held, w.heldID
	}
	return seal(kindWorker, &s)
}

// Restore implements schmp.Snapshotter, on a worker just built or one
// that has gone on.
func (w *Worker) Restore(b []byte) error {
	var s workerState
	if err := unseal(b, kindWorker, &s); err != nil {
		return err
	}
	if err := w.check(&s); err != nil {
		return fmt.Errorf("%s snapshot: %w", kindWorker, err)
	}
	if s.Layout == nil {
		return fmt.Errorf("%s snapshot: no layout", kindWorker)
	}
	layout := make([]int32, w.words)
	if err := s.Layout.unpack(layout, w.p); err != nil {
		return fmt.Errorf("%s snapshot: layout: %w", kindWorker, err)
	}
	z := make([]int32, w.sh.tokens)
	if err := s.Z.unpack(z, w.cfg.Topics); err != nil {
		return fmt.Errorf("%s snapshot: topics: %w", kindWorker, err)
	}
	if s.Held != nil {
		rows := 0
		for _, b := range layout {
			if int(b) == s.HeldID {
				rows++
			}
		}
		if s.HeldID < 0 || s.HeldID >= w.p {
			return fmt.Errorf("%s snapshot: block %d of %d held", kindWorker, s.HeldID, w.p)
		}
		if err := s.Held.check(rows, w.cfg.Topics, false); err != nil {
			return fmt.Errorf("%s snapshot: block %d held: %w", kindWorker, s.HeldID, err)
		}
	}
	if w.ready {
		// A worker that has gone on (a rollback restores in place,
		// DESIGN "Spares and replacement") keeps its shard laid out: the layout is the job's,
		// from Start's update, and the snapshot's must be the same.
		if !slices.Equal(layout, w.layout) {
			return fmt.Errorf("%s snapshot: a layout other than the worker's", kindWorker)
		}
	} else {
		if err := w.sh.layout(layout, w.p); err != nil {
			return fmt.Errorf("%s snapshot: layout: %w", kindWorker, err)
		}
		w.layout, w.ready = layout, true
	}
	w.restore(&s, z)
	w.held, w.heldID = nil, -1
	if s.Held != nil {
		w.held, w.heldID = s.Held, s.HeldID
	}
	return nil
}

// Snapshot implements schmp.Snapshotter. The baseline's worker does not
// save its copy of the table: the next task's update replaces it.
func (w *UnscheduledWorker) Snapshot() ([]byte, error) {
	s := w.state()
	return seal(kindUnscheduledWorker, &s)
}

// Restore implements schmp.Snapshotter, on a worker just built or one
// that has gone on.
func (w *UnscheduledWorker) Restore(b []byte) error {
	var s workerState
	if err := unseal(b, kindUnscheduledWorker, &s); err != nil {
		return err
	}
	if err := w.check(&s); err != nil {
		return fmt.Errorf("%s snapshot: %w", kindUnscheduledWorker, err)
	}
	if s.Layout != nil || s.Held != nil {
		return fmt.Errorf("%s snapshot: a layout or a block held, which the baseline has not", kindUnscheduledWorker)
	}
	z := make([]int32, w.sh.tokens)
	if err := s.Z.unpack(z, w.cfg.Topics); err != nil {
		return fmt.Errorf("%s snapshot: topics: %w", kindUnscheduledWorker, err)
	}
	w.restore(&s, z)
	// The next task's update brings the table again.
	w.table = nil
	return nil
}

// modelState is a coordinator's snapshot.
type modelState struct {
	// The job's sizes, which Restore checks.
	Workers int   `msgpack:"workers"`
	Words   int   `msgpack:"words"`
	Topics  int   `msgpack:"topics"`
	Tokens  int64 `msgpack:"tokens"`
	// The topic totals after the cut's round.
	NK codec.Int32s `msgpack:"nk"`
	// Blocks holds the rotation's blocks' counts as of their last gather;
	// Table, the baseline's table.
	Blocks []Sparse `msgpack:"blocks,omitempty"`
	Table  *Sparse  `msgpack:"table,omitempty"`
	// The priors as the workers have them from the next round on, and how
	// many times they were learned.
	Alpha   codec.Float64s `msgpack:"alpha"`
	Beta    float64        `msgpack:"beta"`
	Learned int            `msgpack:"learned"`
	// The reports: the last one's totals and log-likelihood, every
	// report, the last round pulled and the time from the first round to
	// its pull, the time spent on held-out perplexity.
	Last     Summary       `msgpack:"last"`
	LastLL   float64       `msgpack:"last_ll"`
	Trace    []Report      `msgpack:"trace"`
	Pulled   uint64        `msgpack:"pulled"`
	Elapsed  time.Duration `msgpack:"elapsed"`
	TestTime time.Duration `msgpack:"test_time"`
}

// state returns the snapshot of the state that both coordinators share.
func (m *model) state() modelState {
	return modelState{
		Workers: m.cfg.Workers, Words: m.w, Topics: m.k, Tokens: m.tokens,
		NK: m.nk, Alpha: m.priors.Alpha, Beta: m.priors.Beta, Learned: m.learned,
		Last: m.last, LastLL: m.lastLL, Trace: m.trace, Pulled: m.pulled,
		Elapsed: m.pulledAt.Sub(m.t0), TestTime: m.testTime,
	}
}

// check reports the first part of s that does not fit the job.
func (m *model) check(s *modelState) error {
	switch {
	case m.nk == nil:
		return errors.New("restore before Start")
	case s.Workers != m.cfg.Workers || s.Words != m.w || s.Topics != m.k || s.Tokens != m.tokens:
		return fmt.Errorf("the snapshot is of a job of %d workers, %d words, %d topics, %d tokens; this one has %d, %d, %d, %d",
			s.Workers, s.Words, s.Topics, s.Tokens, m.cfg.Workers, m.w, m.k, m.tokens)
	case len(s.NK) != m.k:
		return fmt.Errorf("%d topic totals, want %d", len(s.NK), m.k)
	case s.Learned < 0 || s.Elapsed < 0 || s.TestTime < 0:
		return errors.New("negative counters")
	}
	var n int64
	for t, c := range s.NK {
		if c < 0 {
			return fmt.Errorf("n_k[%d] = %d < 0", t, c)
		}
		n += int64(c)
	}
	if n != m.tokens {
		return fmt.Errorf("the topic totals count %d tokens, want N = %d", n, m.tokens)
	}
	p := Priors{Alpha: s.Alpha, Beta: s.Beta}
	if err := p.check(m.k); err != nil {
		return fmt.Errorf("priors: %w", err)
	}
	return nil
}

// restore sets the state that both coordinators share from s (checked).
func (m *model) restore(s *modelState) {
	copy(m.nk, s.NK)
	m.priors = Priors{Alpha: s.Alpha, Beta: s.Beta}
	m.learned = s.Learned
	m.last, m.lastLL, m.trace = s.Last, s.LastLL, s.Trace
	m.pulledAt = time.Now()
	m.pulled, m.t0 = s.Pulled, m.pulledAt.Add(-s.Elapsed)
	m.testTime = s.TestTime
}

// Snapshot implements schmp.Snapshotter.
func (c *Coordinator) Snapshot() ([]byte, error) {
	s := c.state()
	s.Blocks = c.blocks
	return seal(kindCoordinator, &s)
}

// Restore implements schmp.Snapshotter, on a coordinator just started.
func (c *Coordinator) Restore(b []byte) error {
	var s modelState
	if err := unseal(b, kindCoordinator, &s); err != nil {
		return err
	}
	if err := c.check(&s); err != nil {
		return fmt.Errorf("%s snapshot: %w", kindCoordinator, err)
	}
	if len(s.Blocks) != len(c.words) || s.Table != nil {
		return fmt.Errorf("%s snapshot: %d blocks, want %d", kindCoordinator, len(s.Blocks), len(c.words))
	}
	for b := range s.Blocks {
		if err := s.Blocks[b].check(len(c.words[b]), c.k, false); err != nil {
			return fmt.Errorf("%s snapshot: block %d: %w", kindCoordinator, b, err)
		}
	}
	c.restore(&s)
	c.blocks = s.Blocks
	return nil
}

// Snapshot implements schmp.Snapshotter.
func (c *UnscheduledCoordinator) Snapshot() ([]byte, error) {
	s := c.state()
	s.Table = c.table
	return seal(kindUnscheduledCoordinator, &s)
}

// Restore implements schmp.Snapshotter, on a coordinator just started.
func (c *UnscheduledCoordinator) Restore(b []byte) error {
	var s modelState
	if err := unseal(b, kindUnscheduledCoordinator, &s); err != nil {
		return err
	}
	if err := c.check(&s); err != nil {
		return fmt.Errorf("%s snapshot: %w", kindUnscheduledCoordinator, err)
	}
	if s.Table == nil || s.Blocks != nil {
		return fmt.Errorf("%s snapshot: no table", kindUnscheduledCoordinator)
	}
	if err := s.Table.check(c.w, c.k, false); err != nil {
		return fmt.Errorf("%s snapshot: table: %w", kindUnscheduledCoordinator, err)
	}
	c.restore(&s)
	c.table = s.Table
	return nil
}

// schedulerState is the scheduler's snapshot: its settings alone.
type schedulerState struct {
	Rotation []byte `msgpack:"rotation"`
	Rounds   int    `msgpack:"rounds"`
	Tokens   int64  `msgpack:"tokens"`
}

// Snapshot implements schmp.Snapshotter: the scheduler has no state beyond
// its settings, which Restore checks.
func (s *Scheduler) Snapshot() ([]byte, error) {
	rot, err := s.rot.Snapshot()
	if err != nil {
		return nil, err
	}
	return seal(kindScheduler, &schedulerState{Rotation: rot, Rounds: s.rounds, Tokens: s.tokens})
}

// Restore implements schmp.Snapshotter.
func (s *Scheduler) Restore(b []byte) error {
	var st schedulerState
	if err := unseal(b, kindScheduler, &st); err != nil {
		return err
	}
	if st.Rounds != s.rounds || st.Tokens != s.tokens {
		return fmt.Errorf("%s snapshot: of %d rounds an iteration and %d tokens, the job has %d and %d", kindScheduler, st.Rounds, st.Tokens, s.rounds, s.tokens)
	}
	if err := s.rot.Restore(st.Rotation); err != nil {
		return fmt.Errorf("%s snapshot: %w", kindScheduler, err)
	}
	return nil
}

// The roles are Snapshotters.
var (
	_ schmp.Snapshotter = (*Worker)(nil)
	_ schmp.Snapshotter = (*UnscheduledWorker)(nil)
	_ schmp.Snapshotter = (*Coordinator)(nil)
	_ schmp.Snapshotter = (*UnscheduledCoordinator)(nil)
	_ schmp.Snapshotter = (*Scheduler)(nil)
)
