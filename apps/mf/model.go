package mf

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// Summary, the S of the programs, describes a worker's shard when it joins
// and the state of its part of the model when it reports.
type Summary struct {
	// At join. Fingerprint is the worker's Index's; Users its user ids,
	// by index; ItemIDs and BlockStart (worker 0 only) the Index's.
	Fingerprint uint64  `msgpack:"f"`
	Users       []int64 `msgpack:"u,omitempty"`
	ItemIDs     []int64 `msgpack:"i,omitempty"`
	BlockStart  []int32 `msgpack:"b,omitempty"`
	Items       int     `msgpack:"ni"`
	// Train counts its training ratings and RatingSum sums them; Mean and
	// Std are those of all training ratings (from the Index).
	Train     int     `msgpack:"n"`
	RatingSum float64 `msgpack:"rs"`
	Mean      float64 `msgpack:"m"`
	Std       float64 `msgpack:"sd"`
	// Test counts its users' test ratings that the model predicts, Unseen
	// those it cannot (see shard.unseen).
	Test   int `msgpack:"nt"`
	Unseen int `msgpack:"nu"`

	// At a report. Round is the number of rounds whose updates the state
	// reflects. Exact says the worker could evaluate that state; if not
	// (SGD on the rotation between two evaluation points, where the worker
	// holds one block of H only), the other fields are empty.
	Round uint64 `msgpack:"r"`
	Exact bool   `msgpack:"x"`
	// SSE is Σ(r − w·h)² over its training ratings, TestSSE over its test
	// ratings; WNorm is Σ‖w_u‖² over its users, HNorm Σ‖h_i‖² over the
	// items it answers for (the blocks of all workers are disjoint and
	// cover all items).
	SSE     float64 `msgpack:"e"`
	TestSSE float64 `msgpack:"te"`
	WNorm   float64 `msgpack:"wn"`
	HNorm   float64 `msgpack:"hn"`
	// W holds its users' factors, row by row, when the coordinator asked
	// for the factors.
	W wire.Float64s `msgpack:"w,omitempty"`
}

// Stats is what every partial says about the work behind it.
type Stats struct {
	// Work counts the ratings processed, in units of one rating per
	// iteration: an SGD step on a rating counts 1; a CCD++ round, a pass
	// over the worker's ratings for one feature, counts 1/(Rank·Inner) per
	// rating.
	Work float64 `msgpack:"wk"`
	// Nanos is the worker's compute time for the partial.
	Nanos int64 `msgpack:"ns"`
}

// Eval is one evaluation of the model: a row of the metrics.
type Eval struct {
	// Time is the time since the job started (Start); Round the rounds and
	// Iter the iterations (Round/RoundsPerIter) whose updates the state
	// reflects.
	Time  time.Duration
	Round uint64
	Iter  float64
	// Objective is Σ(r − w·h)² + λ(‖W‖² + ‖H‖²); TrainRMSE and TestRMSE
	// are the root mean squared errors over the training ratings and the
	// predictable test ratings (NaN without any).
	Objective, TrainRMSE, TestRMSE float64
	// Ratings is the work done so far (see Stats.Work); RatingsPerSec
	// divides it by Time, RatingsPerCoreSec by the workers' compute time.
	Ratings, RatingsPerSec, RatingsPerCoreSec float64
}

// Model is the coordinator's record of a job: the ids, the evaluations and,
// if Factors, the factors of the last evaluation. Pass one in
// Config.Model to read it after the job.
type Model struct {
	// Factors asks the workers for their users' factors at every
	// evaluation (set it before the job), so that W and H can be written.
	Factors bool
	// Rank is K.
	Rank int
	// ItemIDs holds the item ids by index, and Users each worker's user
	// ids by index.
	ItemIDs []int64
	Users   [][]int64
	// H holds the item factors row by row (by index) and W each worker's
	// user factors, as of the last evaluation; nil without Factors.
	H []float64
	W [][]float64
	// Mean is the mean training rating, the prediction for an unseen id.
	Mean float64
	// Train counts the training ratings, Test the predictable test
	// ratings, and Unseen the test ratings with a user or item not in
	// training.
	Train, Test, Unseen int
	// Trace holds every evaluation, in order.
	Trace []Eval
}

// Final returns the last evaluation.
func (m *Model) Final() Eval {
	if len(m.Trace) == 0 {
		return Eval{Objective: math.NaN(), TrainRMSE: math.NaN(), TestRMSE: math.NaN()}
	}
	return m.Trace[len(m.Trace)-1]
}

// WriteMetrics writes the trace as CSV, a row per evaluation:
// time_s,round,iter,objective,train_rmse,test_rmse,ratings,ratings_per_s,ratings_per_core_s.
func (m *Model) WriteMetrics(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("time_s,round,iter,objective,train_rmse,test_rmse,ratings,ratings_per_s,ratings_per_core_s\n")
	g := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 10, 64)
	}
	for _, e := range m.Trace {
		fmt.Fprintf(bw, "%.6f,%d,%s,%s,%s,%s,%s,%s,%s\n", e.Time.Seconds(), e.Round, g(e.Iter),
			strconv.FormatFloat(e.Objective, 'g', 17, 64), g(e.TrainRMSE), g(e.TestRMSE),
			g(e.Ratings), g(e.RatingsPerSec), g(e.RatingsPerCoreSec))
	}
	return bw.Flush()
}

