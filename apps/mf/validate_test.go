package mf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/local"
	"github.com/strads-go/strads/schmp"
)

// fitLocal runs the job of cfg in one goroutine (package local: every
// message through msgpack, as between machines), its evaluations carrying
// the factors (Model.Factors, as with outputs), and returns its model.
func fitLocal(ctx context.Context, cfg Config) (*Model, error) {
	m, _, err := fitStatus(ctx, cfg)
	return m, err
}

// fitStatus is fitLocal, which also returns the job's status.
func fitStatus(ctx context.Context, cfg Config) (*Model, pipeline.Status, error) {
	rpi := cfg.RoundsPerIter()
	opts := local.Options{Config: pipeline.Config{Workers: cfg.Workers, Parts: 1, Depth: 1, ReportEvery: cfg.ReportEvery * rpi,
		MaxRounds: uint64(cfg.Iters * rpi)}}
	switch {
	case cfg.Algo == ALS:
		return fitProgram(ctx, ALSProgram(cfg), opts)
	case cfg.Algo == CCD:
		return fitProgram(ctx, CCDProgram(cfg), opts)
	case cfg.Schedule == Unscheduled:
		return fitProgram(ctx, UnscheduledProgram(cfg), opts)
	}
	return fitProgram(ctx, RotationProgram(cfg), opts)
}

// fitProgram runs prog's job as fitLocal says, and returns its model and
// status.
func fitProgram[P, R, U any](ctx context.Context, prog schmp.Program[P, R, U, Summary], opts local.Options) (*Model, pipeline.Status, error) {
	j, err := local.New(ctx, prog, opts)
	if err != nil {
		return nil, pipeline.Status{}, err
	}
	m := ModelOf(j.Coordinator)
	m.Factors = true
	st, err := j.Run(ctx)
	return m, st, err
}

