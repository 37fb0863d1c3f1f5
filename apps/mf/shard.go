package mf

import (
	"fmt"
	"math"
	"slices"
)

// entry is a held-out rating (test or validation) inside a worker: its
// user's index on the worker, its item's index, and the rating. The
// training ratings are stored apart, in cells (ratings).
type entry struct {
	u, i int32
	r    float64
}

// shard is a worker's data: its users' training ratings, grouped by item
// block, and its users' test ratings.
type shard struct {
	cfg   Config
	ix    *Index
	p     int       // the worker
	users []int64   // its user ids, by index
	train ratings   // its training ratings, block by block
	test  []entry   // its users' test ratings whose item is in train
	val   []entry   // its users' held-out ratings whose item is in train (Config.Holdout)
	regU  []float64 // a rating's share of its user's factor regularization (Config.share)
	regI  []float64 // the same for all items
	// mu is μ, the mean training rating (0 with NoBias), and bregU and
	// bregI are λ_b/n_u for its users and λ_b/n_i for all items (nil with
	// NoBias).
	mu           float64
	bregU, bregI []float64
	sum          float64 // Σ r over train
	// unseen counts the test ratings that the model cannot predict: those
	// of its users whose item is not in train and, on worker 0, those whose
	// user is not in train.
	unseen int
	// valUnseen counts the held-out ratings that the model cannot predict,
	// as unseen does the test ratings.
	valUnseen int
	// itemResid, with the warm start (Config.ColdStart), holds for every
	// item Σ(r − μ − b_u) over the shard's ratings of it, b_u the users'
	// biases fitted to c⁰ (warmStart): the coordinator adds up every
	// worker's into the item biases of the start.
	itemResid []float64
	// foldResid and foldCount, with the folded fit (Config.folds), are
	// itemResid over the shard's ratings and its validation ratings, and
	// its validation ratings of each item; foldB and foldC the folded
	// bias-only model's user biases and all item biases, once the first
	// update came.
	foldResid    []float64
	foldCount    []int32
	foldB, foldC []float64
}

