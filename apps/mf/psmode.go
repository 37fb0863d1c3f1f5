package mf

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/floats"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// DefaultClocksPerIter is PSOptions.ClocksPerIter's default: at 4 clocks
// an iteration, ssp with s = 1 ended some runs far above bsp's test RMSE
// (docs/mf.md), at 8 and 10 none.
const DefaultClocksPerIter = 10

// PSOptions configure RunPS beyond its Config.
type PSOptions struct {
	// Staleness is s of SSP and ESSP: a worker reads item rows at most s
	// clocks stale (0 with BSP; Async has no bound).
	Staleness int
	// ClocksPerIter cuts an iteration, a pass over every worker's ratings,
	// into this many clocks (0: DefaultClocksPerIter), each over a
	// contiguous range of the worker's users: the workers exchange their
	// changes of H that often.
	ClocksPerIter int
	// SlowWorker, above 1, makes worker 0 take that many times as long
	// per clock, by sleeping (SlowWorker−1)× its compute time after each:
	// for experiments with a straggler.
	SlowWorker float64
	// SlowTurns makes the slow worker a different one at every clock,
	// worker c mod Workers at clock c: a straggler that comes and goes,
	// the case that SSP's slack absorbs and BSP waits for every time.
	SlowTurns bool
	// Servers is the number of server nodes (0: one per worker).
	Servers int
	// CheckpointEvery takes a checkpoint at the start of every
	// CheckpointEvery-th clock (0: none), with Node.Checkpoints: the
	// tables as of that clock (ps.Config.Every) and each worker's W and
	// user biases. Node.Resume starts the job again from the last one.
	CheckpointEvery int
	// Tol stops the job once the objective changes by less than Tol,
	// relatively, between two evaluations (0: off); TimeLimit once a
	// worker has run that long at an evaluation (0: off).
	Tol       float64
	TimeLimit time.Duration
	// Node is the nodes' waits.
	Node node.Options
	// Progress, if set, gets a line per evaluation, from worker 0 once it
	// has read the evaluation (see RunPS), and Report the evaluation and
	// the staleness of the reads so far.
	Progress io.Writer
	Report   func(Eval, ps.Stats)

	// atStart and atClock, if set, are called by each worker as it starts
	// its SGD clocks, and at the start of each, whose error it returns:
	// for tests.
	atStart func(c int)
	atClock func(c int) error
}

// PSResult is the end of a job of RunPS.
type PSResult struct {
	// Model holds the ids, the factors and biases written (the state after
	// the last clock) and the evaluations; the last of Trace is that
	// state's, computed from the factors it holds.
	Model *Model
	// Clocks is the number of SGD clocks run; Reason says why the job
	// stopped there: "max-iterations", or schmp.StopConverged (Tol) or
	// StopTimeLimit, as the scheduled job's result says (its Why).
	Clocks int
	Reason string
	// Staleness holds the staleness of all the workers' reads of H until
	// each evaluation of Model.Trace.
	Staleness []ps.Stats

	b base
}

// Outputs returns the model's files as the scheduled job writes them
// (PREFIX.W.txt, PREFIX.H.txt, PREFIX.bias.txt, PREFIX.json, and the
// predictions of Config.Predict): see base.Outputs.
func (r *PSResult) Outputs(out string) ([]schmp.Output, error) { return r.b.Outputs(out) }

// The tables of a job of RunPS.
const (
	// tabSetup (BSP, clock 0): rows 0..I−1 the warm start's item sums
	// (shard.warmStart), row I the workers' fingerprints.
	tabSetup = iota
	// tabItems (the job's model): H and the item biases less their start,
	// a row per item.
	tabItems
	// tabMetrics: a row per evaluation and a last for the final state,
	// each worker's figures in a block of metricFields columns.
	tabMetrics
	// tabUsers (BSP, the last clock): W and the user biases, a row per user
	// (worker by worker, in index order).
	tabUsers
)

// The columns of a worker's block of a row of tabMetrics.
const (
	mSSE = iota
	mTestSSE
	mWNorm
	mHNorm
	mBNorm
	mCNorm
	mTrain
	mTest
	mUnseen
	mWork    // ratings processed so far
	mSeconds // compute time so far
	mElapsed // time since the worker started
	mReads   // the staleness of its reads of H so far (ps.Stats)
	mStaleSum
	mStaleSumSq
	mStaleMax
	mClocks // in the final row: the clocks run
	metricFields
)

// riseFactor: an objective above riseFactor times the lowest so far fails
// the job as diverged, before it stops being finite. (Stale reads raised it
// by 0.2% between two evaluations in the tests seen; a diverging step
// size multiplies it.)
const riseFactor = 10

