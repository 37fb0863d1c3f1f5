package lasso

import (
	"context"
	"fmt"
	"math"

	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/sparse"
	"github.com/strads-go/strads/wire"
)

// Config configures a Lasso job. Every role of the job gets the same
// Config; each uses the part it needs.
type Config struct {
	// Data is the path of the LIBSVM file. Every role reads its own copy:
	// the scheduler reads the columns, a worker only its rows.
	Data string
	// Lambda is the L1 penalty λ, used when LambdaRatio is 0.
	Lambda float64
	// LambdaRatio, when positive, sets λ = LambdaRatio·λ_max, where
	// λ_max = ‖X̃ᵀỹ‖∞/n is the smallest λ whose solution is β = 0.
	LambdaRatio float64
	// Intercept fits an unpenalized intercept.
	Intercept bool
	// Schedule configures the scheduler's dynamic engine; its Vars is set
	// from the data, and a negative Warmup means one sweep's worth of
	// rounds, ⌈M/Block⌉.
	Schedule scheduler.Config
}

// Validate reports the first bad setting, named as its flag.
func (c *Config) Validate() error {
	switch {
	case c.Data == "":
		return fmt.Errorf("--data is required")
	case c.Lambda < 0 || math.IsNaN(c.Lambda) || math.IsInf(c.Lambda, 0):
		return fmt.Errorf("--lambda must be a finite number >= 0, got %v", c.Lambda)
	case c.LambdaRatio < 0 || math.IsNaN(c.LambdaRatio) || math.IsInf(c.LambdaRatio, 0):
		return fmt.Errorf("--lambda-ratio must be a finite number >= 0, got %v", c.LambdaRatio)
	}
	s := c.Schedule
	s.Vars = max(s.Vars, 1) // known only once the data are read
	s.Warmup = max(s.Warmup, 0)
	return s.Validate()
}

// Plan is the set of coordinates updated in a round.
type Plan struct {
	Vars wire.Int32s `msgpack:"v"`
}

// Partial is a worker's share of a round: Dot[k] = Σ x_ij·r_i over its
// rows for j = Plan.Vars[k], and SumR = Σ r_i over its rows.
type Partial struct {
	Dot  wire.Float64s `msgpack:"d"`
	SumR float64       `msgpack:"s"`
}

// Update tells workers how β changed: β_j += Delta[k] for j = Vars[k].
// The first update of a job carries the centering instead.
type Update struct {
	Vars   wire.Int32s   `msgpack:"v"`
	Delta  wire.Float64s `msgpack:"d"`
	Center *Center       `msgpack:"c,omitempty"`
}

// Center is the centering that workers apply to their rows and responses
// (zero means when the job fits no intercept).
type Center struct {
	MeanY float64       `msgpack:"y"`
	MeanX wire.Float64s `msgpack:"x"`
}

// Summary describes a worker's shard when it joins (Rows … XtY), and its
// residual r when it reports (SqResid … XtR), over the shard's rows.
type Summary struct {
	Rows     int           `msgpack:"n"`
	Features int           `msgpack:"m"`
	SumY     float64       `msgpack:"sy"`
	ColSum   wire.Float64s `msgpack:"cs"`
	ColSq    wire.Float64s `msgpack:"cq"`
	XtY      wire.Float64s `msgpack:"xy"`
	SqResid  float64       `msgpack:"rr"` // Σ r_i²
	SumResid float64       `msgpack:"r"`  // Σ r_i
	YtR      float64       `msgpack:"yr"` // Σ (y_i − ȳ)·r_i
	XtR      wire.Float64s `msgpack:"xr"` // Σ x_ij·r_i for every column j
}

// Program returns the Lasso program for cfg.
func Program(cfg Config) schmp.Program[Plan, Partial, Update, Summary] {
	return schmp.Program[Plan, Partial, Update, Summary]{
		Name: "lasso",
		NewScheduler: func(ctx context.Context) (schmp.Scheduler[Plan], error) {
			return NewScheduler(cfg)
		},
		NewWorker: func(ctx context.Context, shard, shards int) (schmp.Worker[Plan, Partial, Update, Summary], error) {
			return NewWorker(cfg, shard, shards)
		},
		NewCoordinator: func(ctx context.Context) (schmp.Coordinator[Plan, Partial, Update, Summary], error) {
			return NewCoordinator(cfg), nil
		},
	}
}

// ReadMatrix reads rows [lo, hi) of a LIBSVM file (hi < 0: to the end) into
// a column-compressed matrix with at least cols columns, and the responses.
func ReadMatrix(path string, lo, hi, cols int) (*sparse.CSC, []float64, error) {
	var b sparse.Builder
	var y []float64
	add := func(_ int, row libsvm.Row) error {
		b.AddRow(row.Index, row.Value)
		y = append(y, row.Label)
		return nil
	}
	var err error
	if hi < 0 {
		err = libsvm.Read(path, add)
	} else {
		err = libsvm.ReadRange(path, lo, hi, add)
	}
	if err != nil {
		return nil, nil, err
	}
	return b.Build(cols), y, nil
}

// Scheduler is the scheduler side of the Lasso: the dynamic engine over the
// columns of X.
type Scheduler struct {
	d *scheduler.Dynamic
}

// NewScheduler reads the columns of cfg.Data and starts the engine.
func NewScheduler(cfg Config) (*Scheduler, error) {
	x, _, err := ReadMatrix(cfg.Data, 0, -1, 0)
	if err != nil {
		return nil, err
	}
	sc := cfg.Schedule
	sc.Vars = x.Cols
	if sc.Vars == 0 {
		return nil, fmt.Errorf("%s: no features", cfg.Data)
	}
	if sc.Warmup < 0 {
		sc.Warmup = (sc.Vars + sc.Block - 1) / sc.Block
	}
	var cols scheduler.Columns = scheduler.NewSparseColumns(x, cfg.Intercept)
	d, err := scheduler.NewDynamic(sc, cols)
	if err != nil {
		return nil, err
	}
	return &Scheduler{d: d}, nil
}

// Schedule implements schmp.Scheduler.
func (s *Scheduler) Schedule(round uint64, fb schmp.Feedback) (Plan, schmp.PlanInfo, error) {
	s.d.Feedback(fb.Vars, fb.Delta)
	sel := s.d.Next()
	return Plan{Vars: sel.Vars}, schmp.PlanInfo{Candidates: sel.Candidates, Selected: len(sel.Vars)}, nil
}