// loadShard reads worker p's shard: a counting pass over the training file
// (BuildIndex), a pass that keeps the worker's own users' ratings, and a
// pass over the test file that keeps its users' test ratings. The
// training ratings are stored once, 12 bytes each, grouped into cells in
// the order of the SGD steps (groupRatings); while they are read and
// grouped it holds 20 bytes a rating.
func loadShard(cfg Config, p int) (*shard, error) {
	keep := cfg.trainFilter()
	ix, err := buildIndex(cfg.Train, cfg.Workers, cfg.blocks(), keep)
	if err != nil {
		return nil, err
	}
	s := &shard{cfg: cfg, ix: ix, p: p, users: ix.ShardUsers[p]}
	if err := s.readTrain(keep); err != nil {
		return nil, err
	}
	if u, i, ok := s.train.duplicate(len(ix.ItemIDs)); ok {
		return nil, duplicateError(cfg.Train, s.users[u], ix.ItemIDs[i])
	}
	s.regU = make([]float64, len(s.users))
	for k, n := range ix.UserCount[p] {
		s.regU[k] = cfg.share(cfg.Lambda, n)
	}
	s.regI = make([]float64, len(ix.ItemIDs))
	for k, n := range ix.ItemCount {
		s.regI[k] = cfg.share(cfg.Lambda, n)
	}
	if cfg.biased() {
		s.mu = ix.Mean
		s.bregU = make([]float64, len(s.users))
		for k, n := range ix.UserCount[p] {
			s.bregU[k] = cfg.BiasLambda / float64(n)
		}
		s.bregI = make([]float64, len(ix.ItemIDs))
		for k, n := range ix.ItemCount {
			s.bregI[k] = cfg.BiasLambda / float64(n)
		}
	}
	if cfg.warm() {
		s.warmStart()
	}
	if cfg.Test != "" {
		err = ReadRatings(cfg.Test, func(_ int, r Rating) error {
			s.unseen += s.heldOut(r, &s.test)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readTrain reads the shard's training ratings (those that keep accepts,
// all if nil, of its users) into s.train, outside Go's heap (mapped), and
// the held-out ones that keep rejects into s.val.
func (s *shard) readTrain(keep func(Rating) bool) error {
	path, ix, p := s.cfg.Train, s.ix, s.p
	n := ix.ShardRatings[p]
	if n > math.MaxInt32 {
		return fmt.Errorf("%s: worker %d has %d training ratings, more than %d: use more workers", path, p, n, math.MaxInt32)
	}
	user, freeUser, err := mapped[int32](n)
	if err != nil {
		return err
	}
	defer freeUser()
	item, freeItem, err := mapped[int32](n)
	if err != nil {
		return err
	}
	value, freeValue, err := mapped[float64](n)
	if err != nil {
		freeItem()
		return err
	}
	own := newOwner(freeItem, freeValue)
	got := 0
	err = ReadRatings(path, func(_ int, r Rating) error {
		if keep != nil && !keep(r) {
			s.valUnseen += s.heldOut(r, &s.val)
			return nil
		}
		if pl := ix.Users[r.User]; pl.Shard == int32(p) {
			if got < n { // more: the file changed (below)
				user[got], item[got], value[got] = pl.Index, ix.Items[r.Item], r.Value
			}
			got++
			s.sum += r.Value
		}
		return nil
	})
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("%s changed while it was read: %d ratings of worker %d, then %d", path, n, p, got)
	}
	s.train, err = groupRatings(ix, len(s.users), user, item, value, s.cfg.Seed, p)
	s.train.own = own
	return err
}

// heldOut adds rating r, which the model is not fitted to (a test or a
// validation rating), to held if its user is the shard's and its item is
// known, and returns 1 if the model cannot predict it and the shard
// counts it: its user's shard if the item is unknown, shard 0 if the user
// is.
func (s *shard) heldOut(r Rating, held *[]entry) int {
	pl, ok := s.ix.Users[r.User]
	switch {
	case !ok:
		if s.p == 0 {
			return 1
		}
	case pl.Shard != int32(s.p):
	default:
		if i, ok := s.ix.Items[r.Item]; ok {
			*held = append(*held, entry{pl.Index, i, r.Value})
		} else {
			return 1
		}
	}
	return 0
}

// describe returns the summary of the shard that a worker sends when it
// joins.
func (s *shard) describe() Summary {
	sum := Summary{
		Fingerprint: s.ix.Fingerprint,
		Users:       s.users,
		Train:       s.train.len(),
		RatingSum:   s.sum,
		Test:        len(s.test),
		Unseen:      s.unseen,
		Val:         len(s.val),
		ValUnseen:   s.valUnseen,
		Mean:        s.ix.Mean,
		Std:         s.ix.Std,
		Items:       len(s.ix.ItemIDs),
	}
	sum.ItemResid, sum.FoldResid, sum.FoldCount = s.itemResid, s.foldResid, s.foldCount
	if s.p == 0 {
		sum.ItemIDs = s.ix.ItemIDs
		sum.ItemCount = s.ix.ItemCount
		sum.BlockStart = s.ix.BlockStart
	}
	return sum
}

// initScale returns the centre c and half-width a of the initial factors:
// every entry is c + U(−a, a) with a = √σ/(2·K^¼), σ the standard
// deviation of the training ratings. Without biases c = √(|μ|/K) (negated
// in H when μ < 0), μ the mean training rating, so that w·h starts near μ
// with a small spread; with biases, which start at 0, μ is in the model
// and c = 0.
func initScale(mean, std float64, rank int, biased bool) (c, a float64) {
	a = math.Sqrt(std) / (2 * math.Pow(float64(rank), 0.25))
	if biased {
		return 0, a
	}
	return math.Sqrt(math.Abs(mean) / float64(rank)), a
}

// The streams of initFactor.
const (
	userStream = 0x75736572 // "user"
	itemStream = 0x6974656d // "item"
)

// initFactor fills f with the initial factor of the user or item id
// (stream userStream or itemStream): c + U(−a, a) per entry, from a stream
// that depends only on the seed, the stream and the id, so that the start
// is the same for any number of workers.
func initFactor(f []float64, seed uint64, stream uint64, id int64, c, a float64) {
	x := splitmix(seed ^ splitmix(stream^splitmix(uint64(id))))
	for k := range f {
		x = splitmix(x)
		u := float64(x>>11) / (1 << 53) // [0, 1)
		f[k] = c + a*(2*u-1)
	}
}

// splitmix is the SplitMix64 finalizer of x+γ.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// initUsers returns the shard's initial W, row by row: 0 with the warm
// start (Config.ColdStart), so that the first evaluation is of the
// bias-only model. (Not H: with the unscheduled SGD every worker's users
// would then learn their w_u and h_i in directions of their own, which
// the merges of H mix up; a common H to start from aligns them.)
func (s *shard) initUsers(rank int) []float64 {
	c, a := initScale(s.ix.Mean, s.ix.Std, rank, s.cfg.biased())
	w := make([]float64, len(s.users)*rank)
	if s.cfg.warm() {
		return w
	}
	for k, id := range s.users {
		initFactor(w[k*rank:(k+1)*rank], s.cfg.Seed, userStream, id, c, a)
	}
	return w
}

// initItems returns the initial H, row by row, for the items ids of a
// model with or without biases.
func initItems(ids []int64, seed uint64, mean, std float64, rank int, biased bool) []float64 {
	c, a := initScale(mean, std, rank, biased)
	if mean < 0 {
		c = -c
	}
	h := make([]float64, len(ids)*rank)
	for k, id := range ids {
		initFactor(h[k*rank:(k+1)*rank], seed, itemStream, id, c, a)
	}
	return h
}

// sgd runs one SGD step per rating of rs, in order, with step size eta:
// for e = r − w_u·h_i,
//
//	w_u ← w_u + η(e·h_i − (λ/n_u)·w_u),  h_i ← h_i + η(e·w_u − (λ/n_i)·h_i)
//
// (both from the old values), a step along the negative gradient (halved)
// of (r − w_u·h_i)² + (λ/n_u)‖w_u‖² + (λ/n_i)‖h_i‖², whose sum over all
// ratings is the objective.
func sgd(rs cells, w, h []float64, rank int, eta float64, regU, regI []float64) {
	for u := 0; u+1 < len(rs.start); u++ {
		wu := w[u*rank : u*rank+rank]
		a := 1 - eta*regU[u]
		for k := rs.start[u]; k < rs.start[u+1]; k++ {
			i := rs.item[k]
			hi := h[int(i)*rank : int(i)*rank+rank][:len(wu)]
			ee := eta * (rs.value[k] - dot(wu, hi))
			b := 1 - eta*regI[i]
			for k, v := range wu {
				hk := hi[k]
				wu[k] = a*v + ee*hk
				hi[k] = b*hk + ee*v
			}
		}
	}
}

// biases holds the global mean and the biases of a model, or is the zero
// biases (nil slices) of a model without them.
type biases struct {
	mu   float64
	b, c []float64 // b_u of the worker's users, c_i of all items
}

// on reports whether the model has biases.
func (bs biases) on() bool { return bs.b != nil }

// at returns μ + b_u + c_i for rating x (0 without biases).
func (bs biases) at(x entry) float64 { return bs.of(int(x.u), x.i) }

// of returns μ + b_u + c_i for user u and item i (0 without biases).
func (bs biases) of(u int, i int32) float64 {
	if bs.b == nil {
		return 0
	}
	return bs.mu + bs.b[u] + bs.c[i]
}

// sgdBiased is sgd for the biased model: for e = r − μ − b_u − c_i −
// w_u·h_i, it also steps the biases,
//
//	b_u ← b_u + η(e − (λ_b/n_u)·b_u),  c_i ← c_i + η(e − (λ_b/n_i)·c_i),
//
// along the negative gradient (halved) of the rating's share of F, whose
// bias term is (λ_b/n_u)b_u² + (λ_b/n_i)c_i².
func sgdBiased(rs cells, w, h []float64, bs biases, rank int, eta float64, regU, regI, bregU, bregI []float64) {
	bu, ci, mu := bs.b, bs.c, bs.mu
	for u := 0; u+1 < len(rs.start); u++ {
		wu := w[u*rank : u*rank+rank]
		a := 1 - eta*regU[u]
		for k := rs.start[u]; k < rs.start[u+1]; k++ {
			i := rs.item[k]
			hi := h[int(i)*rank : int(i)*rank+rank][:len(wu)]
			e := rs.value[k] - mu - bu[u] - ci[i] - dot(wu, hi)
			ee := eta * e
			bu[u] += eta * (e - bregU[u]*bu[u])
			ci[i] += eta * (e - bregI[i]*ci[i])
			b := 1 - eta*regI[i]
			for k, v := range wu {
				hk := hi[k]
				wu[k] = a*v + ee*hk
				hi[k] = b*hk + ee*v
			}
		}
	}
}

// sgdStep runs sgd or sgdBiased over rs, as the shard's model has biases
// or not.
func (s *shard) sgdStep(rs cells, w, h []float64, bs biases, eta float64) {
	if bs.on() {
		sgdBiased(rs, w, h, bs, s.cfg.Rank, eta, s.regU, s.regI, s.bregU, s.bregI)
		return
	}
	sgd(rs, w, h, s.cfg.Rank, eta, s.regU, s.regI)
}

// factorsOf returns w_u and h_i, W and H row by row.
func factorsOf(u int, i int32, w, h []float64, rank int) (wu, hi []float64) {
	wu = w[u*rank : u*rank+rank]
	hi = h[int(i)*rank : int(i)*rank+rank]
	return wu, hi[:len(wu)]
}

// sse returns Σ (r − μ − b_u − c_i − w_u·h_i)² over rs, with W and H row
// by row (without the biases' terms if bs has none).
func sse(rs []entry, w, h []float64, bs biases, rank int) float64 {
	var s float64
	for _, x := range rs {
		e := x.r - bs.at(x) - dot(factorsOf(int(x.u), x.i, w, h, rank))
		s += e * e
	}
	return s
}

// trainSSE is sse over the training ratings rs.
func trainSSE(rs *ratings, w, h []float64, bs biases, rank int) float64 {
	var s float64
	for c := 0; c+1 < len(rs.start); c++ {
		u := c % rs.users
		for k := rs.start[c]; k < rs.start[c+1]; k++ {
			i := rs.item[k]
			e := rs.value[k] - bs.of(u, i) - dot(factorsOf(u, i, w, h, rank))
			s += e * e
		}
	}
	return s
}

// warmStart computes the shard's part of the warm start's biases, the
// bias-only fit μ + b_u + c_i by exact alternating updates (each the
// minimizer of Σ(r − μ − b_u − c_i)² + λ_b(Σb_u² + Σc_i²) given the
// other), two sweeps in all:
//
//  1. c⁰_i = Σ_i(r − μ)/(n_i + λ_b), from the Index's sums of every item's
//     ratings (the counting pass's, the same on every role);
//  2. b¹_u = Σ_u(r − μ − c⁰_i)/(n_u + λ_b) for the shard's users;
//  3. the shard's sums Σ(r − μ − b¹_u) of every item's ratings
//     (itemResid), which the workers send when they join; the
//     coordinator adds them up into c²_i = Σ_i(r − μ − b¹_u)/(n_i + λ_b),
//     the item biases of the first update (warmItems);
//  4. b³_u given c² (fitUsers), when the worker applies that update.
//
// On InstEval and the generated sets of bench/RESULTS.md this bias-only
// model's test RMSE is within 1e-4 of the converged fit's.
func (s *shard) warmStart() {
	lb := s.cfg.BiasLambda
	c0 := make([]float64, len(s.ix.ItemIDs))
	for i, n := range s.ix.ItemCount {
		c0[i] = (s.ix.ItemSum[i] - float64(n)*s.mu) / (float64(n) + lb)
	}
	b1 := make([]float64, len(s.users))
	s.train.each(func(u int, i int32, r float64) { b1[u] += r - s.mu - c0[i] })
	for u, n := range s.ix.UserCount[s.p] {
		b1[u] /= float64(n) + lb
	}
	s.itemResid = make([]float64, len(s.ix.ItemIDs))
	s.train.each(func(u int, i int32, r float64) { s.itemResid[i] += r - s.mu - b1[u] })
	if !s.cfg.folds() {
		return
	}
	// The same two sweeps over the training and validation ratings
	// together (from the same c⁰): the bias-only model of all of them.
	clear(b1)
	s.train.each(func(u int, i int32, r float64) { b1[u] += r - s.mu - c0[i] })
	for _, x := range s.val {
		b1[x.u] += x.r - s.mu - c0[x.i]
	}
	n := s.foldUserCounts()
	for u := range b1 {
		b1[u] /= n[u] + lb
	}
	s.foldResid = make([]float64, len(s.ix.ItemIDs))
	s.foldCount = make([]int32, len(s.ix.ItemIDs))
	s.train.each(func(u int, i int32, r float64) { s.foldResid[i] += r - s.mu - b1[u] })
	for _, x := range s.val {
		s.foldResid[x.i] += x.r - s.mu - b1[x.u]
		s.foldCount[x.i]++
	}
}

// foldUserCounts returns the training and validation ratings of each of
// the shard's users.
func (s *shard) foldUserCounts() []float64 {
	n := make([]float64, len(s.users))
	for u, c := range s.ix.UserCount[s.p] {
		n[u] = float64(c)
	}
	for _, x := range s.val {
		n[x.u]++
	}
	return n
}

// fold sets the folded bias-only model (Config.folds) from its item
// biases c: the user biases b_u = Σ(r − μ − c_i)/(n_u + λ_b) over the
// shard's training and validation ratings together.
func (s *shard) fold(c []float64) {
	s.foldC = c
	s.foldB = make([]float64, len(s.users))
	s.train.each(func(u int, i int32, r float64) { s.foldB[u] += r - s.mu - c[i] })
	for _, x := range s.val {
		s.foldB[x.u] += x.r - s.mu - c[x.i]
	}
	n := s.foldUserCounts()
	for u := range s.foldB {
		s.foldB[u] /= n[u] + s.cfg.BiasLambda
	}
}

// warmApply completes the warm start (Config.ColdStart) when a worker
// applies the first update: its users' biases fitted to the item biases
// in bs, given W and H (row by row), and with the folded fit
// (Config.folds) the folded model from fold, the update's FoldBias.
func (s *shard) warmApply(bs biases, w, h, fold []float64) error {
	if !s.cfg.warm() {
		return nil
	}
	s.fitUsers(bs, w, h)
	if !s.cfg.folds() {
		return nil
	}
	if len(fold) != len(s.ix.ItemIDs) {
		return fmt.Errorf("update of round 0: %d folded item biases, want %d", len(fold), len(s.ix.ItemIDs))
	}
	s.fold(slices.Clone(fold))
	return nil
}

// foldReport adds the folded bias-only model's figures to r, the report
// of round 0 (Summary.Folded), with its user biases if factors.
func (s *shard) foldReport(r *Summary, factors bool) {
	if s.foldB == nil {
		return
	}
	r.Folded = true
	for _, x := range s.test {
		e := x.r - s.mu - s.foldB[x.u] - s.foldC[x.i]
		r.FoldTestSSE += e * e
	}
	if factors {
		r.FoldB = s.foldB
	}
}

// fitUsers sets the shard's user biases in bs to their exact fit given
// the rest of the model: b_u = Σ_u(r − μ − c_i − w_u·h_i)/(n_u + λ_b).
func (s *shard) fitUsers(bs biases, w, h []float64) {
	clear(bs.b)
	k := s.cfg.Rank
	s.train.each(func(u int, i int32, r float64) {
		bs.b[u] += r - s.mu - bs.c[i] - dot(factorsOf(u, i, w, h, k))
	})
	for u, n := range s.ix.UserCount[s.p] {
		bs.b[u] /= float64(n) + s.cfg.BiasLambda
	}
}

// warmItems returns the item biases of the warm start (shard.warmStart,
// step 3) from the workers' summaries: c_i = Σ_p itemResid_p[i]/(n_i +
// λ_b), summed in worker order; and with the folded fit (Config.folds)
// those of the bias-only model of the training and validation ratings
// together, Σ_p foldResid_p[i]/(n_i + Σ_p foldCount_p[i] + λ_b).
func (b *base) warmItems(sums []Summary) (c, fold []float64, err error) {
	counts := sums[0].ItemCount
	c = make([]float64, len(counts))
	n := make([]float64, len(counts))
	for i, k := range counts {
		n[i] = float64(k) + b.cfg.BiasLambda
	}
	folds := b.cfg.folds()
	if folds {
		fold = make([]float64, len(counts))
	}
	fn := slices.Clone(n)
	for p, s := range sums {
		if len(s.ItemResid) != len(c) || folds && (len(s.FoldResid) != len(c) || len(s.FoldCount) != len(c)) {
			return nil, nil, fmt.Errorf("worker %d sent %d item sums for the warm start (%d folded, %d counts), want %d", p, len(s.ItemResid), len(s.FoldResid), len(s.FoldCount), len(c))
		}
		for i, v := range s.ItemResid {
			c[i] += v
		}
		if folds {
			for i, v := range s.FoldResid {
				fold[i] += v
				fn[i] += float64(s.FoldCount[i])
			}
		}
	}
	for i := range c {
		c[i] /= n[i]
		if folds {
			fold[i] /= fn[i]
		}
	}
	return c, fold, nil
}

// initItems returns the coordinator's initial H, from the seed, and item
// biases (nil without biases) for SGD: with the warm start
// (Config.ColdStart) those of warmItems, otherwise 0. With the folded
// fit it sets b.foldC.
func (b *base) initItems(sums []Summary) (h, c []float64, err error) {
	h = initItems(b.m.ItemIDs, b.cfg.Seed, sums[0].Mean, sums[0].Std, b.cfg.Rank, b.m.Biased)
	switch {
	case b.cfg.warm():
		c, b.foldC, err = b.warmItems(sums)
	case b.m.Biased:
		c = make([]float64, len(b.m.ItemIDs))
	}
	return h, c, err
}

// initBiases returns the shard's initial biases, all 0 (none without
// biases): b_u for its users and c_i for all items.
func (s *shard) initBiases() biases {
	if !s.cfg.biased() {
		return biases{}
	}
	return biases{mu: s.mu, b: make([]float64, len(s.users)), c: make([]float64, len(s.ix.ItemIDs))}
}

// setItems sets c_i of the items [lo, hi) from an update of round round;
// without biases, v must be empty.
func (bs biases) setItems(round uint64, v []float64, lo, hi int) error {
	if !bs.on() {
		if len(v) != 0 {
			return fmt.Errorf("update of round %d: %d item biases for a model without biases", round, len(v))
		}
		return nil
	}
	if len(v) != hi-lo {
		return fmt.Errorf("update of round %d: %d item biases, want %d", round, len(v), hi-lo)
	}
	copy(bs.c[lo:hi], v)
	return nil
}

// items returns c_i of the items [lo, hi), nil without biases.
func (bs biases) items(lo, hi int) []float64 {
	if !bs.on() {
		return nil
	}
	return bs.c[lo:hi]
}

// norms sets the regularized norms of a report: those of the shard's
// users' factors w and biases, and those of the items [lo, hi) that it
// answers for, of h (row by row) and bs; the factors' norms weighted by
// the ratings counts unless Config.Unweighted.
func (s *shard) norms(r *Summary, w, h []float64, bs biases, lo, hi int) {
	k := s.cfg.Rank
	r.WNorm = s.cfg.factorNorm(w, k, s.ix.UserCount[s.p])
	r.HNorm = s.cfg.factorNorm(h[lo*k:hi*k], k, s.ix.ItemCount[lo:hi])
	if bs.on() {
		r.BNorm = sumSq(bs.b)
		r.CNorm = sumSq(bs.c[lo:hi])
	}
}

// share returns a rating's share of the regularization λ·n‖f‖² (or
// λ‖f‖² with Unweighted) of a factor f with n ratings, so that the shares
// of its ratings add up to it: λ, or λ/n.
func (c Config) share(lambda float64, n int32) float64 {
	if c.Unweighted {
		return lambda / float64(n)
	}
	return lambda
}

// factorNorm returns Σ_j n_j‖f_j‖² over the rows f_j of rank k of f, n
// their ratings counts, or with Unweighted Σ_j ‖f_j‖².
func (c Config) factorNorm(f []float64, k int, n []int32) float64 {
	if c.Unweighted {
		return sumSq(f)
	}
	var s float64
	for j, nj := range n {
		s += float64(nj) * sumSq(f[j*k:(j+1)*k])
	}
	return s
}

// sumSq returns Σ v² over v.
func sumSq(v []float64) float64 { return dot(v, v) }
