package logreg

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// SGDConfig configures logistic regression by data-parallel SGD on the
// parameter server (package ps/node): the rows of Data are split over the
// workers, each reads only its own, and the weights are a table of
// consistency model Model (see the package documentation, "Data-parallel
// SGD").
type SGDConfig struct {
	// Data, Test, Lambda, LambdaRatio, C and Intercept are as for the
	// scheduled solver; its other fields are unused.
	Config
	// Penalty is L1 (λ‖w‖₁, the scheduled solver's) or L2 ((λ/2)‖w‖²).
	Penalty Penalty
	// Model and Staleness are the weights table's consistency model.
	Model     ps.Model
	Staleness int
	// Workers and Servers are the numbers of workers and servers.
	Workers, Servers int
	// ClocksPerPass is how many clocks a pass over the data takes: a clock
	// is a mini-batch of 1/ClocksPerPass of every worker's rows.
	ClocksPerPass int
	// Passes bounds the passes over the data; MaxClocks, if > 0, bounds
	// the clocks of training too.
	Passes    int
	MaxClocks int
	// EvalEvery is how many clocks of training come between two
	// evaluations of the objective (each costs a pass over the data).
	EvalEvery int
	// Step is the step size η₀ of the first pass; 0 takes 2/r², r² the
	// mean of ‖x_i‖² (+1 with an intercept). Pass p takes η₀/√(1+p).
	Step float64
	// Tol stops the job when the objective changed by less than Tol,
	// relatively, between two evaluations; Target, with HasTarget, once
	// it is at most Target; TimeLimit after that long (0: none of them).
	Tol       float64
	Target    float64
	HasTarget bool
	TimeLimit time.Duration
	// Seed seeds the order of every worker's rows in each pass.
	Seed uint64
	// Progress, if set, takes a progress line per evaluation, at most
	// every ProgressEvery; Report, if set, every evaluation, from worker
	// 0 as it reads it.
	Progress      io.Writer
	ProgressEvery time.Duration
	Report        func(SGDRecord)
	// CheckpointEvery takes a checkpoint at the start of every
	// CheckpointEvery-th clock (0: none), with Node.Checkpoints: the
	// tables as of that clock (ps.Config.Every) and each worker's place in
	// the job (its clock of training and evaluation, its steps, its
	// decisions, its time and the staleness of its reads so far).
	// Node.Resume starts the job again from the last one, which must have
	// been taken with the same settings, CheckpointEvery included. A job of
	// separate processes takes them from its coordinator (SGDJob.Host).
	CheckpointEvery int
	// Node are the parameter server's waits and logger, and its
	// checkpoints.
	Node node.Options

	// atStart and atClock, if set, are called by each worker as it starts
	// its clocks after the setup, with the clock it starts at, and at the
	// start of each clock, whose error it returns: for tests.
	atStart func(c int)
	atClock func(c int) error
}

// Validate reports the first bad field, as a *schmp.FieldError where a
// field is to blame.
func (c *SGDConfig) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	switch {
	case c.Path > 0:
		return schmp.Fieldf("Path", "is the scheduled solver's: SGD solves one λ")
	case c.Penalty == L2 && c.LambdaRatio > 0:
		return schmp.Fieldf("LambdaRatio", "is the L1 penalty's (a fraction of λ_max, the smallest λ with w = 0): give {Lambda} or {C} with the L2 penalty")
	case c.Workers < 1 || c.Servers < 1:
		return fmt.Errorf("%d workers and %d servers: each needs at least 1", c.Workers, c.Servers)
	case c.ClocksPerPass < 1:
		return schmp.Fieldf("ClocksPerPass", "must be >= 1, got %d", c.ClocksPerPass)
	case c.Passes < 1:
		return schmp.Fieldf("Passes", "must be >= 1, got %d", c.Passes)
	case c.EvalEvery < 1:
		return schmp.Fieldf("EvalEvery", "must be >= 1, got %d", c.EvalEvery)
	case c.MaxClocks < 0:
		return schmp.Fieldf("MaxClocks", "must be >= 0, got %d", c.MaxClocks)
	case c.CheckpointEvery < 0:
		return schmp.Fieldf("CheckpointEvery", "must be >= 0 (0: none), got %d", c.CheckpointEvery)
	case !(c.Step >= 0) || math.IsInf(c.Step, 0):
		return schmp.Fieldf("Step", "must be a finite number >= 0 (0: from the data), got %v", c.Step)
	case c.Model == ps.BSP && c.Staleness != 0:
		return schmp.Fieldf("Staleness", "is for ssp and essp: bsp reads are never stale, got %d", c.Staleness)
	case c.Model == ps.Async && c.Staleness != 0:
		return schmp.Fieldf("Staleness", "is for ssp and essp: async reads have no bound, got %d", c.Staleness)
	case c.Staleness < 0 || c.Staleness >= ps.MaxAhead:
		return schmp.Fieldf("Staleness", "must be in [0, %d], got %d", ps.MaxAhead-1, c.Staleness)
	}
	t := ps.Table{Name: "weights", Rows: 1, Width: 1, Model: c.Model, Staleness: c.Staleness}
	return ps.Config{Tables: []ps.Table{t}, Servers: 1, Workers: 1}.Validate()
}

