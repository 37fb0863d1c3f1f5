package lasso

import (
	"context"
	"fmt"
	"math"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
)

// Config configures a Lasso job. Every role of the job gets the same
// Config; each uses the part it needs.
type Config struct {
	// Data is the path of the LIBSVM file. Every role reads its own copy:
	// the scheduler reads the columns, a worker only its rows.
	Data string
	// Test, if set, is a LIBSVM file of held-out samples: the coordinator
	// reads it and reports the mean squared error of its model on it (the
	// metric test_mse).
	Test string
	// Lambda is the L1 penalty λ, used when LambdaRatio is 0.
	Lambda float64
	// LambdaRatio, when positive, sets λ = LambdaRatio·λ_max, where
	// λ_max = ‖X̃ᵀỹ‖∞/n is the smallest λ whose solution is β = 0.
	LambdaRatio float64
	// Intercept fits an unpenalized intercept.
	Intercept bool
	// Path, when at least 2, makes the job a regularization path (see
	// Path): Path penalties geometric from λ_max down to the λ that Lambda
	// or LambdaRatio sets, each solved from the solution at the one before.
	// The column layout only; 0 solves one λ.
	Path int
	// PathStart, if > 0, is the path's first penalty in place of the
	// data's λ_max: cross-validation gives every fold the penalties of the
	// whole data's path.
	PathStart float64
	// Schedule configures the scheduler's dynamic engine; its Vars is set
	// from the data, and a negative Warmup means one sweep's worth of
	// rounds, ⌈M/Block⌉. In the column layout only its Policy and Seed
	// count: how the workers' working sets grow (columnar.Screen).
	Schedule scheduler.Config
	// Layout is LayoutRows or LayoutColumns (see ParseLayout).
	Layout Layout
	// RoundWork bounds the work of a worker's round in the column layout,
	// in non-zeros, to innerWorkFactor times itself (0:
	// columnar.DefaultRoundWork).
	RoundWork int
	// InnerTol is the relative tolerance of a worker's coordinate descent
	// over its block in the column layout (0: DefaultInnerTol).
	InnerTol float64
}

// Layout is how a job's data are split among the workers.
type Layout int

const (
	// LayoutRows shards the samples: each worker holds its rows, and a
	// round updates a few coordinates from the workers' summed partials.
	LayoutRows Layout = iota
	// LayoutColumns shards the features: each worker holds its columns
	// with all rows, and a round runs many sequential coordinate updates
	// on every worker, merged by a line search.
	LayoutColumns
)

// String returns "rows" or "cols".
func (l Layout) String() string {
	if l == LayoutColumns {
		return "cols"
	}
	return "rows"
}

// ParseLayout parses "rows", "cols" or "auto". For auto it reports auto
// and returns the column layout, which wins on every shape measured, n ≫ p
// included (bench/RESULTS.md, "Two workers"); the caller picks the rows
// only where the columns cannot run (rounds in flight, several schedulers).
func ParseLayout(s string) (l Layout, auto bool, err error) {
	switch s {
	case "rows":
		return LayoutRows, false, nil
	case "cols":
		return LayoutColumns, false, nil
	case "auto", "":
		return LayoutColumns, true, nil
	}
	return 0, false, fmt.Errorf("unknown layout %q (want auto, rows or cols)", s)
}

// DefaultInnerTol is the default Config.InnerTol: a worker stops sweeping
// its block when no coordinate's step would lower the objective by more
// than about DefaultInnerTol·‖r‖²/2n.
const DefaultInnerTol = 1e-5

// innerWorkFactor bounds a worker's work in a round, in the column layout,
// to this many times the block's budget.
const innerWorkFactor = 8

func (c *Config) innerTol() float64 {
	if c.InnerTol > 0 {
		return c.InnerTol
	}
	return DefaultInnerTol
}

func (c *Config) roundWork() int64 {
	if c.RoundWork > 0 {
		return int64(c.RoundWork)
	}
	return columnar.DefaultRoundWork
}

