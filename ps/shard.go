package ps

import (
	"fmt"
	"maps"
	"slices"
)

// Shard is the state of one server: its rows of every table, how many
// clocks of each worker it has applied, the reads that wait for a later
// stamp and, for eager tables, which rows each worker reads. Step takes
// one message and returns what to send; it does no I/O.
type Shard struct {
	cfg   Config
	index int
	vals  [][]float64 // per dense table: the local rows, row index·Servers+i at i
	// nz holds each sparse table's local rows that have nonzero values.
	nz []map[int32]SparseRow
	// clocks[w] is how many of worker w's clocks are applied; held[w]
	// keeps the flushes that came before the ones they follow.
	clocks []int
	held   []map[int]*Flush
	stamp  int // min(clocks)
	// waiting are reads of a stamp not reached yet.
	waiting []Read
	// readers[t][w] are the local rows of table t that worker w reads,
	// for eager tables; in[t][w] holds them.
	readers [][][]int32
	in      [][]map[int32]bool
	// cut is the stamp of the next cut (0: none): no flush of its clock or
	// later is applied before every flush before it is.
	cut int
}

// Cut is a server's tables as of a stamp: every worker's increments of the
// clocks before Stamp, and none of later ones.
type Cut struct {
	Server int `msgpack:"server"`
	Stamp  int `msgpack:"stamp"`
	// Tables holds each dense table's local rows in order, nil for a
	// sparse table.
	Tables [][]float64 `msgpack:"tables"`
	// Sparse holds each sparse table's local rows that have nonzero
	// values, in order, and nothing for a dense table; it is nil when no
	// table is sparse.
	Sparse []Nonzeros `msgpack:"sparse,omitempty"`
}

// Out is a message for a server to send.
type Out struct {
	// Worker is the receiver, -1 for an observer, which gets the message
	// at ReplyTo.
	Worker  int
	ReplyTo string
	Msg     ToWorker
	// Cut, when set, is the server's cut instead of a message: the node
	// stores it.
	Cut *Cut
}

// NewShard returns server index's shard of cfg's tables at their start.
func NewShard(cfg Config, index int) (*Shard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if index < 0 || index >= cfg.Servers {
		return nil, fmt.Errorf("ps: server %d of %d", index, cfg.Servers)
	}
	s := &Shard{
		cfg:     cfg,
		index:   index,
		vals:    make([][]float64, len(cfg.Tables)),
		nz:      make([]map[int32]SparseRow, len(cfg.Tables)),
		clocks:  make([]int, cfg.Workers),
		held:    make([]map[int]*Flush, cfg.Workers),
		readers: make([][][]int32, len(cfg.Tables)),
		in:      make([][]map[int32]bool, len(cfg.Tables)),
	}
	for t, tab := range cfg.Tables {
		if tab.Sparse {
			s.nz[t] = make(map[int32]SparseRow)
		} else {
			n := cfg.localRows(t, index)
			s.vals[t] = make([]float64, n*tab.Width)
			for i := range n {
				tab.Init.Fill(i*cfg.Servers+index, s.vals[t][i*tab.Width:(i+1)*tab.Width])
			}
		}
		if tab.eager() {
			s.readers[t] = make([][]int32, cfg.Workers)
			s.in[t] = make([]map[int32]bool, cfg.Workers)
		}
	}
	s.cut = cfg.Every
	return s, nil
}

