package mf

import (
	"math"
)

// BiasOnly is the bias-only baseline r̂_ui = μ + b_u + c_i, the model
// that every MF should beat: μ the mean training rating, and b and c
// minimizing Σ(r − μ − b_u − c_i)² + λ_b(Σb_u² + Σc_i²) over the training
// ratings.
type BiasOnly struct {
	Mean  float64
	Users map[int64]float64
	Items map[int64]float64
}

// FitBiasOnly fits the bias-only baseline to the training ratings that a
// job of cfg fits (all of cfg.Train but the held-out ones, with
// cfg.Holdout), with cfg.BiasLambda, by sweeps exact alternating updates
// of b given c and c given b (each never increases the objective). It
// reads the training file itself, in one process, and holds its ratings
// (16 bytes each) outside Go's heap while it runs.
func FitBiasOnly(cfg Config, sweeps int) (*BiasOnly, error) {
	keep := cfg.trainFilter()
	users, items := map[int64]int32{}, map[int64]int32{}
	var rs biasRatings
	defer rs.free()
	var sum float64
	err := ReadRatings(cfg.Train, func(_ int, r Rating) error {
		if keep != nil && !keep(r) {
			return nil
		}
		u, ok := users[r.User]
		if !ok {
			u = int32(len(users))
			users[r.User] = u
		}
		i, ok := items[r.Item]
		if !ok {
			i = int32(len(items))
			items[r.Item] = i
		}
		sum += r.Value
		return rs.add(biasRating{u, i, r.Value})
	})
	if err != nil {
		return nil, err
	}
	mu := sum / float64(rs.n)
	b, c := make([]float64, len(users)), make([]float64, len(items))
	nu, ni := make([]float64, len(users)), make([]float64, len(items))
	rs.each(func(x biasRating) {
		nu[x.u]++
		ni[x.i]++
	})
	acc := func(dst, n []float64) {
		for k := range dst {
			dst[k] /= n[k] + cfg.BiasLambda
		}
	}
	for range max(sweeps, 1) {
		clear(b)
		rs.each(func(x biasRating) { b[x.u] += x.r - mu - c[x.i] })
		acc(b, nu)
		clear(c)
		rs.each(func(x biasRating) { c[x.i] += x.r - mu - b[x.u] })
		acc(c, ni)
	}
	m := &BiasOnly{Mean: mu, Users: make(map[int64]float64, len(users)), Items: make(map[int64]float64, len(items))}
	for id, u := range users {
		m.Users[id] = b[u]
	}
	for id, i := range items {
		m.Items[id] = c[i]
	}
	return m, nil
}

// biasRating is a rating of FitBiasOnly: its user's and item's indices and
// the rating.
type biasRating struct {
	u, i int32
	r    float64
}

// biasRatings holds ratings in chunks outside Go's heap (mapped), so that
// they need neither a first pass to count them nor the copies of a slice
// that grows.
type biasRatings struct {
	chunks [][]biasRating
	frees  []func()
	n      int
}

// biasChunk is the number of ratings in a chunk (16 MiB).
const biasChunk = 1 << 20

// add appends x.
func (rs *biasRatings) add(x biasRating) error {
	k := rs.n % biasChunk
	if k == 0 {
		c, free, err := mapped[biasRating](biasChunk)
		if err != nil {
			return err
		}
		rs.chunks, rs.frees = append(rs.chunks, c), append(rs.frees, free)
	}
	rs.chunks[len(rs.chunks)-1][k] = x
	rs.n++
	return nil
}

// each calls fn for every rating, in order.
func (rs *biasRatings) each(fn func(biasRating)) {
	for k, c := range rs.chunks {
		for _, x := range c[:min(biasChunk, rs.n-k*biasChunk)] {
			fn(x)
		}
	}
}

// free gives the chunks back.
func (rs *biasRatings) free() {
	for _, f := range rs.frees {
		f()
	}
	*rs = biasRatings{}
}

// RMSE returns the root mean squared error of the baseline over the
// ratings of the file at path that keep accepts (all if nil) and whose user
// and item it knows, as the jobs count test and validation ratings, and
// how many those are.
func (m *BiasOnly) RMSE(path string, keep func(Rating) bool) (rmse float64, n int, err error) {
	var s float64
	err = ReadRatings(path, func(_ int, r Rating) error {
		if keep != nil && !keep(r) {
			return nil
		}
		b, ok1 := m.Users[r.User]
		c, ok2 := m.Items[r.Item]
		if ok1 && ok2 {
			d := r.Value - m.Mean - b - c
			s += d * d
			n++
		}
		return nil
	})
	if err != nil || n == 0 {
		return math.NaN(), n, err
	}
	return math.Sqrt(s / float64(n)), n, nil
}

// ValidationFilter returns the filter of cfg's held-out validation
// ratings (nil without Holdout).
func (c Config) ValidationFilter() func(Rating) bool {
	if c.Holdout <= 0 {
		return nil
	}
	seed, f := c.Seed, c.Holdout
	return func(r Rating) bool { return HeldOut(seed, r.User, r.Item, f) }
}
