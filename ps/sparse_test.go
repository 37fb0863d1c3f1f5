package ps

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestSparseRowAdd: adding rows of any size, in place or merged, gives
// the sums, with no entry for a value that comes to 0.
func TestSparseRowAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		const width = 40
		want := make([]float64, width)
		var r SparseRow
		for range 1 + rng.IntN(6) {
			// Unsorted, with repeats, some taking values back to 0.
			var cols []int32
			var vals []float64
			for range rng.IntN(30) {
				c := int32(rng.IntN(width))
				v := float64(rng.IntN(7) - 3)
				if rng.IntN(3) == 0 && want[c] != 0 {
					v = -want[c]
				}
				cols = append(cols, c)
				vals = append(vals, v)
			}
			sc, sv := sorted(cols, vals)
			if !increasing(sc) || len(sc) != len(sv) {
				t.Fatalf("sorted(%v) = %v, %v", cols, sc, sv)
			}
			r.add(sc, sv)
			for i, c := range cols {
				want[c] += vals[i]
			}
			got := make([]float64, width)
			r.addTo(got)
			if !slices.Equal(got, want) || !increasing(r.Cols) || len(r.Cols) != len(r.Vals) || slices.Contains(r.Vals, 0) {
				t.Fatalf("after adding %v at %v: %v, want %v", vals, cols, r, want)
			}
		}
	}
}

