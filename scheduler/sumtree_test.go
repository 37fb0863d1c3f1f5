package scheduler

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkSums fails unless every internal node is exactly the sum of its
// children and the padding leaves are 0.
func checkSums(t *testing.T, tr *sumTree) {
	t.Helper()
	for p := 1; p < tr.size; p++ {
		if tr.node[p] != tr.node[2*p]+tr.node[2*p+1] {
			t.Fatalf("node %d = %v, children sum to %v", p, tr.node[p], tr.node[2*p]+tr.node[2*p+1])
		}
	}
	for i := tr.n; i < tr.size; i++ {
		if tr.node[tr.size+i] != 0 {
			t.Fatalf("padding leaf %d = %v", i, tr.node[tr.size+i])
		}
	}
}

func TestSumTreeSetAndTotal(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8, 13, 100} {
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		tr := newSumTree(n)
		if tr.size < n || tr.size&(tr.size-1) != 0 {
			t.Fatalf("n=%d: size %d", n, tr.size)
		}
		want := make([]float64, n)
		for range 5 * n {
			i := rng.IntN(n)
			want[i] = rng.Float64() * 10
			tr.set(i, want[i])
		}
		checkSums(t, tr)
		var sum float64
		for i, w := range want {
			if got := tr.weight(i); got != w {
				t.Fatalf("n=%d: weight(%d) = %v, want %v", n, i, got, w)
			}
			sum += w
		}
		if math.Abs(tr.total()-sum) > 1e-12*sum {
			t.Fatalf("n=%d: total %v, want %v", n, tr.total(), sum)
		}
		tr.fill(0.5)
		checkSums(t, tr)
		if tr.total() != 0.5*float64(n) {
			t.Fatalf("n=%d: total after fill %v", n, tr.total())
		}
	}
}

// TestSumTreeRestoreExact checks that zeroing leaves and setting them back,
// in any order, restores every node bit for bit.
func TestSumTreeRestoreExact(t *testing.T) {
	const n = 37
	rng := rand.New(rand.NewPCG(7, 1))
	tr := newSumTree(n)
	for i := range n {
		tr.set(i, rng.Float64()*1e3+rng.Float64()*1e-9)
	}
	before := slices.Clone(tr.node)
	leaves := rng.Perm(n)[:20]
	saved := make([]float64, len(leaves))
	for k, i := range leaves {
		saved[k] = tr.weight(i)
		tr.set(i, 0)
	}
	for k := len(leaves) - 1; k >= 0; k-- {
		if k%2 == 0 {
			tr.set(leaves[k], saved[k])
		}
	}
	for k := range leaves {
		if k%2 == 1 {
			tr.set(leaves[k], saved[k])
		}
	}
	if !slices.Equal(tr.node, before) {
		t.Fatal("tree differs after restoring the zeroed leaves")
	}
	for i := range n {
		tr.set(i, 0)
	}
	if tr.total() != 0 {
		t.Fatalf("total %v after zeroing every leaf, want exactly 0", tr.total())
	}
}

func TestSumTreeFind(t *testing.T) {
	tests := []struct {
		weights []float64
		u       float64
		want    int
	}{
		{[]float64{1, 0, 2, 3}, 0, 0},
		{[]float64{1, 0, 2, 3}, 0.999, 0},
		{[]float64{1, 0, 2, 3}, 1, 2}, // leaf 1 has weight 0
		{[]float64{1, 0, 2, 3}, 2.5, 2},
		{[]float64{1, 0, 2, 3}, 3, 3},
		{[]float64{1, 0, 2, 3}, 5.999, 3},
		{[]float64{1, 0, 2, 3}, 6, 3},    // past the end: last positive leaf
		{[]float64{1, 0, 2, 3}, 100, 3},  // far past the end
		{[]float64{1, 0, 2, 3}, -1, 0},   // before the start
		{[]float64{1, 2, 0, 0, 0}, 9, 1}, // zero padding never chosen
		{[]float64{0, 0, 5}, 0, 2},
		{[]float64{0, 0, 5}, 4.9, 2},
		{[]float64{7}, 3, 0},
		{[]float64{0, 0, 0}, 0, -1},
	}
	for _, tt := range tests {
		tr := newSumTree(len(tt.weights))
		for i, w := range tt.weights {
			tr.set(i, w)
		}
		if got := tr.find(tt.u); got != tt.want {
			t.Errorf("weights %v: find(%v) = %d, want %d", tt.weights, tt.u, got, tt.want)
		}
	}
}

// TestSumTreeFrequencies draws many leaves and compares their frequencies with
// the weights by a chi-square statistic.
func TestSumTreeFrequencies(t *testing.T) {
	weights := []float64{1, 2, 3, 4, 0, 5, 0.5, 10, 2.5, 1} // 9 positive leaves
	const draws = 200000
	tr := newSumTree(len(weights))
	for i, w := range weights {
		tr.set(i, w)
	}
	rng := rand.New(rand.NewPCG(42, 1))
	counts := make([]int, len(weights))
	for range draws {
		counts[tr.find(rng.Float64()*tr.total())]++
	}
	var chi2 float64
	for i, w := range weights {
		if w == 0 {
			if counts[i] != 0 {
				t.Fatalf("leaf %d of weight 0 drawn %d times", i, counts[i])
			}
			continue
		}
		exp := draws * w / tr.total()
		d := float64(counts[i]) - exp
		chi2 += d * d / exp
	}
	// The 0.999 quantile of chi-square with 8 degrees of freedom is 26.12.
	if chi2 > 26.12 {
		t.Fatalf("chi-square %.2f > 26.12; counts %v", chi2, counts)
	}
}

func TestSumTreePanics(t *testing.T) {
	tests := []struct {
		name string
		f    func()
	}{
		{"no leaves", func() { newSumTree(0) }},
		{"negative weight", func() { newSumTree(3).set(0, -1) }},
		{"NaN weight", func() { newSumTree(3).set(0, math.NaN()) }},
		{"infinite weight", func() { newSumTree(3).set(0, math.Inf(1)) }},
		{"leaf past the end", func() { newSumTree(3).set(3, 1) }},
		{"padding leaf", func() { newSumTree(3).weight(3) }},
		{"negative leaf", func() { newSumTree(3).weight(-1) }},
		{"negative fill", func() { newSumTree(3).fill(-1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tt.f()
		})
	}
}