// fingerprintBits of the Index's fingerprint go through tabSetup, summed
// exactly in a float64 over up to 2^12 workers.
const fingerprintBits = 1<<20 - 1

// psPlan is what every node of a job of RunPS derives from the Config and
// the Index alone.
type psPlan struct {
	cfg      Config
	o        PSOptions
	ps       ps.Config
	items    int
	width    int // of H's rows: Rank, and the item bias with biases
	cpi      int // clocks per iteration
	evals    int // regular evaluations: rows 0..evals−1 of tabMetrics
	lag      int // clocks from an evaluation to its reading (see RunPS)
	maxClock int // the last SGD clock is maxClock−1
	userOff  []int
}

// newPSPlan returns the plan of cfg for the Index ix.
func newPSPlan(cfg Config, o PSOptions, ix *Index) (*psPlan, error) {
	model, err := ps.ParseModel(cfg.Mode)
	if err != nil {
		return nil, err
	}
	p := &psPlan{cfg: cfg, o: o, items: len(ix.ItemIDs), width: cfg.Rank, cpi: cmp.Or(max(o.ClocksPerIter, 0), DefaultClocksPerIter)}
	if cfg.biased() {
		p.width++
	}
	re := cfg.ReportEvery
	p.evals = (cfg.Iters + re - 1) / re
	p.maxClock = 1 + cfg.Iters*p.cpi
	// A worker reads evaluation k, made at the start of clock c_k, at
	// clock c_k + lag: complete (every worker's clock c_k is in) without
	// waiting more than the item table's bound makes it wait anyway; with
	// Async, at the next evaluation.
	switch model {
	case ps.Async:
		p.lag = min(re*p.cpi, ps.MaxAhead)
	default:
		p.lag = o.Staleness + 1
	}
	metrics := ps.Table{Name: "metrics", Rows: p.evals + 1, Width: metricFields * cfg.Workers}
	if p.lag > 1 {
		metrics.Model, metrics.Staleness = ps.SSP, p.lag-1
	}
	users := 0
	p.userOff = make([]int, cfg.Workers+1)
	for w, ids := range ix.ShardUsers {
		p.userOff[w] = users
		users += len(ids)
	}
	p.userOff[cfg.Workers] = users
	servers := o.Servers
	if servers < 1 {
		servers = cfg.Workers
	}
	p.ps = ps.Config{Servers: servers, Workers: cfg.Workers, Every: max(o.CheckpointEvery, 0), Tables: []ps.Table{
		tabSetup:   {Name: "setup", Rows: p.items + 1, Width: 1},
		tabItems:   {Name: "items", Rows: p.items, Width: p.width, Model: model, Staleness: o.Staleness},
		tabMetrics: metrics,
		tabUsers:   {Name: "users", Rows: max(users, 1), Width: p.width},
	}}
	if err := p.ps.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// evalClock returns the clock at whose start evaluation k is made.
func (p *psPlan) evalClock(k int) int { return 1 + k*p.cfg.ReportEvery*p.cpi }

// start returns H's start (row by row, Rank wide) and the item biases'
// (nil without biases) from the setup table's sums.
func (p *psPlan) start(ix *Index, setup func(i int) float64) (h0, c0 []float64) {
	h0 = initItems(ix.ItemIDs, p.cfg.Seed, ix.Mean, ix.Std, p.cfg.Rank, p.cfg.biased())
	if !p.cfg.biased() {
		return h0, nil
	}
	c0 = make([]float64, p.items)
	if p.cfg.warm() {
		for i, n := range ix.ItemCount {
			c0[i] = setup(i) / (float64(n) + p.cfg.BiasLambda)
		}
	}
	return h0, c0
}

// eval returns the evaluation of a row of tabMetrics (the workers' blocks)
// and the staleness of their reads.
func (p *psPlan) eval(row []float64) (Eval, ps.Stats) {
	sums := make([]Summary, p.cfg.Workers)
	var train, test int
	var work, secs, elapsed float64
	var st ps.Stats
	for w := range sums {
		v := row[w*metricFields : (w+1)*metricFields]
		sums[w] = Summary{SSE: v[mSSE], TestSSE: v[mTestSSE], WNorm: v[mWNorm], HNorm: v[mHNorm], BNorm: v[mBNorm], CNorm: v[mCNorm]}
		train += int(v[mTrain])
		test += int(v[mTest])
		work += v[mWork]
		secs += v[mSeconds]
		elapsed = max(elapsed, v[mElapsed])
		st = st.Add(ps.Stats{Reads: int64(v[mReads]), Sum: v[mStaleSum], SumSq: v[mStaleSumSq], Max: int(v[mStaleMax])})
	}
	e := p.cfg.figures(sums, train, test, 0)
	e.Time = time.Duration(elapsed * 1e9)
	e.Ratings = work
	if elapsed > 0 {
		e.RatingsPerSec = work / elapsed
	}
	if secs > 0 {
		e.RatingsPerCoreSec = work / secs
	}
	return e, st
}

// progress writes evaluation e's line.
func (p *psPlan) progress(e Eval, st ps.Stats) {
	if p.o.Progress == nil {
		return
	}
	fmt.Fprintf(p.o.Progress, "iter %-6.4g clock %-6d elapsed %-9s train RMSE %.6f  test RMSE %.6f  objective %.9g  ratings/s %.3g (per core %.3g)  staleness mean %.3g max %d\n",
		e.Iter, e.Round, e.Time.Round(time.Millisecond), e.TrainRMSE, e.TestRMSE, e.Objective, e.RatingsPerSec, e.RatingsPerCoreSec, st.Mean(), st.Max)
}

// RunPS runs cfg (Config.Mode a consistency model) as data-parallel SGD on
// the parameter server (packages ps and ps/node), every node on its own
// connection from dial: Workers workers, each with the users that the
// Index gives it (it reads the training file itself, as a worker of the
// scheduled job does: the counting pass, then its own users' ratings), and
// PSOptions.Servers servers.
//
// W and the user biases stay on their workers; H and the item biases are
// the table "items" of the mode's model, which holds their changes since
// the start (H's start comes from the seed, as the scheduled SGD's, and
// the warm start's item biases from the workers' sums through a BSP
// table at clock 0). Each SGD clock a worker reads the rows of the items
// it rates (and of the items whose norms it reports), runs the SGD steps
// (Config's step size, regularization and biases) over its users' share
// of the clock, and adds its changes, each item's weighted by the
// worker's share of its ratings (see push). At the start of every ReportEvery-th
// iteration each worker adds its figures to a metrics table, and every
// worker reads them lag clocks later (s+1 with BSP, SSP and ESSP: no
// longer a wait than the item table's bound; the next evaluation with
// Async) to take the same decision: diverged (not finite, or rising above
// riseFactor times the lowest), Tol, TimeLimit. After the last clock every
// worker reads the final H (exact under any model), adds its figures of
// that state and W to BSP tables, and the observer reads them: the last
// evaluation is of exactly the model returned.
func RunPS(ctx context.Context, cfg Config, o PSOptions, dial func(name string) (*wire.Conn, error)) (*PSResult, error) {
	j, err := NewPSJob(cfg, o)
	if err != nil {
		return nil, err
	}
	res := &PSResult{}
	err = node.Run(ctx, dial, j.p.ps, o.Node, j.work(dial), j.finish(res))
	if err != nil {
		return nil, err
	}
	return res, nil
}

// PSJob is a job of RunPS as its roles run it when they are separate
// processes: a coordinator (Coordinate) and a process per worker (Host),
// on any NATS server. Each makes the job from the same Config and
// PSOptions, and reads the training file itself.
type PSJob struct {
	p  *psPlan
	ix *Index
}

// NewPSJob returns the job of cfg (Config.Mode a consistency model), from
// the training file's counting pass, which shapes the tables.
func NewPSJob(cfg Config, o PSOptions) (*PSJob, error) {
	if err := cfg.check("RunPS"); err != nil {
		return nil, err
	}
	if cfg.Train == "" {
		return nil, errors.New("--train FILE is required")
	}
	ix, err := buildIndex(cfg.Train, cfg.Workers, 1, nil)
	if err != nil {
		return nil, err
	}
	p, err := newPSPlan(cfg, o, ix)
	if err != nil {
		return nil, err
	}
	return &PSJob{p: p, ix: ix}, nil
}

// Host runs worker w of the job, and the servers it hosts
// (node.Host), each on its own connection from dial, until the job is
// over.
func (j *PSJob) Host(ctx context.Context, dial func(name string) (*wire.Conn, error), w int) error {
	return node.Host(ctx, dial, j.p.ps, w, j.p.o.Node, j.work(dial))
}

// Coordinate runs the job's coordinator on c (node.Coordinate), waiting
// up to join for the workers to come, and returns the job's result.
func (j *PSJob) Coordinate(ctx context.Context, c *wire.Conn, dial func(name string) (*wire.Conn, error), join time.Duration) (*PSResult, error) {
	res := &PSResult{}
	if err := node.Coordinate(ctx, c, dial, j.p.ps, join, j.p.o.Node, j.finish(res)); err != nil {
		return nil, err
	}
	return res, nil
}

// work returns the workers' program.
func (j *PSJob) work(dial func(string) (*wire.Conn, error)) node.Work {
	return func(ctx context.Context, w int, cl *node.Client) error { return j.p.work(ctx, w, cl, dial) }
}

// finish returns the observer's end of the job, which makes res.
func (j *PSJob) finish(res *PSResult) func(ctx context.Context, c *wire.Conn) error {
	return func(ctx context.Context, c *wire.Conn) error { return j.p.finish(ctx, c, j.ix, res) }
}

// psWorker is a worker of RunPS.
type psWorker struct {
	*shard
	plan   *psPlan
	cl     *node.Client
	w      []float64
	bs     biases
	h      []float64 // its view of H: h0 + the table's rows it reads
	h0, c0 []float64
	// reads are the items it reads every clock; rated those it rates,
	// and before their factors and biases at the clock's start.
	reads, rated []int32
	counts       []int32
	before       []float64
	delta        []float64
	t0           time.Time
	work         float64
	busy         time.Duration
	stale        ps.Stats // of the reads before the clock resumed from
	// eta is the clock's step size, and norms2 and count the sums of
	// steps.
	eta    float64
	norms2 []float64
	count  []int32
	decide decider
}

// psWorkerState is what a worker stores in a checkpoint, at the start of
// a clock: what it holds beyond the tables.
type psWorkerState struct {
	W       codec.Float64s `msgpack:"w"`
	B       codec.Float64s `msgpack:"b"` // user biases; empty without
	Work    float64        `msgpack:"work"`
	Busy    time.Duration  `msgpack:"busy"`
	Elapsed time.Duration  `msgpack:"elapsed"`
	Stale   ps.Stats       `msgpack:"stale"`
	Lowest  float64        `msgpack:"lowest"`
	Prev    float64        `msgpack:"prev"`
}

// state returns the worker's checkpoint piece.
func (x *psWorker) state() ([]byte, error) {
	return codec.Marshal(psWorkerState{W: x.w, B: x.bs.b, Work: x.work, Busy: x.busy, Elapsed: time.Since(x.t0),
		Stale: x.stats(), Lowest: x.decide.lowest, Prev: x.decide.prev})
}

// restore sets the worker to the state of its checkpoint piece.
func (x *psWorker) restore(data []byte) error {
	var s psWorkerState
	if err := codec.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("worker %d's checkpoint: %w", x.shard.p, err)
	}
	if len(s.W) != len(x.w) || len(s.B) != len(x.bs.b) {
		return fmt.Errorf("worker %d's checkpoint holds %d factors and %d biases, its users %d and %d: was it taken of other data?", x.shard.p, len(s.W), len(s.B), len(x.w), len(x.bs.b))
	}
	copy(x.w, s.W)
	copy(x.bs.b, s.B)
	x.work, x.busy, x.stale = s.Work, s.Busy, s.Stale
	x.t0 = time.Now().Add(-s.Elapsed)
	x.decide.lowest, x.decide.prev = s.Lowest, s.Prev
	return nil
}

