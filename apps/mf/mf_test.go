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
	"sync"
	"testing"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
)

// noise is the noise level of the generated test data.
const noise = 0.1

var (
	dataOnce            sync.Once
	trainPath, testPath string
	dataDir             string
)

// testData returns a generated set of 100,000 ratings of rank 5 with noise
// 0.1 (train, test), written once for all tests.
func testData(t *testing.T) (train, test string) {
	t.Helper()
	dataOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mf-test")
		if err != nil {
			t.Fatal(err)
		}
		dataDir = dir
		trainPath, testPath = filepath.Join(dir, "train.txt"), filepath.Join(dir, "test.txt")
		var tr, te bytes.Buffer
		if _, err := Generate(&tr, &te, GenConfig{Users: 2000, Items: 500, Rank: 5, Ratings: 100_000, Noise: noise, Alpha: 1, TestFraction: 0.1, Seed: 7}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(trainPath, tr.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(testPath, te.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if trainPath == "" {
		t.Fatal("no test data")
	}
	return trainPath, testPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dataDir != "" {
		os.RemoveAll(dataDir)
	}
	os.Exit(code)
}

// config returns a configuration of the algorithm ("rotation",
// "unscheduled" or "ccd") on the test data.
func config(t *testing.T, algo string, workers, iters int) Config {
	train, test := testData(t)
	c := Config{
		Train: train, Test: test, Rank: 5, Lambda: 0.01, BiasLambda: 1, Algo: SGD, Schedule: Rotation,
		LearningRate: 0.05, Decay: 0.02, Inner: 1, Seed: 1, Workers: workers,
		Iters: iters, ReportEvery: 1,
	}
	switch algo {
	case "unscheduled":
		// Its best step size on this data, of 0.01 to 0.1 (the rotation
		// does best at 0.05).
		c.Schedule, c.LearningRate = Unscheduled, 0.1
	case "ccd":
		c.Algo = CCD
	case "als":
		c.Algo = ALS
	}
	return c
}

// run runs the job of cfg to its Iters on an embedded NATS server, with
// reportEvery rounds between reports (0: cfg.ReportEvery iterations), and
// returns its model.
func run(t *testing.T, cfg Config, depth, reportEvery int) (*Model, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := runJob(ctx, cfg, job.Options{
		Job:         "mf",
		Timeout:     20 * time.Second,
		Coordinator: coordinator.Options{Depth: depth, ReportEvery: reportEvery, Timeout: 20 * time.Second},
	})
	if err != nil {
		return nil, err
	}
	return ModelOf(res.App), nil
}

// TestConverges checks that every algorithm recovers the low-rank
// structure of the generated data: the test RMSE comes within 20% of the
// noise level (the error of the true factors), and the training RMSE
// within 10%.
func TestConverges(t *testing.T) {
	cases := []struct {
		algo           string
		workers, iters int
	}{
		{"rotation", 1, 30},
		{"rotation", 3, 30},
		{"unscheduled", 2, 30},
		{"ccd", 2, 10},
		{"als", 2, 10},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/workers=%d", tc.algo, tc.workers), func(t *testing.T) {
			m, err := run(t, config(t, tc.algo, tc.workers, tc.iters), 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			f := m.Final()
			t.Logf("after %g iterations: train RMSE %.4f, test RMSE %.4f (noise %g)", f.Iter, f.TrainRMSE, f.TestRMSE, noise)
			if f.Iter != float64(tc.iters) || len(m.Trace) != tc.iters+1 {
				t.Errorf("final evaluation after %g iterations, %d evaluations; want %d, %d", f.Iter, len(m.Trace), tc.iters, tc.iters+1)
			}
			if !(f.TestRMSE <= 1.2*noise) {
				t.Errorf("test RMSE %.4f, want ≤ %.3f", f.TestRMSE, 1.2*noise)
			}
			if !(f.TrainRMSE <= 1.1*noise) {
				t.Errorf("train RMSE %.4f, want ≤ %.3f", f.TrainRMSE, 1.1*noise)
			}
			if m.Test == 0 || m.Train+m.Test+m.Unseen != 100_000 {
				t.Errorf("%d train, %d test and %d unseen ratings, want 100000 in all", m.Train, m.Test, m.Unseen)
			}
		})
	}
}

// TestCCDMonotone checks that CCD++ never increases the objective: each
// round minimizes it exactly over one column of W and then of H. The
// objective is evaluated after every round.
func TestCCDMonotone(t *testing.T) {
	for _, inner := range []int{1, 3} {
		t.Run(fmt.Sprintf("inner=%d", inner), func(t *testing.T) {
			cfg := config(t, "ccd", 2, 3)
			cfg.Inner = inner
			m, err := run(t, cfg, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if want := 3*cfg.RoundsPerIter() + 1; len(m.Trace) != want {
				t.Fatalf("%d evaluations, want %d", len(m.Trace), want)
			}
			for k := 1; k < len(m.Trace); k++ {
				prev, cur := m.Trace[k-1].Objective, m.Trace[k].Objective
				if cur > prev*(1+1e-12) {
					t.Errorf("round %d: objective rose from %.15g to %.15g", m.Trace[k].Round, prev, cur)
				}
			}
		})
	}
}

// TestSGDDecreasing checks that SGD decreases the objective on average:
// over 20 iterations, evaluated after each, the objective falls to a tenth
// of its start, and rises in at most a fifth of the iterations.
func TestSGDDecreasing(t *testing.T) {
	for _, algo := range []string{"rotation", "unscheduled"} {
		t.Run(algo, func(t *testing.T) {
			m, err := run(t, config(t, algo, 2, 20), 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			rises := 0
			for k := 1; k < len(m.Trace); k++ {
				if m.Trace[k].Objective > m.Trace[k-1].Objective {
					rises++
				}
			}
			first, last := m.Trace[0].Objective, m.Final().Objective
			if rises > 4 || !(last < first/10) {
				t.Errorf("objective %.6g → %.6g with %d rises in 20 iterations", first, last, rises)
			}
		})
	}
}

// factors returns the written W and H of m, and its biases if it has any.
func factors(t *testing.T, m *Model) string {
	t.Helper()
	var b strings.Builder
	if err := m.WriteW(&b); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteH(&b); err != nil {
		t.Fatal(err)
	}
	if m.Biased {
		if err := m.WriteBiases(&b); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestDeterministic checks that a fixed seed gives bit-identical factors
// and objectives, and another seed others.
func TestDeterministic(t *testing.T) {
	for _, tc := range []struct {
		algo    string
		workers int
	}{{"rotation", 1}, {"rotation", 2}, {"unscheduled", 2}, {"ccd", 2}, {"als", 2}} {
		t.Run(fmt.Sprintf("%s/workers=%d", tc.algo, tc.workers), func(t *testing.T) {
			var got []string
			var objs [][]float64
			for _, seed := range []uint64{3, 3, 4} {
				cfg := config(t, tc.algo, tc.workers, 3)
				cfg.Seed = seed
				m, err := run(t, cfg, 1, 0)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, factors(t, m))
				var o []float64
				for _, e := range m.Trace {
					o = append(o, e.Objective)
				}
				objs = append(objs, o)
			}
			if got[0] != got[1] || !slices.Equal(objs[0], objs[1]) {
				t.Error("two runs with the same seed differ")
			}
			if got[0] == got[2] {
				t.Error("runs with seeds 3 and 4 are the same")
			}
		})
	}
}

// TestRotationIsSequentialDSGD checks the transport of the blocks: DSGD on
// the rotation with P workers gives, bit for bit, the factors of a
// sequential program that runs the same strata in the same order on one
// copy of W and H.
func TestRotationIsSequentialDSGD(t *testing.T) {
	const workers, iters = 3, 4
	cfg := config(t, "rotation", workers, iters)
	m, err := run(t, cfg, 1, 0)
	if err != nil {
		t.Fatal(err)
	}

	shards := make([]*shard, workers)
	ws := make([][]float64, workers)
	bs := make([]biases, workers)
	var c []float64 // the item biases, shared
	for p := range shards {
		if shards[p], err = loadShard(cfg, p); err != nil {
			t.Fatal(err)
		}
		ws[p] = shards[p].initUsers(cfg.Rank)
		bs[p] = shards[p].initBiases()
		if p == 0 {
			c = bs[0].c
		}
		bs[p].c = c
	}
	ix := shards[0].ix
	h := initItems(ix.ItemIDs, cfg.Seed, ix.Mean, ix.Std, cfg.Rank, true)
	// The warm start: the item biases from the workers' sums, then each
	// worker's user biases given them.
	sums := make([]Summary, workers)
	for p, s := range shards {
		sums[p] = s.describe()
	}
	b := newBase(cfg)
	warm, _, err := b.warmItems(sums)
	if err != nil {
		t.Fatal(err)
	}
	copy(c, warm)
	for p, s := range shards {
		s.fitUsers(bs[p], ws[p], h)
	}
	rot := scheduler.Rotation{Workers: workers}
	for t := range uint64(workers * iters) {
		for p, s := range shards {
			b := rot.Block(p, t)
			s.sgdStep(s.train.block(b), ws[p], h, bs[p], cfg.stepSize(t/workers))
		}
	}
	want := &Model{Rank: cfg.Rank, Biased: true, Mean: ix.Mean, ItemIDs: ix.ItemIDs, Users: ix.ShardUsers, W: ws, H: h, C: c}
	for _, b := range bs {
		want.B = append(want.B, b.b)
	}
	if factors(t, m) != factors(t, want) {
		t.Error("the rotation's factors differ from sequential DSGD's")
	}
}

// TestDepth checks that every algorithm refuses rounds in flight: their
// rounds depend on each other's updates.
func TestDepth(t *testing.T) {
	for _, algo := range []string{"rotation", "unscheduled", "ccd", "als"} {
		t.Run(algo, func(t *testing.T) {
			if _, err := run(t, config(t, algo, 2, 2), 2, 0); err == nil {
				t.Error("depth 2: no error")
			}
		})
	}
}

// TestUnseen checks test ratings whose user or item is not in the training
// data: left out of the test RMSE, counted and warned about, and predicted
// by the mean training rating.
func TestUnseen(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	train := write("train", "10 100 1\n10 200 2\n-3 100 3\n-3 300 4\n9000000000000000000 200 5\n")
	test := write("test", "10 300 2\n77 100 1\n-3 400 1\n-3 200 3\n")
	var warn bytes.Buffer
	for _, tc := range []struct {
		workers int
		noBias  bool
	}{{1, true}, {2, true}, {1, false}, {2, false}} {
		workers := tc.workers
		warn.Reset()
		cfg := Config{
			Train: train, Test: test, Rank: 2, Lambda: 0.1, BiasLambda: 1, NoBias: tc.noBias, Algo: CCD, Schedule: Rotation, Inner: 1,
			Seed: 1, Workers: workers, Iters: 2, ReportEvery: 1, Warn: &warn,
		}
		m, err := run(t, cfg, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if m.Test != 2 || m.Unseen != 2 || m.Train != 5 {
			t.Errorf("workers=%d: %d train, %d test, %d unseen; want 5, 2, 2", workers, m.Train, m.Test, m.Unseen)
		}
		if !strings.Contains(warn.String(), "2 of 4 test ratings") {
			t.Errorf("warning %q", warn.String())
		}
		var out bytes.Buffer
		n, err := m.Predict(test, &out)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		// Without biases, the mean 3; with them, μ = 3 plus the bias of
		// item 100 (user 77 is unseen) and of user -3 (item 400 is).
		want := []string{"77 100 3", "-3 400 3"}
		if !tc.noBias {
			want = []string{fmt.Sprintf("77 100 %v", 3+biasOf(t, m, "item", 100)), fmt.Sprintf("-3 400 %v", 3+biasOf(t, m, "user", -3))}
		}
		if n != 2 || len(lines) != 4 || lines[1] != want[0] || lines[2] != want[1] {
			t.Errorf("workers=%d, no bias %v: %d unseen, predictions %q; want 2, with %q", workers, tc.noBias, n, lines, want)
		}
		var w strings.Builder
		if err := m.WriteW(&w); err != nil {
			t.Fatal(err)
		}
		ids := ""
		for _, l := range strings.Split(strings.TrimSpace(w.String()), "\n") {
			f := strings.Fields(l)
			if len(f) != 3 {
				t.Fatalf("W line %q: want id and 2 values", l)
			}
			ids += f[0] + " "
		}
		if ids != "-3 10 9000000000000000000 " {
			t.Errorf("W ids %q, want the original ids in ascending order", ids)
		}
	}
}

// TestFingerprint checks that the coordinator refuses workers that read
// different training files.
func TestFingerprint(t *testing.T) {
	b := newBase(Config{Workers: 2, Rank: 1})
	err := b.start([]Summary{{Fingerprint: 1}, {Fingerprint: 2}})
	if err == nil || !strings.Contains(err.Error(), "different training data") {
		t.Errorf("error %v", err)
	}
}

// TestInitIndependentOfWorkers checks that the first evaluation, of the
// initial factors, does not depend on the number of workers.
func TestInitIndependentOfWorkers(t *testing.T) {
	var objs []float64
	for _, workers := range []int{1, 2, 3} {
		m, err := run(t, config(t, "rotation", workers, 1), 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, m.Trace[0].Objective)
	}
	for k := 1; k < len(objs); k++ {
		if math.Abs(objs[k]-objs[0]) > 1e-9*objs[0] {
			t.Errorf("initial objective %.15g with %d workers, %.15g with 1", objs[k], k+1, objs[0])
		}
	}
}

// TestUnscheduledOneWorker checks the baseline's merge: with one worker
// there is nothing to merge, and the unscheduled SGD is the rotation's
// SGD (the same steps in the same order; the merge h + (h' − h) rounds, so
// the objectives agree to rounding) from the same start: the rotation's
// cold start (Config.ColdStart; the unscheduled SGD has no warm start).
func TestUnscheduledOneWorker(t *testing.T) {
	var objs [][]float64
	for _, algo := range []string{"rotation", "unscheduled"} {
		cfg := config(t, algo, 1, 5)
		cfg.LearningRate, cfg.ColdStart = 0.05, true
		m, err := run(t, cfg, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		var o []float64
		for _, e := range m.Trace {
			o = append(o, e.Objective)
		}
		objs = append(objs, o)
	}
	for k := range objs[0] {
		if math.Abs(objs[0][k]-objs[1][k]) > 1e-9*objs[0][k] {
			t.Errorf("iteration %d: objective %.15g on the rotation, %.15g unscheduled", k, objs[0][k], objs[1][k])
		}
	}
}

// TestDiverged checks that a step size far too large fails the job with
// ErrDiverged rather than writing a model of NaNs.
func TestDiverged(t *testing.T) {
	cfg := config(t, "rotation", 2, 5)
	cfg.LearningRate = 50
	_, err := run(t, cfg, 1, 0)
	if !errors.Is(err, ErrDiverged) {
		t.Errorf("error %v, want ErrDiverged", err)
	}
}

// biasOf returns the bias of the user or item id (kind "user" or "item")
// as m.WriteBiases writes it.
func biasOf(t *testing.T, m *Model, kind string, id int64) float64 {
	t.Helper()
	var b strings.Builder
	if err := m.WriteBiases(&b); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == kind && f[1] == fmt.Sprint(id) {
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no bias of %s %d in %q", kind, id, b.String())
	return 0
}

// TestBiasesRecovered checks that every algorithm learns the biases of a
// generated set with a mean and user and item biases: the learned b_u and
// c_i correlate with the true ones at better than 0.95 (the factors, whose
// products have variance 1, are as large as the biases here), and the
// test RMSE comes within 25% of the noise level.
func TestBiasesRecovered(t *testing.T) {
	gc := GenConfig{Users: 1500, Items: 400, Rank: 3, Ratings: 80_000, Noise: noise, Alpha: 1, TestFraction: 0.1, Seed: 11,
		Mean: 3.5, UserBias: 0.6, ItemBias: 0.8}
	dir := t.TempDir()
	var tr, te bytes.Buffer
	if _, err := Generate(&tr, &te, gc); err != nil {
		t.Fatal(err)
	}
	train, test := filepath.Join(dir, "train"), filepath.Join(dir, "test")
	for path, b := range map[string]*bytes.Buffer{train: &tr, test: &te} {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	truth := gc.Truth()
	for _, tc := range []struct {
		algo  string
		iters int
	}{{"rotation", 30}, {"unscheduled", 30}, {"ccd", 10}, {"als", 20}} {
		t.Run(tc.algo, func(t *testing.T) {
			cfg := config(t, tc.algo, 2, tc.iters)
			cfg.Train, cfg.Test, cfg.Rank = train, test, gc.Rank
			m, err := run(t, cfg, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			var learnedB, trueB, learnedC, trueC []float64
			for s, ids := range m.Users {
				for k, id := range ids {
					learnedB = append(learnedB, m.B[s][k])
					trueB = append(trueB, truth.B[id-1])
				}
			}
			for k, id := range m.ItemIDs {
				learnedC = append(learnedC, m.C[k])
				trueC = append(trueC, truth.C[id-1])
			}
			rb, rc := correlation(learnedB, trueB), correlation(learnedC, trueC)
			f := m.Final()
			t.Logf("correlation with the true biases: users %.4f, items %.4f; test RMSE %.4f", rb, rc, f.TestRMSE)
			if !(rb > 0.95 && rc > 0.95) {
				t.Errorf("correlation of learned and true biases %.4f (users), %.4f (items), want > 0.95", rb, rc)
			}
			if !(f.TestRMSE < 1.25*noise) {
				t.Errorf("test RMSE %.4f, want < %.3f", f.TestRMSE, 1.25*noise)
			}
		})
	}
}

// correlation returns the Pearson correlation of x and y.
func correlation(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for k := range x {
		mx += x[k] / n
		my += y[k] / n
	}
	var sxy, sxx, syy float64
	for k := range x {
		sxy += (x[k] - mx) * (y[k] - my)
		sxx += (x[k] - mx) * (x[k] - mx)
		syy += (y[k] - my) * (y[k] - my)
	}
	return sxy / math.Sqrt(sxx*syy)
}

// TestObjective checks F on a hand-computed case: three ratings of two
// users and two items, rank 1, with factors and biases set by hand.
//
//	ratings (user, item, r): (1, 10, 4), (1, 20, 2), (2, 10, 3); μ = 3
//	w_1 = 1, w_2 = 2, h_10 = 0.5, h_20 = −1
//	b_1 = 0.5, b_2 = −1, c_10 = 0.25, c_20 = 0
//	r̂ = 4.25, 2.5, 3.25: Σ(r − r̂)² = 0.0625 + 0.25 + 0.0625 = 0.375
//	weighted:   Σ n_u w_u² + Σ n_i h_i² = 2·1 + 1·4 + 2·0.25 + 1·1 = 7.5
//	unweighted: ‖W‖² + ‖H‖² = 1 + 4 + 0.25 + 1 = 6.25
//	biases:     ‖b‖² + ‖c‖² = 0.25 + 1 + 0.0625 = 1.3125
//	without biases r̂ = 0.5, −1, 1: Σ(r − r̂)² = 12.25 + 9 + 4 = 25.25
//
// With λ = 0.1 and λ_b = 2.
func TestObjective(t *testing.T) {
	train := testhelper.WriteFile(t, "ratings.txt", "1 10 4\n1 20 2\n2 10 3\n")
	cases := []struct {
		name               string
		noBias, unweighted bool
		want               float64
	}{
		{"weighted", false, false, 0.375 + 0.1*7.5 + 2*1.3125},
		{"unweighted", false, true, 0.375 + 0.1*6.25 + 2*1.3125},
		{"no bias", true, false, 25.25 + 0.1*7.5},
		{"no bias unweighted", true, true, 25.25 + 0.1*6.25},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Train: train, Rank: 1, Lambda: 0.1, BiasLambda: 2, NoBias: tc.noBias, Unweighted: tc.unweighted,
				Algo: SGD, Schedule: Rotation, LearningRate: 0.1, Workers: 1, ReportEvery: 1}
			w, err := newRotationWorker(cfg, 0)
			if err != nil {
				t.Fatal(err)
			}
			ix := w.ix
			h := make([]float64, 2)
			h[ix.Items[10]], h[ix.Items[20]] = 0.5, -1
			u := RotationUpdate{Full: h}
			if !tc.noBias {
				u.FullBias = make(codec.Float64s, 2)
				u.FullBias[ix.Items[10]] = 0.25
			}
			if err := w.Apply(u); err != nil {
				t.Fatal(err)
			}
			w.w[ix.Users[1].Index], w.w[ix.Users[2].Index] = 1, 2
			if !tc.noBias {
				w.bs.b[ix.Users[1].Index], w.bs.b[ix.Users[2].Index] = 0.5, -1
			}
			sum, err := w.Describe()
			if err != nil {
				t.Fatal(err)
			}
			rep, err := w.Report()
			if err != nil {
				t.Fatal(err)
			}
			b := newBase(cfg)
			if err := b.start([]Summary{sum}); err != nil {
				t.Fatal(err)
			}
			p, err := b.evaluate([]Summary{rep}, func() ([]float64, []float64) { return h, u.FullBias })
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.Objective-tc.want) > 1e-12 {
				t.Errorf("F = %.15g, want %.15g", p.Objective, tc.want)
			}
		})
	}
}

// TestRuntimeMetrics checks that the evaluations reach the runtime's
// metrics CSV as app columns, with the values of the model's trace.
func TestRuntimeMetrics(t *testing.T) {
	cfg := config(t, "rotation", 2, 3)
	path := filepath.Join(t.TempDir(), "metrics.csv")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := runJob(ctx, cfg, job.Options{Job: "mfmetrics", Timeout: 20 * time.Second,
		Coordinator: coordinator.Options{Depth: 1, Timeout: 20 * time.Second, Metrics: path}})
	if err != nil {
		t.Fatal(err)
	}
	m := ModelOf(res.App)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	header := strings.Split(lines[0], ",")
	cols := map[string]int{}
	for k, name := range header {
		cols[name] = k
	}
	for _, name := range []string{"objective", "iter", "train_rmse", "test_rmse", "ratings", "ratings_per_s", "ratings_per_core_s"} {
		if _, ok := cols[name]; !ok {
			t.Fatalf("header %q has no column %s", lines[0], name)
		}
	}
	// A row per evaluation: the start and 3 iterations.
	if len(lines) != 1+len(m.Trace) || len(m.Trace) != 4 {
		t.Fatalf("%d rows for %d evaluations", len(lines)-1, len(m.Trace))
	}
	for k, e := range m.Trace {
		row := strings.Split(lines[1+k], ",")
		for name, want := range map[string]float64{"objective": e.Objective, "iter": e.Iter, "train_rmse": e.TrainRMSE, "test_rmse": e.TestRMSE} {
			got, err := strconv.ParseFloat(row[cols[name]], 64)
			if err != nil || got != want {
				t.Errorf("evaluation %d: %s %q, want %v", k, name, row[cols[name]], want)
			}
		}
	}
}

// TestALSMonotone checks that ALS never raises the objective: each round
// minimizes F exactly over W and the user biases, then over H and the
// item biases. The objective is evaluated after every round, with and
// without biases, in both regularizations, at 1 and 3 workers, and must
// fall by more than half.
func TestALSMonotone(t *testing.T) {
	for _, tc := range []struct {
		noBias, unweighted bool
		workers            int
	}{{false, false, 1}, {false, false, 3}, {true, false, 2}, {false, true, 2}} {
		t.Run(fmt.Sprintf("nobias=%v/unweighted=%v/workers=%d", tc.noBias, tc.unweighted, tc.workers), func(t *testing.T) {
			cfg := config(t, "als", tc.workers, 8)
			cfg.NoBias, cfg.Unweighted = tc.noBias, tc.unweighted
			if tc.unweighted {
				cfg.Lambda = 1
			}
			m, err := run(t, cfg, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Trace) != 9 {
				t.Fatalf("%d evaluations, want 9", len(m.Trace))
			}
			for k := 1; k < len(m.Trace); k++ {
				prev, cur := m.Trace[k-1].Objective, m.Trace[k].Objective
				if cur > prev*(1+1e-12) {
					t.Errorf("round %d: objective rose from %.15g to %.15g", m.Trace[k].Round, prev, cur)
				}
			}
			if first, last := m.Trace[0].Objective, m.Final().Objective; !(last < first/2) {
				t.Errorf("objective %.6g → %.6g", first, last)
			}
		})
	}
}

// TestProgramChecksAlgo checks that a program refuses a configuration of
// another algorithm, naming the one to use.
func TestProgramChecksAlgo(t *testing.T) {
	cases := []struct {
		algo string
		make func(Config) error
		want string
	}{
		{"rotation", func(c Config) error { _, err := CCDProgram(c).NewCoordinator(context.Background()); return err }, "mf.RotationProgram"},
		{"ccd", func(c Config) error { _, err := ALSProgram(c).NewCoordinator(context.Background()); return err }, "mf.CCDProgram"},
		{"als", func(c Config) error { _, err := RotationProgram(c).NewCoordinator(context.Background()); return err }, "mf.ALSProgram"},
		{"unscheduled", func(c Config) error { _, err := UnscheduledProgram(c).NewCoordinator(context.Background()); return err }, ""},
	}
	for _, tc := range cases {
		err := tc.make(config(t, tc.algo, 2, 1))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want one naming %q", tc.algo, err, tc.want)
		}
	}
}
