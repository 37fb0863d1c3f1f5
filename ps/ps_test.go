package ps

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strads-go/strads/codec"
)

// A run of the protocol on a simulated network: every message encoded as on
// the wire, delivered in any order, some dropped, some delivered twice;
// workers that wait send again what is unanswered, as the nodes do after a
// timeout.

// simTable is what the scripts touch of a table: every row and column of
// a small one, a few of a sparse one of 10⁶ × 10⁶. Column c holds worker
// c mod Workers's increments only, so that a value tells which of that
// worker's clocks it includes.
type simTable struct {
	rows []int
	cols []int32
}

// simWorker is a worker's script and where it is in it.
type simWorker struct {
	cache *Cache
	ops   [][]op // per clock
	clock int    // clocks ended
	pc    int    // next op of the clock
	// incs[t][i][k][j] is the sum of this worker's increments of table
	// t's i-th row, column j, at clock k.
	incs [][][][]float64
}

// op is a read (no cols) or an increment of a row, by one of the calls
// that do it.
type op struct {
	table, row int   // row: the index in the simTable's rows
	cols       []int // indices in the simTable's cols
	vals       []float64
	other      bool // GetSparse on a dense table or Get on a sparse one; Inc on a sparse table or IncSparse on a dense one
}

type inflight struct {
	server, worker int // exactly one is ≥ 0
	data           []byte
}

type sim struct {
	t       *testing.T
	rng     *rand.Rand
	cfg     Config
	tabs    []simTable
	shards  []*Shard
	workers []*simWorker
	net     []inflight
	drop    float64
	dup     float64
	reads   int
	cuts    map[int][]Cut // by stamp, one per server
}

const simClocks = 6

func newSim(t *testing.T, seed uint64) *sim {
	rng := rand.New(rand.NewPCG(seed, 7))
	workers := 1 + rng.IntN(4)
	cfg := Config{Servers: 1 + rng.IntN(3), Workers: workers, Every: rng.IntN(4)}
	var tabs []simTable
	for i := range 1 + rng.IntN(2) {
		model := Model(rng.IntN(4))
		tab := Table{Name: fmt.Sprint("t", i), Model: model, Sparse: rng.IntN(2) == 0}
		if model == SSP || model == ESSP {
			tab.Staleness = rng.IntN(3)
		}
		per := 1 + rng.IntN(3)
		var st simTable
		if tab.Sparse && rng.IntN(3) == 0 {
			tab.Rows, tab.Width = 1_000_000, 1_000_000
			for range 1 + rng.IntN(9) {
				if r := rng.IntN(tab.Rows); !slices.Contains(st.rows, r) {
					st.rows = append(st.rows, r)
				}
			}
			for j := range workers {
				for range per {
					if c := int32(rng.IntN(tab.Width/workers)*workers + j); !slices.Contains(st.cols, c) {
						st.cols = append(st.cols, c)
					}
				}
			}
		} else {
			tab.Rows, tab.Width = 1+rng.IntN(9), workers*per
			for r := range tab.Rows {
				st.rows = append(st.rows, r)
			}
			for c := range tab.Width {
				st.cols = append(st.cols, int32(c))
			}
		}
		cfg.Tables = append(cfg.Tables, tab)
		tabs = append(tabs, st)
	}
	s := &sim{t: t, rng: rng, cfg: cfg, tabs: tabs, drop: 0.2 * rng.Float64(), dup: 0.2 * rng.Float64(), cuts: map[int][]Cut{}}
	// In some runs workers take back all they added to a row: values, and
	// rows, that come to 0 at the servers too. A value then no longer
	// tells which clocks are in, only which may be.
	retract := rng.IntN(4) == 0
	for i := range cfg.Servers {
		sh, err := NewShard(cfg, i)
		if err != nil {
			t.Fatal(err)
		}
		s.shards = append(s.shards, sh)
	}
	for w := range workers {
		c, err := NewCache(cfg, w)
		if err != nil {
			t.Fatal(err)
		}
		sw := &simWorker{cache: c, incs: make([][][][]float64, len(tabs))}
		for t, st := range tabs {
			sw.incs[t] = make([][][]float64, len(st.rows))
			for i := range st.rows {
				sw.incs[t][i] = make([][]float64, simClocks)
				for k := range simClocks {
					sw.incs[t][i][k] = make([]float64, len(st.cols))
				}
			}
		}
		for k := range simClocks {
			var ops []op
			add := func(o op) {
				ops = append(ops, o)
				for i, j := range o.cols {
					sw.incs[o.table][o.row][k][j] += o.vals[i]
				}
			}
			for range rng.IntN(6) {
				t := rng.IntN(len(tabs))
				o := op{table: t, row: rng.IntN(len(tabs[t].rows)), other: rng.IntN(3) == 0}
				if cfg.Tables[t].Width > 64 {
					o.other = o.other && !cfg.Tables[t].Sparse // never dense copies of 10⁶ values
				}
				var mine []int
				for j, c := range tabs[t].cols {
					if int(c)%workers == w {
						mine = append(mine, j)
					}
				}
				if len(mine) == 0 || rng.IntN(2) == 0 {
					ops = append(ops, o) // a read
					continue
				}
				if retract && rng.IntN(3) == 0 {
					for _, j := range mine {
						sum := 0.0
						for _, inc := range sw.incs[t][o.row][:k+1] {
							sum += inc[j]
						}
						if sum != 0 {
							o.cols = append(o.cols, j)
							o.vals = append(o.vals, -sum)
						}
					}
					if len(o.cols) > 0 {
						add(o)
					}
					continue
				}
				// Integers, so that sums are exact, and positive, so
				// that a column's value tells which clocks are in.
				for _, j := range mine {
					if len(o.cols) == 0 || rng.IntN(2) == 0 {
						o.cols = append(o.cols, j)
						o.vals = append(o.vals, float64(1+rng.IntN(1000)))
					}
				}
				add(o)
				if rng.IntN(4) == 0 {
					// Take some of it back at once: values that come to
					// 0 in the cache.
					back := op{table: t, row: o.row, other: o.other}
					for i, j := range o.cols {
						if rng.IntN(2) == 0 {
							back.cols = append(back.cols, j)
							back.vals = append(back.vals, -o.vals[i])
						}
					}
					if len(back.cols) > 0 {
						add(back)
					}
				}
			}
			sw.ops = append(sw.ops, ops)
		}
		s.workers = append(s.workers, sw)
	}
	return s
}