// stats returns the staleness of the worker's reads so far.
func (x *psWorker) stats() ps.Stats { return x.stale.Add(x.cl.Stats()) }

// work is worker w's program.
func (p *psPlan) work(ctx context.Context, w int, cl *node.Client, dial func(string) (*wire.Conn, error)) error {
	s, err := loadShard(p.cfg, w)
	if err != nil {
		return err
	}
	x := &psWorker{shard: s, plan: p, cl: cl, w: s.initUsers(p.cfg.Rank), bs: s.initBiases(), delta: make([]float64, p.width),
		decide: decider{plan: p, lowest: math.Inf(1), print: s.p == 0}}
	if err := x.setup(ctx); err != nil {
		return err
	}
	// Its time counts from when every worker has its data (setup's read
	// waits for them all), as the scheduled job's from when they joined.
	x.t0 = time.Now()
	if data := cl.Resumed(); data != nil {
		if err := x.restore(data); err != nil {
			return err
		}
	}
	end, err := x.run(ctx)
	if err != nil {
		return err
	}
	return x.final(ctx, end, dial)
}

// setup runs clock 0: the warm start's item biases and the check that
// every worker read the same file; it sets the start. A worker resumed
// from a checkpoint reads what clock 0 gave.
func (x *psWorker) setup(ctx context.Context) error {
	p := x.plan
	fp := float64(x.ix.Fingerprint & fingerprintBits)
	resumed := x.cl.Clocks() > 0
	if !resumed {
		for i, v := range x.itemResid { // nil without the warm start
			if v != 0 {
				if err := x.cl.Inc(tabSetup, i, []float64{v}); err != nil {
					return err
				}
			}
		}
		if err := x.cl.Inc(tabSetup, p.items, []float64{fp}); err != nil {
			return err
		}
		if err := x.cl.Clock(ctx); err != nil {
			return err
		}
	}
	v, err := x.cl.Get(ctx, tabSetup, p.items)
	if err != nil {
		return err
	}
	if v[0] != fp*float64(p.cfg.Workers) {
		return fmt.Errorf("the workers read different training data: every worker must read the same --train file (%s)", p.cfg.Train)
	}
	var getErr error
	x.h0, x.c0 = p.start(x.ix, func(i int) float64 {
		v, err := x.cl.Get(ctx, tabSetup, i)
		if err != nil {
			getErr = err
			return 0
		}
		return v[0]
	})
	if getErr != nil {
		return getErr
	}
	x.h = slices.Clone(x.h0)
	if x.bs.on() {
		copy(x.bs.c, x.c0)
		if p.cfg.warm() && !resumed {
			x.fitUsers(x.bs, x.w, x.h)
		}
	}
	// It reads the items of its ratings, test ones too, and those whose
	// norms it reports.
	seen := make([]bool, p.items)
	x.rated, x.counts = ratedItems(&x.train, p.items)
	for _, i := range x.rated {
		seen[i] = true
	}
	for _, e := range x.test {
		seen[e.i] = true
	}
	lo, hi := x.normRange()
	for i := lo; i < hi; i++ {
		seen[i] = true
	}
	for i, ok := range seen {
		if ok {
			x.reads = append(x.reads, int32(i))
		}
	}
	x.before = make([]float64, len(x.rated)*p.width)
	return nil
}