// genSet writes a generated set with a global mean and biases to dir and
// returns its training and test files.
func genSet(t *testing.T, dir string, noise float64, seed uint64) (train, test string) {
	t.Helper()
	var tr, te bytes.Buffer
	if _, err := Generate(&tr, &te, GenConfig{Users: 800, Items: 300, Rank: 4, Ratings: 40_000, Noise: noise, Mean: 3,
		UserBias: 0.5, ItemBias: 0.5, Alpha: 1, TestFraction: 0.1, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	train, test = filepath.Join(dir, fmt.Sprintf("train%d.txt", seed)), filepath.Join(dir, fmt.Sprintf("test%d.txt", seed))
	for path, b := range map[string][]byte{train: tr.Bytes(), test: te.Bytes()} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return train, test
}

// heldOutRatings returns the validation ratings of cfg (those HeldOut
// selects) from its training file.
func heldOutRatings(t *testing.T, cfg Config) []Rating {
	t.Helper()
	var rs []Rating
	if err := ReadRatings(cfg.Train, func(_ int, r Rating) error {
		if HeldOut(cfg.Seed, r.User, r.Item, cfg.Holdout) {
			rs = append(rs, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestHeldOut checks the split: about the fraction asked for, the same
// for every number of workers (each worker's validation ratings, put
// together, are all of them), and none of them in the training shards.
func TestHeldOut(t *testing.T) {
	train, _ := testData(t)
	for _, tc := range []struct {
		f       float64
		workers int
	}{{0.05, 1}, {0.1, 3}, {0.3, 2}} {
		t.Run(fmt.Sprintf("f=%g/workers=%d", tc.f, tc.workers), func(t *testing.T) {
			cfg := config(t, "rotation", tc.workers, 1)
			cfg.Holdout, cfg.Patience = tc.f, 1
			held := heldOutRatings(t, cfg)
			var all int
			if err := ReadRatings(train, func(int, Rating) error { all++; return nil }); err != nil {
				t.Fatal(err)
			}
			if got := float64(len(held)) / float64(all); math.Abs(got-tc.f) > 0.01 {
				t.Errorf("held out %.4f of the ratings, want %g", got, tc.f)
			}
			var val, unseen, trained int
			for p := range tc.workers {
				s, err := loadShard(cfg, p)
				if err != nil {
					t.Fatal(err)
				}
				val += len(s.val)
				unseen += s.valUnseen
				trained += s.train.len()
				s.train.each(func(u int, i int32, _ float64) {
					if HeldOut(cfg.Seed, s.users[u], s.ix.ItemIDs[i], tc.f) {
						t.Errorf("worker %d trains on a held-out rating", p)
					}
				})
			}
			if val+unseen != len(held) || trained+len(held) != all {
				t.Errorf("workers hold %d validation ratings (+%d unpredictable) and %d training ones; the file has %d held out of %d", val, unseen, trained, len(held), all)
			}
		})
	}
}

// TestValidationStop checks the stop on a fit that overfits (rank 12 on
// rank-4 data, almost no regularization): the job stops, exactly Patience
// evaluations after the one with the lowest validation RMSE, which is the
// minimum of the trace, and the factors kept are that evaluation's: their
// RMSE over the held-out ratings, computed here from the file, is its
// validation RMSE. The runtime stops for the app (schmp.StopApp) at the
// end of the iteration of the report that asked, and says why.
func TestValidationStop(t *testing.T) {
	train, test := genSet(t, t.TempDir(), 0.8, 3)
	for _, tc := range []struct {
		algo     string
		patience int
		lambda   float64
		cold     bool
	}{
		// With the warm start the rotation's first iteration already
		// raises the validation RMSE above the bias-only model's here: at
		// patience 1 the job would keep iteration 0, which this test does
		// not want (TestWarmStartNeverWorse checks that).
		{"rotation", 1, 1e-4, true}, {"rotation", 3, 1e-4, false}, {"als", 2, 0.03, false}, {"unscheduled", 2, 1e-4, false},
	} {
		t.Run(fmt.Sprintf("%s/patience=%d", tc.algo, tc.patience), func(t *testing.T) {
			cfg := config(t, tc.algo, 2, 60)
			cfg.Train, cfg.Test, cfg.Rank, cfg.Lambda, cfg.LearningRate = train, test, 12, tc.lambda, 0.05
			cfg.ColdStart = tc.cold
			cfg.Holdout, cfg.Patience = 0.2, tc.patience
			m, st, err := fitStatus(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			rpi := uint64(cfg.RoundsPerIter())
			if e := m.Trace[len(m.Trace)-1]; st.Reason != schmp.StopApp || !strings.Contains(st.AppReason, "validation RMSE") ||
				st.Last != e.Round+rpi || st.Decided != e.Round+1 {
				t.Fatalf("stopped (%s: %q) at round %d, last %d; want the app's stop at round %d, last %d",
					st.Reason, st.AppReason, st.Decided, st.Last, e.Round+1, e.Round+rpi)
			}
			if !m.Stopped {
				t.Fatalf("no validation stop in %d evaluations; validation RMSE %v", len(m.Trace), valTrace(m))
			}
			vals := valTrace(m)
			if lowest := slices.Index(vals, slices.Min(vals)); m.BestAt != lowest || len(m.Trace)-1-m.BestAt != tc.patience {
				t.Fatalf("best at %d of %d evaluations, want the lowest (%d) followed by %d: %v", m.BestAt, len(m.Trace), lowest, tc.patience, vals)
			}
			if m.BestAt == 0 || vals[len(vals)-1] <= vals[m.BestAt] {
				t.Fatalf("validation RMSE %v: want it to fall, then rise", vals)
			}
			want := m.Best().ValRMSE
			if got := savedRMSE(t, m, heldOutRatings(t, cfg)); math.Abs(got-want) > 1e-9*want {
				t.Errorf("the factors kept have validation RMSE %.12f, the best evaluation %.12f", got, want)
			}
		})
	}
}

func valTrace(m *Model) []float64 {
	v := make([]float64, len(m.Trace))
	for k, e := range m.Trace {
		v[k] = e.ValRMSE
	}
	return v
}

// savedRMSE writes m's factors as --out does, reads them back with
// LoadSaved and returns their RMSE over rs (whose ids all are in m).
func savedRMSE(t *testing.T, m *Model, rs []Rating) float64 {
	t.Helper()
	s := saveAndLoad(t, m)
	var sum float64
	n := 0
	for _, r := range rs {
		p, known := s.predict(r.User, r.Item)
		if !known {
			continue
		}
		sum += (r.Value - p) * (r.Value - p)
		n++
	}
	return math.Sqrt(sum / float64(n))
}

func saveAndLoad(t *testing.T, m *Model) *Saved {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "model")
	writes := map[string]func(w *bytes.Buffer) error{
		".W.txt": func(w *bytes.Buffer) error { return m.WriteW(w) },
		".H.txt": func(w *bytes.Buffer) error { return m.WriteH(w) },
	}
	if m.Biased {
		writes[".bias.txt"] = func(w *bytes.Buffer) error { return m.WriteBiases(w) }
	}
	writes[".json"] = func(w *bytes.Buffer) error { return m.writeMeta(w, Config{}) }
	for ext, write := range writes {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(prefix+ext, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := LoadSaved(prefix)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTuneChoosesGridBest checks --lambda auto's search against an
// exhaustive evaluation of the grid: every λ fitted for all its
// iterations, with no stop, and its lowest validation RMSE over all of
// them taken. On two problems whose best λ differ (little noise: a small
// λ; much noise: a large one), the λ that Tune chooses is within 1% of
// the grid's best validation RMSE, and the two choices differ.
func TestTuneChoosesGridBest(t *testing.T) {
	dir := t.TempDir()
	grid := []float64{0.001, 0.03, 1}
	chosen := map[float64]bool{}
	for _, tc := range []struct {
		noise float64
		seed  uint64
	}{{0.05, 4}, {1.5, 5}} {
		t.Run(fmt.Sprintf("noise=%g", tc.noise), func(t *testing.T) {
			train, test := genSet(t, dir, tc.noise, tc.seed)
			cfg := config(t, "als", 2, 25)
			cfg.Train, cfg.Test, cfg.Rank = train, test, 8
			cfg.Holdout, cfg.Patience = 0.15, 2
			points, best, err := Tune(context.Background(), cfg, Grid{Lambdas: grid}, fitLocal)
			if err != nil {
				t.Fatal(err)
			}
			exhaustive := make([]float64, len(grid))
			for k, lambda := range grid {
				c := cfg
				c.Lambda, c.Patience = lambda, 1<<30
				m, err := fitLocal(context.Background(), c)
				if err != nil {
					t.Fatal(err)
				}
				exhaustive[k] = slices.Min(valTrace(m))
				if points[k].Best.ValRMSE < exhaustive[k] {
					t.Errorf("λ %g: the search found validation RMSE %.6f, below the exhaustive fit's lowest %.6f", lambda, points[k].Best.ValRMSE, exhaustive[k])
				}
			}
			floor := slices.Min(exhaustive)
			if exhaustive[best] > 1.01*floor {
				t.Errorf("chose λ %g (exhaustive validation RMSE %.6f); the grid's best is %.6f: %v", grid[best], exhaustive[best], floor, exhaustive)
			}
			chosen[grid[best]] = true
			r := Refit(cfg, points[best])
			if r.Holdout != 0 || r.Lambda != grid[best] || r.Iters < 1 || r.Iters > cfg.Iters {
				t.Errorf("refit %+v", r)
			}
		})
	}
	if len(chosen) != 2 {
		t.Errorf("the same λ for little and much noise: %v", chosen)
	}
}

// TestSavedRoundTrip checks that a model read back from its files predicts
// what the job's model predicts, to the last bit (with and without biases,
// a pair with an unseen id included), and that Recommend ranks the items
// as the job's predictions do, leaving out the items rated.
func TestSavedRoundTrip(t *testing.T) {
	for _, noBias := range []bool{false, true} {
		t.Run(fmt.Sprintf("nobias=%v", noBias), func(t *testing.T) {
			cfg := config(t, "rotation", 2, 3)
			cfg.NoBias = noBias
			m, err := fitLocal(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := saveAndLoad(t, m)
			if s.Biased == noBias || s.Rank != cfg.Rank {
				t.Fatalf("loaded rank %d, biased %v", s.Rank, s.Biased)
			}
			// Every item for user u, and, with biases, pairs of unseen ids.
			u := m.Users[1][3]
			var pairs strings.Builder
			for _, i := range m.ItemIDs {
				fmt.Fprintf(&pairs, "%d %d\n", u, i)
			}
			if !noBias {
				fmt.Fprintf(&pairs, "%d %d\n-5 %d\n-5 -6\n", u, int64(-6), m.ItemIDs[0])
			}
			path := testhelper.WriteFile(t, "pairs.txt", pairs.String())
			var want, got bytes.Buffer
			u1, err1 := m.Predict(path, &want)
			u2, err2 := s.Predict(path, &got)
			if err1 != nil || err2 != nil || u1 != u2 || !bytes.Equal(want.Bytes(), got.Bytes()) {
				t.Fatalf("predictions differ (unseen %d and %d; errors %v, %v)", u1, u2, err1, err2)
			}
			// The top items by the job's predictions, less those u rated.
			rated, err := RatedBy(cfg.Train, u)
			if err != nil || len(rated) == 0 {
				t.Fatalf("user %d rated %d items: %v", u, len(rated), err)
			}
			type scored struct {
				item  int64
				score float64
			}
			var all []scored
			for _, line := range strings.Split(strings.TrimSpace(want.String()), "\n")[:len(m.ItemIDs)] {
				f := strings.Fields(line)
				item, _ := strconv.ParseInt(f[1], 10, 64)
				score, _ := strconv.ParseFloat(f[2], 64)
				if !rated[item] {
					all = append(all, scored{item, score})
				}
			}
			slices.SortFunc(all, func(a, b scored) int {
				if a.score != b.score {
					return -cmpFloat(a.score, b.score)
				}
				return int(a.item - b.item)
			})
			recs, err := s.Recommend(u, 7, rated)
			if err != nil || len(recs) != 7 {
				t.Fatalf("%d recommendations: %v", len(recs), err)
			}
			for k, r := range recs {
				if r.Item != all[k].item || r.Score != all[k].score || rated[r.Item] {
					t.Fatalf("recommendation %d is item %d (%v), want item %d (%v)", k, r.Item, r.Score, all[k].item, all[k].score)
				}
			}
			if _, err := s.Recommend(-77, 3, nil); !errors.Is(err, ErrUnknownUser) {
				t.Errorf("unknown user: %v", err)
			}
		})
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestSavedBadInput checks that bad model files are *ParseErrors at their
// file and line.
func TestSavedBadInput(t *testing.T) {
	good := map[string]string{
		".W.txt":    "1 0.5 0.25\n2 1 2\n",
		".H.txt":    "10 1 1\n11 -1 0.5\n",
		".bias.txt": "mean 3\nuser 1 0.1\nuser 2 -0.1\nitem 10 0.2\nitem 11 0\n",
		".json":     `{"format": "strads mf model", "rank": 2, "biased": true, "users": 2, "items": 2, "mean": 3}`,
	}
	for _, tc := range []struct {
		name, ext, content string
		line               int
		msg                string
	}{
		{"rank", ".H.txt", "10 1 1\n11 1\n", 2, "1 factor values, want 2"},
		{"duplicate", ".W.txt", "1 0.5 0.25\n1 1 2\n", 2, "id 1 again"},
		{"value", ".W.txt", "1 0.5 x\n", 1, "bad value"},
		{"nan", ".H.txt", "10 NaN 1\n", 1, "bad value"},
		{"id", ".W.txt", "u1 0.5 0.25\n", 1, "id"},
		{"empty", ".H.txt", "", 0, "empty"},
		{"no mean", ".bias.txt", "user 1 0.1\n", 1, "mean"},
		{"unknown", ".bias.txt", "mean 3\nitem 12 0.1\n", 2, "item 12 has a bias but no factor"},
		{"kind", ".bias.txt", "mean 3\nthing 1 0.1\n", 2, "want \"user ID b\""},
		// The side file describes other factor files than those of the
		// prefix: another model's, or another run's.
		{"meta format", ".json", `{"format": "strads lda model"}`, 0, "format"},
		{"meta syntax", ".json", `{"format": `, 0, "not an mf model's JSON"},
		{"meta rank", ".json", `{"format": "strads mf model", "rank": 3, "biased": true, "users": 2, "items": 2, "mean": 3}`, 0, "rank 3"},
		{"meta users", ".json", `{"format": "strads mf model", "rank": 2, "biased": true, "users": 5, "items": 2, "mean": 3}`, 0, "5 users"},
		{"meta items", ".json", `{"format": "strads mf model", "rank": 2, "biased": true, "users": 2, "items": 1, "mean": 3}`, 0, "1 items"},
		{"meta biased", ".json", `{"format": "strads mf model", "rank": 2, "biased": false, "users": 2, "items": 2, "mean": 3}`, 0, "biased false"},
		{"meta mean", ".json", `{"format": "strads mf model", "rank": 2, "biased": true, "users": 2, "items": 2, "mean": 3.5}`, 0, "mean 3.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := filepath.Join(t.TempDir(), "m")
			for ext, c := range good {
				if ext == tc.ext {
					c = tc.content
				}
				if err := os.WriteFile(prefix+ext, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadSaved(prefix)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != prefix+tc.ext || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.msg) {
				t.Fatalf("error %v; want %s:%d: …%s…", err, prefix+tc.ext, tc.line, tc.msg)
			}
		})
	}
	// The good files load, and a model without its bias file has none.
	prefix := filepath.Join(t.TempDir(), "m")
	for ext, c := range good {
		if err := os.WriteFile(prefix+ext, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := LoadSaved(prefix)
	if err != nil || !s.Biased || s.Mean != 3 || s.Rank != 2 {
		t.Fatalf("%+v, %v", s, err)
	}
	if p, _ := s.predict(2, 11); p != 3-0.1+0+(-1+1) {
		t.Errorf("prediction %v", p)
	}
	// Without its bias file, the model does not match its side file; a
	// model without a side file (written before it existed) has no biases
	// then.
	os.Remove(prefix + ".bias.txt")
	var pe *ParseError
	if _, err := LoadSaved(prefix); !errors.As(err, &pe) || pe.File != prefix+".json" {
		t.Fatalf("without the bias file: %v, want the side file's error", err)
	}
	os.Remove(prefix + ".json")
	if s, err := LoadSaved(prefix); err != nil || s.Biased {
		t.Fatalf("without the bias file and the side file: %+v, %v", s, err)
	}
}

// TestWrittenIsReported runs jobs with validation on the runtime (embedded
// NATS), where the factors overfit so that the job keeps an evaluation
// before its last, and checks that the files it writes give the test RMSE
// that the kept evaluation reports, for every algorithm and schedule. The
// workers' reports once carried their live factors, which the runtime
// encoded after the next round had moved them on.
func TestWrittenIsReported(t *testing.T) {
	train, test := genSet(t, t.TempDir(), 1, 7)
	var tests []Rating
	if err := ReadRatings(test, func(_ int, r Rating) error { tests = append(tests, r); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"sgd-ring", func(*Config) {}},
		{"sgd-star", func(c *Config) { c.Star = true }},
		{"sgd-unscheduled", func(c *Config) { c.Schedule = Unscheduled }},
		{"ccd", func(c *Config) { c.Algo = CCD }},
		{"als", func(c *Config) { c.Algo, c.Rank, c.Lambda = ALS, 20, 0.03 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaults(train, test, 1)
			cfg.Rank, cfg.Lambda, cfg.Iters = 10, 0.001, 30
			tc.set(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			metrics := filepath.Join(t.TempDir(), "metrics.csv")
			res, err := runJob(ctx, cfg, job.Options{Job: "mfwritten", Timeout: 20 * time.Second,
				Coordinator: coordinator.Options{Depth: 1, Timeout: 20 * time.Second, Out: filepath.Join(t.TempDir(), "model"), Metrics: metrics}})
			if err != nil {
				t.Fatal(err)
			}
			m := ModelOf(res.App)
			best := m.Best()
			if last := m.Trace[len(m.Trace)-1]; best.Iter == 0 || best.Iter == last.Iter {
				t.Fatalf("kept iteration %g of %g: the data do not overfit, no test of the kept factors", best.Iter, last.Iter)
			}
			if got := savedRMSE(t, m, tests); math.Abs(got-best.TestRMSE) > 1e-9*got {
				t.Errorf("the files give test RMSE %.9f, the kept evaluation (iteration %g) says %.9f", got, best.Iter, best.TestRMSE)
			}
			if row := testhelper.WrittenRow(t, metrics); row["iter"] != best.Iter || row["test_rmse"] != best.TestRMSE {
				t.Errorf("the metrics' written row is iteration %g, test RMSE %.9f; the kept evaluation iteration %g, %.9f",
					row["iter"], row["test_rmse"], best.Iter, best.TestRMSE)
			}
		})
	}
}
