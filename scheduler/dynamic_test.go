package scheduler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/strads-go/strads/sparse"
)

// fakeColumns is a Dependencies given by functions; a nil function means
// dependence 0 or cost 1.
type fakeColumns struct {
	dep  func(j, k int) float64
	cost func(j int) float64
}

func (f fakeColumns) Dependence(j, k int) float64 {
	if f.dep == nil {
		return 0
	}
	return f.dep(j, k)
}

func (f fakeColumns) Cost(j int) float64 {
	if f.cost == nil {
		return 1
	}
	return f.cost(j)
}

// chainColumns makes each variable dependent (dependence 1) on the w
// variables either side of it in index order, and on nothing else.
func chainColumns(w int) fakeColumns {
	return fakeColumns{dep: func(j, k int) float64 {
		if j != k && j-k <= w && k-j <= w {
			return 1
		}
		return 0
	}}
}

// allDependent makes every pair of distinct variables dependent.
var allDependent = fakeColumns{dep: func(j, k int) float64 { return 1 }}

func validConfig() Config {
	return Config{Vars: 100, Policy: Priority, Gamma: 2, Eta: 0.01, Candidates: 8, Block: 4, Warmup: 2, Rho: 0.5, Workers: 2, Seed: 1}
}

func mustDynamic(t testing.TB, c Config, cols Dependencies) *Dynamic {
	t.Helper()
	d, err := NewDynamic(c, cols)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestPolicyString(t *testing.T) {
	tests := []struct {
		p    Policy
		s    string
		bad  bool
		want string
	}{
		{p: Priority, s: "priority"},
		{p: Random, s: "random"},
		{p: Cyclic, s: "cyclic"},
		{p: Shotgun, s: "shotgun"},
		{p: Policy(7), s: "Policy(7)", bad: true},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.s {
			t.Errorf("Policy(%d).String() = %q, want %q", int(tt.p), got, tt.s)
		}
		p, err := ParsePolicy(tt.s)
		if tt.bad {
			if err == nil {
				t.Errorf("ParsePolicy(%q) = %v, want an error", tt.s, p)
			}
			continue
		}
		if err != nil || p != tt.p {
			t.Errorf("ParsePolicy(%q) = %v, %v; want %v", tt.s, p, err, tt.p)
		}
	}
	_, err := ParsePolicy("x")
	if want := `unknown schedule "x" (want priority, random, cyclic or shotgun)`; err == nil || err.Error() != want {
		t.Errorf("ParsePolicy(\"x\") error %v, want %q", err, want)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		err  string // empty: valid
	}{
		{"valid", func(c *Config) {}, ""},
		{"rho 1 turns the check off", func(c *Config) { c.Rho = 1 }, ""},
		{"rho above 1", func(c *Config) { c.Rho = 2 }, ""},
		{"no warm-up", func(c *Config) { c.Warmup = 0 }, ""},
		{"eta 0", func(c *Config) { c.Eta = 0 }, ""},
		{"candidates = block", func(c *Config) { c.Candidates = 4 }, ""},
		{"more candidates than vars", func(c *Config) { c.Vars = 3 }, ""},
		{"gamma unused by cyclic", func(c *Config) { c.Policy, c.Gamma = Cyclic, 0 }, ""},
		{"gamma unused by random", func(c *Config) { c.Policy, c.Gamma = Random, 0 }, ""},
		{"gamma 0 means 2", func(c *Config) { c.Gamma = 0 }, ""},
		{"block 0 means 1", func(c *Config) { c.Block, c.Candidates = 0, 1 }, ""},
		{"candidates 0 mean 2 blocks", func(c *Config) { c.Candidates = 0 }, ""},
		{"rho 0 means 1", func(c *Config) { c.Rho = 0 }, ""},
		{"workers 0 mean 1", func(c *Config) { c.Workers = 0 }, ""},
		{"only vars", func(c *Config) { *c = Config{Vars: 3} }, ""},
		{"no vars", func(c *Config) { c.Vars = 0 }, "Vars must be >= 1, got 0"},
		{"bad policy", func(c *Config) { c.Policy = 4 }, "Policy must be priority, random, cyclic or shotgun, got Policy(4)"},
		{"gamma negative", func(c *Config) { c.Gamma = -1 }, "Gamma must be a finite number > 0, got -1"},
		{"gamma NaN", func(c *Config) { c.Gamma = math.NaN() }, "Gamma must be a finite number > 0, got NaN"},
		{"gamma infinite", func(c *Config) { c.Gamma = math.Inf(1) }, "Gamma must be a finite number > 0, got +Inf"},
		{"eta negative", func(c *Config) { c.Eta = -0.5 }, "Eta must be a finite number >= 0, got -0.5"},
		{"eta NaN", func(c *Config) { c.Eta = math.NaN() }, "Eta must be a finite number >= 0, got NaN"},
		{"block negative", func(c *Config) { c.Block = -1 }, "Block must be >= 1, got -1"},
		{"candidates negative", func(c *Config) { c.Candidates = -2 }, "Candidates must be >= Block (4), got -2"},
		{"candidates < block", func(c *Config) { c.Candidates = 3 }, "Candidates must be >= Block (4), got 3"},
		{"warmup negative", func(c *Config) { c.Warmup = -1 }, "Warmup must be >= 0, got -1"},
		{"rho negative", func(c *Config) { c.Rho = -0.1 }, "Rho must be > 0, got -0.1"},
		{"rho NaN", func(c *Config) { c.Rho = math.NaN() }, "Rho must be > 0, got NaN"},
		{"workers negative", func(c *Config) { c.Workers = -1 }, "Workers must be >= 1, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.edit(&c)
			err := c.Validate()
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.err != "" && (err == nil || err.Error() != tt.err):
				t.Fatalf("error %v, want %q", err, tt.err)
			}
		})
	}
}