// ratedItems returns the items of rs, ascending, and the ratings of each.
func ratedItems(rs *ratings, items int) (rated, counts []int32) {
	n := make([]int32, items)
	for _, i := range rs.item {
		n[i]++
	}
	for i, c := range n {
		if c > 0 {
			rated = append(rated, int32(i))
			counts = append(counts, c)
		}
	}
	return rated, counts
}

// normRange returns the items whose norms the worker reports: the
// workers' ranges cover all items once.
func (x *psWorker) normRange() (lo, hi int) {
	n, w := x.plan.cfg.Workers, x.shard.p
	return x.plan.items * w / n, x.plan.items * (w + 1) / n
}

// run runs the SGD clocks, from clock 1, and returns the clock at which
// the job ends: the maximum, or that of a decision to stop.
func (x *psWorker) run(ctx context.Context) (int, error) {
	p := x.plan
	users := len(x.users)
	period := p.cfg.ReportEvery * p.cpi
	if p.o.atStart != nil {
		p.o.atStart(x.cl.Clocks())
	}
	for c := x.cl.Clocks(); c < p.maxClock; c++ {
		if p.o.atClock != nil {
			if err := p.o.atClock(c); err != nil {
				return 0, err
			}
		}
		if err := x.cl.Checkpoint(ctx, x.state); err != nil {
			return 0, err
		}
		if k := c - p.lag - 1; k >= 0 && k%period == 0 && k/period < p.evals {
			v, err := x.cl.Get(ctx, tabMetrics, k/period)
			if err != nil {
				return 0, err
			}
			if stop, err := x.decide.decide(k/period, v); err != nil || stop {
				return c, err
			}
		}
		t := time.Now()
		if err := x.refresh(ctx); err != nil {
			return 0, err
		}
		if k := c - 1; k%period == 0 {
			if err := x.report(k/period, x.h, x.bs.c, 0); err != nil {
				return 0, err
			}
		}
		j := (c - 1) % p.cpi
		lo, hi := users*j/p.cpi, users*(j+1)/p.cpi
		x.eta = p.cfg.stepSize(uint64((c - 1) / p.cpi))
		x.sgdUsers(lo, hi, x.w, x.h, x.bs, x.eta)
		x.steps(lo, hi)
		x.work += float64(x.train.start[hi] - x.train.start[lo])
		if err := x.push(c); err != nil {
			return 0, err
		}
		busy := time.Since(t)
		x.busy += busy
		slow := 0
		if p.o.SlowTurns {
			slow = (c - 1) % p.cfg.Workers
		}
		if x.shard.p == slow && p.o.SlowWorker > 1 {
			if err := sleep(ctx, time.Duration((p.o.SlowWorker-1)*float64(busy))); err != nil {
				return 0, err
			}
		}
		if err := x.cl.Clock(ctx); err != nil {
			return 0, err
		}
	}
	return p.maxClock, nil
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// refresh reads the item rows the worker reads into its view, and keeps
// those it rates as they are at the clock's start.
func (x *psWorker) refresh(ctx context.Context) error {
	k := x.plan.cfg.Rank
	for _, i := range x.reads {
		v, err := x.cl.Get(ctx, tabItems, int(i))
		if err != nil {
			return err
		}
		hi, h0 := x.h[int(i)*k:int(i+1)*k], x.h0[int(i)*k:int(i+1)*k]
		for d := range hi {
			hi[d] = h0[d] + v[d]
		}
		if x.bs.on() {
			x.bs.c[i] = x.c0[i] + v[k]
		}
	}
	for j, i := range x.rated {
		b := x.before[j*x.plan.width : (j+1)*x.plan.width]
		copy(b, x.h[int(i)*k:int(i+1)*k])
		if x.bs.on() {
			b[k] = x.bs.c[i]
		}
	}
	return nil
}

// push adds the clock's changes of the items it rates to the table.
func (x *psWorker) push(c int) error {
	k, width := x.plan.cfg.Rank, x.plan.width
	for j, i := range x.rated {
		a, ab := x.contraction(i, x.eta)
		b := x.before[j*width : (j+1)*width]
		changed := false
		for d := range k {
			x.delta[d] = x.h[int(i)*k+d] - b[d]
			changed = changed || x.delta[d] != 0
		}
		if x.bs.on() {
			x.delta[k] = x.bs.c[i] - b[k]
			changed = changed || x.delta[k] != 0
		}
		if !changed {
			continue
		}
		for _, v := range x.delta {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: worker %d's change of item %d at clock %d is %v (try a smaller --lr)", ErrDiverged, x.shard.p, x.ix.ItemIDs[i], c, v)
			}
		}
		// The workers' changes of an item, each from the same view, are
		// neither summed nor averaged (merged). Summed, as plain shared
		// writes would be, they overshoot once each worker's steps
		// correct the item's error in full for its own users: with 3
		// workers even bsp diverged. Averaged (weighted by the workers'
		// shares of its ratings, as the unscheduled baseline does), they
		// undershoot while the steps are small: 2 workers needed 17
		// iterations to a test RMSE that one reaches in 11 (docs/mf.md).
		share := float64(x.counts[j]) / float64(x.ix.ItemCount[i])
		f, fb := merged(share, a), merged(share, ab)
		for d := range k {
			x.delta[d] *= f
		}
		if x.bs.on() {
			x.delta[k] *= fb
		}
		if err := x.cl.Inc(tabItems, int(i), x.delta); err != nil {
			return err
		}
	}
	return nil
}

