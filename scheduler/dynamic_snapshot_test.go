package scheduler

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/internal/sealtest"
	"github.com/strads-go/strads/schmp"
)

// TestDynamicRestore runs an engine with two rounds in flight (the
// feedback of a round comes after the next plan), and after every round
// of 40 restores a new engine from its snapshot: both must then plan the
// same rounds, for every policy, with the dependency check on and off,
// with a warm-up that ends before and after the snapshot. So must an
// engine that ran some rounds past the snapshot (its warm-up ended, say)
// and was then restored from it in place, as a rollback does.
func TestDynamicRestore(t *testing.T) {
	cols := NewSparseColumns(correlatedPairs(40, 30, 9), false)
	for _, p := range []Policy{Priority, Random, Cyclic} {
		for _, rho := range []float64{0.4, 1} {
			for _, warmup := range []int{0, 6} {
				t.Run(fmt.Sprintf("%v/rho=%v/warmup=%d", p, rho, warmup), func(t *testing.T) {
					c := Config{Vars: 60, Policy: p, Gamma: 1.5, Eta: 0.01, Candidates: 10, Block: 5, Warmup: warmup, Rho: rho, Workers: 2, Seed: 3}
					step := func(d *Dynamic, r int, prev Selection) Selection {
						s := d.Next()
						delta := make([]float64, len(prev.Vars))
						for i, j := range prev.Vars {
							delta[i] = float64((int(j)*7+r)%11) / 10
						}
						d.Feedback(prev.Vars, delta)
						return s
					}
					a := mustDynamic(t, c, cols)
					var prev Selection
					for cut := range 40 {
						b := mustDynamic(t, c, cols)
						snap, err := a.Snapshot()
						if err != nil {
							t.Fatal(err)
						}
						if err := b.Restore(snap); err != nil {
							t.Fatalf("after %d rounds: %v", cut, err)
						}
						// Past the snapshot, then back in place.
						m := mustDynamic(t, c, cols)
						if err := m.Restore(snap); err != nil {
							t.Fatal(err)
						}
						pm := prev
						for r := cut; r < cut+3+cut%7; r++ {
							pm = step(m, r, pm)
						}
						if err := m.Restore(snap); err != nil {
							t.Fatalf("in place, after %d rounds: %v", cut, err)
						}
						pa, pb, pm := prev, prev, prev
						for r := cut; r < min(cut+8, 40); r++ {
							pa, pb, pm = step(a, r, pa), step(b, r, pb), step(m, r, pm)
							if !reflect.DeepEqual(pa, pb) {
								t.Fatalf("restored after %d rounds: round %d plans %v, want %v", cut, r+1, pb.Vars, pa.Vars)
							}
							if !reflect.DeepEqual(pa, pm) {
								t.Fatalf("restored in place after %d rounds: round %d plans %v, want %v", cut, r+1, pm.Vars, pa.Vars)
							}
						}
						a = mustDynamic(t, c, cols)
						if err := a.Restore(snap); err != nil {
							t.Fatal(err)
						}
						prev = step(a, cut, prev)
					}
				})
			}
		}
	}
}

