package mf

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// entry is a rating inside a worker: its user's index on the worker, its
// item's index, and the rating.
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
	train []entry   // its training ratings, block by block
	cell  []int     // block b's ratings are train[cell[b]:cell[b+1]]
	test  []entry   // its users' test ratings whose item is in train
	regU  []float64 // λ/n_u for its users
	regI  []float64 // λ/n_i for all items
	sum   float64   // Σ r over train
	// unseen counts the test ratings that the model cannot predict: those
	// of its users whose item is not in train and, on worker 0, those whose
	// user is not in train.
	unseen int
}

// loadShard reads worker p's shard: a counting pass over the training file
// (BuildIndex), a pass that keeps the worker's own users' ratings, and a
// pass over the test file that keeps its users' test ratings. Within a
// block, the training ratings are grouped by user, in ascending user
// index, and each user's ratings are in a random order drawn from the seed
// and the worker (see group).
func loadShard(cfg Config, p int) (*shard, error) {
	ix, err := BuildIndex(cfg.Train, cfg.Workers, cfg.blocks())
	if err != nil {
		return nil, err
	}
	s := &shard{cfg: cfg, ix: ix, p: p, users: ix.ShardUsers[p]}
	s.train = make([]entry, 0, ix.ShardRatings[p])
	err = ReadRatings(cfg.Train, func(_ int, r Rating) error {
		if pl := ix.Users[r.User]; pl.Shard == int32(p) {
			s.train = append(s.train, entry{pl.Index, ix.Items[r.Item], r.Value})
			s.sum += r.Value
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(s.train) != ix.ShardRatings[p] {
		return nil, fmt.Errorf("%s changed while it was read: %d ratings of worker %d, then %d", cfg.Train, ix.ShardRatings[p], p, len(s.train))
	}
	s.group()
	s.regU = make([]float64, len(s.users))
	for k, n := range ix.UserCount[p] {
		s.regU[k] = cfg.Lambda / float64(n)
	}
	s.regI = make([]float64, len(ix.ItemIDs))
	for k, n := range ix.ItemCount {
		s.regI[k] = cfg.Lambda / float64(n)
	}
	if cfg.Test != "" {
		err = ReadRatings(cfg.Test, func(_ int, r Rating) error {
			pl, ok := ix.Users[r.User]
			switch {
			case !ok:
				if p == 0 {
					s.unseen++
				}
			case pl.Shard != int32(p):
			default:
				if i, ok := ix.Items[r.Item]; ok {
					s.test = append(s.test, entry{pl.Index, i, r.Value})
				} else {
					s.unseen++
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// group sorts the training ratings into their item blocks and, within a
// block, by user, each user's ratings in a seeded random order. This is
// the order of the SGD steps: grouped by user, W is read in order and a
// user's factor stays in cache for all its ratings. Measured on 5M
// generated ratings (bench/RESULTS.md), the SGD kernel ran 1.3× (rank 10)
// to 2.2× (rank 50) faster than with all ratings of a block shuffled, and
// the test RMSE after the same number of iterations was no worse.
func (s *shard) group() {
	blocks := s.ix.Blocks
	blockOf := make([]int32, len(s.ix.ItemIDs))
	for b := range blocks {
		lo, hi := s.ix.Block(b)
		for i := lo; i < hi; i++ {
			blockOf[i] = int32(b)
		}
	}
	s.cell = make([]int, blocks+1)
	for _, e := range s.train {
		s.cell[blockOf[e.i]+1]++
	}
	for b := range blocks {
		s.cell[b+1] += s.cell[b]
	}
	grouped := make([]entry, len(s.train))
	next := slices.Clone(s.cell[:blocks])
	for _, e := range s.train {
		b := blockOf[e.i]
		grouped[next[b]] = e
		next[b]++
	}
	s.train = grouped
	rng := rand.New(rand.NewPCG(s.cfg.Seed, uint64(s.p)))
	for b := range blocks {
		c := s.train[s.cell[b]:s.cell[b+1]]
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		slices.SortStableFunc(c, func(x, y entry) int { return cmp.Compare(x.u, y.u) })
	}
}

// describe returns the summary of the shard that a worker sends when it
// joins.
func (s *shard) describe() Summary {
	sum := Summary{
		Fingerprint: s.ix.Fingerprint,
		Users:       s.users,
		Train:       len(s.train),
		RatingSum:   s.sum,
		Test:        len(s.test),
		Unseen:      s.unseen,
		Mean:        s.ix.Mean,
		Std:         s.ix.Std,
		Items:       len(s.ix.ItemIDs),
	}
	if s.p == 0 {
		sum.ItemIDs = s.ix.ItemIDs
		sum.BlockStart = s.ix.BlockStart
	}
	return sum
}

// initScale returns the centre c and half-width a of the initial factors:
// every entry is c + U(−a, a) with c = √(|μ|/K) (negated in H when μ < 0)
// and a = √σ/(2·K^¼), μ and σ the mean and standard deviation of the
// training ratings, so that w·h starts near μ with a small spread.
func initScale(mean, std float64, rank int) (c, a float64) {
	return math.Sqrt(math.Abs(mean) / float64(rank)), math.Sqrt(std) / (2 * math.Pow(float64(rank), 0.25))
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

// initUsers returns the shard's initial W, row by row.
func (s *shard) initUsers(rank int) []float64 {
	c, a := initScale(s.ix.Mean, s.ix.Std, rank)
	w := make([]float64, len(s.users)*rank)
	for k, id := range s.users {
		initFactor(w[k*rank:(k+1)*rank], s.cfg.Seed, userStream, id, c, a)
	}
	return w
}

// initItems returns the initial H, row by row, for the items ids.
func initItems(ids []int64, seed uint64, mean, std float64, rank int) []float64 {
	c, a := initScale(mean, std, rank)
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
func sgd(rs []entry, w, h []float64, rank int, eta float64, regU, regI []float64) {
	for _, x := range rs {
		wu, hi := factorsOf(x, w, h, rank)
		ee := eta * (x.r - dot(wu, hi))
		a, b := 1-eta*regU[x.u], 1-eta*regI[x.i]
		for k, v := range wu {
			hk := hi[k]
			wu[k] = a*v + ee*hk
			hi[k] = b*hk + ee*v
		}
	}
}

// factorsOf returns w_u and h_i of rating x, W and H row by row.
func factorsOf(x entry, w, h []float64, rank int) (wu, hi []float64) {
	wu = w[int(x.u)*rank : int(x.u)*rank+rank]
	hi = h[int(x.i)*rank : int(x.i)*rank+rank]
	return wu, hi[:len(wu)]
}

// sse returns Σ (r − w_u·h_i)² over rs, with W and H row by row.
func sse(rs []entry, w, h []float64, rank int) float64 {
	var s float64
	for _, x := range rs {
		e := x.r - dot(factorsOf(x, w, h, rank))
		s += e * e
	}
	return s
}

// sumSq returns Σ v² over v.
func sumSq(v []float64) float64 { return dot(v, v) }
