package ps

import (
	"fmt"
	"math"
)

// Cache is the state of one worker's view of the tables: the rows it has
// read with their stamps, its increments of the current clock, and the
// flushes that no server has confirmed yet. Get, Inc and Clock are the
// worker's calls; Receive takes what the servers send. It does no I/O: a
// Get that must wait returns the reads to send, and the caller feeds the
// answers to Receive and asks again.
type Cache struct {
	cfg    Config
	worker int
	clock  int
	tables []cacheTable
	// logs[s] are the flushes sent to server s that it has not confirmed,
	// in clock order; acked[s] is how many clocks it has confirmed.
	logs  [][]Flush
	acked []int
	// reads[s][t] is the read of table t that server s has not answered.
	reads [][]*Read
	seq   uint64
	gen   uint32
	stats Stats
}

// cacheTable is a table's rows in the cache, each in a slot: row r in
// slot r for a dense table; for a sparse one, the rows the worker read or
// added to, in the order it first did, and no slot for the others.
type cacheTable struct {
	width, bound int
	sparse       bool
	// view is what Get returns: the server's values, plus this worker's
	// increments that they do not include yet; views for a sparse table,
	// by slot, empty while the row is not cached.
	view  []float64
	views []SparseRow
	// stamp and own are those of the slot's values (-1: not cached).
	stamp, own []int32
	// delta (deltas for a sparse table) and dirty are the increments of
	// the current clock, and dirt the slots that have some.
	delta  []float64
	deltas []SparseRow
	dirty  []bool
	dirt   []int32
	// asked[i] is the seq of the read that asked for slot i's row; mark[i]
	// a generation, for Receive.
	asked []uint64
	mark  []uint32
	// slots and rows map a sparse table's rows to their slots and back.
	slots map[int32]int32
	rows  []int32
}

// slot returns row's slot, and false if it has none.
func (ct *cacheTable) slot(row int32) (int32, bool) {
	if !ct.sparse {
		return row, true
	}
	i, ok := ct.slots[row]
	return i, ok
}

// ensure returns row's slot, making one if it has none.
func (ct *cacheTable) ensure(row int32) int32 {
	if i, ok := ct.slot(row); ok {
		return i
	}
	i := int32(len(ct.rows))
	ct.slots[row] = i
	ct.rows = append(ct.rows, row)
	ct.views = append(ct.views, SparseRow{})
	ct.deltas = append(ct.deltas, SparseRow{})
	ct.stamp = append(ct.stamp, -1)
	ct.own = append(ct.own, 0)
	ct.dirty = append(ct.dirty, false)
	ct.asked = append(ct.asked, 0)
	ct.mark = append(ct.mark, 0)
	return i
}

// row returns slot i's row.
func (ct *cacheTable) row(i int32) int32 {
	if !ct.sparse {
		return i
	}
	return ct.rows[i]
}

// touch marks slot i as having increments of the current clock.
func (ct *cacheTable) touch(i int32) {
	if !ct.dirty[i] {
		ct.dirty[i] = true
		ct.dirt = append(ct.dirt, i)
	}
}

// Stats are the staleness of a worker's reads, in clocks: a read at clock
// c of a row stamped m is c-m clocks stale (0 under BSP).
type Stats struct {
	Reads      int64
	Sum, SumSq float64
	Max        int
}

// Mean returns the mean staleness.
func (s Stats) Mean() float64 {
	if s.Reads == 0 {
		return 0
	}
	return s.Sum / float64(s.Reads)
}

// Var returns the variance of the staleness.
func (s Stats) Var() float64 {
	if s.Reads == 0 {
		return 0
	}
	m := s.Mean()
	return max(0, s.SumSq/float64(s.Reads)-m*m)
}

// Add returns the stats of both sets of reads.
func (s Stats) Add(o Stats) Stats {
	return Stats{Reads: s.Reads + o.Reads, Sum: s.Sum + o.Sum, SumSq: s.SumSq + o.SumSq, Max: max(s.Max, o.Max)}
}