func (s *sim) send(server, worker int, v any) {
	data, err := codec.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	if s.rng.Float64() < s.drop {
		return
	}
	s.net = append(s.net, inflight{server, worker, data})
	if s.rng.Float64() < s.dup {
		s.net = append(s.net, inflight{server, worker, data})
	}
}

func (s *sim) toServers(msgs []Send) {
	for _, m := range msgs {
		s.send(m.Server, -1, m.Msg)
	}
}

// step does one thing: delivers a message, or moves a worker on. It
// returns false when nothing is left to do.
func (s *sim) step() bool {
	var ready []int
	for w, sw := range s.workers {
		if sw.clock < simClocks || !sw.cache.Confirmed() {
			ready = append(ready, w)
		}
	}
	if len(ready) == 0 && len(s.net) == 0 {
		return false
	}
	if len(s.net) > 0 && (len(ready) == 0 || s.rng.IntN(2) == 0) {
		i := s.rng.IntN(len(s.net))
		m := s.net[i]
		s.net = slices.Delete(s.net, i, i+1)
		s.deliver(m)
		return true
	}
	w := ready[s.rng.IntN(len(ready))]
	if !s.run(w) && len(s.net) == 0 {
		// Every worker that can move is waiting and nothing is in
		// flight: what was lost must be sent again.
		for _, w := range ready {
			s.toServers(s.workers[w].cache.Unanswered())
		}
	}
	return true
}

func (s *sim) deliver(m inflight) {
	if m.server >= 0 {
		var msg ToServer
		if err := codec.Unmarshal(m.data, &msg); err != nil {
			s.t.Fatal(err)
		}
		outs, err := s.shards[m.server].Step(msg)
		if err != nil {
			s.t.Fatalf("server %d: %v", m.server, err)
		}
		for _, o := range outs {
			if o.Cut != nil {
				s.cuts[o.Cut.Stamp] = append(s.cuts[o.Cut.Stamp], *o.Cut)
			}
			if o.Worker >= 0 {
				s.send(-1, o.Worker, o.Msg)
			}
		}
		return
	}
	var msg ToWorker
	if err := codec.Unmarshal(m.data, &msg); err != nil {
		s.t.Fatal(err)
	}
	if err := s.workers[m.worker].cache.Receive(msg); err != nil {
		s.t.Fatalf("worker %d: %v", m.worker, err)
	}
}