// exchange delivers msgs to the servers, and their answers to the one
// worker's cache c, at once and in order.
func exchange(t *testing.T, shards []*Shard, c *Cache, msgs []Send) {
	t.Helper()
	for _, m := range msgs {
		outs, err := shards[m.Server].Step(m.Msg)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			if o.Worker == 0 {
				if err := c.Receive(o.Msg); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// getSparse reads row of table tab from c, asking the servers if it must.
func getSparse(t *testing.T, shards []*Shard, c *Cache, tab, row int) SparseRow {
	t.Helper()
	for range 3 {
		r, ok, sends, err := c.GetSparse(tab, row)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return r
		}
		exchange(t, shards, c, sends)
	}
	t.Fatalf("no row %d of table %d", row, tab)
	return SparseRow{}
}

// newJob returns the shards and the one worker's cache of cfg.
func newJob(t *testing.T, cfg Config) ([]*Shard, *Cache) {
	t.Helper()
	var shards []*Shard
	for i := range cfg.Servers {
		sh, err := NewShard(cfg, i)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, sh)
	}
	c, err := NewCache(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	return shards, c
}

// TestIncSparse: IncSparse and Inc, on a dense and a sparse table, with
// many columns in any order; Get and GetSparse see them at once and the
// servers once flushed; an increment that is not valid adds nothing.
func TestIncSparse(t *testing.T) {
	const rows, width = 5, 30
	cfg := Config{Tables: []Table{
		{Name: "dense", Rows: rows, Width: width},
		{Name: "sparse", Rows: rows, Width: width, Sparse: true},
	}, Servers: 2, Workers: 1}
	shards, c := newJob(t, cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	want := [2][rows][width]float64{}
	for range 8 {
		for range 10 {
			tab, row := rng.IntN(2), rng.IntN(rows)
			var cols []int32
			var vals []float64
			for range rng.IntN(25) {
				c := int32(rng.IntN(width))
				v := float64(rng.IntN(9) - 4)
				if rng.IntN(4) == 0 {
					v = -want[tab][row][c] // back to 0
				}
				cols = append(cols, c)
				vals = append(vals, v)
			}
			var err error
			if rng.IntN(4) == 0 {
				d := make([]float64, width)
				for i, c := range cols {
					d[c] += vals[i]
				}
				err = c.Inc(tab, row, d)
			} else {
				err = c.IncSparse(tab, row, cols, vals)
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cols {
				want[tab][row][c] += vals[i]
			}
			for tab := range 2 {
				for row := range rows {
					r := getSparse(t, shards, c, tab, row)
					got := make([]float64, width)
					r.addTo(got)
					if !slices.Equal(got, want[tab][row][:]) || !increasing(r.Cols) || slices.Contains(r.Vals, 0) {
						t.Fatalf("table %d row %d reads %v, want %v", tab, row, r, want[tab][row])
					}
					v, _, err := c.Get(tab, row)
					if err != nil || !slices.Equal(v, want[tab][row][:]) {
						t.Fatalf("table %d row %d: Get %v, %v, want %v", tab, row, v, err, want[tab][row])
					}
				}
			}
		}
		sends, err := c.Tick()
		if err != nil {
			t.Fatal(err)
		}
		exchange(t, shards, c, sends)
	}
	for tab := range 2 {
		for row := range rows {
			if got := shards[cfg.Server(row)].Row(tab, row); !slices.Equal(got, want[tab][row][:]) {
				t.Errorf("server: table %d row %d is %v, want %v", tab, row, got, want[tab][row])
			}
		}
	}

	bad := []struct {
		name  string
		tab   int
		row   int
		cols  []int32
		vals  []float64
		dense []float64
	}{
		{"column past the width", 1, 0, []int32{1, width}, []float64{1, 1}, nil},
		{"negative column", 0, 0, []int32{-1}, []float64{1}, nil},
		{"NaN", 1, 0, []int32{2, 3}, []float64{1, math.NaN()}, nil},
		{"Inf", 0, 0, []int32{2}, []float64{math.Inf(-1)}, nil},
		{"more values than columns", 1, 0, []int32{2}, []float64{1, 2}, nil},
		{"row out of range", 1, rows, []int32{2}, []float64{1}, nil},
		{"table out of range", 2, 0, []int32{2}, []float64{1}, nil},
		{"dense NaN to a sparse table", 1, 0, nil, nil, append(make([]float64, width-1), math.NaN())},
		{"dense of the wrong width to a sparse table", 1, 0, nil, nil, make([]float64, width+1)},
	}
	for _, b := range bad {
		var err error
		if b.dense != nil {
			err = c.Inc(b.tab, b.row, b.dense)
		} else {
			err = c.IncSparse(b.tab, b.row, b.cols, b.vals)
		}
		if err == nil {
			t.Errorf("%s: no error", b.name)
		}
	}
	for tab := range 2 {
		if got := getSparse(t, shards, c, tab, 0); !slices.Equal(nonzeros(want[tab][0][:]).Vals, got.Vals) {
			t.Errorf("table %d row 0 is %v after increments refused, want %v", tab, got, want[tab][0])
		}
	}
	// Finite values that add up to more than a float64 holds.
	for range 2 {
		if err := c.IncSparse(1, 1, []int32{4}, []float64{math.MaxFloat64}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Tick(); err == nil {
		t.Error("Tick of an increment of +Inf: no error")
	}
}

// TestSparseRefused: a server refuses malformed increments of a sparse
// table, and cuts, changing nothing; a cache refuses malformed rows.
func TestSparseRefused(t *testing.T) {
	cfg := Config{Tables: []Table{
		{Name: "dense", Rows: 4, Width: 3},
		{Name: "sparse", Rows: 4, Width: 10, Sparse: true},
	}, Servers: 2, Workers: 1}
	shards, c := newJob(t, cfg)
	sh := shards[0]
	flushes := map[string]Delta{
		"columns that decrease":    {Table: 1, Rows: []int32{0}, Ends: []int32{2}, Cols: []int32{3, 1}, Values: []float64{1, 1}},
		"a repeated column":        {Table: 1, Rows: []int32{0}, Ends: []int32{2}, Cols: []int32{3, 3}, Values: []float64{1, 1}},
		"a column past the width":  {Table: 1, Rows: []int32{0}, Ends: []int32{1}, Cols: []int32{10}, Values: []float64{1}},
		"ends past the values":     {Table: 1, Rows: []int32{0, 2}, Ends: []int32{1, 3}, Cols: []int32{1, 2}, Values: []float64{1, 1}},
		"ends that decrease":       {Table: 1, Rows: []int32{0, 2}, Ends: []int32{2, 1}, Cols: []int32{1, 2}, Values: []float64{1, 1}},
		"values after the ends":    {Table: 1, Rows: []int32{0}, Ends: []int32{1}, Cols: []int32{1, 2}, Values: []float64{1, 1}},
		"no ends":                  {Table: 1, Rows: []int32{0}, Cols: []int32{1}, Values: []float64{1}},
		"more columns":             {Table: 1, Rows: []int32{0}, Ends: []int32{1}, Cols: []int32{1, 2}, Values: []float64{1}},
		"NaN":                      {Table: 1, Rows: []int32{0}, Ends: []int32{1}, Cols: []int32{1}, Values: []float64{math.NaN()}},
		"another server's row":     {Table: 1, Rows: []int32{1}, Ends: []int32{1}, Cols: []int32{1}, Values: []float64{1}},
		"columns to a dense table": {Table: 0, Rows: []int32{0}, Ends: []int32{3}, Cols: []int32{0, 1, 2}, Values: []float64{1, 1, 1}},
	}
	for name, d := range flushes {
		if _, err := sh.Step(ToServer{Flush: &Flush{Worker: 0, Clock: 0, Deltas: []Delta{d}}}); err == nil {
			t.Errorf("a flush with %s: no error", name)
		}
	}
	if sh.Stamp() != 0 || len(sh.nz[1]) != 0 {
		t.Fatalf("refused flushes changed the server: stamp %d, rows %v", sh.Stamp(), sh.nz[1])
	}

	// A flush of every row, some values adding up to 0: the whole table
	// as an observer reads it holds the rows with nonzero values only, in
	// order.
	ok := Delta{Table: 1, Rows: []int32{2, 0}, Ends: []int32{2, 3}, Cols: []int32{4, 9, 5}, Values: []float64{1, -2, 7}}
	if _, err := sh.Step(ToServer{Flush: &Flush{Worker: 0, Clock: 0, Deltas: []Delta{ok}}}); err != nil {
		t.Fatal(err)
	}
	ok = Delta{Table: 1, Rows: []int32{0, 2}, Ends: []int32{1, 2}, Cols: []int32{5, 4}, Values: []float64{-7, -1}}
	if _, err := sh.Step(ToServer{Flush: &Flush{Worker: 0, Clock: 1, Deltas: []Delta{ok}}}); err != nil {
		t.Fatal(err)
	}
	outs, err := sh.Step(ToServer{Read: &Read{Worker: -1, Table: 1, Stamp: 2, ReplyTo: "x"}})
	if err != nil || len(outs) != 1 {
		t.Fatalf("observer's read: %v, %v", outs, err)
	}
	m := outs[0].Msg.Rows
	if !slices.Equal(m.Rows, []int32{2}) || !slices.Equal(m.Ends, []int32{1}) || !slices.Equal(m.Cols, []int32{9}) || !slices.Equal(m.Values, []float64{-2}) {
		t.Errorf("observer reads %+v, want row 2 only", m)
	}
	if err := m.Check(cfg); err != nil {
		t.Error(err)
	}

	cut := sh.take()
	cuts := map[string]Cut{
		"no sparse rows":          {Server: 0, Tables: cut.Tables},
		"another server's row":    {Server: 0, Tables: cut.Tables, Sparse: []Nonzeros{{}, {Rows: []int32{1}, Ends: []int32{1}, Cols: []int32{1}, Vals: []float64{1}}}},
		"rows that decrease":      {Server: 0, Tables: cut.Tables, Sparse: []Nonzeros{{}, {Rows: []int32{2, 0}, Ends: []int32{1, 2}, Cols: []int32{1, 1}, Vals: []float64{1, 1}}}},
		"a column past the width": {Server: 0, Tables: cut.Tables, Sparse: []Nonzeros{{}, {Rows: []int32{2}, Ends: []int32{1}, Cols: []int32{10}, Vals: []float64{1}}}},
		"one table":               {Server: 0, Tables: cut.Tables, Sparse: []Nonzeros{{}}},
	}
	for name, bad := range cuts {
		fresh, _ := newJob(t, cfg)
		if err := fresh[0].Restore(bad); err == nil {
			t.Errorf("a cut with %s: no error", name)
		}
	}
	fresh, _ := newJob(t, cfg)
	if err := fresh[0].Restore(*cut); err != nil {
		t.Fatal(err)
	}
	if got := fresh[0].Nonzeros(1, 2); !slices.Equal(got.Cols, []int32{9}) || !slices.Equal(got.Vals, []float64{-2}) || len(fresh[0].nz[1]) != 1 {
		t.Errorf("restored row 2 is %v, rows %v", got, fresh[0].nz[1])
	}

	rows := map[string]Rows{
		"no ends":                 {Server: 0, Table: 1, Rows: []int32{0}, Values: []float64{}},
		"values of a dense width": {Server: 0, Table: 1, Rows: []int32{0}, Values: make([]float64, 10)},
		"a column past the width": {Server: 0, Table: 1, Rows: []int32{0}, Ends: []int32{1}, Cols: []int32{11}, Values: []float64{1}},
		"Inf":                     {Server: 0, Table: 1, Rows: []int32{0}, Ends: []int32{1}, Cols: []int32{1}, Values: []float64{math.Inf(1)}},
		"another server's row":    {Server: 1, Table: 1, Rows: []int32{0}, Ends: []int32{0}},
		"no such table":           {Server: 0, Table: 2, Rows: []int32{0}, Ends: []int32{0}},
	}
	for name, m := range rows {
		if err := c.Receive(ToWorker{Rows: &m}); err == nil {
			t.Errorf("rows with %s: no error", name)
		}
	}
}

// TestSparseValidate: a sparse table starts at 0, and its columns fit in
// an int32.
func TestSparseValidate(t *testing.T) {
	for _, tab := range []Table{
		{Name: "init", Rows: 2, Width: 2, Sparse: true, Init: Init{Seed: 1, Scale: 0.1}},
		{Name: "wide", Rows: 2, Width: math.MaxInt32 + 1, Sparse: true},
	} {
		if err := (Config{Tables: []Table{tab}, Servers: 1, Workers: 1}).Validate(); err == nil {
			t.Errorf("table %s: no error", tab.Name)
		}
	}
}

// TestSparseMemory: a worker that touched k rows of a sparse table of 10⁶
// rows of 10⁶ columns holds them only, and so do the servers: memory in
// proportion to k, under 400 kB, where a dense table would hold 8·10¹²
// bytes and even a byte for every row a megabyte.
func TestSparseMemory(t *testing.T) {
	const k, perRow = 400, 4
	cfg := Config{Tables: []Table{{Name: "features", Rows: 1_000_000, Width: 1_000_000, Model: ESSP, Staleness: 1, Sparse: true}}, Servers: 2, Workers: 1}
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	base := heap()
	shards, c := newJob(t, cfg)
	rng := rand.New(rand.NewPCG(5, 6))
	touched := map[int]bool{}
	for clock := range 4 {
		for range k / 4 {
			row := rng.IntN(cfg.Tables[0].Rows)
			touched[row] = true
			cols := make([]int32, perRow)
			vals := make([]float64, perRow)
			for j := range cols {
				cols[j] = int32(rng.IntN(cfg.Tables[0].Width))
				vals[j] = float64(1 + rng.IntN(9))
			}
			if err := c.IncSparse(0, row, cols, vals); err != nil {
				t.Fatal(err)
			}
			if clock > 0 {
				getSparse(t, shards, c, 0, row)
			}
		}
		sends, err := c.Tick()
		if err != nil {
			t.Fatal(err)
		}
		exchange(t, shards, c, sends)
	}
	if !c.Confirmed() {
		t.Fatal("flushes not confirmed")
	}
	ct := &c.tables[0]
	if len(ct.slots) != len(touched) || len(ct.rows) != len(touched) || len(ct.stamp) != len(touched) {
		t.Errorf("the cache holds %d slots, %d rows for %d rows touched", len(ct.slots), len(ct.rows), len(touched))
	}
	held := len(shards[0].nz[0]) + len(shards[1].nz[0])
	if held != len(touched) {
		t.Errorf("the servers hold %d rows, %d touched", held, len(touched))
	}
	// What the cache, and the servers, hold is what the heap loses when
	// they are gone.
	all := heap() - base
	runtime.KeepAlive(shards)
	withCache := heap() - base
	runtime.KeepAlive(c)
	none := heap() - base
	cache, servers := withCache-none, all-withCache
	t.Logf("%d rows touched, %d nonzeros: the cache holds %d bytes (%d a row), the servers %d (%d a row)",
		len(touched), k*perRow, cache, cache/int64(len(touched)), servers, servers/int64(len(touched)))
	if limit := int64(len(touched)) * 1024; cache > limit || servers > limit {
		t.Errorf("the cache holds %d bytes and the servers %d for %d rows touched: more than %d", cache, servers, len(touched), limit)
	}
}