// NewCache returns worker's empty cache of cfg's tables.
func NewCache(cfg Config, worker int) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if worker < 0 || worker >= cfg.Workers {
		return nil, fmt.Errorf("ps: worker %d of %d", worker, cfg.Workers)
	}
	c := &Cache{
		cfg:    cfg,
		worker: worker,
		tables: make([]cacheTable, len(cfg.Tables)),
		logs:   make([][]Flush, cfg.Servers),
		acked:  make([]int, cfg.Servers),
		reads:  make([][]*Read, cfg.Servers),
	}
	for s := range c.reads {
		c.reads[s] = make([]*Read, len(cfg.Tables))
	}
	for t, tab := range cfg.Tables {
		ct := &c.tables[t]
		ct.width, ct.bound, ct.sparse = tab.Width, tab.bound(), tab.Sparse
		if tab.Sparse {
			ct.slots = make(map[int32]int32)
			continue
		}
		ct.view = make([]float64, tab.Rows*tab.Width)
		ct.delta = make([]float64, tab.Rows*tab.Width)
		ct.stamp = make([]int32, tab.Rows)
		ct.own = make([]int32, tab.Rows)
		ct.dirty = make([]bool, tab.Rows)
		ct.asked = make([]uint64, tab.Rows)
		ct.mark = make([]uint32, tab.Rows)
		for r := range ct.stamp {
			ct.stamp[r] = -1
		}
	}
	return c, nil
}

// Resume starts a new cache at clock, the stamp of the cut the servers
// restored: the worker's first read waits for the servers.
func (c *Cache) Resume(clock int) error {
	if c.clock != 0 || clock < 0 || !c.Confirmed() {
		return fmt.Errorf("ps: worker %d: resuming at clock %d a cache at clock %d", c.worker, clock, c.clock)
	}
	c.clock = clock
	for s := range c.acked {
		c.acked[s] = clock
	}
	return nil
}

// Clock returns how many clocks the worker has ended.
func (c *Cache) Clock() int { return c.clock }

// Stats returns the staleness of the reads so far.
func (c *Cache) Stats() Stats { return c.stats }

func (c *Cache) check(t, row int) error {
	if t < 0 || t >= len(c.tables) {
		return fmt.Errorf("ps: table %d of %d", t, len(c.tables))
	}
	if n := c.cfg.Tables[t].Rows; row < 0 || row >= n {
		return fmt.Errorf("ps: row %d of table %s (%d rows)", row, c.cfg.Tables[t].Name, n)
	}
	return nil
}

// Send is a message for a worker to send to a server.
type Send struct {
	Server int
	Msg    ToServer
}

// Get returns row of table t as the worker may read it now, or, when its
// cached copy is missing or too stale, nil and the reads to send (none if
// they were sent already). For a dense table the slice returned is the
// cache's own: the caller reads it and changes it only through Inc. For a
// sparse table it is a new dense copy of the row, Width values: GetSparse
// reads the row without one.
func (c *Cache) Get(t, row int) ([]float64, []Send, error) {
	i, sends, err := c.fresh(t, row)
	if i < 0 {
		return nil, sends, err
	}
	ct := &c.tables[t]
	if ct.sparse {
		v := make([]float64, ct.width)
		ct.views[i].addTo(v)
		return v, nil, nil
	}
	return ct.view[row*ct.width : (row+1)*ct.width], nil, nil
}

// GetSparse is Get by the row's nonzero values: it returns them, and true,
// or, when the cached copy is missing or too stale, false and the reads to
// send. For a sparse table the row returned is the cache's own, valid
// until the worker's next call to the cache; for a dense table it is a new
// copy.
func (c *Cache) GetSparse(t, row int) (SparseRow, bool, []Send, error) {
	i, sends, err := c.fresh(t, row)
	if i < 0 {
		return SparseRow{}, false, sends, err
	}
	ct := &c.tables[t]
	if ct.sparse {
		return ct.views[i], true, nil, nil
	}
	return nonzeros(ct.view[row*ct.width : (row+1)*ct.width]), true, nil, nil
}