// run moves worker w on by one op or one clock; false if it must wait.
func (s *sim) run(w int) bool {
	sw := s.workers[w]
	c := sw.cache
	if sw.clock == simClocks {
		return false // waits for its flushes' confirmations
	}
	if sw.pc == len(sw.ops[sw.clock]) {
		if c.Behind() {
			return false
		}
		msgs, err := c.Tick()
		if err != nil {
			s.t.Fatal(err)
		}
		s.toServers(msgs)
		sw.clock++
		sw.pc = 0
		return true
	}
	o := sw.ops[sw.clock][sw.pc]
	tab, st := s.cfg.Tables[o.table], s.tabs[o.table]
	row := st.rows[o.row]
	if len(o.cols) > 0 {
		var err error
		if tab.Sparse == o.other {
			d := make([]float64, tab.Width)
			for i, j := range o.cols {
				d[st.cols[j]] = o.vals[i]
			}
			err = c.Inc(o.table, row, d)
		} else {
			// In any order, a value sometimes in two parts.
			var cols []int32
			var vals []float64
			for i, j := range o.cols {
				if v := o.vals[i]; s.rng.IntN(3) == 0 {
					cols = append(cols, st.cols[j], st.cols[j])
					vals = append(vals, v-1, 1)
				} else {
					cols = append(cols, st.cols[j])
					vals = append(vals, v)
				}
			}
			s.rng.Shuffle(len(cols), func(a, b int) {
				cols[a], cols[b] = cols[b], cols[a]
				vals[a], vals[b] = vals[b], vals[a]
			})
			err = c.IncSparse(o.table, row, cols, vals)
		}
		if err != nil {
			s.t.Fatal(err)
		}
		sw.pc++
		return true
	}
	var got SparseRow
	if tab.Sparse == o.other {
		v, reads, err := c.Get(o.table, row)
		if err != nil {
			s.t.Fatal(err)
		}
		if v == nil {
			s.toServers(reads)
			return len(reads) > 0
		}
		if len(v) != tab.Width {
			s.t.Fatalf("worker %d reads %d values of table %s, width %d", w, len(v), tab.Name, tab.Width)
		}
		got = nonzeros(v)
	} else {
		r, ok, reads, err := c.GetSparse(o.table, row)
		if err != nil {
			s.t.Fatal(err)
		}
		if !ok {
			s.toServers(reads)
			return len(reads) > 0
		}
		got = r
	}
	s.check(w, o.table, o.row, got)
	sw.pc++
	return true
}

// values returns the values of r at the columns of table t that the
// scripts touch, and fails if r is not a valid sparse row or holds values
// elsewhere.
func (s *sim) values(t int, r SparseRow) []float64 {
	st := s.tabs[t]
	v := make([]float64, len(st.cols))
	if len(r.Cols) != len(r.Vals) || !increasing(r.Cols) {
		s.t.Fatalf("table %d: a row of %d columns, %d values: %v", t, len(r.Cols), len(r.Vals), r)
	}
	for i, c := range r.Cols {
		j := slices.Index(st.cols, c)
		if j < 0 || r.Vals[i] == 0 {
			s.t.Fatalf("table %d: value %v at column %d", t, r.Vals[i], c)
		}
		v[j] = r.Vals[i]
	}
	return v
}

// check verifies a read of table t's i-th row: in column j, the
// increments of whole clocks of the column's worker, all of them before the
// bound, and all of the reader's own so far.
func (s *sim) check(w, t, i int, r SparseRow) {
	s.reads++
	sw := s.workers[w]
	v := s.values(t, r)
	bound := s.cfg.Tables[t].bound()
	row := s.tabs[t].rows[i]
	for j, col := range s.tabs[t].cols {
		owner := int(col) % s.cfg.Workers
		incs := s.workers[owner].incs[t][i]
		if owner == w {
			own := 0.0
			for k := range sw.clock {
				own += incs[k][j]
			}
			for _, o := range sw.ops[sw.clock][:sw.pc] {
				if o.table == t && o.row == i {
					for x, oj := range o.cols {
						if oj == j {
							own += o.vals[x]
						}
					}
				}
			}
			if v[j] != own {
				s.t.Fatalf("worker %d at clock %d reads %v of its own increments of table %d row %d column %d, want %v", w, sw.clock, v[j], t, row, col, own)
			}
			continue
		}
		p, sum := -1, 0.0
		if sum == v[j] {
			p = 0
		}
		for k := range simClocks {
			sum += incs[k][j]
			if sum == v[j] {
				p = k + 1
			}
		}
		if p < 0 {
			s.t.Fatalf("worker %d at clock %d reads %v of worker %d's increments of table %d row %d column %d: no run of its clocks adds up to it", w, sw.clock, v[j], owner, t, row, col)
		}
		if bound >= 0 && p < sw.clock-bound {
			s.t.Fatalf("worker %d at clock %d, bound %d, reads worker %d's increments of table %d row %d column %d up to clock %d only", w, sw.clock, bound, owner, t, row, col, p)
		}
	}
}

