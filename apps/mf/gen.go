package mf

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// GenConfig configures a synthetic ratings set.
type GenConfig struct {
	// Users and Items are the numbers of users and items, Rank the rank of
	// the true factors, Ratings the number of ratings (train and test).
	Users, Items, Rank, Ratings int
	// Noise is the standard deviation of the Gaussian noise on a rating.
	Noise float64
	// Mean is the global mean μ of the ratings, and UserBias and ItemBias
	// the standard deviations of the Gaussian user and item biases: a
	// rating is μ + b_u + c_i + w_u·h_i + noise. All 0 gives the ratings
	// of a model without biases (and the files of a GenConfig without
	// these fields).
	Mean, UserBias, ItemBias float64
	// Alpha is the exponent of item popularity: the item of popularity
	// rank j (from 1) is drawn with probability ∝ j^−Alpha.
	Alpha float64
	// TestFraction is the fraction of ratings that go to the test set.
	TestFraction float64
	// Seed seeds everything: the same GenConfig gives the same files.
	Seed uint64
}

// Validate reports the first bad setting, named as its command-line flag.
func (c GenConfig) Validate() error {
	switch {
	case c.Users < 1 || c.Users > math.MaxInt32:
		return fmt.Errorf("--users must be in [1, %d], got %d", math.MaxInt32, c.Users)
	case c.Items < 1 || c.Items > math.MaxInt32:
		return fmt.Errorf("--items must be in [1, %d], got %d", math.MaxInt32, c.Items)
	case c.Rank < 1 || c.Rank > 1<<12:
		return fmt.Errorf("--rank must be in [1, %d], got %d", 1<<12, c.Rank)
	case c.Ratings < 1:
		return fmt.Errorf("--ratings must be at least 1, got %d", c.Ratings)
	case float64(c.Ratings) > float64(c.Users)*float64(c.Items)/2:
		return fmt.Errorf("--ratings %d is more than half of the %d×%d matrix: too dense for a ratings set", c.Ratings, c.Users, c.Items)
	case !(c.Noise >= 0) || math.IsInf(c.Noise, 0):
		return fmt.Errorf("--noise must be a finite number >= 0, got %v", c.Noise)
	case math.IsNaN(c.Mean) || math.IsInf(c.Mean, 0):
		return fmt.Errorf("GenConfig.Mean must be finite, got %v", c.Mean)
	case !(c.UserBias >= 0) || math.IsInf(c.UserBias, 0) || !(c.ItemBias >= 0) || math.IsInf(c.ItemBias, 0):
		return fmt.Errorf("GenConfig.UserBias and ItemBias must be finite numbers >= 0, got %v and %v", c.UserBias, c.ItemBias)
	case !(c.Alpha >= 0) || c.Alpha > 10:
		return fmt.Errorf("--alpha must be in [0, 10], got %v", c.Alpha)
	case !(c.TestFraction >= 0 && c.TestFraction < 1):
		return fmt.Errorf("--test-fraction must be in [0, 1), got %v", c.TestFraction)
	}
	return nil
}

// GenStats counts what Generate wrote.
type GenStats struct {
	Train, Test int
}

// GenTruth is the model behind a generated set: user u+1's factor is row u
// of W and its bias B[u], item i+1's row i of H and C[i].
type GenTruth struct {
	Rank int
	W, H []float64
	B, C []float64
}

// Truth returns the model that Generate draws for c.
func (c GenConfig) Truth() GenTruth {
	return drawTruth(rand.New(rand.NewPCG(c.Seed, 0x6d66)), c)
}

// drawTruth draws the true model from rng, first of all: W, H, and then
// the biases only where their standard deviation is not 0.
func drawTruth(rng *rand.Rand, c GenConfig) GenTruth {
	sd := math.Pow(float64(c.Rank), -0.25)
	normal := func(n int, sd float64) []float64 {
		v := make([]float64, n)
		if sd == 0 {
			return v
		}
		for k := range v {
			v[k] = sd * rng.NormFloat64()
		}
		return v
	}
	t := GenTruth{Rank: c.Rank}
	t.W = normal(c.Users*c.Rank, sd)
	t.H = normal(c.Items*c.Rank, sd)
	t.B = normal(c.Users, c.UserBias)
	t.C = normal(c.Items, c.ItemBias)
	return t
}