// Restore sets the shard to cut, taken by the same server of the same
// tables: the job goes on from the cut's stamp, every worker at that clock.
func (s *Shard) Restore(cut Cut) error {
	if cut.Server != s.index || len(cut.Tables) != len(s.vals) || (cut.Sparse != nil && len(cut.Sparse) != len(s.vals)) || cut.Stamp < 0 {
		return fmt.Errorf("ps: server %d: a cut of server %d at stamp %d with %d tables", s.index, cut.Server, cut.Stamp, len(cut.Tables))
	}
	for t, v := range cut.Tables {
		if len(v) != len(s.vals[t]) {
			return fmt.Errorf("ps: server %d: a cut with %d values of table %s, want %d", s.index, len(v), s.cfg.Tables[t].Name, len(s.vals[t]))
		}
		if !s.cfg.Tables[t].Sparse {
			continue
		}
		if cut.Sparse == nil {
			return fmt.Errorf("ps: server %d: a cut without the rows of sparse table %s", s.index, s.cfg.Tables[t].Name)
		}
		nz := cut.Sparse[t]
		if err := s.checkRows(t, nz.Rows); err != nil {
			return fmt.Errorf("ps: server %d: a cut with %w", s.index, err)
		}
		if !increasing(nz.Rows) {
			return fmt.Errorf("ps: server %d: a cut of table %s whose rows do not increase", s.index, s.cfg.Tables[t].Name)
		}
		if err := checkValues(s.cfg.Tables[t], nz.Rows, nz.Ends, nz.Cols, nz.Vals); err != nil {
			return fmt.Errorf("ps: server %d: a cut with %w", s.index, err)
		}
	}
	for t, v := range cut.Tables {
		if !s.cfg.Tables[t].Sparse {
			copy(s.vals[t], v)
			continue
		}
		s.nz[t] = make(map[int32]SparseRow)
		nz := cut.Sparse[t]
		for k := range nz.Rows {
			row, vals := nz.At(k)
			var r SparseRow
			r.set(vals.Cols, vals.Vals)
			if len(r.Cols) > 0 {
				s.nz[t][int32(row)] = r
			}
		}
	}
	for w := range s.clocks {
		s.clocks[w] = cut.Stamp
	}
	s.stamp = cut.Stamp
	if s.cfg.Every > 0 {
		s.cut = (cut.Stamp/s.cfg.Every + 1) * s.cfg.Every
	}
	return nil
}

// Stamp returns the server's clock: every worker's clocks before it are
// applied.
func (s *Shard) Stamp() int { return s.stamp }

// Clocks returns how many of each worker's clocks the server has applied.
func (s *Shard) Clocks() []int { return slices.Clone(s.clocks) }

// Row returns the server's values of row, which it must hold: its own for
// a dense table, a new dense copy for a sparse one.
func (s *Shard) Row(t, row int) []float64 {
	w := s.cfg.Tables[t].Width
	if s.cfg.Tables[t].Sparse {
		v := make([]float64, w)
		s.nz[t][int32(row)].addTo(v)
		return v
	}
	i := row / s.cfg.Servers
	return s.vals[t][i*w : (i+1)*w]
}

// Nonzeros returns the server's nonzero values of row, which it must
// hold: its own for a sparse table, a new copy for a dense one.
func (s *Shard) Nonzeros(t, row int) SparseRow {
	if s.cfg.Tables[t].Sparse {
		return s.nz[t][int32(row)]
	}
	return nonzeros(s.Row(t, row))
}

// sparseRows returns the server's values of rows of sparse table t.
func (s *Shard) sparseRows(t int, rows []int32) Nonzeros {
	var nz Nonzeros
	for _, r := range rows {
		nz.Append(int(r), s.nz[t][r])
	}
	return nz
}

// heldRows returns the rows of table t that the server holds: every local
// row of a dense table, and those with nonzero values of a sparse one, in
// order.
func (s *Shard) heldRows(t int) []int32 {
	if s.cfg.Tables[t].Sparse {
		return slices.Sorted(maps.Keys(s.nz[t]))
	}
	rows := make([]int32, s.cfg.localRows(t, s.index))
	for i := range rows {
		rows[i] = int32(i*s.cfg.Servers + s.index)
	}
	return rows
}

// Step takes a message and returns the messages to send. A message that is
// not valid changes nothing and is reported as an error.
func (s *Shard) Step(m ToServer) ([]Out, error) {
	switch {
	case m.Flush != nil && m.Read == nil && m.Hello == nil && m.Stop == nil && m.Status == nil:
		return s.flush(m.Flush)
	case m.Read != nil && m.Flush == nil && m.Hello == nil && m.Stop == nil && m.Status == nil:
		return s.read(*m.Read)
	}
	return nil, fmt.Errorf("ps: server %d: a message that is not one flush or one read", s.index)
}

