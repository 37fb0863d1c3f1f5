package scheduler

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/strads-go/strads/schmp"
)

// Policy selects how candidates are drawn.
type Policy int

const (
	// Priority draws candidates without replacement with probability
	// proportional to |Δθ_j|^Gamma + Eta, after Warmup rounds of walking a
	// random permutation.
	Priority Policy = iota
	// Random draws candidates uniformly without replacement.
	Random
	// Cyclic takes candidates in index order, wrapping around, and examines
	// the candidates rejected in a round first in the next one.
	Cyclic
	// Shotgun draws as Random and never checks dependencies, whatever Rho:
	// the parallel coordinate descent of Bradley et al. (ICML 2011), a
	// baseline that updates coupled variables together and may diverge
	// where they are strongly coupled.
	Shotgun
)

// String returns "priority", "random", "cyclic" or "shotgun".
func (p Policy) String() string {
	switch p {
	case Priority:
		return "priority"
	case Random:
		return "random"
	case Cyclic:
		return "cyclic"
	case Shotgun:
		return "shotgun"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ParsePolicy returns the policy that String writes as s.
func ParsePolicy(s string) (Policy, error) {
	for _, p := range []Policy{Priority, Random, Cyclic, Shotgun} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown schedule %q (want priority, random, cyclic or shotgun)", s)
}

// Config configures the dynamic engine. Vars must be set; the zero value
// of every other field means a documented default, so that Config{Vars: m}
// is an engine that works: priority sampling (γ = 2, no floor) after no
// warm-up, one variable a round, no dependency check, one block, seed 0.
// WithDefaults applies the defaults; Validate and NewDynamic apply them
// before anything else, so a field set explicitly means what it says.
type Config struct {
	Vars int // M: the variables are 0..M-1
	// Policy is how candidates are drawn; the zero value is Priority.
	Policy Policy
	// Gamma is the priority exponent γ: variable j has weight
	// |Δθ_j|^γ + Eta. Priority only; > 0, and 0 means 2 (the squared
	// change, as in STRADS' Lasso and cmd/strads' --gamma).
	Gamma float64
	// Eta >= 0 is added to every weight so that no variable starves.
	// Priority only. 0 means no floor: a variable whose last change was
	// 0 is drawn only when every weight left in the round is 0.
	Eta float64
	// Candidates is U′, the most candidates examined per round (>= Block);
	// 0 means 2·Block (cmd/strads' defaults are 64 and 32), room for the
	// dependency check to turn some down.
	Candidates int
	// Block is U, the most variables accepted per round (>= 1); 0 means 1,
	// one variable a round, which no dependency can make unsafe.
	Block int
	// Warmup is the number of rounds, from the first, in which Priority
	// walks a random permutation of the variables instead of sampling by
	// weight (>= 0); 0 means none.
	Warmup int
	// Rho rejects a candidate whose Dependence with a variable already
	// accepted in the round is >= Rho. It is > 0; Rho >= 1 turns the
	// dependency check off, and 0 means 1 (off: NewDynamic then needs no
	// Dependencies; cmd/strads' --rho is 0.1).
	Rho float64
	// Workers is the number of blocks the accepted variables are split into
	// (>= 1); 0 means 1.
	Workers int
	// Seed seeds all random draws.
	Seed uint64
}

// Defaults of Config's fields, which their zero values mean.
const (
	// DefaultGamma is Config.Gamma's default: the squared change.
	DefaultGamma = 2
	// DefaultCandidatesPerBlock is Config.Candidates' default, in Blocks.
	DefaultCandidatesPerBlock = 2
)

// WithDefaults returns c with every zero tuning field set to its default
// (see Config). It leaves Vars, Warmup, Eta and Seed, whose zero values
// mean themselves, and every field that is not zero, bad values included:
// Validate reports those.
func (c Config) WithDefaults() Config {
	if c.Gamma == 0 {
		c.Gamma = DefaultGamma
	}
	if c.Block == 0 {
		c.Block = 1
	}
	if c.Candidates == 0 && c.Block > 0 {
		c.Candidates = DefaultCandidatesPerBlock * c.Block
	}
	if c.Rho == 0 {
		c.Rho = 1
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	return c
}

// Checks says whether the engine checks dependencies: Rho < 1, and a
// policy other than Shotgun.
func (c Config) Checks() bool { return c.Rho < 1 && c.Policy != Shotgun }

// Validate reports the first invalid field of c with its defaults
// (WithDefaults), as a *schmp.FieldError: negative numbers, NaN and
// infinities, where a field takes none.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Vars < 1:
		return schmp.Fieldf("Vars", "must be >= 1, got %d", c.Vars)
	case c.Policy < Priority || c.Policy > Shotgun:
		return schmp.Fieldf("Policy", "must be priority, random, cyclic or shotgun, got %v", c.Policy)
	case c.Policy == Priority && !(c.Gamma > 0 && !math.IsInf(c.Gamma, 1)):
		return schmp.Fieldf("Gamma", "must be a finite number > 0, got %v", c.Gamma)
	case !(c.Eta >= 0 && !math.IsInf(c.Eta, 1)):
		return schmp.Fieldf("Eta", "must be a finite number >= 0, got %v", c.Eta)
	case c.Block < 1:
		return schmp.Fieldf("Block", "must be >= 1, got %d", c.Block)
	case c.Candidates < c.Block:
		return schmp.Fieldf("Candidates", "must be >= {Block} (%d), got %d", c.Block, c.Candidates)
	case c.Warmup < 0:
		return schmp.Fieldf("Warmup", "must be >= 0, got %d", c.Warmup)
	case !(c.Rho > 0):
		return schmp.Fieldf("Rho", "must be > 0, got %v", c.Rho)
	case c.Workers < 1:
		return schmp.Fieldf("Workers", "must be >= 1, got %d", c.Workers)
	}
	return nil
}

// Selection is one round's plan.
type Selection struct {
	// Vars are the accepted variables, in acceptance order.
	Vars []int32
	// Blocks splits Vars into Config.Workers blocks balanced by Cost: the
	// variables, heaviest first, each go to the lightest block so far (the
	// lowest-numbered on a tie). Within a block the variables keep their
	// acceptance order. A block may be empty.
	Blocks [][]int32
	// Candidates is how many candidates were examined.
	Candidates int
	// Rejected is how many of them the dependency check rejected.
	Rejected int
	// Deferred is how many variables were drawn and put off, not counted
	// in Candidates, because they are still in a round in flight or depend
	// on a variable that is (see Dynamic); at most Candidates.
	Deferred int
}

// Dynamic is the dynamic scheduling engine: each call to Next draws
// candidates by the configured Policy and accepts, in draw order, every
// candidate whose Dependence with each variable already accepted in the round
// is below Rho, until Block are accepted or Candidates have been examined.
// The first candidate of a round is always accepted.
//
// If Vars < Candidates, Candidates and Block are clamped to Vars.
//
// Cyclic, and the warm-up rounds of Priority, walk an order of the variables
// (index order, or a random permutation fixed at construction) and advance
// only past the candidates examined. Candidates rejected in a round are
// examined first in the next, in the same order, before the walk goes on;
// since the first candidate of a round is always accepted, each variable is
// updated within Candidates rounds of being reached by the walk, and none
// starves. With Block = Candidates and no rejections a warm-up sweep over all
// the variables takes ceil(Vars/Candidates) rounds; in general it takes about
// ceil(Vars/Block).
//
// Random draws a uniform sample without replacement by a partial
// Fisher–Yates shuffle, O(1) per candidate.
//
// Priority, after the warm-up, draws without replacement with probability
// proportional to the weights kept in a sum tree, O(log Vars) per candidate;
// when the weights left in a round sum to 0 it draws uniformly from the
// variables not yet drawn.
//
// A variable that Next selects is busy until Feedback names it: Next never
// selects a busy variable, so that with rounds in flight (pipelining) no
// variable is in two of them at once. Since the rounds in flight are
// computed from the same stale state, their variables are in effect
// updated together, so a candidate that depends on a busy variable is put
// off too. A candidate put off (Selection.Deferred) does not count as
// examined, and keeps its weight; the walk queues it after the rejected
// candidates, and stops examining the queue in a round once half the
// Candidates have been put off, so that it keeps moving. A round puts off at
// most Candidates variables, and may then select none. Feedback must therefore name every selected variable once
// its round is done, with delta 0 if it did not move.
//
// Dynamic is not safe for concurrent use.
type Dynamic struct {
	cfg   Config
	cols  Dependencies
	check bool // the dependency check is on (Config.Checks)
	cand  int  // effective Candidates
	block int  // effective Block
	rng   *rand.Rand
	pcg   *rand.PCG // rng's source, whose state a snapshot saves
	round int       // rounds served so far
	busy  []int32   // busy[j]: the position of j in inflight, or -1

	inflight []int32 // the variables selected and not yet fed back

	// With Dependencies that index sets (SetMaker), the dependency check asks
	// these instead of checking pairs.
	flightSet, roundSet Set

	// The walk: Cyclic and the Priority warm-up.
	order  []int32 // walk order; nil means index order
	cursor int     // next position of order
	queue  []int32 // candidates rejected last round, examined first
	spare  []int32 // the previous queue, reused
	queued []bool  // queued[j]: j was in queue at the start of this round or still is
	qpos   int     // queue entries examined this round
	qdef   int     // of which put off
	later  []int32 // candidates put off this round, queued last

	// Uniform draws without replacement: Random, and Priority's fallback.
	perm []int32 // a permutation of the variables, shuffled in place
	fy   int     // perm[:fy] was drawn this round

	// Priority.
	tree  *sumTree
	taken []int32   // leaves zeroed this round
	saved []float64 // their weights
	drawn []bool    // drawn[j]: j was drawn from the tree this round

	// Scratch for a round.
	rejected []int32
	idx      []int
	cost     []float64
	owner    []int
	load     []float64
	count    []int
}

// seedStream is the second PCG word; Config.Seed is the first.
const seedStream = 0x5c4e_d41e_5eed_0001

// NewDynamic returns an engine for c, whose zero fields take their
// defaults (Config). cols may be nil only if the dependency check is off
// (Config.Checks); every variable then costs 1.
func NewDynamic(c Config, cols Dependencies) (*Dynamic, error) {
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	d := &Dynamic{
		cfg:   c,
		busy:  make([]int32, c.Vars),
		cols:  cols,
		check: c.Checks(),
		cand:  min(c.Candidates, c.Vars),
		block: min(c.Block, c.Vars),
		pcg:   rand.NewPCG(c.Seed, seedStream),
	}
	d.rng = rand.New(d.pcg)
	if cols == nil && d.check {
		return nil, schmp.Fieldf("Rho", "%v needs the columns for the dependency check", c.Rho)
	}
	if sc, ok := cols.(*SparseColumns); ok && sc.m.Cols < c.Vars {
		return nil, schmp.Fieldf("Vars", "%d exceeds the %d columns of the data", c.Vars, sc.m.Cols)
	}
	if sm, ok := cols.(SetMaker); ok && d.check {
		d.flightSet, d.roundSet = sm.NewSet(), sm.NewSet()
	}
	for j := range d.busy {
		d.busy[j] = -1
	}
	m := c.Vars
	switch c.Policy {
	case Cyclic:
		d.queued = make([]bool, m)
	case Random, Shotgun:
		d.perm = identity(m)
	case Priority:
		d.perm = identity(m)
		d.tree = newSumTree(m)
		d.tree.fill(min(c.Eta, d.tree.maxWeight()))
		d.drawn = make([]bool, m)
		if c.Warmup > 0 {
			d.order = identity(m)
			d.rng.Shuffle(m, func(i, j int) { d.order[i], d.order[j] = d.order[j], d.order[i] })
			d.queued = make([]bool, m)
		}
	}
	return d, nil
}

func identity(m int) []int32 {
	p := make([]int32, m)
	for i := range p {
		p[i] = int32(i)
	}
	return p
}

// Feedback records how much the variables vars moved, by delta[i] for
// vars[i], in the last round or rounds: the weight of vars[i] becomes
// |delta[i]|^Gamma + Eta (capped so that the weights sum to a finite number),
// and vars[i] is no longer busy.
// It records weights during the warm-up too. Feedback only matters to
// Priority; the other policies ignore it. It panics if the lengths differ, a
// variable is out of range or a delta is NaN.
func (d *Dynamic) Feedback(vars []int32, delta []float64) {
	if len(vars) != len(delta) {
		panic(fmt.Sprintf("scheduler: Feedback with %d variables and %d deltas", len(vars), len(delta)))
	}
	for i, j := range vars {
		if j < 0 || int(j) >= d.cfg.Vars {
			panic(fmt.Sprintf("scheduler: Feedback for variable %d out of range [0,%d)", j, d.cfg.Vars))
		}
		if math.IsNaN(delta[i]) {
			panic(fmt.Sprintf("scheduler: Feedback with NaN delta for variable %d", j))
		}
		d.release(j)
		if d.tree == nil {
			continue
		}
		d.tree.set(int(j), d.weight(delta[i]))
	}
}

// weight returns |delta|^Gamma + Eta, capped at the tree's maximum.
func (d *Dynamic) weight(delta float64) float64 {
	a := math.Abs(delta)
	var w float64
	switch d.cfg.Gamma {
	case 1:
		w = a
	case 2:
		w = a * a
	default:
		w = math.Pow(a, d.cfg.Gamma)
	}
	return min(w+d.cfg.Eta, d.tree.maxWeight())
}

// drawKind is how a round draws its candidates.
type drawKind int

const (
	drawWalk drawKind = iota
	drawUniform
	drawWeighted
)

// Info returns what a plan of sel tells the runtime (schmp.PlanInfo): its
// variables, the candidates examined, rejected and put off, and the block
// size as its capacity.
func (d *Dynamic) Info(sel Selection) schmp.PlanInfo {
	return schmp.PlanInfo{
		Vars: sel.Vars, Candidates: sel.Candidates, Selected: len(sel.Vars),
		Rejected: sel.Rejected, Deferred: sel.Deferred, Capacity: d.cfg.Block,
	}
}

// Next returns the next round's selection. Its slices are freshly allocated
// and belong to the caller.
func (d *Dynamic) Next() Selection {
	kind := d.kind()
	if kind == drawWeighted && d.order != nil {
		// The warm-up is over: drop its walk.
		d.endWarmup()
	}
	d.qpos, d.qdef, d.fy = 0, 0, 0
	d.rejected, d.later = d.rejected[:0], d.later[:0]
	vars := make([]int32, 0, d.block)
	examined, deferred := 0, 0
	// Every draw of a round is a distinct variable, so at most Vars draws.
	for examined < d.cand && len(vars) < d.block && deferred < d.cand && examined+deferred < d.cfg.Vars {
		var j int32
		switch kind {
		case drawWalk:
			j = d.nextWalk()
		case drawUniform:
			j = d.nextUniform()
		default:
			j = d.nextWeighted()
		}
		if d.busy[j] >= 0 || !d.independent(j, d.inflight, d.flightSet) {
			deferred++
			if kind == drawWalk {
				d.later = append(d.later, j)
				if d.qpos > 0 && d.qpos <= len(d.queue) && d.queue[d.qpos-1] == j {
					d.qdef++
				}
			}
			continue
		}
		if d.independent(j, vars, d.roundSet) {
			vars = append(vars, j)
			if d.roundSet != nil {
				d.roundSet.Add(int(j))
			}
		} else {
			d.rejected = append(d.rejected, j)
		}
		examined++
	}
	switch kind {
	case drawWalk:
		d.requeue()
	case drawWeighted:
		d.restore()
	}
	for _, j := range vars {
		d.busy[j] = int32(len(d.inflight))
		d.inflight = append(d.inflight, j)
		if d.roundSet != nil {
			d.roundSet.Remove(int(j))
			d.flightSet.Add(int(j))
		}
	}
	d.round++
	return Selection{
		Vars:       vars,
		Blocks:     d.split(vars),
		Candidates: examined,
		Rejected:   examined - len(vars),
		Deferred:   deferred,
	}
}

func (d *Dynamic) kind() drawKind {
	switch {
	case d.cfg.Policy == Cyclic:
		return drawWalk
	case d.cfg.Policy == Random || d.cfg.Policy == Shotgun:
		return drawUniform
	case d.round < d.cfg.Warmup:
		return drawWalk
	}
	return drawWeighted
}

// release marks j no longer busy.
func (d *Dynamic) release(j int32) {
	k := d.busy[j]
	if k < 0 {
		return
	}
	last := d.inflight[len(d.inflight)-1]
	d.inflight[k] = last
	d.busy[last] = k
	d.inflight = d.inflight[:len(d.inflight)-1]
	d.busy[j] = -1
	if d.flightSet != nil {
		d.flightSet.Remove(int(j))
	}
}

// independent reports whether j depends on none of vars, which set, if
// not nil, holds too.
func (d *Dynamic) independent(j int32, vars []int32, set Set) bool {
	if !d.check {
		return true
	}
	if set != nil {
		return !set.Dependent(int(j), d.cfg.Rho)
	}
	for _, a := range vars {
		if d.cols.Dependence(int(j), int(a)) >= d.cfg.Rho {
			return false
		}
	}
	return true
}

// nextWalk returns the next queued candidate, or else the next variable of
// the walk that is not queued.
func (d *Dynamic) nextWalk() int32 {
	if d.qpos < len(d.queue) && d.qdef < max(d.cand/2, 1) {
		j := d.queue[d.qpos]
		d.qpos++
		return j
	}
	for range len(d.queued) {
		j := int32(d.cursor)
		if d.order != nil {
			j = d.order[d.cursor]
		}
		d.cursor++
		if d.cursor == len(d.queued) {
			d.cursor = 0
		}
		if !d.queued[j] {
			return j
		}
	}
	// Every variable is queued. A round draws fewer than Vars variables,
	// so some queued ones are left.
	j := d.queue[d.qpos]
	d.qpos++
	return j
}

// requeue makes this round's rejected candidates, followed by the queued ones
// not examined, the queue of the next round.
func (d *Dynamic) requeue() {
	for _, j := range d.queue[:d.qpos] {
		d.queued[j] = false
	}
	for _, j := range d.rejected {
		d.queued[j] = true
	}
	for _, j := range d.later {
		d.queued[j] = true
	}
	next := append(d.spare[:0], d.rejected...)
	next = append(next, d.queue[d.qpos:]...)
	next = append(next, d.later...)
	d.spare, d.queue = d.queue, next
}

// endWarmup drops the warm-up walk.
func (d *Dynamic) endWarmup() {
	for _, j := range d.queue {
		d.queued[j] = false
	}
	d.order, d.queue, d.spare, d.queued = nil, nil, nil, nil
}

// nextUniform returns a variable drawn uniformly from those not drawn yet in
// this round.
func (d *Dynamic) nextUniform() int32 {
	// The draws of a round, the tree's included, number at most Candidates
	// <= Vars, so perm does not run out.
	for {
		k := d.fy + d.rng.IntN(len(d.perm)-d.fy)
		d.perm[d.fy], d.perm[k] = d.perm[k], d.perm[d.fy]
		j := d.perm[d.fy]
		d.fy++
		if d.drawn == nil || !d.drawn[j] {
			return j
		}
	}
}

// nextWeighted returns a variable drawn with probability proportional to its
// weight from those not drawn yet in this round, and zeroes its weight until
// the round ends.
func (d *Dynamic) nextWeighted() int32 {
	total := d.tree.total()
	if !(total > 0) {
		return d.nextUniform()
	}
	i := d.tree.find(d.rng.Float64() * total)
	d.taken = append(d.taken, int32(i))
	d.saved = append(d.saved, d.tree.weight(i))
	d.tree.set(i, 0)
	d.drawn[i] = true
	return int32(i)
}

// restore gives the variables drawn from the tree this round their weights
// back.
func (d *Dynamic) restore() {
	for k, j := range d.taken {
		d.tree.set(int(j), d.saved[k])
		d.drawn[j] = false
	}
	d.taken, d.saved = d.taken[:0], d.saved[:0]
}

// split divides vars into Workers blocks balanced by cost.
func (d *Dynamic) split(vars []int32) [][]int32 {
	w := d.cfg.Workers
	n := len(vars)
	d.idx, d.cost, d.owner = d.idx[:0], d.cost[:0], d.owner[:0]
	for i, j := range vars {
		c := 1.0
		if d.cols != nil {
			c = d.cols.Cost(int(j))
		}
		d.idx = append(d.idx, i)
		d.cost = append(d.cost, c)
		d.owner = append(d.owner, 0)
	}
	slices.SortStableFunc(d.idx, func(a, b int) int { return cmp.Compare(d.cost[b], d.cost[a]) })
	d.load = slices.Grow(d.load[:0], w)[:w]
	d.count = slices.Grow(d.count[:0], w)[:w]
	clear(d.load)
	clear(d.count)
	for _, i := range d.idx {
		b := 0
		for k := 1; k < w; k++ {
			if d.load[k] < d.load[b] {
				b = k
			}
		}
		d.load[b] += d.cost[i]
		d.owner[i] = b
		d.count[b]++
	}
	all := make([]int32, n)
	blocks := make([][]int32, w)
	off := 0
	for b := range blocks {
		blocks[b] = all[off : off : off+d.count[b]]
		off += d.count[b]
	}
	for i, j := range vars {
		blocks[d.owner[i]] = append(blocks[d.owner[i]], j)
	}
	return blocks
}