// SGDRecord is an evaluation: the objective and the accuracies at the
// workers' views of the weights (each worker's rows at its own view), and
// the staleness of the workers' reads of the weights so far.
type SGDRecord struct {
	Time      float64 // seconds since the start of training
	Clock     int     // the clock of the evaluation
	Samples   int64   // SGD steps taken before it, all workers
	Objective float64
	NNZ       int
	Train     float64
	Test      float64 // NaN without a test set
	Staleness ps.Stats
}

// SGDResult is the end of an SGD job: the model as read from the servers
// at the final clock, and its objective and accuracies recomputed from it
// exactly (over Data and Test, read whole).
type SGDResult struct {
	Model     *linear.Model
	Lambda    float64
	LambdaMax float64
	Objective float64
	Train     Fit
	Test      Fit // Rows 0 without a test set
	Records   []SGDRecord
	Clocks    int
	Elapsed   time.Duration
	Reason    string
}

// Metrics table fields, per evaluation; the last Workers values are each
// worker's greatest staleness.
const (
	mCount = iota // workers that reported
	mLoss
	mReg // the penalty of the weights the worker owns, without λ
	mNNZ
	mCorrect
	mTestCorrect
	mReads
	mSum
	mSumSq
	mTime    // worker 0's
	mClock   // worker 0's
	mSamples // worker 0's: SGD steps of all workers before the evaluation
	mStop    // worker 0's: the time limit passed
	mReason  // worker 0's: why the job stops here (a stop code), or 0
	mFields
)

// setupWidth is the width of the setup table's rows: it is read whole
// once, and a row not cached costs a round trip to its server.
const setupWidth = 256

// The tables.
const (
	tWeights = iota
	tSetup
	tMetrics
)

// dataInfo is what the command learns of the training file before the job
// starts: its size, which shapes the tables, and its classes.
type dataInfo struct {
	rows, features, pos, neg, zero int
	testRows                       int
}

// scan reads the training file once for its shape and checks its labels.
func scan(cfg Config) (dataInfo, error) {
	var d dataInfo
	err := libsvm.Read(cfg.Data, func(line int, r libsvm.Row) error {
		switch r.Label {
		case 1:
			d.pos++
		case -1:
			d.neg++
		case 0:
			d.zero++
		default:
			return &libsvm.ParseError{File: cfg.Data, Line: line, Msg: badLabel(r.Label)}
		}
		d.features = max(d.features, r.Width())
		d.rows++
		return nil
	})
	if err != nil {
		return d, err
	}
	switch {
	case d.zero > 0 && d.neg > 0:
		return d, &libsvm.ParseError{File: cfg.Data, Msg: "labels mix the 0/1 and -1/+1 conventions"}
	case d.features == 0:
		return d, &libsvm.ParseError{File: cfg.Data, Msg: "no features"}
	}
	if err := checkClasses(cfg.Data, d.pos, d.neg+d.zero); err != nil {
		return d, err
	}
	if cfg.Test != "" {
		if d.testRows, err = libsvm.CountRows(cfg.Test); err != nil {
			return d, err
		}
	}
	return d, nil
}

// shard is a worker's rows, compressed by row.
type shard struct {
	ptr []int
	idx []int32
	val []float64
	y   []float64
}

func (s *shard) rows() int { return len(s.y) }