// fresh returns the slot of row of table t if the worker may read it now;
// otherwise -1 and the reads to send.
func (c *Cache) fresh(t, row int) (int32, []Send, error) {
	if err := c.check(t, row); err != nil {
		return -1, nil, err
	}
	ct := &c.tables[t]
	need := 0
	if ct.bound >= 0 {
		need = max(0, c.clock-ct.bound)
	}
	i := ct.ensure(int32(row))
	if st := int(ct.stamp[i]); st >= 0 && st >= need {
		c.stats.Reads++
		d := c.clock - st
		c.stats.Sum += float64(d)
		c.stats.SumSq += float64(d) * float64(d)
		c.stats.Max = max(c.stats.Max, d)
		return i, nil, nil
	}
	s := c.cfg.Server(row)
	if r := c.reads[s][t]; r != nil && r.Stamp >= need && ct.asked[i] == r.Seq {
		return -1, nil, nil
	}
	// Ask for every cached row of the server that is as stale, so that a
	// clock costs one read per server, not one per row.
	c.seq++
	r := &Read{Worker: c.worker, Table: t, Stamp: need, Seq: c.seq}
	ask := func(x int32) {
		if x == i || (ct.stamp[x] >= 0 && int(ct.stamp[x]) < need) {
			r.Rows = append(r.Rows, ct.row(x))
			ct.asked[x] = r.Seq
		}
	}
	if ct.sparse {
		for x, xr := range ct.rows {
			if c.cfg.Server(int(xr)) == s {
				ask(int32(x))
			}
		}
	} else {
		for x := s; x < len(ct.stamp); x += c.cfg.Servers {
			ask(int32(x))
		}
	}
	c.reads[s][t] = r
	return -1, []Send{{Server: s, Msg: ToServer{Read: r}}}, nil
}

// Inc adds delta, Width values, to row of table t: the worker's reads see
// it at once, the other workers' once it is flushed. For a sparse table
// only its nonzero values are kept, and each must be finite.
func (c *Cache) Inc(t, row int, delta []float64) error {
	if err := c.check(t, row); err != nil {
		return err
	}
	ct := &c.tables[t]
	if len(delta) != ct.width {
		return fmt.Errorf("ps: increment of %d values to table %s of width %d", len(delta), c.cfg.Tables[t].Name, ct.width)
	}
	if ct.sparse {
		nz := nonzeros(delta)
		if err := c.checkInc(t, row, nz.Cols, nz.Vals); err != nil {
			return err
		}
		c.incSparse(ct, row, nz.Cols, nz.Vals)
		return nil
	}
	o := row * ct.width
	view, acc := ct.view[o:o+ct.width], ct.delta[o:o+ct.width]
	for i, d := range delta {
		view[i] += d
		acc[i] += d
	}
	ct.touch(int32(row))
	return nil
}

// IncSparse adds vals[i] to column cols[i] of row of table t, for every i,
// as Inc does: the columns may come in any order, and a column given twice
// gets the sum of its values. Every column must be within the table's
// width and every value finite; if one is not, nothing is added.
func (c *Cache) IncSparse(t, row int, cols []int32, vals []float64) error {
	if err := c.check(t, row); err != nil {
		return err
	}
	if err := c.checkInc(t, row, cols, vals); err != nil {
		return err
	}
	ct := &c.tables[t]
	if ct.sparse {
		cols, vals = sorted(cols, vals)
		c.incSparse(ct, row, cols, vals)
		return nil
	}
	o := row * ct.width
	for i, col := range cols {
		ct.view[o+int(col)] += vals[i]
		ct.delta[o+int(col)] += vals[i]
	}
	ct.touch(int32(row))
	return nil
}

// checkInc reports a column or a value of an increment of IncSparse that
// is not valid.
func (c *Cache) checkInc(t, row int, cols []int32, vals []float64) error {
	tab := c.cfg.Tables[t]
	if len(cols) != len(vals) {
		return fmt.Errorf("ps: increment of %d columns with %d values to table %s", len(cols), len(vals), tab.Name)
	}
	for i, col := range cols {
		if col < 0 || int(col) >= tab.Width {
			return fmt.Errorf("ps: increment of column %d of table %s (width %d)", col, tab.Name, tab.Width)
		}
		if v := vals[i]; math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("ps: increment %v of table %s row %d column %d", v, tab.Name, row, col)
		}
	}
	return nil
}