// steps adds to norms and counts, for each item, the ‖w_u‖² and the
// number of the ratings of the clock's users [lo, hi): contraction
// returns what the clock's steps did to its error. A worker with every
// rating needs none.
func (x *psWorker) steps(lo, hi int) {
	if x.plan.cfg.Workers == 1 {
		return
	}
	k := x.plan.cfg.Rank
	if x.norms2 == nil {
		x.norms2, x.count = make([]float64, x.plan.items), make([]int32, x.plan.items)
	}
	rs := x.train.block(0)
	for u := lo; u < hi; u++ {
		wu := x.w[u*k : (u+1)*k]
		n := floats.Dot(wu, wu)
		for _, i := range rs.item[rs.start[u]:rs.start[u+1]] {
			x.norms2[i] += n
			x.count[i]++
		}
	}
}

// contraction returns a of the clock's steps on item i's error at step
// size eta, and of its bias's: its steps shrank the error by about
// e^(−a), the step size times the curvature of each rating's loss (‖w_u‖²
// plus the regularization's; 1 plus the bias's); and clears the item's
// sums.
func (x *psWorker) contraction(i int32, eta float64) (a, ab float64) {
	if x.count == nil {
		return 0, 0
	}
	n := float64(x.count[i])
	a = eta * (x.norms2[i] + n*x.regI[i])
	if x.bs.on() {
		ab = eta * n * (1 + x.bregI[i])
	}
	x.norms2[i], x.count[i] = 0, 0
	return a, ab
}