// readShard reads rows [lo, hi) of path.
func readShard(path string, lo, hi int) (*shard, error) {
	s := &shard{ptr: []int{0}}
	err := libsvm.ReadRange(path, lo, hi, func(line int, r libsvm.Row) error {
		y, ok := label(r.Label)
		if !ok {
			return &libsvm.ParseError{File: path, Line: line, Msg: badLabel(r.Label)}
		}
		s.idx = append(s.idx, r.Index...)
		s.val = append(s.val, r.Value...)
		s.ptr = append(s.ptr, len(s.idx))
		s.y = append(s.y, y)
		return nil
	})
	return s, err
}

// RunSGD runs an SGD job on the parameter server, its nodes on
// connections from dial, and returns the model at the final clock. A
// diverging objective fails it with schmp.ErrDiverged.
func RunSGD(ctx context.Context, dial func(name string) (*wire.Conn, error), cfg SGDConfig) (*SGDResult, error) {
	j, err := NewSGDJob(cfg)
	if err != nil {
		return nil, err
	}
	res := &SGDResult{}
	start := time.Now()
	if err := node.Run(ctx, dial, j.pcfg, cfg.Node, j.work, j.finish(res)); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// SGDJob is a job of RunSGD as its roles run it when they are separate
// processes: a coordinator (Coordinate) and a process per worker (Host),
// on any NATS server. Each makes the job from the same SGDConfig, and
// reads the data file itself; the checkpoint settings (CheckpointEvery,
// Node.Checkpoints and Node.Resume) are the coordinator's, which every
// worker takes from it as it starts.
type SGDJob struct{ *sgdJob }

// NewSGDJob returns the job of cfg, shaped by a pass over its data.
func NewSGDJob(cfg SGDConfig) (*SGDJob, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d, err := scan(cfg.Config)
	if err != nil {
		return nil, err
	}
	m := d.features
	trainClocks := cfg.Passes * cfg.ClocksPerPass
	if cfg.MaxClocks > 0 {
		trainClocks = min(trainClocks, cfg.MaxClocks)
	}
	evals := (trainClocks+cfg.EvalEvery-1)/cfg.EvalEvery + 1
	pcfg := ps.Config{Servers: cfg.Servers, Workers: cfg.Workers, Every: cfg.CheckpointEvery, Tables: []ps.Table{
		tWeights: {Name: "weights", Rows: m + 1, Width: 1, Model: cfg.Model, Staleness: cfg.Staleness},
		tSetup:   {Name: "setup", Rows: m/setupWidth + 1, Width: setupWidth},
		tMetrics: {Name: "metrics", Rows: evals, Width: mFields + cfg.Workers},
	}}
	if err := pcfg.Validate(); err != nil {
		return nil, err
	}
	return &SGDJob{&sgdJob{cfg: cfg, d: d, m: m, trainClocks: trainClocks, pcfg: pcfg}}, nil
}

// Host runs worker w of the job, and the servers it hosts (node.Host),
// each on its own connection from dial, until the job is over.
func (j *SGDJob) Host(ctx context.Context, dial func(name string) (*wire.Conn, error), w int) error {
	return node.Host(ctx, dial, j.pcfg, w, j.cfg.Node, j.work)
}

// Coordinate runs the job's coordinator on c (node.Coordinate), waiting
// up to join for the workers to come, and returns the job's result.
func (j *SGDJob) Coordinate(ctx context.Context, c *wire.Conn, dial func(name string) (*wire.Conn, error), join time.Duration) (*SGDResult, error) {
	res := &SGDResult{}
	start := time.Now()
	if err := node.Coordinate(ctx, c, dial, j.pcfg, join, j.cfg.Node, j.finish(res)); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// finish returns the observer's end of the job, which makes res.
func (j *sgdJob) finish(res *SGDResult) func(ctx context.Context, c *wire.Conn) error {
	return func(ctx context.Context, c *wire.Conn) error { return j.after(ctx, c, res) }
}

// sgdJob is what every node of a job knows before it starts: the config
// and the shape of the data.
type sgdJob struct {
	cfg         SGDConfig
	d           dataInfo
	m           int
	trainClocks int
	pcfg        ps.Config
}

// sgdWorker is a worker's state: its rows and its view of the weights.
type sgdWorker struct {
	*sgdJob
	w       int
	cl      *node.Client
	x, test *shard
	// perm is the order of the worker's rows in pass permPass.
	perm      []int
	permPass  int
	inc       []float64
	lambda    float64
	lambdaMax float64 // of the setup table
	step      float64
	start     time.Time
	// t is the clocks of training done and e the evaluations added, at
	// the start of the clock; training clock t is the client's clock t+1.
	t, e      int
	samples   int64 // SGD steps of all workers so far
	lastPrint time.Time
	prevF, f0 float64
	haveF     bool
	stop      int
	// stale is the staleness of the reads before the clock resumed from,
	// and base the client's of the reads of the resumed setup, which the
	// job never interrupted did not make again.
	stale, base ps.Stats
	courseOf    []string // course's, once the setup is read
}

// sgdState is a worker's piece of a checkpoint, taken at the start of a
// clock: what it holds beyond the tables, and what its steps from there
// depend on (sgdWorker.course).
type sgdState struct {
	Course  []string      `msgpack:"course"`
	T       int           `msgpack:"t"`
	E       int           `msgpack:"e"`
	Samples int64         `msgpack:"samples"`
	PrevF   float64       `msgpack:"prevf"`
	F0      float64       `msgpack:"f0"`
	HaveF   bool          `msgpack:"havef"`
	Stop    int           `msgpack:"stop"`
	Elapsed time.Duration `msgpack:"elapsed"`
	Stale   ps.Stats      `msgpack:"stale"`
}

// state returns the worker's piece of the checkpoint of its clock.
func (sw *sgdWorker) state() ([]byte, error) {
	return codec.Marshal(sgdState{Course: sw.course(), T: sw.t, E: sw.e, Samples: sw.samples, PrevF: sw.prevF, F0: sw.f0, HaveF: sw.haveF,
		Stop: sw.stop, Elapsed: time.Since(sw.start), Stale: sw.stats()})
}

// restore sets the worker to its piece of the checkpoint that the job
// resumed from, at the start of the client's clock. The permutation of
// the pass is made again (train), the rest of the setup read again.
func (sw *sgdWorker) restore(data []byte) error {
	var s sgdState
	if err := codec.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("its piece of the checkpoint: %w", err)
	}
	k := sw.cl.Clocks()
	if c := sw.course(); !slices.Equal(s.Course, c) {
		var diff []string
		for i := range min(len(s.Course), len(c)) {
			if s.Course[i] != c[i] {
				diff = append(diff, fmt.Sprintf("%s, this job %s", s.Course[i], c[i]))
			}
		}
		if len(diff) == 0 {
			diff = append(diff, fmt.Sprintf("%s, this job %s", strings.Join(s.Course, ", "), strings.Join(c, ", ")))
		}
		return fmt.Errorf("the checkpoint of clock %d was taken with other settings or data (%s): resume with the same", k, strings.Join(diff, "; "))
	}
	if s.T+1 != k || s.T > sw.trainClocks || s.E < 0 || s.E >= sw.pcfg.Tables[tMetrics].Rows || s.Stop != stopNone {
		return fmt.Errorf("its piece of the checkpoint of clock %d is at training clock %d, evaluation %d (stop %d) of %d and %d: was it taken of other settings?",
			k, s.T, s.E, s.Stop, sw.trainClocks, sw.pcfg.Tables[tMetrics].Rows)
	}
	sw.t, sw.e, sw.samples = s.T, s.E, s.Samples
	sw.prevF, sw.f0, sw.haveF, sw.stop = s.PrevF, s.F0, s.HaveF, s.Stop
	sw.start = time.Now().Add(-s.Elapsed)
	sw.stale, sw.base = s.Stale, sw.cl.Stats()
	return nil
}

// course returns what the worker's steps depend on beyond the tables and
// its state, an item each: the settings, resolved, and its rows (a
// checksum), which a job resumed from a checkpoint must have as the job
// that took it.
func (sw *sgdWorker) course() []string {
	if sw.courseOf == nil {
		c := &sw.cfg
		target := "none"
		if c.HasTarget {
			target = fmt.Sprint(c.Target)
		}
		sw.courseOf = []string{
			fmt.Sprintf("λ %v", sw.lambda), fmt.Sprintf("penalty %v", c.Penalty), fmt.Sprintf("step %v", sw.step),
			fmt.Sprintf("seed %d", c.Seed), fmt.Sprintf("intercept %v", c.Intercept),
			fmt.Sprintf("%d clocks a pass", c.ClocksPerPass), fmt.Sprintf("an evaluation every %d clocks", c.EvalEvery),
			fmt.Sprintf("%d clocks of training", sw.trainClocks), fmt.Sprintf("tol %v", c.Tol), fmt.Sprintf("target %s", target),
			fmt.Sprintf("time limit %v", c.TimeLimit), fmt.Sprintf("%d rows of checksum %016x", sw.x.rows(), sw.x.checksum()),
		}
	}
	return sw.courseOf
}

// checksum returns the FNV-1a hash of the shard's rows.
func (s *shard) checksum() uint64 {
	h := fnv.New64a()
	b := make([]byte, 0, 64)
	for i, y := range s.y {
		b = binary.LittleEndian.AppendUint64(b[:0], math.Float64bits(y))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.ptr[i+1]-s.ptr[i]))
		h.Write(b)
		for k := s.ptr[i]; k < s.ptr[i+1]; k++ {
			b = binary.LittleEndian.AppendUint32(b[:0], uint32(s.idx[k]))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.val[k]))
			h.Write(b)
		}
	}
	return h.Sum64()
}

