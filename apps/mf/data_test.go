package mf

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

func TestReadRatings(t *testing.T) {
	cases := []struct {
		name, text string
		want       []Rating
	}{
		{"spaces", "1 2 3.5\n", []Rating{{1, 2, 3.5}}},
		{"tabs and runs", "1\t 2  \t-0.25  \n", []Rating{{1, 2, -0.25}}},
		{"commas", "1,2,3\n4 , 5 ,6e-1\n", []Rating{{1, 2, 3}, {4, 5, 0.6}}},
		{"double colons", "1::2::5::978300760\n", []Rating{{1, 2, 5}}},
		{"timestamp", "7 8 4 1234\n", []Rating{{7, 8, 4}}},
		{"CRLF", "1 2 3\r\n4 5 6\r\n", []Rating{{1, 2, 3}, {4, 5, 6}}},
		{"no final newline", "1 2 3\n4 5 6", []Rating{{1, 2, 3}, {4, 5, 6}}},
		{"extreme ids", "-9223372036854775808 9223372036854775807 1\n+5 -0 2\n",
			[]Rating{{math.MinInt64, math.MaxInt64, 1}, {5, 0, 2}}},
		{"long decimals", "1 2 0.1234567890123456789\n1 2 1e300\n", []Rating{{1, 2, 0.1234567890123456789}, {1, 2, 1e300}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []Rating
			err := ReadRatings(testhelper.WriteFile(t, "ratings.txt", tc.text), func(_ int, r Rating) error {
				got = append(got, r)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReadRatingsErrors(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		want       string
	}{
		{"empty file", "", 0, "empty"},
		{"only newline", "\n", 1, "empty line"},
		{"blank line", "1 2 3\n\n4 5 6\n", 2, "empty line"},
		{"two fields", "1 2 3\n1 2\n", 2, "2 fields"},
		{"five fields", "1 2 3 4 5\n", 1, "5 fields"},
		{"text id", "1 2 3\nalice 2 3\n", 2, "user id"},
		{"fractional item", "1 2.5 3\n", 1, "item id"},
		{"id overflow", "9223372036854775808 1 1\n", 1, "user id"},
		{"non-numeric rating", "1 2 good\n", 1, "not a number"},
		{"NaN", "1 2 3\n1 2 NaN\n", 2, "not finite"},
		{"Inf", "1 2 -inf\n", 1, "not finite"},
		{"overflow", "1 2 1e400\n", 1, "not finite"},
		{"empty field", "1,,3\n", 1, "empty field"},
		{"trailing comma", "1,2,3,\n", 1, "empty field"},
		{"single colon", "1:2:3\n", 1, "fields"},
		{"bad timestamp", "1 2 3 yesterday\n", 1, "timestamp"},
		{"long line", "1 2 3" + strings.Repeat(" ", 5000) + "\n", 1, "longer than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := testhelper.WriteFile(t, "ratings.txt", tc.text)
			err := ReadRatings(path, func(int, Rating) error { return nil })
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *ParseError", err)
			}
			if pe.File != path || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.want) {
				t.Errorf("error %q, want %s:%d: …%s…", err, path, tc.line, tc.want)
			}
		})
	}
	if err := ReadRatings(filepath.Join(t.TempDir(), "none"), func(int, Rating) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error %v", err)
	}
	stop := errors.New("stop")
	if err := ReadRatings(testhelper.WriteFile(t, "ratings.txt", "1 2 3\n"), func(int, Rating) error { return stop }); err != stop {
		t.Errorf("callback error: got %v, want it as is", err)
	}
}

func TestReadPairs(t *testing.T) {
	var got []string
	err := ReadPairs(testhelper.WriteFile(t, "ratings.txt", "1 2\n3,4,5\n6::7::8::9\n"), func(line int, u, i int64) error {
		got = append(got, fmt.Sprintf("%d:%d,%d", line, u, i))
		return nil
	})
	if err != nil || strings.Join(got, " ") != "1:1,2 2:3,4 3:6,7" {
		t.Errorf("got %v, %v", got, err)
	}
	var pe *ParseError
	if err := ReadPairs(testhelper.WriteFile(t, "ratings.txt", "1 2\n3\n"), func(int, int64, int64) error { return nil }); !errors.As(err, &pe) || pe.Line != 2 {
		t.Errorf("one field: error %v", err)
	}
}

// TestFastFloat checks the fast path of parseFloat against
// strconv.ParseFloat, bit for bit.
func TestFastFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		digits := 1 + rng.IntN(15)
		s := strconv.FormatUint(rng.Uint64()%uint64(math.Pow10(digits)), 10)
		if p := rng.IntN(len(s) + 1); p < len(s) {
			s = s[:p] + "." + s[p:]
		}
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		want, err := strconv.ParseFloat(s, 64)
		got, perr := parseFloat([]byte(s))
		if err != nil || perr != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: got %v (%v), want %v (%v)", s, got, perr, want, err)
		}
	}
}

