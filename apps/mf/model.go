package mf

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/schmp"
)

// Summary, the S of the programs, describes a worker's shard when it joins
// and the state of its part of the model when it reports.
type Summary struct {
	// At join. Fingerprint is the worker's Index's; Users its user ids,
	// by index; ItemIDs, ItemCount and BlockStart (worker 0 only) the
	// Index's.
	Fingerprint uint64  `msgpack:"f"`
	Users       []int64 `msgpack:"u,omitempty"`
	ItemIDs     []int64 `msgpack:"i,omitempty"`
	ItemCount   []int32 `msgpack:"ic,omitempty"`
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
	// Val and ValUnseen count the same of its users' validation ratings
	// (Config.Holdout).
	Val       int `msgpack:"nv,omitempty"`
	ValUnseen int `msgpack:"nvu,omitempty"`
	// ItemResid, for SGD's warm start (Config.ColdStart), holds for every
	// item Σ(r − μ − b_u) over the worker's ratings of it (shard.warmStart);
	// with validation, FoldResid the same over its ratings and its
	// validation ratings, and FoldCount its validation ratings of every
	// item (the folded fit).
	ItemResid codec.Float64s `msgpack:"ir,omitempty"`
	FoldResid codec.Float64s `msgpack:"fr,omitempty"`
	FoldCount codec.Int32s   `msgpack:"fc,omitempty"`

	// At a report. Round is the number of rounds whose updates the state
	// reflects. Exact says the worker could evaluate that state; if not
	// (SGD on the rotation between two evaluation points, where the worker
	// holds one block of H only), the other fields are empty.
	Round uint64 `msgpack:"r"`
	Exact bool   `msgpack:"x"`
	// SSE is Σ(r − r̂)² over its training ratings, TestSSE over its test
	// ratings; WNorm is Σ‖w_u‖² over its users, HNorm Σ‖h_i‖² over the
	// items it answers for (the blocks of all workers are disjoint and
	// cover all items), BNorm Σb_u² over its users and CNorm Σc_i² over
	// the same items.
	SSE     float64 `msgpack:"e"`
	TestSSE float64 `msgpack:"te"`
	// ValSSE is Σ(r − r̂)² over its validation ratings.
	ValSSE float64 `msgpack:"ve,omitempty"`
	WNorm  float64 `msgpack:"wn"`
	HNorm  float64 `msgpack:"hn"`
	BNorm  float64 `msgpack:"bn,omitempty"`
	CNorm  float64 `msgpack:"cn,omitempty"`
	// W holds its users' factors, row by row, and B their biases, when
	// the coordinator asked for the factors.
	W codec.Float64s `msgpack:"w,omitempty"`
	B codec.Float64s `msgpack:"bu,omitempty"`
	// Folded, in the report of round 0 with the folded fit
	// (Config.folds), says that FoldTestSSE is Σ(r − μ − b_u − c_i)²
	// over its test ratings of the bias-only model fitted to all the
	// training ratings, held-out ones included, and FoldB holds that
	// model's user biases when the coordinator asked for the factors.
	Folded      bool           `msgpack:"fo,omitempty"`
	FoldTestSSE float64        `msgpack:"fte,omitempty"`
	FoldB       codec.Float64s `msgpack:"fb,omitempty"`
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
	// Objective is F (see the package doc); TrainRMSE and TestRMSE
	// are the root mean squared errors over the training ratings and the
	// predictable test ratings (NaN without any), ValRMSE over the
	// predictable validation ratings (Config.Holdout; NaN without).
	Objective, TrainRMSE, TestRMSE, ValRMSE float64
	// Ratings is the work done so far (see Stats.Work); RatingsPerSec
	// divides it by Time, RatingsPerCoreSec by the workers' compute time.
	Ratings, RatingsPerSec, RatingsPerCoreSec float64
}