// incSparse adds vals at cols, which increase, to row of sparse table ct.
func (c *Cache) incSparse(ct *cacheTable, row int, cols []int32, vals []float64) {
	i := ct.ensure(int32(row))
	if ct.stamp[i] >= 0 {
		ct.views[i].add(cols, vals)
	}
	ct.deltas[i].add(cols, vals)
	ct.touch(i)
}

// Behind reports whether some server has not confirmed MaxAhead of the
// worker's clocks: the worker must wait for its confirmations before it
// ends another clock.
func (c *Cache) Behind() bool {
	for _, l := range c.logs {
		if len(l) >= MaxAhead {
			return true
		}
	}
	return false
}

// Confirmed reports whether every server has confirmed every clock the
// worker ended: a worker that leaves waits for it.
func (c *Cache) Confirmed() bool {
	for _, l := range c.logs {
		if len(l) > 0 {
			return false
		}
	}
	return true
}

// Tick ends the worker's clock: it returns the flushes of its increments,
// one for every server, empty or not.
func (c *Cache) Tick() ([]Send, error) {
	flushes := make([]Flush, c.cfg.Servers)
	for s := range flushes {
		flushes[s] = Flush{Worker: c.worker, Clock: c.clock}
	}
	for t := range c.tables {
		ct := &c.tables[t]
		if len(ct.dirt) == 0 {
			continue
		}
		deltas := make([]Delta, c.cfg.Servers)
		for _, i := range ct.dirt {
			r := ct.row(i)
			var acc []float64
			if ct.sparse {
				acc = ct.deltas[i].Vals
			} else {
				acc = ct.delta[int(r)*ct.width : (int(r)+1)*ct.width]
			}
			for _, v := range acc {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("ps: worker %d's clock %d: increment %v of table %s row %d", c.worker, c.clock, v, c.cfg.Tables[t].Name, r)
				}
			}
			if len(acc) == 0 {
				continue // a sparse row's increments that came to 0
			}
			d := &deltas[c.cfg.Server(int(r))]
			d.Rows = append(d.Rows, r)
			d.Values = append(d.Values, acc...)
			if ct.sparse {
				d.Cols = append(d.Cols, ct.deltas[i].Cols...)
				if len(d.Cols) > math.MaxInt32 {
					return nil, fmt.Errorf("ps: worker %d's clock %d: more than %d increments of table %s for server %d", c.worker, c.clock, math.MaxInt32, c.cfg.Tables[t].Name, c.cfg.Server(int(r)))
				}
				d.Ends = append(d.Ends, int32(len(d.Cols)))
			}
		}
		for _, i := range ct.dirt {
			if ct.sparse {
				ct.deltas[i] = SparseRow{Cols: ct.deltas[i].Cols[:0], Vals: ct.deltas[i].Vals[:0]}
			} else {
				clear(ct.delta[int(i)*ct.width : (int(i)+1)*ct.width])
			}
			ct.dirty[i] = false
		}
		ct.dirt = ct.dirt[:0]
		for s, d := range deltas {
			if len(d.Rows) > 0 {
				d.Table = t
				flushes[s].Deltas = append(flushes[s].Deltas, d)
			}
		}
	}
	out := make([]Send, c.cfg.Servers)
	for s := range flushes {
		c.logs[s] = append(c.logs[s], flushes[s])
		out[s] = Send{Server: s, Msg: ToServer{Flush: &flushes[s]}}
	}
	c.clock++
	return out, nil
}

// Unanswered returns what the servers have not confirmed or answered: the
// flushes and reads to send again after a while without news.
func (c *Cache) Unanswered() []Send {
	var out []Send
	for s := range c.logs {
		for i := range c.logs[s] {
			out = append(out, Send{Server: s, Msg: ToServer{Flush: &c.logs[s][i]}})
		}
		for _, r := range c.reads[s] {
			if r != nil {
				out = append(out, Send{Server: s, Msg: ToServer{Read: r}})
			}
		}
	}
	return out
}

