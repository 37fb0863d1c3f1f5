package lasso

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/strads-go/strads/schmp"
)

// Streams of the PCG generators seeded with GenConfig.Seed. Separate streams
// keep X independent of the noise and of the true coefficients, so that for
// example changing Noise or TrueNNZ leaves the design matrix unchanged.
const (
	genStreamBeta  = 0x6c6173736f0001 // "lasso" 1
	genStreamX     = 0x6c6173736f0002
	genStreamNoise = 0x6c6173736f0003
)

// GenConfig describes a reproducible synthetic Lasso problem y = Xβ + ε.
//
// If CorrGroups is 0, every entry of X is independently non-zero with
// probability Density, with a standard Gaussian value. Otherwise the
// features are split into CorrGroups contiguous groups of (nearly) equal
// size that cover all features. In each row each group is independently
// active with probability Density; all features of an active group are
// non-zero in that row and all features of an inactive group are zero. The
// value of feature j of group g is √Corr·z + √(1−Corr)·e, where z is a
// standard Gaussian shared by the whole group in that row and e is an
// independent standard Gaussian, so two columns of the same group have
// correlation Corr, and columns of different groups are uncorrelated. The
// group size therefore sets how many non-zeros a row gains per active group.
type GenConfig struct {
	Samples, Features int
	Density           float64 // fraction of non-zero entries per row, in (0,1]
	CorrGroups        int     // number of groups of correlated features (0 = none)
	Corr              float64 // target correlation within a group, in [0,1)
	TrueNNZ           int     // non-zeros in the true coefficient vector
	Noise             float64 // standard deviation of Gaussian noise added to y
	Seed              uint64  // seed of all random choices
}

// Validate returns a *schmp.FieldError naming the offending field (for
// example "Density must be in (0,1], got 0"), if c does not describe a
// valid problem.
func (c GenConfig) Validate() error {
	switch {
	case c.Samples < 1:
		return schmp.Fieldf("Samples", "must be at least 1, got %d", c.Samples)
	case c.Features < 1:
		return schmp.Fieldf("Features", "must be at least 1, got %d", c.Features)
	case c.Features > math.MaxInt32:
		return schmp.Fieldf("Features", "must be at most %d, got %d", math.MaxInt32, c.Features)
	case !(c.Density > 0 && c.Density <= 1):
		return schmp.Fieldf("Density", "must be in (0,1], got %v", c.Density)
	case c.CorrGroups < 0 || c.CorrGroups > c.Features:
		return schmp.Fieldf("CorrGroups", "must be in [0,%d] (at most {Features}), got %d", c.Features, c.CorrGroups)
	case !(c.Corr >= 0 && c.Corr < 1):
		return schmp.Fieldf("Corr", "must be in [0,1), got %v", c.Corr)
	case c.TrueNNZ < 0 || c.TrueNNZ > c.Features:
		return schmp.Fieldf("TrueNNZ", "must be in [0,%d] (at most {Features}), got %d", c.Features, c.TrueNNZ)
	case !(c.Noise >= 0 && c.Noise <= math.MaxFloat64):
		return schmp.Fieldf("Noise", "must be finite and >= 0, got %v", c.Noise)
	}
	return nil
}

// Generate writes the data set described by c to w in LIBSVM format, one
// sample per line with its label y and its non-zero features (1-based,
// ascending indices; numbers formatted with strconv 'g' and precision -1, so
// they read back exactly), and returns the true coefficients β, of length
// c.Features, with c.TrueNNZ non-zeros of magnitude 1+|N(0,1)| and random
// sign at random features.
//
// The output depends only on c: the same config gives byte-identical output.
// Rows are streamed through a buffer, so memory use is O(c.Features)
// whatever c.Samples is.
func Generate(w io.Writer, c GenConfig) (beta []float64, err error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("lasso: %w", err)
	}
	beta = genBeta(c)

	rx := rand.New(rand.NewPCG(c.Seed, genStreamX))
	rnoise := rand.New(rand.NewPCG(c.Seed, genStreamNoise))
	skip := genSkipper(c.Density)

	// Group g holds features [start[g], start[g+1]).
	var start []int
	if c.CorrGroups > 0 {
		start = make([]int, c.CorrGroups+1)
		base, rem := c.Features/c.CorrGroups, c.Features%c.CorrGroups
		for g := range c.CorrGroups {
			start[g+1] = start[g] + base
			if g < rem {
				start[g+1]++
			}
		}
	}
	shared, own := math.Sqrt(c.Corr), math.Sqrt(1-c.Corr)

	bw := bufio.NewWriterSize(w, 64<<10)
	var (
		idx  []int
		val  []float64
		line []byte
	)
	for range c.Samples {
		idx, val = idx[:0], val[:0]
		if c.CorrGroups == 0 {
			for j := skip(rx, c.Features); j < c.Features; j += 1 + skip(rx, c.Features) {
				idx = append(idx, j)
				val = append(val, rx.NormFloat64())
			}
		} else {
			for g := skip(rx, c.CorrGroups); g < c.CorrGroups; g += 1 + skip(rx, c.CorrGroups) {
				z := shared * rx.NormFloat64()
				for j := start[g]; j < start[g+1]; j++ {
					idx = append(idx, j)
					val = append(val, z+own*rx.NormFloat64())
				}
			}
		}
		var y float64
		for k, j := range idx {
			y += beta[j] * val[k]
		}
		y += c.Noise * rnoise.NormFloat64()

		line = strconv.AppendFloat(line[:0], y, 'g', -1, 64)
		for k, j := range idx {
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(j)+1, 10)
			line = append(line, ':')
			line = strconv.AppendFloat(line, val[k], 'g', -1, 64)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return nil, fmt.Errorf("lasso: write data: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("lasso: write data: %w", err)
	}
	return beta, nil
}

// genBeta returns the true coefficients of c: TrueNNZ distinct random
// features get ±(1+|N(0,1)|).
func genBeta(c GenConfig) []float64 {
	r := rand.New(rand.NewPCG(c.Seed, genStreamBeta))
	beta := make([]float64, c.Features)
	perm := make([]int32, c.Features)
	for i := range perm {
		perm[i] = int32(i)
	}
	// Partial Fisher–Yates shuffle: perm[:TrueNNZ] is a uniform sample.
	for i := range c.TrueNNZ {
		k := i + r.IntN(c.Features-i)
		perm[i], perm[k] = perm[k], perm[i]
		b := 1 + math.Abs(r.NormFloat64())
		if r.IntN(2) == 0 {
			b = -b
		}
		beta[perm[i]] = b
	}
	return beta
}

// genSkipper returns a function drawing the number of failures before the
// next success of independent Bernoulli(p) trials (a geometric variate),
// capped at limit. Skipping by it visits each of n items with probability p
// in O(np) time.
func genSkipper(p float64) func(r *rand.Rand, limit int) int {
	if p >= 1 {
		return func(*rand.Rand, int) int { return 0 }
	}
	logq := math.Log1p(-p)
	return func(r *rand.Rand, limit int) int {
		u := 1 - r.Float64() // in (0,1]
		k := math.Floor(math.Log(u) / logq)
		if k >= float64(limit) {
			return limit
		}
		return int(k)
	}
}
