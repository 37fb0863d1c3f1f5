package mf

import (
	"bytes"
	"slices"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

func TestGenerate(t *testing.T) {
	c := GenConfig{Users: 1000, Items: 500, Rank: 3, Ratings: 20_000, Noise: 0.1, Alpha: 1, TestFraction: 0.2, Seed: 5}
	var tr, te bytes.Buffer
	st, err := Generate(&tr, &te, c)
	if err != nil {
		t.Fatal(err)
	}
	if st.Train+st.Test != c.Ratings || st.Test < 3500 || st.Test > 4500 {
		t.Errorf("%d train and %d test ratings, want %d with about 20%% test", st.Train, st.Test, c.Ratings)
	}
	var tr2, te2 bytes.Buffer
	if _, err := Generate(&tr2, &te2, c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tr.Bytes(), tr2.Bytes()) || !bytes.Equal(te.Bytes(), te2.Bytes()) {
		t.Error("the same seed gave different files")
	}
	pairs := map[[2]int64]bool{}
	items := map[int64]int{}
	for _, buf := range []*bytes.Buffer{&tr, &te} {
		path := testhelper.WriteFile(t, "ratings.txt", buf.String())
		if err := ReadRatings(path, func(line int, r Rating) error {
			k := [2]int64{r.User, r.Item}
			if pairs[k] {
				t.Fatalf("line %d: user %d rates item %d twice", line, r.User, r.Item)
			}
			pairs[k] = true
			items[r.Item]++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Power law: the most popular item has many times the ratings of the
	// median one.
	most, counts := 0, []int{}
	for _, n := range items {
		most = max(most, n)
		counts = append(counts, n)
	}
	if med := median(counts); most < 10*med {
		t.Errorf("most popular item has %d ratings, the median %d: not a power law", most, med)
	}
	for _, bad := range []GenConfig{
		{Users: 0, Items: 1, Rank: 1, Ratings: 1},
		{Users: 10, Items: 10, Rank: 1, Ratings: 51},
		{Users: 10, Items: 10, Rank: 0, Ratings: 5},
		{Users: 10, Items: 10, Rank: 1, Ratings: 5, Noise: -1},
		{Users: 10, Items: 10, Rank: 1, Ratings: 5, TestFraction: 1},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func median(v []int) int {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