// progress returns the evaluation as the runtime's progress: the objective
// and, as app metrics (the runtime's metrics CSV columns and progress line),
// iter, train_rmse, test_rmse, with validation (val) val_rmse, then ratings,
// ratings_per_s and ratings_per_core_s.
func (e Eval) progress(val bool) schmp.Progress {
	ms := []schmp.Metric{
		{Name: "iter", Value: e.Iter},
		{Name: "train_rmse", Value: e.TrainRMSE},
		{Name: "test_rmse", Value: e.TestRMSE},
	}
	if val {
		ms = append(ms, schmp.Metric{Name: "val_rmse", Value: e.ValRMSE})
	}
	ms = append(ms,
		schmp.Metric{Name: "ratings", Value: e.Ratings},
		schmp.Metric{Name: "ratings_per_s", Value: e.RatingsPerSec},
		schmp.Metric{Name: "ratings_per_core_s", Value: e.RatingsPerCoreSec})
	return schmp.Progress{Objective: e.Objective, Metrics: ms}
}

// Model is the coordinator's record of a job: the ids, the evaluations and,
// if Factors, the factors (and biases) of the model written. After a job,
// ModelOf returns it from the job's coordinator (coordinator.Result.App,
// or local.Job.Coordinator).
type Model struct {
	// Factors, with Config.Holdout, asks the workers for their users'
	// factors at every evaluation, so that the model keeps those of the
	// evaluation with the lowest validation RMSE; the coordinator sets it
	// when the job writes files (Outputs). Without Holdout the factors
	// are those of the state the job ended with, which the workers send
	// once, in their final reports, whatever Factors says.
	Factors bool
	// Rank is K. Biased says the model is μ + b_u + c_i + w_u·h_i (μ =
	// Mean), not w_u·h_i alone (Config.NoBias).
	Rank   int
	Biased bool
	// ItemIDs holds the item ids by index, and Users each worker's user
	// ids by index.
	ItemIDs []int64
	Users   [][]int64
	// H holds the item factors row by row (by index) and W each worker's
	// user factors, of the model written: the state the job ended with
	// (the runtime's last report certified it), or with Config.Holdout
	// that of the best evaluation (nil without Factors). C and
	// B hold the item and user biases the same way (nil without Biased).
	H []float64
	W [][]float64
	C []float64
	B [][]float64
	// Mean is the mean training rating: μ of the biased model, and the
	// prediction of the model without biases for an unseen id.
	Mean float64
	// Train counts the training ratings, Test the predictable test
	// ratings, and Unseen the test ratings with a user or item not in
	// training.
	Train, Test, Unseen int
	// Val and ValUnseen count the same of the validation ratings
	// (Config.Holdout).
	Val, ValUnseen int
	// Trace holds every evaluation, in order; with Config.Holdout, up to
	// the one that decided the validation stop (Stopped), and after it
	// only new lowest ones, which the model keeps: the other reports after
	// it go to the runtime's metrics only.
	Trace []Eval
	// BestAt, with Config.Holdout, is the index in Trace of the evaluation
	// with the lowest validation RMSE (the first of equals), whose factors
	// W, H, B and C are; −1 before any. Stopped says that the job stopped
	// because the validation RMSE had not improved for Config.Patience
	// evaluations: the last of Trace decided it, and every report after it
	// asks the runtime to stop (schmp.Progress.Stop).
	BestAt  int
	Stopped bool
	// stale, on the parameter server (RunPS), holds the staleness of the
	// reads of H until each evaluation of Trace.
	stale []ps.Stats
}

// Best returns the evaluation whose factors the model holds: with
// validation the one with the lowest validation RMSE, else the last.
func (m *Model) Best() Eval {
	if m.BestAt >= 0 && m.BestAt < len(m.Trace) {
		return m.Trace[m.BestAt]
	}
	return m.Final()
}

// Final returns the last evaluation.
func (m *Model) Final() Eval {
	if len(m.Trace) == 0 {
		return Eval{Objective: math.NaN(), TrainRMSE: math.NaN(), TestRMSE: math.NaN(), ValRMSE: math.NaN()}
	}
	return m.Trace[len(m.Trace)-1]
}