// Validate reports the first bad field, as a *schmp.FieldError.
func (c *Config) Validate() error {
	switch {
	case c.Data == "":
		return schmp.Fieldf("Data", "is required")
	case c.Lambda < 0 || math.IsNaN(c.Lambda) || math.IsInf(c.Lambda, 0):
		return schmp.Fieldf("Lambda", "must be a finite number >= 0, got %v", c.Lambda)
	case c.LambdaRatio < 0 || math.IsNaN(c.LambdaRatio) || math.IsInf(c.LambdaRatio, 0):
		return schmp.Fieldf("LambdaRatio", "must be a finite number >= 0, got %v", c.LambdaRatio)
	case c.Path < 0 || c.Path == 1:
		return schmp.Fieldf("Path", "must be 0 (off) or at least 2, got %d", c.Path)
	case c.Path > 0 && c.Lambda == 0 && c.LambdaRatio == 0:
		return schmp.Fieldf("Path", "needs the path's last λ: give {LambdaRatio} R < 1 (or {Lambda} L)")
	case c.Lambda > 0 && c.LambdaRatio > 0:
		return schmp.Fieldf("", "give only one of {Lambda} and {LambdaRatio}")
	case c.Path > 0 && c.LambdaRatio >= 1:
		return schmp.Fieldf("LambdaRatio", "must be below 1 with {Path} (the path goes from λ_max down to {LambdaRatio}·λ_max), got %v", c.LambdaRatio)
	}
	return schmp.InField("Schedule", columnar.ValidateConfig(c.Schedule))
}

// Plan is the set of coordinates updated in a round.
type Plan = columnar.Plan

// Partial is a worker's share of a round: Dot[k] = Σ x_ij·r_i over its
// rows for j = Plan.Vars[k], and SumR = Σ r_i over its rows.
type Partial struct {
	Dot  codec.Float64s `msgpack:"d"`
	SumR float64        `msgpack:"s"`
}

// Update tells workers how β changed: β_j += Delta[k] for j = Vars[k].
// The first update of a job carries the centering instead.
type Update struct {
	Vars  codec.Int32s   `msgpack:"v"`
	Delta codec.Float64s `msgpack:"d"`
	// Value[k] is the new β_j itself, so that the workers' copies of β
	// are the coordinator's exactly (a running sum of deltas would not
	// return to 0).
	Value  codec.Float64s `msgpack:"x"`
	Center *Center        `msgpack:"c,omitempty"`
}

// Center is the centering that workers apply to their rows and responses
// (zero means when the job fits no intercept), and the number of features,
// which bounds the variables of later updates.
type Center struct {
	MeanY    float64        `msgpack:"y"`
	MeanX    codec.Float64s `msgpack:"x"`
	Features int            `msgpack:"m"`
}

// Summary describes a worker's shard when it joins (Rows … XtY), and its
// state when it reports (SqResid … NNZ): the residual r over the shard's
// rows, and β as the worker has it. With rounds in flight the report is
// older than the coordinator's β, so it carries the β part of the
// objective itself.
type Summary struct {
	Rows     int                `msgpack:"n"`
	Data     libsvm.Fingerprint `msgpack:"fp"`
	Features int                `msgpack:"m"`
	SumY     float64            `msgpack:"sy"`
	ColSum   codec.Float64s     `msgpack:"cs"`
	ColSq    codec.Float64s     `msgpack:"cq"`
	XtY      codec.Float64s     `msgpack:"xy"`
	SqResid  float64            `msgpack:"rr"` // Σ r_i²
	SumResid float64            `msgpack:"r"`  // Σ r_i
	YtR      float64            `msgpack:"yr"` // Σ (y_i − ȳ)·r_i
	XtR      codec.Float64s     `msgpack:"xr"` // Σ x_ij·r_i for every column j
	L1       float64            `msgpack:"l1"` // ‖β‖₁
	NNZ      int                `msgpack:"nz"` // non-zeros of β
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

// NewScheduler returns scheduler part of parts: the dynamic engine over its
// range of the columns of cfg.Data, with Pearson correlations for the
// dependency check when the job fits an intercept, cosines otherwise.
func NewScheduler(cfg Config, part, parts int) (*columnar.Scheduler, error) {
	return columnar.NewScheduler(cfg.Data, cfg.Intercept, cfg.Schedule, part, parts)
}
