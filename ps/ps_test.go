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

// simWorker is a worker's script and where it is in it.
type simWorker struct {
	cache *Cache
	ops   [][]op // per clock
	clock int    // clocks ended
	pc    int    // next op of the clock
	// incs[r][k] is the sum of this worker's increments of row r at clock k.
	incs [][]float64
}

type op struct {
	row int
	inc float64 // 0: a read
}

type inflight struct {
	server, worker int // exactly one is ≥ 0
	data           []byte
}

type sim struct {
	t       *testing.T
	rng     *rand.Rand
	cfg     Config
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
	model := Model(rng.IntN(4))
	tab := Table{Name: "t", Rows: 1 + rng.IntN(9), Width: workers, Model: model}
	if model == SSP || model == ESSP {
		tab.Staleness = rng.IntN(3)
	}
	cfg := Config{Tables: []Table{tab}, Servers: 1 + rng.IntN(3), Workers: workers, Every: rng.IntN(4)}
	s := &sim{t: t, rng: rng, cfg: cfg, drop: 0.2 * rng.Float64(), dup: 0.2 * rng.Float64(), cuts: map[int][]Cut{}}
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
		sw := &simWorker{cache: c, incs: make([][]float64, tab.Rows)}
		for r := range sw.incs {
			sw.incs[r] = make([]float64, simClocks)
		}
		for k := range simClocks {
			n := rng.IntN(5)
			var ops []op
			for range n {
				o := op{row: rng.IntN(tab.Rows)}
				if rng.IntN(2) == 0 {
					// Integers, so that sums are exact, and positive, so
					// that a column's value tells which clocks are in.
					o.inc = float64(1 + rng.IntN(1000))
					sw.incs[o.row][k] += o.inc
				}
				ops = append(ops, o)
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
	if o.inc != 0 {
		d := make([]float64, s.cfg.Workers)
		d[w] = o.inc
		if err := c.Inc(0, o.row, d); err != nil {
			s.t.Fatal(err)
		}
		sw.pc++
		return true
	}
	v, reads, err := c.Get(0, o.row)
	if err != nil {
		s.t.Fatal(err)
	}
	if v == nil {
		s.toServers(reads)
		return len(reads) > 0
	}
	s.check(w, o.row, v)
	sw.pc++
	return true
}

// check verifies a read: in column j, worker j's increments of whole
// clocks, all of them before the bound, and all of the reader's own so far.
func (s *sim) check(w, row int, v []float64) {
	s.reads++
	sw := s.workers[w]
	init := make([]float64, s.cfg.Workers)
	s.cfg.Tables[0].Init.Fill(row, init)
	bound := s.cfg.Tables[0].bound()
	for j := range s.cfg.Workers {
		incs := s.workers[j].incs[row]
		if j == w {
			own := init[j]
			for k := range sw.clock {
				own += incs[k]
			}
			for _, o := range sw.ops[sw.clock][:sw.pc] {
				if o.row == row {
					own += o.inc
				}
			}
			if v[j] != own {
				s.t.Fatalf("worker %d at clock %d reads %v of its own increments of row %d, want %v", w, sw.clock, v[j]-init[j], row, own-init[j])
			}
			continue
		}
		p, sum := -1, init[j]
		if sum == v[j] {
			p = 0
		}
		for k := range simClocks {
			sum += incs[k]
			if sum == v[j] {
				p = k + 1
			}
		}
		if p < 0 {
			s.t.Fatalf("worker %d at clock %d reads %v of worker %d's increments of row %d: no run of its clocks adds up to it (%v)", w, sw.clock, v[j]-init[j], j, row, incs)
		}
		if bound >= 0 && p < sw.clock-bound {
			s.t.Fatalf("worker %d at clock %d, bound %d, reads worker %d's increments of row %d up to clock %d only", w, sw.clock, bound, j, row, p)
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
	for r := range s.cfg.Tables[0].Rows {
		if got, want := s.shards[s.cfg.Server(r)].Row(0, r), s.sum(r, simClocks); !slices.Equal(got, want) {
			s.t.Fatalf("seed %d: row %d is %v, want %v", seed, r, got, want)
		}
	}
	for k, cuts := range s.cuts {
		if s.cfg.Every == 0 || k%s.cfg.Every != 0 || len(cuts) != s.cfg.Servers {
			s.t.Fatalf("seed %d: %d cuts at stamp %d, a cut every %d clocks", seed, len(cuts), k, s.cfg.Every)
		}
		for _, cut := range cuts {
			for i := range len(cut.Tables[0]) / s.cfg.Workers {
				r := i*s.cfg.Servers + cut.Server
				if got, want := cut.Tables[0][i*s.cfg.Workers:(i+1)*s.cfg.Workers], s.sum(r, k); !slices.Equal(got, want) {
					s.t.Fatalf("seed %d: server %d's cut at stamp %d has row %d %v, want %v", seed, cut.Server, k, r, got, want)
				}
			}
		}
	}
}

// sum is row r with every increment of the clocks before k.
func (s *sim) sum(r, k int) []float64 {
	want := make([]float64, s.cfg.Workers)
	s.cfg.Tables[0].Init.Fill(r, want)
	for j, sw := range s.workers {
		for _, inc := range sw.incs[r][:k] {
			want[j] += inc
		}
	}
	return want
}

// resume returns a sim that goes on from s's cuts at stamp k: new servers
// restored from them, new workers at clock k with the same scripts.
func (s *sim) resume(k int) *sim {
	r := &sim{t: s.t, rng: s.rng, cfg: s.cfg, drop: s.drop, dup: s.dup, cuts: map[int][]Cut{}}
	for i := range s.cfg.Servers {
		sh, err := NewShard(s.cfg, i)
		if err != nil {
			s.t.Fatal(err)
		}
		for _, cut := range s.cuts[k] {
			if cut.Server == i {
				if err := sh.Restore(cut); err != nil {
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
// and duplication, for every consistency model: every read within its
// bound, with the reader's own increments, the table at the end the sum of
// all increments, exactly, and every cut the sum of those before its
// stamp; and again from a cut, to the same end.
func TestProtocol(t *testing.T) {
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	models := make(map[Model]int)
	reads := 0
	resumed := 0
	for seed := range uint64(runs) {
		s := newSim(t, seed)
		s.finish(seed)
		models[s.cfg.Tables[0].Model]++
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
		if models[m] == 0 {
			t.Errorf("no run of %v", m)
		}
	}
	if reads < runs {
		t.Errorf("%d reads checked in %d runs", reads, runs)
	}
	t.Logf("%d runs, %d resumed from a cut, %d reads checked, by model %v", runs, resumed, reads, models)
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