// TestConfigDefaults checks what the zero value of each field of Config
// means (WithDefaults), and that an engine of zero fields plans exactly
// as one with the defaults set explicitly, with every policy.
func TestConfigDefaults(t *testing.T) {
	for _, tt := range []struct {
		name    string
		in, out Config
	}{
		{"only vars", Config{Vars: 5}, Config{Vars: 5, Policy: Priority, Gamma: 2, Candidates: 2, Block: 1, Rho: 1, Workers: 1}},
		{"a block", Config{Vars: 5, Block: 8}, Config{Vars: 5, Gamma: 2, Candidates: 16, Block: 8, Rho: 1, Workers: 1}},
		{"zero meaning zero", Config{Vars: 5, Policy: Cyclic, Eta: 0, Warmup: 0, Seed: 0}, Config{Vars: 5, Policy: Cyclic, Gamma: 2, Candidates: 2, Block: 1, Rho: 1, Workers: 1}},
		{"all set", validConfig(), validConfig()},
		{"bad values kept", Config{Gamma: -1, Block: -1, Rho: math.Inf(-1), Workers: -2}, Config{Gamma: -1, Block: -1, Rho: math.Inf(-1), Workers: -2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.WithDefaults(); got != tt.out {
				t.Fatalf("WithDefaults() = %+v, want %+v", got, tt.out)
			}
		})
	}
	for _, p := range []Policy{Priority, Random, Cyclic} {
		t.Run(p.String(), func(t *testing.T) {
			zero := mustDynamic(t, Config{Vars: 30, Policy: p, Warmup: 3, Seed: 7}, nil)
			set := mustDynamic(t, Config{Vars: 30, Policy: p, Gamma: 2, Candidates: 2, Block: 1, Warmup: 3, Rho: 1, Workers: 1, Seed: 7}, nil)
			for round := range 60 {
				a, b := zero.Next(), set.Next()
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("round %d: %+v, want %+v", round, a, b)
				}
				if info := zero.Info(a); info.Capacity != 1 {
					t.Fatalf("round %d: capacity %d, want 1", round, info.Capacity)
				}
				delta := []float64{float64(round%7) - 3}
				zero.Feedback(a.Vars, delta)
				set.Feedback(b.Vars, delta)
			}
		})
	}
}

func TestNewDynamicErrors(t *testing.T) {
	c := validConfig()
	if _, err := NewDynamic(c, nil); err == nil || !strings.Contains(err.Error(), "Rho") {
		t.Errorf("nil columns with the check on: error %v", err)
	}
	c.Rho = 1
	if _, err := NewDynamic(c, nil); err != nil {
		t.Errorf("nil columns with the check off: %v", err)
	}
	small := NewSparseColumns(denseCSC(2, [][]float64{{1, 0}, {0, 1}}), false)
	if _, err := NewDynamic(c, small); err == nil || !strings.Contains(err.Error(), "Vars") {
		t.Errorf("more vars than columns: error %v", err)
	}
	c.Block = -1
	if _, err := NewDynamic(c, nil); err == nil {
		t.Error("invalid config accepted")
	}
}