// TestDuplicates checks that a (user, item) pair rated twice in the
// training file is an error naming the file and both lines, from
// CheckTrain and from every algorithm's workers alike.
func TestDuplicates(t *testing.T) {
	cases := []struct {
		name, text  string
		line, first int // 0: no duplicate
	}{
		{"none", "1 10 4\n1 20 2\n2 10 3\n", 0, 0},
		{"same rating", "1 10 4\n2 10 3\n5 7 1\n2 10 3\n", 4, 2},
		{"other rating, far apart", "9 9 1\n1 10 4\n1 20 2\n2 10 3\n3 30 1\n1 20 5\n", 6, 3},
		{"three times", "4 4 1\n4 4 2\n4 4 3\n", 2, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := testhelper.WriteFile(t, "ratings.txt", tc.text)
			check := func(what string, err error) {
				t.Helper()
				if tc.line == 0 {
					if err != nil {
						t.Errorf("%s: %v", what, err)
					}
					return
				}
				var pe *ParseError
				if !errors.As(err, &pe) || pe.File != path || pe.Line != tc.line || !strings.Contains(pe.Msg, fmt.Sprintf("first at line %d", tc.first)) {
					t.Errorf("%s: error %v, want %s:%d naming line %d", what, err, path, tc.line, tc.first)
				}
			}
			check("CheckTrain", CheckTrain(path))
			for _, algo := range []struct{ algo, schedule string }{{SGD, Rotation}, {SGD, Unscheduled}, {CCD, Rotation}} {
				for _, workers := range []int{1, 2} {
					cfg := Config{Train: path, Rank: 1, Algo: algo.algo, Schedule: algo.schedule, LearningRate: 0.01, Inner: 1, Workers: workers, ReportEvery: 1}
					failed := 0
					for p := range workers {
						_, err := loadShard(cfg, p)
						if tc.line != 0 && err == nil {
							continue // the pair's user is another worker's
						}
						failed++
						check(fmt.Sprintf("%s/%s worker %d of %d", algo.algo, algo.schedule, p, workers), err)
					}
					if tc.line != 0 && failed != 1 {
						t.Errorf("%s/%s, %d workers: %d failed, want the pair's user's worker alone", algo.algo, algo.schedule, workers, failed)
					}
				}
			}
		})
	}
}

// TestPairOf checks the look-up behind CheckTrain's equal hashes: a pair
// of that hash rated twice is found, a hash whose pairs differ (as a
// collision's would) or that no pair has is not a duplicate.
func TestPairOf(t *testing.T) {
	path := testhelper.WriteFile(t, "ratings.txt", "1 10 4\n2 20 3\n1 10 5\n3 30 1\n")
	cases := []struct {
		name       string
		h          uint64
		user, item int64
		ok         bool
	}{
		{"rated twice", pairHash(1, 10), 1, 10, true},
		{"rated once", pairHash(2, 20), 0, 0, false},
		{"no such pair", pairHash(9, 9), 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			user, item, ok := pairOf(path, tc.h)
			if user != tc.user || item != tc.item || ok != tc.ok {
				t.Errorf("pairOf: (%d, %d, %v), want (%d, %d, %v)", user, item, ok, tc.user, tc.item, tc.ok)
			}
		})
	}
}