// WriteW writes the user factors, a line "id v1 … vK" per user in
// ascending id order.
func (m *Model) WriteW(w io.Writer) error {
	if m.W == nil {
		return fmt.Errorf("mf: no user factors (Model.Factors was not set, or the job made no evaluation)")
	}
	type row struct {
		id int64
		v  []float64
	}
	var rows []row
	for s, ids := range m.Users {
		for k, id := range ids {
			rows = append(rows, row{id, m.W[s][k*m.Rank : (k+1)*m.Rank]})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.id, b.id) })
	bw := bufio.NewWriter(w)
	for _, r := range rows {
		writeRow(bw, r.id, r.v)
	}
	return bw.Flush()
}

// WriteH writes the item factors, a line "id v1 … vK" per item in
// ascending id order.
func (m *Model) WriteH(w io.Writer) error {
	if m.H == nil {
		return fmt.Errorf("mf: no item factors (Model.Factors was not set, or the job made no evaluation)")
	}
	order := make([]int, len(m.ItemIDs))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(m.ItemIDs[a], m.ItemIDs[b]) })
	bw := bufio.NewWriter(w)
	for _, k := range order {
		writeRow(bw, m.ItemIDs[k], m.H[k*m.Rank:(k+1)*m.Rank])
	}
	return bw.Flush()
}

func writeRow(w *bufio.Writer, id int64, v []float64) {
	var buf [32]byte
	w.Write(strconv.AppendInt(buf[:0], id, 10))
	for _, x := range v {
		w.WriteByte(' ')
		w.Write(strconv.AppendFloat(buf[:0], x, 'g', -1, 64))
	}
	w.WriteByte('\n')
}

// Predict writes a line "user item prediction" for every pair of the pairs
// file at path (see ReadPairs), in order: w_u·h_i, or the mean training
// rating where the user or the item is not in the training data. It
// returns the number of such unseen pairs.
func (m *Model) Predict(path string, w io.Writer) (unseen int, err error) {
	if m.W == nil || m.H == nil {
		return 0, fmt.Errorf("mf: no factors to predict with (Model.Factors was not set)")
	}
	users := map[int64][]float64{}
	for s, ids := range m.Users {
		for k, id := range ids {
			users[id] = m.W[s][k*m.Rank : (k+1)*m.Rank]
		}
	}
	items := make(map[int64][]float64, len(m.ItemIDs))
	for k, id := range m.ItemIDs {
		items[id] = m.H[k*m.Rank : (k+1)*m.Rank]
	}
	bw := bufio.NewWriter(w)
	var buf []byte
	err = ReadPairs(path, func(_ int, user, item int64) error {
		p := m.Mean
		wu, ok1 := users[user]
		hi, ok2 := items[item]
		if ok1 && ok2 {
			p = dot(wu, hi)
		} else {
			unseen++
		}
		buf = strconv.AppendInt(buf[:0], user, 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, item, 10)
		buf = append(buf, ' ')
		buf = strconv.AppendFloat(buf, p, 'g', -1, 64)
		buf = append(buf, '\n')
		_, err := bw.Write(buf)
		return err
	})
	if err != nil {
		return unseen, err
	}
	return unseen, bw.Flush()
}

// dot returns a·b, summing in four interleaved partial sums (for speed: a
// single sum waits on every addition).
func dot(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	k := 0
	for ; k+4 <= len(a); k += 4 {
		s0 += a[k] * b[k]
		s1 += a[k+1] * b[k+1]
		s2 += a[k+2] * b[k+2]
		s3 += a[k+3] * b[k+3]
	}
	for ; k < len(a); k++ {
		s0 += a[k] * b[k]
	}
	return (s0 + s1) + (s2 + s3)
}

// ErrDiverged is the error of a job whose objective is no longer finite.
var ErrDiverged = errors.New("diverged")

// base is what the coordinators of all algorithms share: the checks at
// Start, the accounting of work, and the evaluations.
type base struct {
	cfg    Config
	m      *Model
	t0     time.Time
	pulled uint64 // rounds pulled
	work   float64
	nanos  int64
	last   schmp.Progress
	// blockStart is the Index's, from worker 0.
	blockStart []int32
}

func newBase(cfg Config) base {
	m := cfg.Model
	if m == nil {
		m = &Model{}
	}
	m.Rank = cfg.Rank
	return base{cfg: cfg, m: m, last: schmp.Progress{Objective: math.NaN()}}
}