// TestDynamicRestoreBad checks that bytes that are not a snapshot of the
// engine are an error, and leave the engine able to run.
func TestDynamicRestoreBad(t *testing.T) {
	c := Config{Vars: 20, Policy: Priority, Gamma: 1, Eta: 0.01, Candidates: 4, Block: 2, Warmup: 3, Rho: 1, Workers: 1, Seed: 1}
	d := mustDynamic(t, c, nil)
	for range 2 {
		s := d.Next()
		d.Feedback(s.Vars, make([]float64, len(s.Vars)))
	}
	d.Next()
	good, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := schmp.Unseal(good, dynamicKind, dynamicVersion, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := schmp.Seal(dynamicKind, dynamicVersion, m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cyclic := c
	cyclic.Policy = Cyclic
	other := c
	other.Vars = 21
	for _, tc := range []struct {
		name string
		c    Config
		b    []byte
	}{
		{"empty", c, nil},
		{"truncated", c, good[:len(good)-5]},
		{"garbage", c, []byte{0x93, 1, 2, 3}},
		{"another policy", cyclic, good},
		{"more variables", other, good},
		{"negative round", c, edit(func(m map[string]any) { m["round"] = -1 })},
		{"walk over", c, edit(func(m map[string]any) { m["round"] = 9 })},
		{"bad random state", c, edit(func(m map[string]any) { m["rng"] = []byte("pcg:1") })},
		{"in flight twice", c, edit(func(m map[string]any) { m["inflight"] = codec.Int32s{1, 1} })},
		{"in flight out of range", c, edit(func(m map[string]any) { m["inflight"] = codec.Int32s{20} })},
		{"cursor out of range", c, edit(func(m map[string]any) { m["cursor"] = 20 })},
		{"queue out of range", c, edit(func(m map[string]any) { m["queue"] = codec.Int32s{-1} })},
		{"unqueued twice", c, edit(func(m map[string]any) { m["queue"], m["unqueued"] = codec.Int32s{1, 1}, codec.Int32s{1, 1} })},
		{"unqueued not queued", c, edit(func(m map[string]any) { m["queue"], m["unqueued"] = codec.Int32s{1, 2}, codec.Int32s{3} })},
		{"unqueued out of range", c, edit(func(m map[string]any) { m["queue"], m["unqueued"] = codec.Int32s{1, 2}, codec.Int32s{20} })},
		{"short permutation", c, edit(func(m map[string]any) { m["perm"] = codec.Int32s{0, 1} })},
		{"not a permutation", c, edit(func(m map[string]any) { m["perm"] = make(codec.Int32s, 20) })},
		{"negative weight", c, edit(func(m map[string]any) {
			w := make(codec.Float64s, 20)
			w[3] = -1
			m["weights"] = w
		})},
		{"huge weight", c, edit(func(m map[string]any) {
			w := make(codec.Float64s, 20)
			w[3] = 1e308
			m["weights"] = w
		})},
	} {
		e := mustDynamic(t, tc.c, nil)
		if err := e.Restore(tc.b); err == nil {
			t.Errorf("%s: no error", tc.name)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
		e.Next() // the engine is still whole
	}
	if err := mustDynamic(t, c, nil).Restore(good); err != nil {
		t.Errorf("the good snapshot: %v", err)
	}
	// With rounds in flight a walk can queue a variable twice.
	twice := edit(func(m map[string]any) { m["queue"], m["unqueued"] = codec.Int32s{1, 1, 2}, codec.Int32s{1} })
	if err := mustDynamic(t, c, nil).Restore(twice); err != nil {
		t.Errorf("a queue with a variable twice: %v", err)
	}
}

// TestDynamicRestoreSealed checks that an engine's snapshot is sealed
// (schmp.Seal): that its body sealed again restores, and that a snapshot
// of another kind or version, an unsealed one of version 1, a truncated
// one or one with a byte changed is an error that names the kind, and
// leaves the engine as it was.
func TestDynamicRestoreSealed(t *testing.T) {
	c := Config{Vars: 20, Policy: Priority, Gamma: 1, Eta: 0.01, Candidates: 4, Block: 2, Warmup: 3, Rho: 1, Workers: 1, Seed: 1}
	d := mustDynamic(t, c, nil)
	for range 4 {
		s := d.Next()
		d.Feedback(s.Vars, make([]float64, len(s.Vars)))
	}
	sealed := sealtest.Sealed{Kind: dynamicKind, Version: dynamicVersion, Others: []string{"columnar/scheduler"},
		Unsealed: map[string]any{"version": 1}, Reencodes: true}
	sealed.Check(t, d)
}

// FuzzDynamicRestore checks that Restore of any bytes into an engine of
// each policy is an error or a state from which the engine runs, never a
// panic.
func FuzzDynamicRestore(f *testing.F) {
	configs := []Config{
		{Vars: 12, Policy: Priority, Gamma: 1, Eta: 0.01, Candidates: 4, Block: 2, Warmup: 3, Rho: 1, Workers: 2, Seed: 1},
		{Vars: 12, Policy: Random, Candidates: 4, Block: 2, Rho: 1, Workers: 2, Seed: 1},
		{Vars: 12, Policy: Cyclic, Candidates: 4, Block: 2, Rho: 1, Workers: 2, Seed: 1},
	}
	for _, c := range configs {
		d, _ := NewDynamic(c, nil)
		for range 3 {
			b, _ := d.Snapshot()
			f.Add(b)
			s := d.Next()
			d.Feedback(s.Vars, make([]float64, len(s.Vars)))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range configs {
			d, err := NewDynamic(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.Restore(b) != nil {
				continue
			}
			for range 3 {
				s := d.Next()
				d.Feedback(s.Vars, make([]float64, len(s.Vars)))
			}
		}
	})
}