// checkSelection fails unless s is consistent with the effective limits and
// with the dependency check.
func checkSelection(t *testing.T, s Selection, c Config, cols Dependencies) {
	t.Helper()
	cand, block := min(c.Candidates, c.Vars), min(c.Block, c.Vars)
	if len(s.Vars) == 0 || len(s.Vars) > block {
		t.Fatalf("%d variables accepted, want 1..%d", len(s.Vars), block)
	}
	if s.Candidates < len(s.Vars) || s.Candidates > cand {
		t.Fatalf("%d candidates examined, want %d..%d", s.Candidates, len(s.Vars), cand)
	}
	if s.Rejected != s.Candidates-len(s.Vars) {
		t.Fatalf("Rejected %d, want %d", s.Rejected, s.Candidates-len(s.Vars))
	}
	if len(s.Vars) < block && s.Candidates != cand {
		t.Fatalf("stopped after %d candidates with only %d of %d accepted", s.Candidates, len(s.Vars), block)
	}
	seen := make(map[int32]bool)
	for _, j := range s.Vars {
		if j < 0 || int(j) >= c.Vars || seen[j] {
			t.Fatalf("bad or repeated variable %d in %v", j, s.Vars)
		}
		seen[j] = true
	}
	if c.Rho < 1 {
		for a, j := range s.Vars {
			for _, k := range s.Vars[:a] {
				if dep := cols.Dependence(int(j), int(k)); dep >= c.Rho {
					t.Fatalf("accepted %d and %d with dependence %v >= %v", j, k, dep, c.Rho)
				}
			}
		}
	}
	checkBlocks(t, s, c.Workers, cols)
}

// checkBlocks fails unless s.Blocks partitions s.Vars into the given number
// of blocks whose costs differ by at most the largest single cost.
func checkBlocks(t *testing.T, s Selection, workers int, cols Dependencies) {
	t.Helper()
	if len(s.Blocks) != workers {
		t.Fatalf("%d blocks, want %d", len(s.Blocks), workers)
	}
	cost := func(j int32) float64 {
		if cols == nil {
			return 1
		}
		return cols.Cost(int(j))
	}
	var all []int32
	lo, hi, big := math.Inf(1), math.Inf(-1), 0.0
	for _, b := range s.Blocks {
		var sum float64
		for _, j := range b {
			sum += cost(j)
			big = max(big, cost(j))
		}
		lo, hi = min(lo, sum), max(hi, sum)
		all = append(all, b...)
	}
	if hi-lo > big {
		t.Fatalf("block costs range over %v..%v, more than the largest cost %v", lo, hi, big)
	}
	slices.Sort(all)
	vars := slices.Sorted(slices.Values(s.Vars))
	if !slices.Equal(all, vars) {
		t.Fatalf("blocks %v do not partition %v", s.Blocks, s.Vars)
	}
}

// correlatedPairs returns a rows×2n matrix whose columns 2i and 2i+1 are
// strongly correlated and otherwise nearly independent.
func correlatedPairs(rows, n int, seed uint64) *sparse.CSC {
	rng := rand.New(rand.NewPCG(seed, 1))
	var cols [][]float64
	for range n {
		a := make([]float64, rows)
		b := make([]float64, rows)
		for i := range rows {
			if rng.Float64() < 0.2 {
				a[i] = rng.NormFloat64()
				b[i] = a[i] + 0.1*rng.NormFloat64()
			}
		}
		cols = append(cols, a, b)
	}
	return denseCSC(rows, cols)
}