// finish runs s to its end, and checks the tables at the end and the cuts.
func (s *sim) finish(seed uint64) {
	steps := 0
	for s.step() {
		if steps++; steps > 1_000_000 {
			s.t.Fatalf("seed %d: no end after %d steps", seed, steps)
		}
	}
	for _, sh := range s.shards {
		if sh.Stamp() != simClocks {
			s.t.Fatalf("seed %d: server %d at stamp %d, want %d", seed, sh.index, sh.Stamp(), simClocks)
		}
	}
	for t, st := range s.tabs {
		for i, r := range st.rows {
			sh := s.shards[s.cfg.Server(r)]
			if got, want := s.values(t, sh.Nonzeros(t, r)), s.sum(t, i, simClocks); !slices.Equal(got, want) {
				s.t.Fatalf("seed %d: table %d row %d is %v, want %v", seed, t, r, got, want)
			}
			if s.cfg.Tables[t].Width > 64 {
				continue
			}
			if got, want := nonzeros(sh.Row(t, r)), sh.Nonzeros(t, r); !slices.Equal(got.Cols, want.Cols) || !slices.Equal(got.Vals, want.Vals) {
				s.t.Fatalf("seed %d: table %d row %d is %v dense, %v sparse", seed, t, r, got, want)
			}
		}
		if s.cfg.Tables[t].Sparse {
			// No rows but those with nonzero values.
			for _, sh := range s.shards {
				for r, v := range sh.nz[t] {
					if len(v.Cols) == 0 || !slices.Contains(st.rows, int(r)) {
						s.t.Fatalf("seed %d: server %d holds row %d of table %d: %v", seed, sh.index, r, t, v)
					}
				}
			}
		}
	}
	for k, cuts := range s.cuts {
		if s.cfg.Every == 0 || k%s.cfg.Every != 0 || len(cuts) != s.cfg.Servers {
			s.t.Fatalf("seed %d: %d cuts at stamp %d, a cut every %d clocks", seed, len(cuts), k, s.cfg.Every)
		}
		for _, cut := range cuts {
			for t, st := range s.tabs {
				tab := s.cfg.Tables[t]
				if tab.Sparse {
					nz := cut.Sparse[t]
					for k := range nz.Rows {
						if r, _ := nz.At(k); !slices.Contains(st.rows, r) {
							s.t.Fatalf("seed %d: server %d's cut at stamp %d has row %d of table %d", seed, cut.Server, k, r, t)
						}
					}
				}
				for i, r := range st.rows {
					if s.cfg.Server(r) != cut.Server {
						continue
					}
					var got SparseRow
					if tab.Sparse {
						got = cut.Sparse[t].Row(r)
					} else {
						x := r / s.cfg.Servers
						got = nonzeros(cut.Tables[t][x*tab.Width : (x+1)*tab.Width])
					}
					if got, want := s.values(t, got), s.sum(t, i, k); !slices.Equal(got, want) {
						s.t.Fatalf("seed %d: server %d's cut at stamp %d has table %d row %d %v, want %v", seed, cut.Server, k, t, r, got, want)
					}
				}
			}
		}
	}
}

// sum is table t's i-th row, at the columns the scripts touch, with every
// increment of the clocks before k.
func (s *sim) sum(t, i, k int) []float64 {
	want := make([]float64, len(s.tabs[t].cols))
	for _, sw := range s.workers {
		for _, inc := range sw.incs[t][i][:k] {
			for j, v := range inc {
				want[j] += v
			}
		}
	}
	return want
}

// resume returns a sim that goes on from s's cuts at stamp k, as stored:
// new servers restored from them, new workers at clock k with the same
// scripts.
func (s *sim) resume(k int) *sim {
	r := &sim{t: s.t, rng: s.rng, cfg: s.cfg, tabs: s.tabs, drop: s.drop, dup: s.dup, cuts: map[int][]Cut{}}
	for i := range s.cfg.Servers {
		sh, err := NewShard(s.cfg, i)
		if err != nil {
			s.t.Fatal(err)
		}
		for _, cut := range s.cuts[k] {
			if cut.Server == i {
				data, err := codec.Marshal(cut)
				if err != nil {
					s.t.Fatal(err)
				}
				var stored Cut
				if err := codec.Unmarshal(data, &stored); err != nil {
					s.t.Fatal(err)
				}
				if err := sh.Restore(stored); err != nil {
					s.t.Fatal(err)
				}
			}
		}
		r.shards = append(r.shards, sh)
	}
	for w, old := range s.workers {
		c, err := NewCache(s.cfg, w)
		if err != nil {
			s.t.Fatal(err)
		}
		if err := c.Resume(k); err != nil {
			s.t.Fatal(err)
		}
		r.workers = append(r.workers, &simWorker{cache: c, ops: old.ops, incs: old.incs, clock: k})
	}
	return r
}

