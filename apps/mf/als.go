package mf

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// GramPartial, the R of ALS, is a worker's share of every item's normal
// equations after it solved its users' rows of W: for each item i of Items
// (ascending, those its users rated), the upper triangle of Σ_u y_u y_uᵀ,
// row by row, in Gram, and Σ_u t_ui·y_u in Rhs, over its users u who rated
// i, with y_u = (w_u, 1) and t_ui = r_ui − μ − b_u (y_u = w_u and t_ui =
// r_ui without biases).
type GramPartial struct {
	Items codec.Int32s   `msgpack:"i"`
	Gram  codec.Float64s `msgpack:"g"`
	Rhs   codec.Float64s `msgpack:"r"`
	Stats
}

// ALSProgram returns alternating least squares: round r solves, on every
// worker, each of its users' rows (w_u, b_u) exactly given H and the item
// biases, and then, on the coordinator, each item's row (h_i, c_i) exactly
// given the new W and user biases, from the normal equations the workers
// push; all of H travels to every worker after each round (a broadcast of
// items·(K+1) numbers), and W never leaves its worker.
func ALSProgram(cfg Config) schmp.Program[scheduler.Turn, GramPartial, FullUpdate, Summary] {
	return program(cfg, "ALSProgram", steps(cfg),
		func(p int) (schmp.Worker[scheduler.Turn, GramPartial, FullUpdate, Summary], error) {
			return newALSWorker(cfg, p)
		},
		func(b base) schmp.Coordinator[scheduler.Turn, GramPartial, FullUpdate, Summary] {
			return &alsCoordinator{base: b}
		})
}

// dim returns the size of ALS's systems: K, and 1 more for the bias.
func (c Config) dim() int {
	if c.biased() {
		return c.Rank + 1
	}
	return c.Rank
}

// tri returns the length of the packed upper triangle of a d×d matrix.
func tri(d int) int { return d * (d + 1) / 2 }

// solver solves d×d positive definite systems A x = b with gonum's
// Cholesky factorization, reusing its storage.
type solver struct {
	d    int
	a    *mat.SymDense
	chol mat.Cholesky
	x    *mat.VecDense
	b    *mat.VecDense
}

func newSolver(d int) *solver {
	return &solver{d: d, a: mat.NewSymDense(d, nil), x: mat.NewVecDense(d, nil), b: mat.NewVecDense(d, nil)}
}

// solve sets x to the solution of A x = rhs, A given by its packed upper
// triangle g plus reg on the diagonal's first k entries and regB on the
// rest (the bias's), and reports whether A was positive definite.
func (s *solver) solve(x, g, rhs []float64, k int, reg, regB float64) bool {
	d, j := s.d, 0
	for r := range d {
		for c := r; c < d; c++ {
			v := g[j]
			if r == c {
				if r < k {
					v += reg
				} else {
					v += regB
				}
			}
			s.a.SetSym(r, c, v)
			j++
		}
		s.b.SetVec(r, rhs[r])
	}
	if !s.chol.Factorize(s.a) {
		return false
	}
	if err := s.chol.SolveVecTo(s.x, s.b); err != nil {
		return false
	}
	for r := range d {
		x[r] = s.x.AtVec(r)
	}
	return true
}

// addOuter adds y yᵀ to the packed upper triangle g and t·y to rhs.
func addOuter(g, rhs, y []float64, t float64) {
	j := 0
	for r, yr := range y {
		for _, yc := range y[r:] {
			g[j] += yr * yc
			j++
		}
		rhs[r] += t * yr
	}
}

// alsWorker is worker p of ALS: its users' ratings (grouped by user), W
// and the user biases, and a copy of H and the item biases.
type alsWorker struct {
	*shard
	fullH
	w      []float64
	byUser []int   // the ratings of user u are train's [byUser[u], byUser[u+1])
	items  []int32 // the items its users rated, ascending
	slot   []int32 // slot[i]: item i's place in items
	sol    *solver
}