// Generate writes a synthetic ratings set to train and test, lines
// "user item rating" with user ids 1…Users and item ids 1…Items. The true
// factors have independent N(0, 1/√Rank) entries, so that w·h has variance
// 1, and the biases are N(0, UserBias²) and N(0, ItemBias²); rating = Mean
// + b_u + c_i + w_u·h_i + N(0, Noise²) (see GenConfig.Truth). Item
// popularity follows a power law
// (GenConfig.Alpha) over a random order of the items, and users' activity
// varies (log-normally, σ = 0.5); a user never rates an item twice. Each
// rating goes to the test set with probability TestFraction.
func Generate(train, test io.Writer, c GenConfig) (GenStats, error) {
	var st GenStats
	if err := c.Validate(); err != nil {
		return st, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x6d66))
	truth := drawTruth(rng, c)
	w, h := truth.W, truth.H

	// Item popularity: cumulative weights over a random order of the items.
	order := rng.Perm(c.Items)
	cum := make([]float64, c.Items)
	total := 0.0
	for j := range cum {
		total += math.Pow(float64(j+1), -c.Alpha)
		cum[j] = total
	}
	draw := func() int {
		x := rng.Float64() * total
		j, _ := slices.BinarySearch(cum, x)
		return order[min(j, c.Items-1)]
	}

	counts := userCounts(rng, c)
	tw, sw := bufio.NewWriter(train), bufio.NewWriter(test)
	seen := map[int]bool{}
	var buf []byte
	var picked []int
	for u, n := range counts {
		clear(seen)
		picked = picked[:0]
		for tries := 0; len(picked) < n && tries < 50*n; tries++ {
			if i := draw(); !seen[i] {
				seen[i] = true
				picked = append(picked, i)
			}
		}
		for i := rng.IntN(c.Items); len(picked) < n; i = (i + 1) % c.Items {
			if !seen[i] {
				seen[i] = true
				picked = append(picked, i)
			}
		}
		for _, i := range picked {
			r := c.Mean + truth.B[u] + truth.C[i] + dot(w[u*c.Rank:(u+1)*c.Rank], h[i*c.Rank:(i+1)*c.Rank]) + c.Noise*rng.NormFloat64()
			out := tw
			if rng.Float64() < c.TestFraction {
				out = sw
				st.Test++
			} else {
				st.Train++
			}
			buf = strconv.AppendInt(buf[:0], int64(u+1), 10)
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, int64(i+1), 10)
			buf = append(buf, ' ')
			buf = strconv.AppendFloat(buf, r, 'g', 8, 64)
			buf = append(buf, '\n')
			if _, err := out.Write(buf); err != nil {
				return st, err
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return st, err
	}
	return st, sw.Flush()
}

// userCounts splits c.Ratings among the users in proportion to log-normal
// weights (rounded down, then the rest by largest remainder), at most
// Items each.
func userCounts(rng *rand.Rand, c GenConfig) []int {
	weight := make([]float64, c.Users)
	sum := 0.0
	for u := range weight {
		weight[u] = math.Exp(0.5 * rng.NormFloat64())
		sum += weight[u]
	}
	counts := make([]int, c.Users)
	frac := make([]float64, c.Users)
	left := c.Ratings
	for u, wt := range weight {
		x := float64(c.Ratings) * wt / sum
		counts[u] = min(int(x), c.Items)
		frac[u] = x - float64(counts[u])
		left -= counts[u]
	}
	byFrac := make([]int, c.Users)
	for u := range byFrac {
		byFrac[u] = u
	}
	slices.SortStableFunc(byFrac, func(a, b int) int {
		switch {
		case frac[a] > frac[b]:
			return -1
		case frac[a] < frac[b]:
			return 1
		}
		return 0
	})
	// Hand out what is left one at a time, largest remainders first, to
	// users that can take more.
	for left > 0 {
		for _, u := range byFrac {
			if left == 0 {
				break
			}
			if counts[u] < c.Items {
				counts[u]++
				left--
			}
		}
	}
	return counts
}