// TestProtocol runs the protocol under random schedules of delivery, loss
// and duplication, for every consistency model, with one or two tables,
// dense or sparse, read and added to by every call that does it: every
// read within its bound, with the reader's own increments, the tables at
// the end the sum of all increments, exactly, and every cut the sum of
// those before its stamp; and again from a cut, to the same end.
func TestProtocol(t *testing.T) {
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	type kind struct {
		model  Model
		sparse bool
	}
	kinds := make(map[kind]int)
	reads, resumed, big := 0, 0, 0
	for seed := range uint64(runs) {
		s := newSim(t, seed)
		s.finish(seed)
		for _, tab := range s.cfg.Tables {
			kinds[kind{tab.Model, tab.Sparse}]++
			if tab.Rows == 1_000_000 {
				big++
			}
		}
		reads += s.reads
		if s.cfg.Every > 0 {
			// Go on from a cut, as a job resumed from a checkpoint.
			k := s.cfg.Every * s.rng.IntN(simClocks/s.cfg.Every+1)
			if k > 0 {
				s.resume(k).finish(seed)
				resumed++
			}
		}
	}
	if resumed < runs/4 {
		t.Errorf("%d of %d runs resumed from a cut", resumed, runs)
	}
	for m := range Async + 1 {
		for _, sparse := range []bool{false, true} {
			if kinds[kind{m, sparse}] == 0 {
				t.Errorf("no table of %v, sparse %v", m, sparse)
			}
		}
	}
	if big == 0 {
		t.Error("no sparse table of 10⁶ rows")
	}
	if reads < runs {
		t.Errorf("%d reads checked in %d runs", reads, runs)
	}
	t.Logf("%d runs, %d resumed from a cut, %d reads checked; tables by model and sparse %v, %d of 10⁶ × 10⁶", runs, resumed, reads, kinds, big)
}

// TestInit: a table starts the same whatever the number of servers.
func TestInit(t *testing.T) {
	tab := Table{Name: "h", Rows: 7, Width: 3, Init: Init{Seed: 4, Scale: 0.1}}
	var first [][]float64
	for servers := 1; servers <= 4; servers++ {
		cfg := Config{Tables: []Table{tab}, Servers: servers, Workers: 1}
		var rows [][]float64
		for r := range tab.Rows {
			sh, err := NewShard(cfg, cfg.Server(r))
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, slices.Clone(sh.Row(0, r)))
		}
		if first == nil {
			first = rows
			if rows[0][0] == 0 || rows[0][0] == rows[1][0] {
				t.Fatalf("rows %v: not drawn", rows[:2])
			}
		}
		for r := range rows {
			if !slices.Equal(rows[r], first[r]) {
				t.Errorf("%d servers: row %d is %v, with 1 server %v", servers, r, rows[r], first[r])
			}
		}
	}
}

func TestParseModel(t *testing.T) {
	for m := range Async + 1 {
		got, err := ParseModel(m.String())
		if err != nil || got != m {
			t.Errorf("ParseModel(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseModel("bulk"); err == nil {
		t.Error("ParseModel(bulk): no error")
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Table{Name: "h", Rows: 3, Width: 2, Model: SSP, Staleness: 2}
	tests := []struct {
		name string
		cfg  Config
		want bool
	}{
		{"ok", Config{Tables: []Table{ok}, Servers: 2, Workers: 3}, true},
		{"no servers", Config{Tables: []Table{ok}, Workers: 1}, false},
		{"no tables", Config{Servers: 1, Workers: 1}, false},
		{"no rows", Config{Tables: []Table{{Width: 1}}, Servers: 1, Workers: 1}, false},
		{"bsp staleness", Config{Tables: []Table{{Rows: 1, Width: 1, Staleness: 1}}, Servers: 1, Workers: 1}, false},
		{"too stale", Config{Tables: []Table{{Rows: 1, Width: 1, Model: SSP, Staleness: MaxAhead}}, Servers: 1, Workers: 1}, false},
		{"unknown model", Config{Tables: []Table{{Rows: 1, Width: 1, Model: 9}}, Servers: 1, Workers: 1}, false},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); (err == nil) != tt.want {
			t.Errorf("%s: Validate() = %v", tt.name, err)
		}
	}
}

func ExampleModel() {
	m, _ := ParseModel("essp")
	fmt.Println(m)
	// Output: essp
}