// stats returns the staleness of the worker's reads so far.
func (sw *sgdWorker) stats() ps.Stats {
	st, b := sw.cl.Stats(), sw.base
	return sw.stale.Add(ps.Stats{Reads: st.Reads - b.Reads, Sum: st.Sum - b.Sum, SumSq: st.SumSq - b.SumSq, Max: st.Max})
}

// Why a job stops, in the metrics table.
const (
	stopNone = iota
	stopPasses
	stopConverged
	stopTarget
	stopTime
)

var stopReasons = [...]string{stopPasses: "the passes or clocks ran out", stopConverged: "converged: the objective changed by less than --tol", stopTarget: "target reached", stopTime: "time limit"}

// work is worker w's program. Clock 0 sums the data's statistics into the
// setup table (BSP); then each evaluation adds to the metrics table (BSP),
// which every worker reads one evaluation later, so that all decide alike
// when to stop without waiting for each other at every evaluation. A
// worker resumed from a checkpoint goes on from its clock.
func (j *sgdJob) work(ctx context.Context, w int, cl *node.Client) error {
	lo, hi := libsvm.ShardRange(j.d.rows, w, j.cfg.Workers)
	x, err := readShard(j.cfg.Data, lo, hi)
	if err != nil {
		return err
	}
	sw := &sgdWorker{sgdJob: j, w: w, cl: cl, x: x, inc: make([]float64, 1), start: time.Now()}
	if j.cfg.Test != "" {
		tlo, thi := libsvm.ShardRange(j.d.testRows, w, j.cfg.Workers)
		if sw.test, err = readShard(j.cfg.Test, tlo, thi); err != nil {
			return err
		}
	}
	if err := sw.setup(ctx); err != nil {
		return err
	}
	if data := cl.Resumed(); data != nil {
		if err := sw.restore(data); err != nil {
			return err
		}
	}
	return sw.run(ctx)
}