// WriteMetrics writes the trace as CSV, a row per evaluation:
// time_s,round,iter,objective,train_rmse,test_rmse,ratings,ratings_per_s,ratings_per_core_s,
// and on the parameter server (RunPS, where a round is a clock) the
// staleness of the reads of H so far: staleness_mean,staleness_var,staleness_max.
func (m *Model) WriteMetrics(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("time_s,round,iter,objective,train_rmse,test_rmse,ratings,ratings_per_s,ratings_per_core_s")
	stale := len(m.stale) == len(m.Trace) && m.stale != nil
	if stale {
		bw.WriteString(",staleness_mean,staleness_var,staleness_max")
	}
	bw.WriteString("\n")
	g := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 10, 64)
	}
	for k, e := range m.Trace {
		fmt.Fprintf(bw, "%.6f,%d,%s,%s,%s,%s,%s,%s,%s", e.Time.Seconds(), e.Round, g(e.Iter),
			strconv.FormatFloat(e.Objective, 'g', 17, 64), g(e.TrainRMSE), g(e.TestRMSE),
			g(e.Ratings), g(e.RatingsPerSec), g(e.RatingsPerCoreSec))
		if stale {
			st := m.stale[k]
			fmt.Fprintf(bw, ",%s,%s,%d", g(st.Mean()), g(st.Var()), st.Max)
		}
		bw.WriteString("\n")
	}
	return bw.Flush()
}

