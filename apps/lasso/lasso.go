package lasso

import (
	"context"
	"fmt"
	"math"

	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
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
// state when it reports (SqResid … NNZ): the residual r over the shard's
// rows, and β as the worker has it. With rounds in flight the report is
// older than the coordinator's β, so it carries the β part of the
// objective itself.
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
	L1       float64       `msgpack:"l1"` // ‖β‖₁
	NNZ      int           `msgpack:"nz"` // non-zeros of β
}

// Program returns the Lasso program for cfg.
func Program(cfg Config) schmp.Program[Plan, Partial, Update, Summary] {
	return schmp.Program[Plan, Partial, Update, Summary]{
		Name: "lasso",
		NewScheduler: func(ctx context.Context, part, parts int) (schmp.Scheduler[Plan], error) {
			return NewScheduler(cfg, part, parts)
		},
		NewWorker: func(ctx context.Context, shard, shards int) (schmp.Worker[Plan, Partial, Update, Summary], error) {
			return NewWorker(cfg, shard, shards)
		},
		NewCoordinator: func(ctx context.Context) (schmp.Coordinator[Plan, Partial, Update, Summary], error) {
			return NewCoordinator(cfg), nil
		},
	}
}

// Scheduler is the scheduler side of the Lasso: the dynamic engine over a
// contiguous range of the columns of X.
type Scheduler struct {
	d     *scheduler.Dynamic
	first int32 // the engine's variable k is column first+k
	vars  int32 // the number of columns of the part
}

// NewScheduler reads part of parts of the columns of cfg.Data and starts the
// engine over them. Parts other than the first seed their draws with
// cfg.Schedule.Seed+part.
func NewScheduler(cfg Config, part, parts int) (*Scheduler, error) {
	x, first, total, err := libsvm.ReadColumns(cfg.Data, part, parts)
	if err != nil {
		return nil, err
	}
	if total == 0 {
		return nil, fmt.Errorf("%s: no features", cfg.Data)
	}
	if x.Cols == 0 {
		return nil, fmt.Errorf("%s: %d features are too few for %d schedulers", cfg.Data, total, parts)
	}
	sc := cfg.Schedule
	sc.Vars = x.Cols
	sc.Seed += uint64(part)
	if sc.Warmup < 0 {
		sc.Warmup = (sc.Vars + sc.Block - 1) / sc.Block
	}
	var cols scheduler.Columns = scheduler.NewSparseColumns(x, cfg.Intercept)
	d, err := scheduler.NewDynamic(sc, cols)
	if err != nil {
		return nil, err
	}
	return &Scheduler{d: d, first: int32(first), vars: int32(x.Cols)}, nil
}

// Schedule implements schmp.Scheduler.
func (s *Scheduler) Schedule(round uint64, fbs []schmp.Feedback) (Plan, schmp.PlanInfo, error) {
	for _, fb := range fbs {
		local := make([]int32, len(fb.Vars))
		for k, j := range fb.Vars {
			local[k] = j - s.first
			if local[k] < 0 || local[k] >= s.vars {
				return Plan{}, schmp.PlanInfo{}, fmt.Errorf("feedback of round %d for column %d, outside this scheduler's [%d, %d)", fb.Round, j, s.first, s.first+s.vars)
			}
		}
		if len(fb.Delta) != len(fb.Vars) {
			return Plan{}, schmp.PlanInfo{}, fmt.Errorf("feedback of round %d with %d variables and %d deltas", fb.Round, len(fb.Vars), len(fb.Delta))
		}
		s.d.Feedback(local, fb.Delta)
	}
	sel := s.d.Next()
	vars := make(wire.Int32s, len(sel.Vars))
	for k, j := range sel.Vars {
		vars[k] = j + s.first
	}
	return Plan{Vars: vars}, schmp.PlanInfo{Vars: vars, Candidates: sel.Candidates, Selected: len(vars)}, nil
}