// run runs the worker's clocks from the client's, each started by its
// piece of a checkpoint if one is due: evaluation e comes at the start of
// training clock e·EvalEvery (and of the last), before its training.
func (sw *sgdWorker) run(ctx context.Context) error {
	cfg, cl := &sw.cfg, sw.cl
	if cfg.atStart != nil {
		cfg.atStart(cl.Clocks())
	}
	for {
		if cfg.atClock != nil {
			if err := cfg.atClock(cl.Clocks()); err != nil {
				return err
			}
		}
		if err := cl.Checkpoint(ctx, sw.state); err != nil {
			return err
		}
		if sw.t == sw.e*cfg.EvalEvery || sw.t == sw.trainClocks {
			if sw.e > 0 {
				if err := sw.decide(ctx, sw.e-1); err != nil {
					return err
				}
			}
			if sw.stop == stopNone && sw.t >= sw.trainClocks {
				sw.stop = stopPasses
			}
			if err := sw.evaluate(ctx, sw.e, sw.t); err != nil {
				return err
			}
			sw.e++
			if sw.stop != stopNone {
				return cl.Clock(ctx)
			}
		}
		if err := sw.train(ctx, sw.t); err != nil {
			return err
		}
		if err := cl.Clock(ctx); err != nil {
			return err
		}
		sw.t++
	}
}

func (sw *sgdWorker) add(t, row int, v float64) error {
	sw.inc[0] = v
	return sw.cl.Inc(t, row, sw.inc)
}