func (s *Shard) flush(f *Flush) ([]Out, error) {
	if err := s.checkFlush(f); err != nil {
		return nil, err
	}
	w := f.Worker
	if f.Clock < s.clocks[w] {
		return []Out{s.ack(w)}, nil // sent again: applied once already
	}
	if s.held[w] == nil {
		s.held[w] = make(map[int]*Flush)
	}
	s.held[w][f.Clock] = f
	var out []Out
	for moved := []int{w}; len(moved) > 0; {
		for _, w := range moved {
			out = s.applyHeld(out, w)
		}
		moved = moved[:0]
		m := slices.Min(s.clocks)
		if m <= s.stamp {
			break
		}
		s.stamp = m
		out = s.advance(out)
		if s.stamp == s.cut {
			out = append(out, Out{Worker: -1, Cut: s.take()})
			s.cut += s.cfg.Every
			for w := range s.held {
				if len(s.held[w]) > 0 {
					moved = append(moved, w)
				}
			}
		}
	}
	return out, nil
}

// applyHeld applies worker w's held flushes that come next, up to the next
// cut, and confirms them.
func (s *Shard) applyHeld(out []Out, w int) []Out {
	n := 0
	for {
		c := s.clocks[w]
		f := s.held[w][c]
		if f == nil || (s.cut > 0 && c >= s.cut && s.stamp < s.cut) {
			break
		}
		delete(s.held[w], c)
		s.apply(f)
		s.clocks[w]++
		n++
	}
	if n == 0 {
		return out
	}
	out = append(out, s.ack(w))
	for t, tab := range s.cfg.Tables {
		if tab.Model == Async {
			out = s.push(out, t, w)
		}
	}
	return out
}

// take copies the tables.
func (s *Shard) take() *Cut {
	cut := &Cut{Server: s.index, Stamp: s.stamp, Tables: make([][]float64, len(s.vals))}
	for t, tab := range s.cfg.Tables {
		if !tab.Sparse {
			cut.Tables[t] = slices.Clone(s.vals[t])
			continue
		}
		if cut.Sparse == nil {
			cut.Sparse = make([]Nonzeros, len(s.vals))
		}
		cut.Sparse[t] = s.sparseRows(t, s.heldRows(t))
	}
	return cut
}

func (s *Shard) checkFlush(f *Flush) error {
	if f.Worker < 0 || f.Worker >= s.cfg.Workers {
		return fmt.Errorf("ps: server %d: a flush of worker %d of %d", s.index, f.Worker, s.cfg.Workers)
	}
	if f.Clock < 0 || f.Clock > s.clocks[f.Worker]+MaxAhead {
		return fmt.Errorf("ps: server %d: worker %d's clock %d, %d applied (at most %d ahead)", s.index, f.Worker, f.Clock, s.clocks[f.Worker], MaxAhead)
	}
	for _, d := range f.Deltas {
		if err := s.checkRows(d.Table, d.Rows); err != nil {
			return fmt.Errorf("ps: server %d: worker %d's clock %d: %w", s.index, f.Worker, f.Clock, err)
		}
		if err := checkValues(s.cfg.Tables[d.Table], d.Rows, d.Ends, d.Cols, d.Values); err != nil {
			return fmt.Errorf("ps: server %d: worker %d's clock %d: %w", s.index, f.Worker, f.Clock, err)
		}
	}
	return nil
}

// checkRows reports a table or a row that is not this server's.
func (s *Shard) checkRows(t int, rows []int32) error {
	if t < 0 || t >= len(s.cfg.Tables) {
		return fmt.Errorf("table %d of %d", t, len(s.cfg.Tables))
	}
	n := s.cfg.Tables[t].Rows
	for _, r := range rows {
		if r < 0 || int(r) >= n || s.cfg.Server(int(r)) != s.index {
			return fmt.Errorf("row %d of table %d (%d rows) is not server %d's", r, t, n, s.index)
		}
	}
	return nil
}

func (s *Shard) apply(f *Flush) {
	for _, d := range f.Deltas {
		if s.cfg.Tables[d.Table].Sparse {
			nz, rows := d.nonzeros(), s.nz[d.Table]
			for k := range nz.Rows {
				r, inc := nz.At(k)
				v := rows[int32(r)]
				v.add(inc.Cols, inc.Vals)
				if len(v.Cols) == 0 {
					delete(rows, int32(r))
				} else {
					rows[int32(r)] = v
				}
			}
			continue
		}
		w := s.cfg.Tables[d.Table].Width
		vals := s.vals[d.Table]
		for k, r := range d.Rows {
			i := int(r) / s.cfg.Servers
			row := vals[i*w : (i+1)*w]
			for j, v := range d.Values[k*w : (k+1)*w] {
				row[j] += v
			}
		}
	}
}

