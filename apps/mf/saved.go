package mf

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strconv"
)

// Saved is a model read back from the files that a job's --out PREFIX
// wrote: PREFIX.W.txt and PREFIX.H.txt (lines "id v1 … vK") and, for a
// biased model, PREFIX.bias.txt (a line "mean μ", then lines "user ID b"
// and "item ID c"). It predicts exactly as the job's model did
// (Model.Predict), to the last bit.
type Saved struct {
	// Rank is K; Biased says PREFIX.bias.txt was there.
	Rank   int
	Biased bool
	// Mean is μ (0 without biases).
	Mean float64
	// Users and Items map an id to its factor and bias.
	Users, Items map[int64]SavedRow
	// ItemIDs holds the item ids in ascending order.
	ItemIDs []int64
}

// SavedRow is a user's or an item's factor and bias.
type SavedRow struct {
	V    []float64
	Bias float64
}

// LoadSaved reads the model that --out prefix wrote. A model without
// prefix.bias.txt is one without biases (--no-bias). Bad content is a
// *ParseError naming the file and line. The side file prefix.json (Meta),
// where there is one, must describe the factor files found: their rank,
// counts, biases and mean, or the error names it.
func LoadSaved(prefix string) (*Saved, error) {
	s := &Saved{Rank: -1, Users: map[int64]SavedRow{}, Items: map[int64]SavedRow{}}
	for _, part := range []struct {
		path string
		rows map[int64]SavedRow
	}{{prefix + ".W.txt", s.Users}, {prefix + ".H.txt", s.Items}} {
		if err := s.readFactors(part.path, part.rows); err != nil {
			return nil, err
		}
	}
	for id := range s.Items {
		s.ItemIDs = append(s.ItemIDs, id)
	}
	slices.Sort(s.ItemIDs)
	err := s.readBiases(prefix + ".bias.txt")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	meta, err := readMeta(prefix)
	if err != nil {
		return nil, err
	}
	if meta != nil {
		if err := s.check(prefix, meta); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readFactors reads a file of lines "id v1 … vK" into rows.
func (s *Saved) readFactors(path string, rows map[int64]SavedRow) error {
	n := 0
	err := readLines(path, func(_ int, fields [][]byte) error {
		if len(fields) < 2 {
			return failf("want \"id v1 … vK\", got %d fields", len(fields))
		}
		id, err := parseID("id", fields[0])
		if err != nil {
			return err
		}
		if s.Rank < 0 {
			s.Rank = len(fields) - 1
		} else if len(fields)-1 != s.Rank {
			return failf("%d factor values, want %d as on the first line of the user factors", len(fields)-1, s.Rank)
		}
		if _, dup := rows[id]; dup {
			return failf("id %d again", id)
		}
		v := make([]float64, s.Rank)
		for k, f := range fields[1:] {
			if v[k], err = parseValue(f); err != nil {
				return err
			}
		}
		rows[id] = SavedRow{V: v}
		n++
		return nil
	})
	if err == nil && n == 0 {
		return &ParseError{File: path, Msg: "no factors: the file is empty"}
	}
	return err
}

// readBiases reads the biases file into the rows that readFactors made.
func (s *Saved) readBiases(path string) error {
	seen := map[string]bool{}
	err := readLines(path, func(line int, fields [][]byte) error {
		kind := string(fields[0])
		switch {
		case line == 1:
			if kind != "mean" || len(fields) != 2 {
				return failf("want \"mean μ\" on the first line")
			}
			v, err := parseValue(fields[1])
			s.Mean = v
			return err
		case kind != "user" && kind != "item":
			return failf("want \"user ID b\" or \"item ID c\", got %q", kind)
		case len(fields) != 3:
			return failf("want \"%s ID bias\", got %d fields", kind, len(fields))
		}
		id, err := parseID(kind, fields[1])
		if err != nil {
			return err
		}
		v, err := parseValue(fields[2])
		if err != nil {
			return err
		}
		rows := s.Users
		if kind == "item" {
			rows = s.Items
		}
		r, ok := rows[id]
		switch {
		case !ok:
			return failf("%s %d has a bias but no factor", kind, id)
		case seen[kind+string(fields[1])]:
			return failf("%s %d again", kind, id)
		}
		seen[kind+string(fields[1])] = true
		r.Bias = v
		rows[id] = r
		return nil
	})
	if err != nil {
		return err
	}
	s.Biased = true
	return nil
}

// parseValue parses a finite number.
func parseValue(b []byte) (float64, error) {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, failf("bad value %q: want a finite number", b)
	}
	return v, nil
}

// predict returns the prediction of the pair: as Model.Predict, μ + b_u +
// c_i + w_u·h_i (w_u·h_i without biases), and for an unseen id the terms
// known; known says both ids were.
func (s *Saved) predict(user, item int64) (p float64, known bool) {
	wu, ok1 := s.Users[user]
	hi, ok2 := s.Items[item]
	switch {
	case ok1 && ok2:
		p = dot(wu.V, hi.V)
		if s.Biased {
			p += s.Mean + wu.Bias + hi.Bias
		}
		return p, true
	case s.Biased:
		return s.Mean + wu.Bias + hi.Bias, false
	}
	return math.NaN(), false
}

// Predict writes a line "user item prediction" for every pair of the pairs
// file at path (see ReadPairs), in order, as Model.Predict does, and
// returns the number of pairs with a user or item not in the model. A
// model without biases cannot predict those (it lacks μ): such a pair is a
// *ParseError at its line.
func (s *Saved) Predict(path string, w io.Writer) (unseen int, err error) {
	bw := bufio.NewWriter(w)
	var buf []byte
	err = ReadPairs(path, func(_ int, user, item int64) error {
		p, known := s.predict(user, item)
		if !known {
			if !s.Biased {
				return failf("user %d or item %d is not in the model, and a model without biases has no μ to predict it by", user, item)
			}
			unseen++
		}
		buf = appendPrediction(buf[:0], user, item, p)
		_, err := bw.Write(buf)
		return err
	})
	if err != nil {
		return unseen, err
	}
	return unseen, bw.Flush()
}

// Scored is an item and its predicted rating.
type Scored struct {
	Item  int64
	Score float64
}

// ErrUnknownUser is the error of a recommendation for a user not in the
// model.
var ErrUnknownUser = errors.New("user not in the model")

// Recommend returns the top items for user by predicted rating, best
// first (ties by ascending item id), leaving out the items of seen; at most
// top.
func (s *Saved) Recommend(user int64, top int, seen map[int64]bool) ([]Scored, error) {
	if _, ok := s.Users[user]; !ok {
		return nil, fmt.Errorf("user %d: %w", user, ErrUnknownUser)
	}
	out := make([]Scored, 0, len(s.ItemIDs))
	for _, id := range s.ItemIDs {
		if seen[id] {
			continue
		}
		p, _ := s.predict(user, id)
		out = append(out, Scored{id, p})
	}
	slices.SortStableFunc(out, func(a, b Scored) int { return cmp.Compare(b.Score, a.Score) })
	return out[:min(top, len(out))], nil
}

// RatedBy returns the items that user rated in the ratings file at path.
func RatedBy(path string, user int64) (map[int64]bool, error) {
	seen := map[int64]bool{}
	err := ReadRatings(path, func(_ int, r Rating) error {
		if r.User == user {
			seen[r.Item] = true
		}
		return nil
	})
	return seen, err
}