func (sw *sgdWorker) get(ctx context.Context, t, row int) (float64, error) {
	v, err := sw.cl.Get(ctx, t, row)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// setup is clock 0 and the reads of clock 1: λ_max's column sums and
// Σ‖x_i‖², and the intercept's start, logit(ȳ), as the scheduled solver
// starts it. A worker resumed from a checkpoint only reads what clock 0
// gave, which the servers' cut holds.
func (sw *sgdWorker) setup(ctx context.Context) error {
	d, m := sw.d, sw.m
	n := float64(d.rows)
	// The setup table's values: the column sums, then Σ‖x_i‖².
	setup := make([]float64, (m/setupWidth+1)*setupWidth)
	if sw.cl.Clocks() == 0 {
		if err := sw.sums(ctx, setup); err != nil {
			return err
		}
	}
	for r := range len(setup) / setupWidth {
		v, err := sw.cl.Get(ctx, tSetup, r)
		if err != nil {
			return err
		}
		copy(setup[r*setupWidth:], v)
	}
	sw.lambdaMax = lambdaMax(setup[:m], d.rows)
	sq := setup[m]
	sw.lambda = sw.cfg.Config.lambda(sw.lambdaMax, float64(d.rows))
	sw.step = sw.cfg.Step
	if sw.step == 0 {
		r2 := sq / n
		if sw.cfg.Intercept {
			r2++
		}
		sw.step = 2 / max(r2, 1e-12)
	}
	return nil
}

// sums is clock 0: it adds the intercept's start and the worker's rows'
// column sums and Σ‖x_i‖² (in setup, zero) to the tables.
func (sw *sgdWorker) sums(ctx context.Context, setup []float64) error {
	d, m := sw.d, sw.m
	center := 0.5
	if sw.cfg.Intercept {
		center = float64(d.pos) / float64(d.rows)
		if sw.w == 0 {
			if err := sw.add(tWeights, m, math.Log(center/(1-center))); err != nil {
				return err
			}
		}
	}
	cols := setup[:m]
	sq := 0.0
	x := sw.x
	for i, y := range x.y {
		y01 := 0.0
		if y > 0 {
			y01 = 1
		}
		for k := x.ptr[i]; k < x.ptr[i+1]; k++ {
			cols[x.idx[k]] += x.val[k] * (y01 - center)
			sq += x.val[k] * x.val[k]
		}
	}
	setup[m] = sq
	for r := range len(setup) / setupWidth {
		if err := sw.cl.Inc(tSetup, r, setup[r*setupWidth:(r+1)*setupWidth]); err != nil {
			return err
		}
	}
	return sw.cl.Clock(ctx)
}

// margin returns x_i·w + b at the worker's view.
func (sw *sgdWorker) margin(ctx context.Context, x *shard, i int) (float64, error) {
	z := 0.0
	if sw.cfg.Intercept {
		b, err := sw.get(ctx, tWeights, sw.m)
		if err != nil {
			return 0, err
		}
		z = b
	}
	for k := x.ptr[i]; k < x.ptr[i+1]; k++ {
		j := int(x.idx[k])
		if j >= sw.m {
			continue // a test row's feature the training data lacks
		}
		v, err := sw.get(ctx, tWeights, j)
		if err != nil {
			return 0, err
		}
		z += v * x.val[k]
	}
	if math.IsNaN(z) || math.IsInf(z, 0) {
		return 0, fmt.Errorf("%w: a margin x·w + b of %v at clock %d (a smaller step size, --step, may help)", schmp.ErrDiverged, z, sw.cl.Clocks())
	}
	return z, nil
}

// train is training clock t: an SGD step for each row of the clock's
// mini-batch, then the proximal step of the penalty for the whole
// mini-batch (of all workers) on the features the worker owns.
func (sw *sgdWorker) train(ctx context.Context, t int) error {
	k, pass := sw.cfg.ClocksPerPass, t/sw.cfg.ClocksPerPass
	eta := sw.step / math.Sqrt(1+float64(pass))
	x := sw.x
	if sw.perm == nil || sw.permPass != pass {
		// Of the seed and the pass alone: a resumed worker makes its
		// pass's again.
		rng := rand.New(rand.NewPCG(sw.cfg.Seed, uint64(sw.w)<<32|uint64(pass)))
		sw.perm, sw.permPass = rng.Perm(x.rows()), pass
	}
	b := t % k
	lo, hi := b*x.rows()/k, (b+1)*x.rows()/k
	for _, i := range sw.perm[lo:hi] {
		z, err := sw.margin(ctx, x, i)
		if err != nil {
			return err
		}
		_, q, _ := row(x.y[i], z)
		g := -eta * -x.y[i] * q // −η·∂loss/∂z
		for p := x.ptr[i]; p < x.ptr[i+1]; p++ {
			if err := sw.add(tWeights, int(x.idx[p]), g*x.val[p]); err != nil {
				return err
			}
		}
		if sw.cfg.Intercept {
			if err := sw.add(tWeights, sw.m, g); err != nil {
				return err
			}
		}
	}
	// The steps of all workers of this clock, n/k in all: each worker's
	// share of them is its own, but the penalty's prox is not additive,
	// so one worker applies it, for all of them, to the weights it owns.
	n := float64(sw.d.rows)
	sw.samples += int64((t+1)*sw.d.rows/k - t*sw.d.rows/k)
	shrink := eta * sw.lambda * n / float64(k)
	for j := sw.w; j < sw.m; j += sw.cfg.Workers {
		v, err := sw.get(ctx, tWeights, j)
		if err != nil {
			return err
		}
		var nv float64
		if sw.cfg.Penalty == L2 {
			nv = v / (1 + shrink)
		} else {
			nv = math.Copysign(max(math.Abs(v)-shrink, 0), v)
		}
		if nv != v {
			if err := sw.add(tWeights, j, nv-v); err != nil {
				return err
			}
		}
	}
	return nil
}

// evaluate adds evaluation e, at the worker's view after t clocks of
// training, to the metrics table.
func (sw *sgdWorker) evaluate(ctx context.Context, e, t int) error {
	row := make([]float64, mFields+sw.cfg.Workers)
	var f Fit
	for i, y := range sw.x.y {
		z, err := sw.margin(ctx, sw.x, i)
		if err != nil {
			return err
		}
		f.add(y, z)
	}
	if sw.test != nil {
		var tf Fit
		for i, y := range sw.test.y {
			z, err := sw.margin(ctx, sw.test, i)
			if err != nil {
				return err
			}
			tf.add(y, z)
		}
		row[mTestCorrect] = float64(tf.Correct)
	}
	for j := sw.w; j < sw.m; j += sw.cfg.Workers {
		v, err := sw.get(ctx, tWeights, j)
		if err != nil {
			return err
		}
		row[mReg] += sw.cfg.Penalty.Of([]float64{v})
		if v != 0 {
			row[mNNZ]++
		}
	}
	st := sw.stats()
	row[mCount], row[mLoss], row[mCorrect] = 1, f.Loss, float64(f.Correct)
	row[mReads], row[mSum], row[mSumSq] = float64(st.Reads), st.Sum, st.SumSq
	row[mFields+sw.w] = float64(st.Max)
	if sw.w == 0 {
		el := time.Since(sw.start)
		row[mTime], row[mClock], row[mSamples] = el.Seconds(), float64(sw.cl.Clocks()), float64(sw.samples)
		if sw.cfg.TimeLimit > 0 && el >= sw.cfg.TimeLimit {
			row[mStop] = 1
		}
		row[mReason] = float64(sw.stop)
	}
	return sw.cl.Inc(tMetrics, e, row)
}

// decide reads evaluation e, complete now, and sets sw.stop if the job
// stops: every worker reads the same values, so all stop at once.
func (sw *sgdWorker) decide(ctx context.Context, e int) error {
	v, err := sw.cl.Get(ctx, tMetrics, e)
	if err != nil {
		return err
	}
	rec := sw.record(v, sw.lambda)
	f := rec.Objective
	if sw.w == 0 && sw.cfg.Progress != nil && time.Since(sw.lastPrint) >= sw.cfg.ProgressEvery {
		sw.lastPrint = time.Now()
		fmt.Fprintf(sw.cfg.Progress, "clock %d  pass %.3g  objective %.9g  nnz %d  train accuracy %.4f  staleness mean %.3g max %d  elapsed %.1fs\n",
			rec.Clock, float64(rec.Samples)/float64(sw.d.rows), f, rec.NNZ, rec.Train, rec.Staleness.Mean(), rec.Staleness.Max, rec.Time)
	}
	if sw.w == 0 && sw.cfg.Report != nil {
		sw.cfg.Report(rec)
	}
	if e == 0 {
		sw.f0 = f
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0) || f > 100*sw.f0:
		return fmt.Errorf("%w: objective %v at clock %d (it started at %v; a smaller step size, --step, may help)", schmp.ErrDiverged, f, rec.Clock, sw.f0)
	case sw.cfg.HasTarget && f <= sw.cfg.Target:
		sw.stop = stopTarget
	case v[mStop] > 0:
		sw.stop = stopTime
	case sw.haveF && sw.cfg.Tol > 0 && math.Abs(sw.prevF-f) <= sw.cfg.Tol*math.Abs(f):
		sw.stop = stopConverged
	}
	sw.prevF, sw.haveF = f, true
	return nil
}