func newALSWorker(cfg Config, p int) (*alsWorker, error) {
	s, err := loadShard(cfg, p)
	if err != nil {
		return nil, err
	}
	w := &alsWorker{shard: s, fullH: s.newFullH(cfg.Rank), w: s.initUsers(cfg.Rank), sol: newSolver(cfg.dim())}
	if s.ix.Blocks != 1 {
		return nil, fmt.Errorf("worker %d: the ratings are cut into %d blocks, want 1", p, s.ix.Blocks)
	}
	w.byUser = s.train.block(0).start
	rated := make([]bool, len(s.ix.ItemIDs))
	for _, i := range s.train.item {
		rated[i] = true
	}
	w.slot = make([]int32, len(s.ix.ItemIDs))
	for i, ok := range rated {
		if ok {
			w.slot[i] = int32(len(w.items))
			w.items = append(w.items, int32(i))
		}
	}
	return w, nil
}

// Describe implements schmp.Worker.
func (w *alsWorker) Describe() (Summary, error) { return w.describe(), nil }

// Apply implements schmp.Worker: all of H and the item biases.
func (w *alsWorker) Apply(u FullUpdate) error {
	if err := w.apply(u, len(w.ix.ItemIDs)); err != nil {
		return err
	}
	if u.Round == 0 {
		return w.warmApply(w.bs, w.w, w.h, u.FoldBias)
	}
	return nil
}

// Push implements schmp.Worker: it solves its users' rows, then sums its
// share of the items' normal equations.
func (w *alsWorker) Push(_ context.Context, _ uint64, turn scheduler.Turn) (GramPartial, error) {
	t0 := time.Now()
	if !w.started || turn.SubRound != w.round {
		return GramPartial{}, fmt.Errorf("round %d on the state after round %d (ALS needs --depth 1)", turn.SubRound+1, w.round)
	}
	k, d := w.cfg.Rank, w.cfg.dim()
	g, rhs, y, x := make([]float64, tri(d)), make([]float64, d), make([]float64, d), make([]float64, d)
	if d > k {
		y[k] = 1
	}
	for u := range w.users {
		clear(g)
		clear(rhs)
		for j := w.byUser[u]; j < w.byUser[u+1]; j++ {
			i := w.train.item[j]
			copy(y, w.h[int(i)*k:int(i+1)*k])
			t := w.train.value[j]
			if w.bs.on() {
				t -= w.mu + w.bs.c[i]
			}
			addOuter(g, rhs, y, t)
		}
		n := w.ix.UserCount[w.p][u]
		if !w.sol.solve(x, g, rhs, k, w.cfg.Lambda*w.cfg.weight(n), w.cfg.BiasLambda) {
			return GramPartial{}, fmt.Errorf("user %d: its least-squares system is not positive definite", w.users[u])
		}
		copy(w.w[u*k:(u+1)*k], x[:k])
		if w.bs.on() {
			w.bs.b[u] = x[k]
		}
	}
	gram := make(codec.Float64s, len(w.items)*tri(d))
	sums := make(codec.Float64s, len(w.items)*d)
	for u := range w.users {
		copy(y, w.w[u*k:(u+1)*k])
		for j := w.byUser[u]; j < w.byUser[u+1]; j++ {
			t := w.train.value[j]
			if w.bs.on() {
				t -= w.mu + w.bs.b[u]
			}
			j := int(w.slot[w.train.item[j]])
			addOuter(gram[j*tri(d):(j+1)*tri(d)], sums[j*d:(j+1)*d], y, t)
		}
	}
	return GramPartial{Items: w.items, Gram: gram, Rhs: sums, Stats: Stats{Work: float64(w.train.len()), Nanos: time.Since(t0).Nanoseconds()}}, nil
}

// Report implements schmp.Worker: every state is evaluated. Worker 0
// answers for H and the item biases.
func (w *alsWorker) Report() (Summary, error) {
	if !w.started {
		return Summary{}, errNotStarted
	}
	k := w.cfg.Rank
	s := Summary{Round: w.round, Exact: true, SSE: trainSSE(&w.train, w.w, w.h, w.bs, k), TestSSE: sse(w.test, w.w, w.h, w.bs, k),
		ValSSE: sse(w.val, w.w, w.h, w.bs, k)}
	hi := 0
	if w.p == 0 {
		hi = len(w.ix.ItemIDs)
	}
	w.norms(&s, w.w, w.h, w.bs, 0, hi)
	if w.factors {
		// Copies: the runtime may encode the report after the next Push.
		s.W, s.B = slices.Clone(w.w), slices.Clone(w.bs.b)
	}
	if w.round == 0 {
		w.foldReport(&s, w.factors)
	}
	return s, nil
}