// WriteW writes the user factors, a line "id v1 … vK" per user in
// ascending id order.
func (m *Model) WriteW(w io.Writer) error {
	if m.W == nil {
		return fmt.Errorf("mf: no user factors (Model.Factors was not set, or the job made no evaluation)")
	}
	bw := bufio.NewWriter(w)
	for _, r := range m.userRows(m.W, m.Rank) {
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
	bw := bufio.NewWriter(w)
	for _, k := range m.itemOrder() {
		writeRow(bw, m.ItemIDs[k], m.H[k*m.Rank:(k+1)*m.Rank])
	}
	return bw.Flush()
}

// WriteBiases writes the global mean and the biases of a biased model: a
// line "mean μ", then a line "user ID b_u" per user and a line "item ID
// c_i" per item, each in ascending id order.
func (m *Model) WriteBiases(w io.Writer) error {
	if !m.Biased {
		return fmt.Errorf("mf: no biases (the model has none: Config.NoBias)")
	}
	if m.B == nil || m.C == nil {
		return fmt.Errorf("mf: no biases (Model.Factors was not set, or the job made no evaluation)")
	}
	bw := bufio.NewWriter(w)
	var buf [32]byte
	bw.WriteString("mean ")
	bw.Write(strconv.AppendFloat(buf[:0], m.Mean, 'g', -1, 64))
	bw.WriteByte('\n')
	users := m.userRows(m.B, 1)
	for _, r := range users {
		bw.WriteString("user ")
		writeRow(bw, r.id, r.v)
	}
	for _, k := range m.itemOrder() {
		bw.WriteString("item ")
		writeRow(bw, m.ItemIDs[k], m.C[k:k+1])
	}
	return bw.Flush()
}

// idRow is a user's or item's id and its values.
type idRow struct {
	id int64
	v  []float64
}

// userRows returns every user's id and its n values of vals (by worker,
// n a user) in ascending id order.
func (m *Model) userRows(vals [][]float64, n int) []idRow {
	var rows []idRow
	for s, ids := range m.Users {
		for k, id := range ids {
			rows = append(rows, idRow{id, vals[s][k*n : (k+1)*n]})
		}
	}
	slices.SortFunc(rows, func(a, b idRow) int { return cmp.Compare(a.id, b.id) })
	return rows
}

// itemOrder returns the item indices in ascending id order.
func (m *Model) itemOrder() []int {
	order := make([]int, len(m.ItemIDs))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(m.ItemIDs[a], m.ItemIDs[b]) })
	return order
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
// file at path (see ReadPairs), in order, and returns the number of pairs
// whose user or item (or both) is not in the training data. A biased model
// predicts μ + b_u + c_i + w_u·h_i, and for a pair with an unseen id the
// terms it knows: μ + c_i for an unseen user, μ + b_u for an unseen item, μ
// for both; a model without biases predicts w_u·h_i, and the mean training
// rating for a pair with an unseen id.
func (m *Model) Predict(path string, w io.Writer) (unseen int, err error) {
	if m.W == nil || m.H == nil || m.Biased && (m.B == nil || m.C == nil) {
		return 0, fmt.Errorf("mf: no factors to predict with (Model.Factors was not set)")
	}
	type factor struct {
		v    []float64
		bias float64
	}
	users := map[int64]factor{}
	for s, ids := range m.Users {
		for k, id := range ids {
			f := factor{v: m.W[s][k*m.Rank : (k+1)*m.Rank]}
			if m.Biased {
				f.bias = m.B[s][k]
			}
			users[id] = f
		}
	}
	items := make(map[int64]factor, len(m.ItemIDs))
	for k, id := range m.ItemIDs {
		f := factor{v: m.H[k*m.Rank : (k+1)*m.Rank]}
		if m.Biased {
			f.bias = m.C[k]
		}
		items[id] = f
	}
	bw := bufio.NewWriter(w)
	var buf []byte
	err = ReadPairs(path, func(_ int, user, item int64) error {
		wu, ok1 := users[user]
		hi, ok2 := items[item]
		var p float64
		switch {
		case ok1 && ok2:
			p = dot(wu.v, hi.v)
			if m.Biased {
				p += m.Mean + wu.bias + hi.bias
			}
		case m.Biased:
			p = m.Mean + wu.bias + hi.bias // a missing one's bias is 0
		default:
			p = m.Mean
		}
		if !(ok1 && ok2) {
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

// appendPrediction appends the line "user item prediction" of a
// prediction file (the shortest decimal that reads back as p) to buf.
func appendPrediction(buf []byte, user, item int64, p float64) []byte {
	buf = strconv.AppendInt(buf, user, 10)
	buf = append(buf, ' ')
	buf = strconv.AppendInt(buf, item, 10)
	buf = append(buf, ' ')
	buf = strconv.AppendFloat(buf, p, 'g', -1, 64)
	return append(buf, '\n')
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

// ErrDiverged is the error of a job whose objective is no longer finite:
// schmp.ErrDiverged, as the runtime's.
var ErrDiverged = schmp.ErrDiverged

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
	// lastRound is the job's last round, once the runtime decided its
	// stop (LastRound); 0 before.
	lastRound uint64
	// foldC holds the item biases of the bias-only model of the training
	// and validation ratings together (Config.folds), from the workers'
	// sums at the start.
	foldC []float64
}

func newBase(cfg Config) base {
	m := &Model{Rank: cfg.Rank, Biased: cfg.biased(), BestAt: -1}
	none := Eval{Objective: math.NaN(), TrainRMSE: math.NaN(), TestRMSE: math.NaN(), ValRMSE: math.NaN(), Iter: math.NaN(),
		Ratings: math.NaN(), RatingsPerSec: math.NaN(), RatingsPerCoreSec: math.NaN()}
	return base{cfg: cfg, m: m, last: none.progress(cfg.Holdout > 0)}
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
	m := b.m
	m.Users = make([][]int64, len(sums))
	m.Train, m.Test, m.Unseen, m.Val, m.ValUnseen = 0, 0, 0, 0, 0
	for p, s := range sums {
		if s.Fingerprint != s0.Fingerprint {
			return fmt.Errorf("workers 0 and %d read different training data (fingerprints %x and %x): every worker must read the same --train file", p, s0.Fingerprint, s.Fingerprint)
		}
		m.Users[p] = s.Users
		m.Train += s.Train
		m.Test += s.Test
		m.Unseen += s.Unseen
		m.Val += s.Val
		m.ValUnseen += s.ValUnseen
	}
	m.ItemIDs = s0.ItemIDs
	// μ is the Index's mean, the workers' to the last bit; the mean of the
	// sums would round differently.
	m.Mean = s0.Mean
	b.blockStart = s0.BlockStart
	if m.Unseen > 0 && b.cfg.Warn != nil {
		how := fmt.Sprintf("the mean training rating, %.6g", m.Mean)
		if m.Biased {
			how = fmt.Sprintf("μ = %.6g plus the bias of the user or item that is in training", m.Mean)
		}
		fmt.Fprintf(b.cfg.Warn, "mf: %d of %d test ratings have a user or item that is not in --train: left out of the test RMSE (predictions for them are %s)\n",
			m.Unseen, m.Unseen+m.Test, how)
	}
	if m.ValUnseen > 0 && b.cfg.Warn != nil {
		fmt.Fprintf(b.cfg.Warn, "mf: %d of %d validation ratings have a user or item that is in no other training rating: left out of the validation RMSE\n",
			m.ValUnseen, m.ValUnseen+m.Val)
	}
	if b.cfg.Holdout > 0 && m.Val == 0 && b.cfg.Warn != nil {
		// Validation is on by default (a command line's DefaultValidate):
		// a set too small to hold any out still runs.
		fmt.Fprintf(b.cfg.Warn, "mf: --validate %g holds out no rating that the model can predict (too few ratings): no validation RMSE and no validation stop; the outputs are of the last evaluation\n", b.cfg.Holdout)
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
// after b.pulled rounds, records it, and, when the reports carry the
// factors (validation: reportFactors), keeps W and the user biases from
// them and H (row by row) and the item biases from hc if the validation
// RMSE is a new lowest. A report of a state that the workers could not
// evaluate (not Exact) repeats the last evaluation. With validation, once
// Config.Patience evaluations in a row brought no new lowest, the
// evaluation asks the runtime to stop (schmp.Progress.Stop), and so does
// every one after it: those are recorded only if they are a new lowest
// (the model keeps the best evaluation's factors, computed before or
// after the stop), but the runtime's metrics show them all.
func (b *base) evaluate(reports []Summary, hc func() (h, c []float64)) (schmp.Progress, error) {
	for p, r := range reports {
		if !r.Exact {
			return b.last, nil
		}
		if r.Round != b.pulled {
			return b.last, fmt.Errorf("worker %d reports the state after round %d, the coordinator's is after round %d (the rotation needs --depth 1)", p, r.Round, b.pulled)
		}
	}
	m := b.m
	e := b.cfg.figures(reports, m.Train, m.Test, m.Val)
	// Iteration 0 of the warm start with validation: its validation
	// RMSE is the bias-only model's of the training ratings less the
	// held-out ones, but the model written for it, should it stay the
	// best, is the bias-only model of all of them (Config.folds), whose
	// test RMSE it reports.
	folded := b.pulled == 0 && b.foldC != nil && len(reports) > 0 && reports[0].Folded
	if folded {
		var s float64
		for _, r := range reports {
			s += r.FoldTestSSE
		}
		if m.Test > 0 {
			e.TestRMSE = math.Sqrt(s / float64(m.Test))
		}
	}
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
	// After the validation stop, the evaluations that follow (of rounds
	// already under way) are recorded and kept only if they are a new
	// lowest: computed, and better, they are not thrown away.
	stopped := m.Stopped
	improved := m.Val == 0 || m.BestAt < 0 || e.ValRMSE < m.Trace[m.BestAt].ValRMSE
	if b.reportFactors() && improved {
		m.W = make([][]float64, len(reports))
		for p, r := range reports {
			if len(r.W) != len(m.Users[p])*m.Rank {
				return b.last, fmt.Errorf("worker %d sent %d factor values for %d users of rank %d", p, len(r.W), len(m.Users[p]), m.Rank)
			}
			m.W[p] = r.W
		}
		h, c := hc()
		m.H = slices.Clone(h)
		if m.Biased {
			m.B = make([][]float64, len(reports))
			for p, r := range reports {
				if len(r.B) != len(m.Users[p]) {
					return b.last, fmt.Errorf("worker %d sent %d biases for %d users", p, len(r.B), len(m.Users[p]))
				}
				m.B[p] = r.B
			}
			m.C = slices.Clone(c)
		}
		if folded && m.Biased {
			for p, r := range reports {
				if len(r.FoldB) != len(m.Users[p]) {
					return b.last, fmt.Errorf("worker %d sent %d folded biases for %d users", p, len(r.FoldB), len(m.Users[p]))
				}
				m.B[p] = r.FoldB
			}
			m.C = slices.Clone(b.foldC)
		}
	}
	record := !stopped || improved
	if record {
		m.Trace = append(m.Trace, e)
	}
	if m.Val > 0 && record {
		if improved {
			m.BestAt = len(m.Trace) - 1
		} else if len(m.Trace)-1-m.BestAt >= b.cfg.Patience {
			m.Stopped = true
		}
	}
	if w := b.cfg.Progress; w != nil && record {
		fmt.Fprintf(w, "iter %-6.4g round %-6d elapsed %-9s train RMSE %.6f  test RMSE %.6f  objective %.9g  ratings/s %.3g (per core %.3g)\n",
			e.Iter, e.Round, e.Time.Round(time.Millisecond), e.TrainRMSE, e.TestRMSE, e.Objective, e.RatingsPerSec, e.RatingsPerCoreSec)
	}
	b.last = e.progress(b.cfg.Holdout > 0)
	if m.Stopped {
		b.last.Stop = fmt.Sprintf("no new lowest validation RMSE in %d evaluations", b.cfg.Patience)
	}
	return b.last, nil
}

// figures returns the objective and the RMSEs of the workers' reports,
// of train training, test test and val validation ratings in all.
func (c Config) figures(reports []Summary, train, test, val int) Eval {
	var e Eval
	var wn, hn, bn, testSSE, valSSE float64
	for _, r := range reports {
		e.Objective += r.SSE
		wn += r.WNorm
		hn += r.HNorm
		bn += r.BNorm + r.CNorm
		testSSE += r.TestSSE
		valSSE += r.ValSSE
	}
	e.TrainRMSE = math.Sqrt(e.Objective / float64(train))
	e.TestRMSE = math.NaN()
	if test > 0 {
		e.TestRMSE = math.Sqrt(testSSE / float64(test))
	}
	e.ValRMSE = math.NaN()
	if val > 0 {
		e.ValRMSE = math.Sqrt(valSSE / float64(val))
	}
	e.Objective += c.Lambda * (wn + hn)
	if c.biased() {
		e.Objective += c.BiasLambda * bn
	}
	return e
}

// ModelOf returns the model of an mf job's coordinator (the value its
// program's NewCoordinator returned: coordinator.Result.App after a job on
// the runtime, local.Job.Coordinator after a local one), or nil if coord
// is none.
func ModelOf(coord any) *Model {
	if c, ok := coord.(interface{ model() *Model }); ok {
		return c.model()
	}
	return nil
}

// KeptRound returns the round of the evaluation whose factors the model
// keeps, with validation (schmp.Kept); without, the model is the last
// report's state.
func (b *base) KeptRound() (uint64, bool) {
	if b.m.Val == 0 || b.m.BestAt < 0 || b.m.BestAt >= len(b.m.Trace) {
		return 0, false
	}
	return b.m.Trace[b.m.BestAt].Round, true
}

// model returns the coordinator's model (ModelOf).
func (b *base) model() *Model { return b.m }

// writeModel writes the model as one text (the runtime's Out; the command
// line writes W, H and the biases to files of their own instead): with
// biases, a line "mean μ", then the "user ID b_u" and "item ID c_i" lines
// of WriteBiases; then "user ID v1 … vK" lines and "item ID v1 … vK"
// lines.
func (b *base) writeModel(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if b.m.Biased {
		if err := b.m.WriteBiases(bw); err != nil {
			return err
		}
	}
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