func (s *Shard) ack(w int) Out {
	return Out{Worker: w, Msg: ToWorker{Ack: &Ack{Server: s.index, Clock: s.clocks[w]}}}
}

// advance answers the reads the new stamp allows and pushes the eager
// tables' rows.
func (s *Shard) advance(out []Out) []Out {
	kept := s.waiting[:0]
	for _, r := range s.waiting {
		if r.Stamp <= s.stamp {
			out = append(out, s.answer(r))
		} else {
			kept = append(kept, r)
		}
	}
	clear(s.waiting[len(kept):])
	s.waiting = kept
	for t, tab := range s.cfg.Tables {
		if tab.Model == ESSP {
			for w := range s.cfg.Workers {
				out = s.push(out, t, w)
			}
		}
	}
	return out
}

// push sends worker w the rows of table t it reads.
func (s *Shard) push(out []Out, t, w int) []Out {
	if len(s.readers[t][w]) == 0 {
		return out
	}
	return append(out, Out{Worker: w, Msg: ToWorker{Rows: s.rows(t, s.readers[t][w], w, 0)}})
}

func (s *Shard) read(r Read) ([]Out, error) {
	if r.Worker < -1 || r.Worker >= s.cfg.Workers {
		return nil, fmt.Errorf("ps: server %d: a read of worker %d of %d", s.index, r.Worker, s.cfg.Workers)
	}
	if err := s.checkRows(r.Table, r.Rows); err != nil {
		return nil, fmt.Errorf("ps: server %d: worker %d's read: %w", s.index, r.Worker, err)
	}
	if r.Worker < 0 && r.ReplyTo == "" {
		return nil, fmt.Errorf("ps: server %d: an observer's read with nowhere to answer", s.index)
	}
	if r.Stamp < 0 || r.Stamp > s.stamp+MaxAhead {
		return nil, fmt.Errorf("ps: server %d: a read at stamp %d, the server's is %d (at most %d ahead)", s.index, r.Stamp, s.stamp, MaxAhead)
	}
	if r.Worker >= 0 && s.cfg.Tables[r.Table].eager() {
		in := s.in[r.Table]
		if in[r.Worker] == nil {
			in[r.Worker] = make(map[int32]bool)
		}
		for _, row := range r.Rows {
			if !in[r.Worker][row] {
				in[r.Worker][row] = true
				s.readers[r.Table][r.Worker] = append(s.readers[r.Table][r.Worker], row)
			}
		}
	}
	if r.Stamp <= s.stamp {
		return []Out{s.answer(r)}, nil
	}
	if len(s.waiting) >= (s.cfg.Workers+1)*len(s.cfg.Tables)*MaxAhead {
		return nil, fmt.Errorf("ps: server %d: %d reads waiting already", s.index, len(s.waiting))
	}
	s.waiting = append(s.waiting, r)
	return nil, nil
}

func (s *Shard) answer(r Read) Out {
	rows := r.Rows
	if len(rows) == 0 {
		rows = s.heldRows(r.Table)
	}
	return Out{Worker: r.Worker, ReplyTo: r.ReplyTo, Msg: ToWorker{Rows: s.rows(r.Table, rows, r.Worker, r.Seq)}}
}

// rows copies rows of table t for worker w (-1: an observer).
func (s *Shard) rows(t int, rows []int32, w int, seq uint64) *Rows {
	own := -1
	if w >= 0 {
		own = s.clocks[w]
	}
	m := &Rows{Server: s.index, Table: t, Stamp: s.stamp, Own: own, Seq: seq}
	if s.cfg.Tables[t].Sparse {
		nz := s.sparseRows(t, rows)
		m.Rows, m.Ends, m.Cols, m.Values = nz.Rows, nz.Ends, nz.Cols, nz.Vals
		return m
	}
	width := s.cfg.Tables[t].Width
	vals := make([]float64, 0, len(rows)*width)
	for _, r := range rows {
		vals = append(vals, s.Row(t, int(r))...)
	}
	m.Rows, m.Values = slices.Clone(rows), vals
	return m
}