// alsCoordinator sums the workers' normal equations and solves every
// item's row of H and bias.
type alsCoordinator struct {
	base
	h, c      []float64 // c is nil without biases
	itemCount []int32
	sol       *solver
}

// Start implements schmp.Coordinator.
func (c *alsCoordinator) Start(sums []Summary) (FullUpdate, error) {
	if err := c.start(sums); err != nil {
		return FullUpdate{}, err
	}
	if c.itemCount = sums[0].ItemCount; len(c.itemCount) != len(c.m.ItemIDs) {
		return FullUpdate{}, fmt.Errorf("worker 0 sent %d item counts for %d items", len(c.itemCount), len(c.m.ItemIDs))
	}
	var err error
	if c.h, c.c, err = c.initItems(sums); err != nil {
		return FullUpdate{}, err
	}
	c.sol = newSolver(c.cfg.dim())
	return FullUpdate{Factors: c.reportFactors(), H: slices.Clone(c.h), C: slices.Clone(c.c), FoldBias: slices.Clone(c.foldC)}, nil
}

// Pull implements schmp.Coordinator.
func (c *alsCoordinator) Pull(round uint64, _ scheduler.Turn, partials []GramPartial) (FullUpdate, schmp.Feedback, error) {
	k, d, n := c.cfg.Rank, c.cfg.dim(), len(c.m.ItemIDs)
	gram, rhs := make([]float64, n*tri(d)), make([]float64, n*d)
	for p, part := range partials {
		if len(part.Gram) != len(part.Items)*tri(d) || len(part.Rhs) != len(part.Items)*d {
			return FullUpdate{}, schmp.Feedback{}, fmt.Errorf("worker %d sent %d items, %d Gram values and %d sums", p, len(part.Items), len(part.Gram), len(part.Rhs))
		}
		for j, i := range part.Items {
			if i < 0 || int(i) >= n {
				return FullUpdate{}, schmp.Feedback{}, fmt.Errorf("worker %d sent item %d of %d", p, i, n)
			}
			g := gram[int(i)*tri(d) : int(i+1)*tri(d)]
			for t, v := range part.Gram[j*tri(d) : (j+1)*tri(d)] {
				g[t] += v
			}
			r := rhs[int(i)*d : int(i+1)*d]
			for t, v := range part.Rhs[j*d : (j+1)*d] {
				r[t] += v
			}
		}
		c.account(part.Stats)
	}
	x := make([]float64, d)
	for i := range n {
		if !c.sol.solve(x, gram[i*tri(d):(i+1)*tri(d)], rhs[i*d:(i+1)*d], k, c.cfg.Lambda*c.cfg.weight(c.itemCount[i]), c.cfg.BiasLambda) {
			return FullUpdate{}, schmp.Feedback{}, fmt.Errorf("item %d: its least-squares system is not positive definite", c.m.ItemIDs[i])
		}
		copy(c.h[i*k:(i+1)*k], x[:k])
		if c.c != nil {
			c.c[i] = x[k]
		}
	}
	c.pulled = round
	return FullUpdate{Round: round, H: slices.Clone(c.h), C: slices.Clone(c.c)}, schmp.Feedback{Vars: codec.Int32s{0}, Delta: codec.Float64s{0}}, nil
}

// Objective implements schmp.Coordinator.
func (c *alsCoordinator) Objective(reports []Summary) (schmp.Progress, error) {
	return c.evaluate(reports, func() ([]float64, []float64) { return c.h, c.c })
}

// WriteModel implements schmp.Coordinator.
func (c *alsCoordinator) WriteModel(w io.Writer) error { return c.writeModel(w) }