// Receive takes a message from a server. A message that is not valid
// changes nothing and is reported as an error; one that is older than what
// the cache holds is ignored.
func (c *Cache) Receive(m ToWorker) error {
	switch {
	case m.Ack != nil && m.Rows == nil:
		a := m.Ack
		if a.Server < 0 || a.Server >= c.cfg.Servers || a.Clock < 0 || a.Clock > c.clock {
			return fmt.Errorf("ps: worker %d at clock %d: an ack of server %d for clock %d", c.worker, c.clock, a.Server, a.Clock)
		}
		c.confirm(a.Server, a.Clock)
		return nil
	case m.Rows != nil && m.Ack == nil:
		return c.rows(m.Rows)
	}
	return fmt.Errorf("ps: worker %d: a message with neither or both of rows and an ack", c.worker)
}

// confirm drops the flushes that server s has applied.
func (c *Cache) confirm(s, clock int) {
	if clock <= c.acked[s] {
		return
	}
	c.acked[s] = clock
	l := c.logs[s]
	n := 0
	for n < len(l) && l[n].Clock < clock {
		n++
	}
	clear(l[:n])
	c.logs[s] = l[n:]
}

func (c *Cache) rows(m *Rows) error {
	if err := m.Check(c.cfg); err != nil {
		return fmt.Errorf("ps: worker %d: %w", c.worker, err)
	}
	s, t := m.Server, m.Table
	ct := &c.tables[t]
	if m.Own < 0 || m.Own > c.clock || m.Stamp < 0 || m.Stamp > m.Own {
		return fmt.Errorf("ps: worker %d at clock %d: rows of table %d, stamp %d, own %d", c.worker, c.clock, t, m.Stamp, m.Own)
	}
	if r := c.reads[s][t]; r != nil && r.Seq == m.Seq {
		c.reads[s][t] = nil
	}
	if m.Own < c.acked[s] {
		// Sent before flushes that the cache no longer keeps were applied.
		return nil
	}
	c.gen++
	taken := 0
	for k, r := range m.Rows {
		i, ok := ct.slot(r)
		if !ok {
			continue // a row of a sparse table that the worker never read
		}
		st, own := ct.stamp[i], ct.own[i]
		if st >= 0 && (m.Stamp < int(st) || (m.Stamp == int(st) && m.Own < int(own))) {
			continue
		}
		ct.stamp[i], ct.own[i] = int32(m.Stamp), int32(m.Own)
		ct.mark[i] = c.gen
		if ct.sparse {
			lo, hi := span(m.Ends, k)
			ct.views[i].set(m.Cols[lo:hi], m.Values[lo:hi])
		} else {
			o := int(r) * ct.width
			copy(ct.view[o:o+ct.width], m.Values[k*ct.width:(k+1)*ct.width])
		}
		taken++
	}
	if taken > 0 {
		for _, f := range c.logs[s] {
			if f.Clock < m.Own {
				continue
			}
			for _, d := range f.Deltas {
				if d.Table == t {
					c.addMarked(ct, &d)
				}
			}
		}
		for _, i := range ct.dirt {
			if ct.mark[i] != c.gen {
				continue
			}
			if ct.sparse {
				ct.views[i].add(ct.deltas[i].Cols, ct.deltas[i].Vals)
				continue
			}
			o := int(i) * ct.width
			view := ct.view[o : o+ct.width]
			for j, v := range ct.delta[o : o+ct.width] {
				view[j] += v
			}
		}
	}
	c.confirm(s, m.Own)
	return nil
}

// addMarked adds the increments of d to the rows that this Receive took.
func (c *Cache) addMarked(ct *cacheTable, d *Delta) {
	for k, r := range d.Rows {
		i, ok := ct.slot(r)
		if !ok || ct.mark[i] != c.gen {
			continue
		}
		if ct.sparse {
			_, inc := d.nonzeros().At(k)
			ct.views[i].add(inc.Cols, inc.Vals)
			continue
		}
		view := ct.view[int(r)*ct.width : (int(r)+1)*ct.width]
		for j, v := range d.Values[k*ct.width : (k+1)*ct.width] {
			view[j] += v
		}
	}
}