// merged returns the weight of a worker's change of an item, share of its
// ratings, whose error the worker's steps contracted by exp(−a): were the
// steps of every worker on the same error in one sequence, the error would
// contract by exp(−a/share). The weight makes the workers' changes sum to
// that: 1 while the steps are small (the changes add, as sequential SGD's
// would), share once each worker's corrects the error in full (they
// average).
func merged(share, a float64) float64 {
	if a <= 0 || share >= 1 {
		return share
	}
	return share * -math.Expm1(-a/share) / -math.Expm1(-a)
}

// sgdUsers runs the SGD steps of the worker's users [lo, hi).
func (s *shard) sgdUsers(lo, hi int, w, h []float64, bs biases, eta float64) {
	k := s.cfg.Rank
	rs := s.train.block(0)
	rs.start = rs.start[lo : hi+1]
	w = w[lo*k : hi*k]
	if bs.on() {
		bs.b = bs.b[lo:hi]
		sgdBiased(rs, w, h, bs, k, eta, s.regU[lo:hi], s.regI, s.bregU[lo:hi], s.bregI)
		return
	}
	sgd(rs, w, h, k, eta, s.regU[lo:hi], s.regI)
}

// report adds the worker's figures of the state (W, its view h of H and
// the item biases c) to row of the metrics table; clocks, in the final
// row, is the clocks run.
func (x *psWorker) report(row int, h, c []float64, clocks int) error {
	p := x.plan
	k := p.cfg.Rank
	bs := x.bs
	if bs.on() {
		bs.c = c
	}
	var s Summary
	lo, hi := x.normRange()
	x.norms(&s, x.w, h, bs, lo, hi)
	st := x.stats()
	v := make([]float64, metricFields*p.cfg.Workers)
	b := v[x.shard.p*metricFields : (x.shard.p+1)*metricFields]
	b[mSSE] = trainSSE(&x.train, x.w, h, bs, k)
	b[mTestSSE] = sse(x.test, x.w, h, bs, k)
	b[mWNorm], b[mHNorm], b[mBNorm], b[mCNorm] = s.WNorm, s.HNorm, s.BNorm, s.CNorm
	b[mTrain], b[mTest], b[mUnseen] = float64(x.train.len()), float64(len(x.test)), float64(x.unseen)
	b[mWork], b[mSeconds], b[mElapsed] = x.work, x.busy.Seconds(), time.Since(x.t0).Seconds()
	b[mReads], b[mStaleSum], b[mStaleSumSq], b[mStaleMax] = float64(st.Reads), st.Sum, st.SumSq, float64(st.Max)
	b[mClocks] = float64(clocks)
	return x.cl.Inc(tabMetrics, row, v)
}