// start checks the workers' summaries (they must have read the same
// training file) and records the ids.
func (b *base) start(sums []Summary) error {
	if len(sums) != b.cfg.Workers {
		return fmt.Errorf("%d workers joined, want %d", len(sums), b.cfg.Workers)
	}
	s0 := sums[0]
	if len(s0.ItemIDs) != s0.Items {
		return fmt.Errorf("worker 0 sent %d item ids for %d items", len(s0.ItemIDs), s0.Items)
	}
	var ratingSum float64
	m := b.m
	m.Users = make([][]int64, len(sums))
	m.Train, m.Test, m.Unseen = 0, 0, 0
	for p, s := range sums {
		if s.Fingerprint != s0.Fingerprint {
			return fmt.Errorf("workers 0 and %d read different training data (fingerprints %x and %x): every worker must read the same --train file", p, s0.Fingerprint, s.Fingerprint)
		}
		m.Users[p] = s.Users
		m.Train += s.Train
		m.Test += s.Test
		m.Unseen += s.Unseen
		ratingSum += s.RatingSum
	}
	m.ItemIDs = s0.ItemIDs
	m.Mean = ratingSum / float64(max(m.Train, 1))
	b.blockStart = s0.BlockStart
	if m.Unseen > 0 && b.cfg.Warn != nil {
		fmt.Fprintf(b.cfg.Warn, "mf: %d of %d test ratings have a user or item that is not in --train: left out of the test RMSE (predictions for them are the mean training rating, %.6g)\n",
			m.Unseen, m.Unseen+m.Test, m.Mean)
	}
	b.t0 = time.Now()
	return nil
}

// account adds a partial's work.
func (b *base) account(s Stats) {
	b.work += s.Work
	b.nanos += s.Nanos
}

// evaluate combines the workers' reports into the progress of the state
// after b.pulled rounds, records it, and, with Factors, keeps W from the
// reports and H from h (row by row). A report of a state that the workers
// could not evaluate (not Exact) repeats the last evaluation.
func (b *base) evaluate(reports []Summary, h func() []float64) (schmp.Progress, error) {
	var e Eval
	var wn, hn, testSSE float64
	for p, r := range reports {
		if !r.Exact {
			return b.last, nil
		}
		if r.Round != b.pulled {
			return b.last, fmt.Errorf("worker %d reports the state after round %d, the coordinator's is after round %d (the rotation needs --depth 1)", p, r.Round, b.pulled)
		}
		e.Objective += r.SSE
		wn += r.WNorm
		hn += r.HNorm
		testSSE += r.TestSSE
	}
	m := b.m
	e.TrainRMSE = math.Sqrt(e.Objective / float64(m.Train))
	e.TestRMSE = math.NaN()
	if m.Test > 0 {
		e.TestRMSE = math.Sqrt(testSSE / float64(m.Test))
	}
	e.Objective += b.cfg.Lambda * (wn + hn)
	if math.IsNaN(e.Objective) || math.IsInf(e.Objective, 0) {
		return b.last, fmt.Errorf("%w: the objective is %v after round %d (try a smaller --lr)", ErrDiverged, e.Objective, b.pulled)
	}
	e.Time = time.Since(b.t0)
	e.Round = b.pulled
	e.Iter = float64(b.pulled) / float64(b.cfg.RoundsPerIter())
	e.Ratings = b.work
	if s := e.Time.Seconds(); s > 0 {
		e.RatingsPerSec = b.work / s
	}
	if b.nanos > 0 {
		e.RatingsPerCoreSec = b.work / (float64(b.nanos) / 1e9)
	}
	if m.Factors {
		m.W = make([][]float64, len(reports))
		for p, r := range reports {
			if len(r.W) != len(m.Users[p])*m.Rank {
				return b.last, fmt.Errorf("worker %d sent %d factor values for %d users of rank %d", p, len(r.W), len(m.Users[p]), m.Rank)
			}
			m.W[p] = r.W
		}
		m.H = slices.Clone(h())
	}
	m.Trace = append(m.Trace, e)
	if w := b.cfg.Progress; w != nil {
		fmt.Fprintf(w, "iter %-6.4g round %-6d elapsed %-9s train RMSE %.6f  test RMSE %.6f  objective %.9g  ratings/s %.3g (per core %.3g)\n",
			e.Iter, e.Round, e.Time.Round(time.Millisecond), e.TrainRMSE, e.TestRMSE, e.Objective, e.RatingsPerSec, e.RatingsPerCoreSec)
	}
	b.last = schmp.Progress{Objective: e.Objective}
	return b.last, nil
}

// writeModel writes W and H as one text: "user ID v1 … vK" lines, then
// "item ID v1 … vK" lines (the runtime's --out; the command line writes W
// and H to files of their own instead).
func (b *base) writeModel(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, part := range []struct {
		kind  string
		write func(io.Writer) error
	}{{"user ", b.m.WriteW}, {"item ", b.m.WriteH}} {
		if err := part.write(&prefixWriter{w: bw, prefix: part.kind, bol: true}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// prefixWriter writes prefix at the start of every line.
type prefixWriter struct {
	w      *bufio.Writer
	prefix string
	bol    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	for _, c := range b {
		if p.bol {
			p.w.WriteString(p.prefix)
		}
		p.w.WriteByte(c)
		p.bol = c == '\n'
	}
	return len(b), nil
}