// record returns the evaluation of a row of the metrics table, with
// penalty lambda.
func (j *sgdJob) record(v []float64, lambda float64) SGDRecord {
	n := float64(j.d.rows)
	rec := SGDRecord{
		Time: v[mTime], Clock: int(v[mClock]), Samples: int64(v[mSamples]),
		NNZ: int(v[mNNZ]), Train: v[mCorrect] / n, Test: math.NaN(),
		Staleness: ps.Stats{Reads: int64(v[mReads]), Sum: v[mSum], SumSq: v[mSumSq]},
	}
	for _, s := range v[mFields:] {
		rec.Staleness.Max = max(rec.Staleness.Max, int(s))
	}
	if j.cfg.Test != "" && j.d.testRows > 0 {
		rec.Test = v[mTestCorrect] / float64(j.d.testRows)
	}
	rec.Objective = v[mLoss]/n + lambda*v[mReg]
	return rec
}

// lambdaMax returns ‖cols‖∞/n: λ_max from the column sums of the setup
// table.
func lambdaMax(cols []float64, n int) float64 {
	l := 0.0
	for _, v := range cols {
		l = max(l, math.Abs(v)/float64(n))
	}
	return l
}

// after reads the metrics and, at the final clock, the weights, and
// recomputes the objective from the model as it will be written.
func (j *sgdJob) after(ctx context.Context, c *wire.Conn, res *SGDResult) error {
	opts := j.cfg.Node
	setup, err := node.Read(ctx, c, j.pcfg, tSetup, 1, opts)
	if err != nil {
		return err
	}
	res.LambdaMax = lambdaMax(setup[:j.m], j.d.rows)
	res.Lambda = j.cfg.Config.lambda(res.LambdaMax, float64(j.d.rows))
	// Every worker's clocks are confirmed: the metrics are complete.
	metrics, err := node.Read(ctx, c, j.pcfg, tMetrics, 1, opts)
	if err != nil {
		return err
	}
	width := mFields + j.cfg.Workers
	why := stopNone
	for e := range j.pcfg.Tables[tMetrics].Rows {
		v := metrics[e*width : (e+1)*width]
		if int(v[mCount]) != j.cfg.Workers {
			break
		}
		res.Records = append(res.Records, j.record(v, res.Lambda))
		why = int(v[mReason])
	}
	if len(res.Records) == 0 || why <= stopNone || why >= len(stopReasons) {
		return fmt.Errorf("the metrics table holds %d evaluations and no stop", len(res.Records))
	}
	res.Reason = stopReasons[why]
	res.Clocks = res.Records[len(res.Records)-1].Clock + 1
	w, err := node.Read(ctx, c, j.pcfg, tWeights, res.Clocks, opts)
	if err != nil {
		return err
	}
	b := 0.0
	if j.cfg.Intercept {
		b = w[j.m]
	}
	lm := linear.New(linear.Logreg, res.Lambda, j.cfg.Intercept, b, w[:j.m])
	lm.Labels = linear.LabelsPM
	if j.d.zero > 0 {
		lm.Labels = linear.Labels01
	}
	if j.cfg.Penalty == L2 {
		lm.Penalty = linear.PenaltyL2
	}
	res.Model = lm
	return res.Recompute(j.cfg)
}

// Recompute sets the result's objective and fits from its model, over
// cfg.Data and cfg.Test read whole, exactly as the model file holds it.
func (r *SGDResult) Recompute(cfg SGDConfig) error {
	w := r.Model.Dense()
	var err error
	if r.Train, err = Loss(cfg.Data, w, r.Model.Intercept); err != nil {
		return err
	}
	r.Objective = r.Train.Loss/float64(r.Train.Rows) + r.Lambda*cfg.Penalty.Of(w)
	if cfg.Test != "" {
		if r.Test, err = Loss(cfg.Test, w, r.Model.Intercept); err != nil {
			return err
		}
	}
	return nil
}