// final runs the clock end: it reads the final H (every worker's changes
// of the clocks before end), adds its figures of that state and W to their
// tables, and ends the clock.
func (x *psWorker) final(ctx context.Context, end int, dial func(string) (*wire.Conn, error)) error {
	p := x.plan
	c, err := dial(fmt.Sprintf("ps-reader-%d", x.shard.p))
	if err != nil {
		return err
	}
	v, err := node.Read(ctx, c, p.ps, tabItems, end, p.o.Node)
	if err != nil {
		return err
	}
	h, cb := p.state(x.h0, x.c0, v)
	if err := x.report(p.evals, h, cb, end-1); err != nil {
		return err
	}
	k := p.cfg.Rank
	row := make([]float64, p.width)
	for u := range x.users {
		copy(row, x.w[u*k:(u+1)*k])
		if x.bs.on() {
			row[k] = x.bs.b[u]
		}
		if err := x.cl.Inc(tabUsers, p.userOff[x.shard.p]+u, row); err != nil {
			return err
		}
	}
	return x.cl.Clock(ctx)
}

// state returns H (row by row) and the item biases (nil without) of the
// start h0, c0 and the item table t.
func (p *psPlan) state(h0, c0, t []float64) (h, c []float64) {
	k := p.cfg.Rank
	h = slices.Clone(h0)
	if c0 != nil {
		c = slices.Clone(c0)
	}
	for i := range p.items {
		row := t[i*p.width : (i+1)*p.width]
		for d := range k {
			h[i*k+d] += row[d]
		}
		if c != nil {
			c[i] += row[k]
		}
	}
	return h, c
}

// decider takes the decisions of the workers, the same on every one.
type decider struct {
	plan   *psPlan
	lowest float64
	prev   float64
	print  bool
}

