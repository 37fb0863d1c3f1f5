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

type cacheTable struct {
	width, bound int
	// view is what Get returns: the server's values, plus this worker's
	// increments that they do not include yet.
	view []float64
	// stamp and own are those of the row's values (-1: not cached).
	stamp, own []int32
	// delta and dirty are the increments of the current clock.
	delta []float64
	dirty []bool
	rows  []int32
	// asked[r] is the seq of the read that asked for r; mark[r] a
	// generation, for Receive.
	asked []uint64
	mark  []uint32
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
		ct.width, ct.bound = tab.Width, tab.bound()
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
// they were sent already). The slice returned is the cache's own: the
// caller reads it and changes it only through Inc.
func (c *Cache) Get(t, row int) ([]float64, []Send, error) {
	if err := c.check(t, row); err != nil {
		return nil, nil, err
	}
	ct := &c.tables[t]
	need := 0
	if ct.bound >= 0 {
		need = max(0, c.clock-ct.bound)
	}
	if st := int(ct.stamp[row]); st >= 0 && st >= need {
		c.stats.Reads++
		d := c.clock - st
		c.stats.Sum += float64(d)
		c.stats.SumSq += float64(d) * float64(d)
		c.stats.Max = max(c.stats.Max, d)
		return ct.view[row*ct.width : (row+1)*ct.width], nil, nil
	}
	s := c.cfg.Server(row)
	if r := c.reads[s][t]; r != nil && r.Stamp >= need && ct.asked[row] == r.Seq {
		return nil, nil, nil
	}
	// Ask for every cached row of the server that is as stale, so that a
	// clock costs one read per server, not one per row.
	c.seq++
	r := &Read{Worker: c.worker, Table: t, Stamp: need, Seq: c.seq}
	for x := s; x < len(ct.stamp); x += c.cfg.Servers {
		if x == row || (ct.stamp[x] >= 0 && int(ct.stamp[x]) < need) {
			r.Rows = append(r.Rows, int32(x))
			ct.asked[x] = r.Seq
		}
	}
	c.reads[s][t] = r
	return nil, []Send{{Server: s, Msg: ToServer{Read: r}}}, nil
}

// Inc adds delta to row of table t: the worker's reads see it at once, the
// other workers' once it is flushed.
func (c *Cache) Inc(t, row int, delta []float64) error {
	if err := c.check(t, row); err != nil {
		return err
	}
	ct := &c.tables[t]
	if len(delta) != ct.width {
		return fmt.Errorf("ps: increment of %d values to table %s of width %d", len(delta), c.cfg.Tables[t].Name, ct.width)
	}
	o := row * ct.width
	view, acc := ct.view[o:o+ct.width], ct.delta[o:o+ct.width]
	for i, d := range delta {
		view[i] += d
		acc[i] += d
	}
	if !ct.dirty[row] {
		ct.dirty[row] = true
		ct.rows = append(ct.rows, int32(row))
	}
	return nil
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
		if len(ct.rows) == 0 {
			continue
		}
		deltas := make([]Delta, c.cfg.Servers)
		for _, r := range ct.rows {
			o := int(r) * ct.width
			acc := ct.delta[o : o+ct.width]
			for _, v := range acc {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("ps: worker %d's clock %d: increment %v of table %s row %d", c.worker, c.clock, v, c.cfg.Tables[t].Name, r)
				}
			}
			d := &deltas[c.cfg.Server(int(r))]
			d.Rows = append(d.Rows, r)
			d.Values = append(d.Values, acc...)
		}
		for _, r := range ct.rows {
			o := int(r) * ct.width
			clear(ct.delta[o : o+ct.width])
			ct.dirty[r] = false
		}
		ct.rows = ct.rows[:0]
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
	s, t := m.Server, m.Table
	if s < 0 || s >= c.cfg.Servers || t < 0 || t >= len(c.tables) {
		return fmt.Errorf("ps: worker %d: rows of server %d, table %d", c.worker, s, t)
	}
	ct := &c.tables[t]
	if len(m.Values) != len(m.Rows)*ct.width || m.Own < 0 || m.Own > c.clock || m.Stamp < 0 || m.Stamp > m.Own {
		return fmt.Errorf("ps: worker %d at clock %d: %d values of %d rows of table %d, stamp %d, own %d", c.worker, c.clock, len(m.Values), len(m.Rows), t, m.Stamp, m.Own)
	}
	for _, r := range m.Rows {
		if r < 0 || int(r) >= len(ct.stamp) || c.cfg.Server(int(r)) != s {
			return fmt.Errorf("ps: worker %d: row %d of table %d from server %d", c.worker, r, t, s)
		}
	}
	for _, v := range m.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("ps: worker %d: value %v of table %s from server %d", c.worker, v, c.cfg.Tables[t].Name, s)
		}
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
		st, own := ct.stamp[r], ct.own[r]
		if st >= 0 && (m.Stamp < int(st) || (m.Stamp == int(st) && m.Own < int(own))) {
			continue
		}
		ct.stamp[r], ct.own[r] = int32(m.Stamp), int32(m.Own)
		ct.mark[r] = c.gen
		o := int(r) * ct.width
		copy(ct.view[o:o+ct.width], m.Values[k*ct.width:(k+1)*ct.width])
		taken++
	}
	if taken > 0 {
		for _, f := range c.logs[s] {
			if f.Clock < m.Own {
				continue
			}
			for _, d := range f.Deltas {
				if d.Table == t {
					c.addMarked(ct, d.Rows, d.Values)
				}
			}
		}
		for _, r := range ct.rows {
			if ct.mark[r] == c.gen {
				o := int(r) * ct.width
				c.addMarked(ct, []int32{r}, ct.delta[o:o+ct.width])
			}
		}
	}
	c.confirm(s, m.Own)
	return nil
}

// addMarked adds the runs of values to the rows that this Receive took.
func (c *Cache) addMarked(ct *cacheTable, rows []int32, values []float64) {
	for k, r := range rows {
		if ct.mark[r] != c.gen {
			continue
		}
		view := ct.view[int(r)*ct.width : (int(r)+1)*ct.width]
		for i, v := range values[k*ct.width : (k+1)*ct.width] {
			view[i] += v
		}
	}
}