func TestSelectionInvariants(t *testing.T) {
	pairs := NewSparseColumns(correlatedPairs(60, 20, 5), true)
	tests := []struct {
		name string
		c    Config
		cols Dependencies
	}{
		{"priority pairs", Config{Vars: 40, Policy: Priority, Gamma: 2, Eta: 0.1, Candidates: 16, Block: 8, Warmup: 3, Rho: 0.5, Workers: 3, Seed: 1}, pairs},
		{"random pairs", Config{Vars: 40, Policy: Random, Candidates: 16, Block: 8, Rho: 0.5, Workers: 3, Seed: 2}, pairs},
		{"cyclic pairs", Config{Vars: 40, Policy: Cyclic, Candidates: 16, Block: 8, Rho: 0.5, Workers: 3, Seed: 3}, pairs},
		{"priority eta 0", Config{Vars: 40, Policy: Priority, Gamma: 1, Candidates: 12, Block: 12, Rho: 0.3, Workers: 4, Seed: 4}, pairs},
		{"tight rho", Config{Vars: 40, Policy: Random, Candidates: 40, Block: 40, Rho: 0.05, Workers: 2, Seed: 5}, pairs},
		{"all dependent", Config{Vars: 30, Policy: Random, Candidates: 10, Block: 5, Rho: 0.5, Workers: 2, Seed: 6}, allDependent},
		{"clamped priority", Config{Vars: 5, Policy: Priority, Gamma: 2, Eta: 1, Candidates: 10, Block: 8, Warmup: 1, Rho: 1, Workers: 3, Seed: 7}, nil},
		{"clamped random", Config{Vars: 5, Policy: Random, Candidates: 10, Block: 8, Rho: 1, Workers: 3, Seed: 8}, nil},
		{"clamped cyclic", Config{Vars: 5, Policy: Cyclic, Candidates: 10, Block: 8, Rho: 0.5, Workers: 1, Seed: 9}, chainColumns(1)},
		{"one var", Config{Vars: 1, Policy: Priority, Gamma: 2, Candidates: 3, Block: 2, Rho: 0.5, Workers: 2, Seed: 10}, allDependent},
		{"more workers than vars", Config{Vars: 40, Policy: Cyclic, Candidates: 4, Block: 4, Rho: 0.5, Workers: 9, Seed: 11}, pairs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustDynamic(t, tt.c, tt.cols)
			rng := rand.New(rand.NewPCG(tt.c.Seed, 2))
			for range 300 {
				s := next(d)
				checkSelection(t, s, tt.c, tt.cols)
				delta := make([]float64, len(s.Vars))
				for i := range delta {
					delta[i] = rng.NormFloat64()
				}
				d.Feedback(s.Vars, delta)
			}
		})
	}
}

func TestCheckOffAcceptsBlock(t *testing.T) {
	for _, p := range []Policy{Priority, Random, Cyclic} {
		c := Config{Vars: 50, Policy: p, Gamma: 2, Eta: 1, Candidates: 20, Block: 7, Warmup: 2, Rho: 1, Workers: 2, Seed: 1}
		d := mustDynamic(t, c, allDependent)
		for range 10 {
			if s := next(d); len(s.Vars) != 7 || s.Candidates != 7 || s.Rejected != 0 {
				t.Fatalf("%v: %d accepted of %d examined, %d rejected; want 7 of 7", p, len(s.Vars), s.Candidates, s.Rejected)
			}
		}
	}
}

// TestShotgunChecksNothing: Shotgun accepts a whole block of mutually
// dependent variables, whatever Rho says, and draws the blocks that Random
// draws without a check.
func TestShotgunChecksNothing(t *testing.T) {
	c := Config{Vars: 50, Policy: Shotgun, Candidates: 20, Block: 7, Rho: 0.1, Workers: 2, Seed: 1}
	if c.Checks() {
		t.Fatal("Checks() = true for Shotgun")
	}
	rc := c
	rc.Policy, rc.Rho = Random, 1
	d, r := mustDynamic(t, c, allDependent), mustDynamic(t, rc, allDependent)
	for i := range 10 {
		s, want := next(d), next(r)
		if len(s.Vars) != 7 || s.Rejected != 0 {
			t.Fatalf("round %d: %d accepted, %d rejected; want 7 and 0", i, len(s.Vars), s.Rejected)
		}
		if !slices.Equal(s.Vars, want.Vars) {
			t.Fatalf("round %d: Shotgun drew %v, Random without a check %v", i, s.Vars, want.Vars)
		}
	}
	rc.Rho = 0.1
	if !rc.Checks() {
		t.Fatal("Checks() = false for Random at Rho 0.1")
	}
	if s := next(mustDynamic(t, rc, allDependent)); len(s.Vars) != 1 {
		t.Fatalf("Random at Rho 0.1 accepted %d of a dependent block, want 1", len(s.Vars))
	}
}