// decide reads evaluation k (row, which the caller must not keep) and
// reports whether the job stops, or fails.
func (d *decider) decide(k int, row []float64) (bool, error) {
	p := d.plan
	e, st := p.eval(row)
	e.Round = uint64(p.evalClock(k) - 1)
	e.Iter = float64(k * p.cfg.ReportEvery)
	if d.print {
		p.progress(e, st)
		if p.o.Report != nil {
			p.o.Report(e, st)
		}
	}
	f := e.Objective
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return true, fmt.Errorf("%w: the objective is %v at iteration %g (try a smaller --lr)", ErrDiverged, f, e.Iter)
	case f > riseFactor*d.lowest:
		return true, fmt.Errorf("%w: the objective rose to %.6g at iteration %g, more than %d times its lowest, %.6g (try a smaller --lr)", ErrDiverged, f, e.Iter, riseFactor, d.lowest)
	}
	d.lowest = min(d.lowest, f)
	stop := k > 0 && p.o.Tol > 0 && math.Abs(d.prev-f) < p.o.Tol*math.Abs(f)
	d.prev = f
	return stop || p.o.TimeLimit > 0 && e.Time >= p.o.TimeLimit, nil
}

// finish is the observer's end of a job: it reads the tables and makes the
// model and its evaluations. The observer is the process that shaped the
// tables from ix: it has the ids.
func (p *psPlan) finish(ctx context.Context, c *wire.Conn, ix *Index, res *PSResult) error {
	o := p.o.Node
	// Every worker's clocks are confirmed: the table as it is now is the
	// final one, whose last row says how many clocks ran.
	metrics, err := node.Read(ctx, c, p.ps, tabMetrics, 0, o)
	if err != nil {
		return err
	}
	last := metrics[p.evals*metricFields*p.cfg.Workers:]
	clocks := int(last[mClocks])
	end := clocks + 1
	if metrics, err = node.Read(ctx, c, p.ps, tabMetrics, end+1, o); err != nil {
		return err
	}
	items, err := node.Read(ctx, c, p.ps, tabItems, end, o)
	if err != nil {
		return err
	}
	users, err := node.Read(ctx, c, p.ps, tabUsers, end+1, o)
	if err != nil {
		return err
	}
	setup, err := node.Read(ctx, c, p.ps, tabSetup, 1, o)
	if err != nil {
		return err
	}
	b := newBase(p.cfg)
	width := metricFields * p.cfg.Workers
	last = metrics[p.evals*width:]
	sums := make([]Summary, p.cfg.Workers)
	for w := range sums {
		v := last[w*metricFields:]
		sums[w] = Summary{Fingerprint: ix.Fingerprint, Users: ix.ShardUsers[w], Train: int(v[mTrain]), Test: int(v[mTest]), Unseen: int(v[mUnseen]), Mean: ix.Mean, Items: len(ix.ItemIDs)}
	}
	sums[0].ItemIDs = ix.ItemIDs
	if err := b.start(sums); err != nil {
		return err
	}
	m := b.m
	h0, c0 := p.start(ix, func(i int) float64 { return setup[i] })
	m.H, m.C = p.state(h0, c0, items)
	k := p.cfg.Rank
	m.W = make([][]float64, p.cfg.Workers)
	if m.Biased {
		m.B = make([][]float64, p.cfg.Workers)
	}
	for w := range p.cfg.Workers {
		n := len(ix.ShardUsers[w])
		m.W[w] = make([]float64, n*k)
		if m.Biased {
			m.B[w] = make([]float64, n)
		}
		for u := range n {
			row := users[(p.userOff[w]+u)*p.width : (p.userOff[w]+u+1)*p.width]
			copy(m.W[w][u*k:(u+1)*k], row)
			if m.Biased {
				m.B[w][u] = row[k]
			}
		}
	}
	for row := range p.evals + 1 {
		at := p.evalClock(row) - 1
		if row == p.evals {
			at = clocks
		} else if at >= clocks {
			continue
		}
		e, st := p.eval(metrics[row*width : (row+1)*width])
		e.Round, e.Iter = uint64(at), float64(at)/float64(p.cpi)
		m.Trace = append(m.Trace, e)
		res.Staleness = append(res.Staleness, st)
	}
	m.stale = res.Staleness
	res.Model, res.Clocks, res.b = m, clocks, b
	// A stop at clock end decided on evaluation k, end = evalClock(k) + lag.
	res.Reason = "max-iterations"
	if k := (end - p.lag - 1) / (p.cfg.ReportEvery * p.cpi); clocks < p.maxClock-1 && k >= 0 && k < p.evals {
		res.Reason = string(schmp.StopConverged)
		if e, _ := p.eval(metrics[k*width : (k+1)*width]); p.o.TimeLimit > 0 && e.Time >= p.o.TimeLimit {
			res.Reason = string(schmp.StopTimeLimit)
		}
	}
	return nil
}