func TestCyclicOrder(t *testing.T) {
	c := Config{Vars: 10, Policy: Cyclic, Candidates: 4, Block: 3, Rho: 1, Workers: 1}
	d := mustDynamic(t, c, nil)
	want := [][]int32{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 0, 1}, {2, 3, 4}}
	for r, w := range want {
		if got := next(d).Vars; !slices.Equal(got, w) {
			t.Fatalf("round %d: %v, want %v", r, got, w)
		}
	}
}

// TestCyclicAllDependent checks that when every pair is dependent Cyclic
// still updates the variables one per round in index order.
func TestCyclicAllDependent(t *testing.T) {
	c := Config{Vars: 13, Policy: Cyclic, Candidates: 5, Block: 3, Rho: 0.5, Workers: 2}
	d := mustDynamic(t, c, allDependent)
	for r := range 40 {
		s := next(d)
		if want := []int32{int32(r % c.Vars)}; !slices.Equal(s.Vars, want) {
			t.Fatalf("round %d: %v, want %v", r, s.Vars, want)
		}
		if s.Candidates != 5 || s.Rejected != 4 {
			t.Fatalf("round %d: %d examined, %d rejected; want 5, 4", r, s.Candidates, s.Rejected)
		}
	}
}

// TestCyclicCoversChain checks that Cyclic updates every variable within
// ceil(M/Block)+Candidates rounds, and keeps doing so, when each variable
// depends on its neighbours.
func TestCyclicCoversChain(t *testing.T) {
	tests := []struct {
		vars, cand, block, width int
	}{
		{101, 16, 8, 1},
		{101, 16, 8, 3},
		{50, 10, 10, 2},
		{200, 32, 4, 5},
		{7, 7, 3, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("M=%d,U'=%d,U=%d,w=%d", tt.vars, tt.cand, tt.block, tt.width), func(t *testing.T) {
			c := Config{Vars: tt.vars, Policy: Cyclic, Candidates: tt.cand, Block: tt.block, Rho: 0.5, Workers: 2}
			cols := chainColumns(tt.width)
			d := mustDynamic(t, c, cols)
			bound := (tt.vars+tt.block-1)/tt.block + tt.cand
			last := make([]int, tt.vars) // round after the last update
			for r := 1; r <= 5*bound; r++ {
				s := next(d)
				checkSelection(t, s, c, cols)
				for _, j := range s.Vars {
					last[j] = r
				}
				for j, l := range last {
					if r-l >= bound {
						t.Fatalf("variable %d not updated in rounds %d..%d", j, l+1, r)
					}
				}
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	cols := NewSparseColumns(correlatedPairs(40, 30, 9), false)
	for _, p := range []Policy{Priority, Random, Cyclic} {
		run := func(seed uint64) [][]int32 {
			c := Config{Vars: 60, Policy: p, Gamma: 1.5, Eta: 0.01, Candidates: 10, Block: 5, Warmup: 4, Rho: 0.4, Workers: 2, Seed: seed}
			d := mustDynamic(t, c, cols)
			var out [][]int32
			for r := range 50 {
				s := next(d)
				out = append(out, s.Vars)
				delta := make([]float64, len(s.Vars))
				for i, j := range s.Vars {
					delta[i] = float64((int(j)*7+r)%11) / 10
				}
				d.Feedback(s.Vars, delta)
			}
			return out
		}
		a, b, other := run(1), run(1), run(2)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%v: two runs with seed 1 differ", p)
		}
		if same := reflect.DeepEqual(a, other); same != (p == Cyclic) {
			t.Errorf("%v: runs with seeds 1 and 2 equal = %v", p, same)
		}
	}
}

// TestRandomUniform checks that Random selects every variable about equally
// often.
func TestRandomUniform(t *testing.T) {
	c := Config{Vars: 20, Policy: Random, Candidates: 5, Block: 5, Rho: 1, Workers: 1, Seed: 3}
	d := mustDynamic(t, c, nil)
	const rounds = 4000
	counts := make([]int, c.Vars)
	for range rounds {
		for _, j := range next(d).Vars {
			counts[j]++
		}
	}
	want := float64(rounds*c.Block) / float64(c.Vars) // 1000
	for j, n := range counts {
		if math.Abs(float64(n)-want) > 0.15*want {
			t.Errorf("variable %d selected %d times, want about %v", j, n, want)
		}
	}
}

func TestPriorityFavoursLargeDeltas(t *testing.T) {
	const hot = 17
	c := Config{Vars: 100, Policy: Priority, Gamma: 2, Eta: 1e-4, Candidates: 4, Block: 4, Warmup: 25, Rho: 1, Workers: 1, Seed: 11}
	d := mustDynamic(t, c, nil)
	counts := make([]int, c.Vars)
	const rounds = 2000
	for r := range c.Warmup + rounds {
		s := next(d)
		delta := make([]float64, len(s.Vars))
		for i, j := range s.Vars {
			delta[i] = 0.01
			if j == hot {
				delta[i] = 10
			}
		}
		d.Feedback(s.Vars, delta)
		if r >= c.Warmup {
			for _, j := range s.Vars {
				counts[j]++
			}
		}
	}
	coldMax := 0
	for j, n := range counts {
		if j != hot {
			coldMax = max(coldMax, n)
		}
	}
	if counts[hot] < rounds*99/100 || counts[hot] < 10*coldMax {
		t.Fatalf("hot variable selected in %d of %d rounds, a cold one up to %d times", counts[hot], rounds, coldMax)
	}
}

// TestPriorityEtaNoStarvation checks that with Eta > 0 every variable keeps a
// chance even when a few have huge weights.
func TestPriorityEtaNoStarvation(t *testing.T) {
	c := Config{Vars: 60, Policy: Priority, Gamma: 2, Eta: 1e-3, Candidates: 6, Block: 6, Rho: 1, Workers: 1, Seed: 5}
	d := mustDynamic(t, c, nil)
	hot := []int32{0, 1, 2, 3}
	d.Feedback(hot, []float64{100, 100, 100, 100})
	counts := make([]int, c.Vars)
	for range 1000 {
		for _, j := range next(d).Vars {
			counts[j]++
		}
	}
	for j, n := range counts {
		if n == 0 {
			t.Errorf("variable %d never selected", j)
		}
		if j < len(hot) && n != 1000 {
			t.Errorf("hot variable %d selected %d times, want every round", j, n)
		}
	}
}

// TestPriorityZeroWeights checks that with all weights 0 Priority draws
// uniformly, and that it fills a round uniformly once the positive weights
// are used up.
func TestPriorityZeroWeights(t *testing.T) {
	c := Config{Vars: 30, Policy: Priority, Gamma: 2, Candidates: 5, Block: 5, Rho: 1, Workers: 1, Seed: 8}
	d := mustDynamic(t, c, nil)
	counts := make([]int, c.Vars)
	for range 600 {
		for _, j := range next(d).Vars {
			counts[j]++
		}
	}
	for j, n := range counts {
		if n < 50 || n > 150 { // about 100 each
			t.Errorf("with zero weights variable %d selected %d times, want about 100", j, n)
		}
	}
	d.Feedback([]int32{4, 9}, []float64{1, -2})
	for range 50 {
		s := next(d)
		if len(s.Vars) != 5 || !slices.Contains(s.Vars, 4) || !slices.Contains(s.Vars, 9) {
			t.Fatalf("selection %v, want 5 variables including 4 and 9", s.Vars)
		}
		if i := slices.Index(s.Vars, 9); i > 1 {
			t.Fatalf("selection %v: the weighted variables should be drawn first", s.Vars)
		}
	}
}

// TestWarmupSweep checks that the warm-up walks a random permutation: one
// sweep updates every variable exactly once.
func TestWarmupSweep(t *testing.T) {
	tests := []struct {
		vars, cand, block int
	}{
		{100, 8, 8},  // ceil(100/8) = 13 rounds
		{100, 16, 5}, // ceil(100/5) = 20 rounds
		{7, 3, 3},
	}
	for _, tt := range tests {
		rounds := (tt.vars + tt.block - 1) / tt.block
		c := Config{Vars: tt.vars, Policy: Priority, Gamma: 2, Candidates: tt.cand, Block: tt.block, Warmup: rounds, Rho: 1, Workers: 2, Seed: 4}
		d := mustDynamic(t, c, nil)
		var got []int32
		for range rounds {
			got = append(got, next(d).Vars...)
		}
		if slices.IsSorted(got) {
			t.Errorf("%+v: the warm-up walked the variables in index order", tt)
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if len(got) != tt.vars {
			t.Errorf("%+v: warm-up of %d rounds updated %d distinct variables, want %d", tt, rounds, len(got), tt.vars)
		}
	}
}

// TestWarmupWithDependence checks that the warm-up carries rejected
// candidates over, so that it still reaches every variable.
func TestWarmupWithDependence(t *testing.T) {
	c := Config{Vars: 40, Policy: Priority, Gamma: 2, Candidates: 8, Block: 4, Warmup: 1000, Rho: 0.5, Workers: 2, Seed: 2}
	d := mustDynamic(t, c, chainColumns(2))
	seen := make(map[int32]bool)
	for range 2 * (c.Vars/c.Block + c.Candidates) {
		s := next(d)
		checkSelection(t, s, c, chainColumns(2))
		for _, j := range s.Vars {
			seen[j] = true
		}
	}
	if len(seen) != c.Vars {
		t.Fatalf("warm-up updated %d of %d variables", len(seen), c.Vars)
	}
}

// TestWarmupFeedbackRecorded checks that feedback given during the warm-up
// counts once priorities switch on.
func TestWarmupFeedbackRecorded(t *testing.T) {
	c := Config{Vars: 50, Policy: Priority, Gamma: 2, Eta: 1e-6, Candidates: 2, Block: 2, Warmup: 3, Rho: 1, Workers: 1, Seed: 6}
	d := mustDynamic(t, c, nil)
	for range c.Warmup {
		s := next(d)
		delta := make([]float64, len(s.Vars))
		for i := range delta {
			delta[i] = 1e-3
		}
		d.Feedback(s.Vars, delta)
	}
	d.Feedback([]int32{33, 44}, []float64{5, -5}) // the last warm-up feedback
	for r := range 20 {
		s := next(d)
		d.Feedback([]int32{33, 44}, []float64{5, -5}) // they keep moving
		slices.Sort(s.Vars)
		if !slices.Equal(s.Vars, []int32{33, 44}) {
			t.Fatalf("round %d after warm-up: %v, want [33 44]", r, s.Vars)
		}
	}
}

func TestBlocksBalanced(t *testing.T) {
	tests := []struct {
		workers int
		cost    func(j int) float64
	}{
		{1, nil},
		{3, nil},
		{4, func(j int) float64 { return float64(j%17) + 1 }},
		{5, func(j int) float64 { return float64(j * j % 101) }},
		{8, func(j int) float64 {
			if j%10 == 0 {
				return 1000
			}
			return 1
		}},
		{70, func(j int) float64 { return float64(j) }}, // more workers than variables
	}
	for _, tt := range tests {
		cols := fakeColumns{cost: tt.cost}
		c := Config{Vars: 200, Policy: Random, Candidates: 64, Block: 64, Rho: 0.5, Workers: tt.workers, Seed: uint64(tt.workers)}
		d := mustDynamic(t, c, cols)
		for range 30 {
			checkBlocks(t, next(d), tt.workers, cols)
		}
	}
}

func TestBlocksGreedyOrder(t *testing.T) {
	cost := []float64{5, 3, 3, 2, 1, 1, 4}
	cols := fakeColumns{cost: func(j int) float64 { return cost[j] }}
	c := Config{Vars: len(cost), Policy: Cyclic, Candidates: len(cost), Block: len(cost), Rho: 1, Workers: 3}
	d := mustDynamic(t, c, cols)
	// Heaviest first: 0(5)→b0, 6(4)→b1, 1(3)→b2, 2(3)→b2, 3(2)→b1, 4(1)→b0,
	// 5(1)→b0; each block keeps acceptance order.
	want := [][]int32{{0, 4, 5}, {3, 6}, {1, 2}}
	if got := next(d).Blocks; !reflect.DeepEqual(got, want) {
		t.Fatalf("blocks %v, want %v", got, want)
	}
}

func TestSelectionOwnedByCaller(t *testing.T) {
	c := Config{Vars: 20, Policy: Random, Candidates: 4, Block: 4, Rho: 1, Workers: 2, Seed: 1}
	d := mustDynamic(t, c, nil)
	s := next(d)
	vars := slices.Clone(s.Vars)
	blocks := [][]int32{slices.Clone(s.Blocks[0]), slices.Clone(s.Blocks[1])}
	s.Blocks[0] = append(s.Blocks[0], 99) // must not clobber block 1
	for range 5 {
		next(d)
	}
	if !slices.Equal(s.Vars, vars) || !slices.Equal(s.Blocks[1], blocks[1]) {
		t.Fatal("a later round or an append changed an earlier selection")
	}
}

func TestFeedbackPanics(t *testing.T) {
	d := mustDynamic(t, validConfig(), fakeColumns{})
	tests := []struct {
		name  string
		vars  []int32
		delta []float64
	}{
		{"lengths differ", []int32{1, 2}, []float64{1}},
		{"negative variable", []int32{-1}, []float64{1}},
		{"variable out of range", []int32{100}, []float64{1}},
		{"NaN delta", []int32{3}, []float64{math.NaN()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			d.Feedback(tt.vars, tt.delta)
		})
	}
	// Huge and infinite deltas are capped, not fatal.
	d.Feedback([]int32{1, 2}, []float64{math.Inf(-1), 1e300})
	checkSelection(t, next(d), validConfig(), fakeColumns{})
}

func BenchmarkNext(b *testing.B) {
	const rows, vars, density = 2000, 20000, 0.01
	rng := rand.New(rand.NewPCG(1, 2))
	var bld sparse.Builder
	for range rows {
		var idx []int32
		var val []float64
		for j := range vars {
			if rng.Float64() < density {
				idx = append(idx, int32(j))
				val = append(val, rng.NormFloat64())
			}
		}
		bld.AddRow(idx, val)
	}
	cols := NewSparseColumns(bld.Build(vars), true)
	for _, p := range []Policy{Priority, Random, Cyclic} {
		b.Run(p.String(), func(b *testing.B) {
			c := Config{Vars: vars, Policy: p, Gamma: 2, Eta: 1e-6, Candidates: 128, Block: 64, Rho: 0.1, Workers: 8, Seed: 1}
			d := mustDynamic(b, c, cols)
			delta := make([]float64, 0, c.Block)
			for i := range b.N {
				s := next(d)
				delta = delta[:0]
				for range s.Vars {
					delta = append(delta, float64(i%7)*rng.Float64())
				}
				d.Feedback(s.Vars, delta)
			}
		})
	}
}

// next runs a round of d as if it were fed back at once without changing any
// weight: the variables it selects are not busy afterwards.
func next(d *Dynamic) Selection {
	s := d.Next()
	for _, j := range s.Vars {
		d.release(j)
	}
	return s
}

// TestPipelinedNeverBusy plans with depth rounds in flight, feeding each
// round back only depth rounds later (DESIGN "Pipelining"), and checks that no
// variable is ever selected while one of its rounds is in flight, and that
// every policy still reaches every variable. A candidate dependent on a
// variable in flight is rejected too, so that a round may select nothing.
func TestPipelinedNeverBusy(t *testing.T) {
	for _, policy := range []Policy{Priority, Random, Cyclic} {
		for _, depth := range []int{1, 2, 4, 8} {
			t.Run(fmt.Sprintf("%v/depth=%d", policy, depth), func(t *testing.T) {
				c := Config{Vars: 300, Policy: policy, Gamma: 2, Eta: 1e-3, Candidates: 10, Block: 5, Warmup: 70, Rho: 0.5, Workers: 2, Seed: 4}
				cols := chainColumns(2)
				d := mustDynamic(t, c, cols)
				inFlight := map[int32]int{} // variable → round
				var rounds [][]int32
				seen := map[int32]bool{}
				empty := 0
				for r := range 400 {
					if len(rounds) == depth {
						done := rounds[0]
						rounds = rounds[1:]
						delta := make([]float64, len(done))
						for k, j := range done {
							delta[k] = float64(j%7) * 0.1
							delete(inFlight, j)
						}
						d.Feedback(done, delta)
					}
					s := d.Next()
					if depth == 1 {
						checkSelection(t, s, c, cols)
					}
					if len(s.Vars) == 0 {
						empty++
					}
					for _, j := range s.Vars {
						if q, ok := inFlight[j]; ok {
							t.Fatalf("round %d selected %d, still in flight in round %d", r, j, q)
						}
						for k := range inFlight {
							if dep := cols.Dependence(int(j), int(k)); dep >= c.Rho {
								t.Fatalf("round %d selected %d, dependent (%v) on %d in flight", r, j, dep, k)
							}
						}
					}
					for _, j := range s.Vars {
						inFlight[j] = r
						seen[j] = true
					}
					rounds = append(rounds, s.Vars)
				}
				if len(seen) != c.Vars {
					t.Errorf("reached %d of %d variables", len(seen), c.Vars)
				}
				if empty > 400/10 {
					t.Errorf("%d of 400 rounds selected nothing", empty)
				}
			})
		}
	}
}
