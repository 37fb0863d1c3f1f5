package logreg

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
)

// Config configures a logistic regression job. Every role of the job gets
// the same Config; each uses the part it needs.
type Config struct {
	// Data is the path of the LIBSVM training file. Every role reads its own
	// copy: the scheduler reads the columns, a worker only its rows.
	Data string
	// Test, if set, is a LIBSVM file whose accuracy the coordinator reports
	// (Coordinator.Records) and that predictions are usually made for.
	Test string
	// Exactly one of Lambda, LambdaRatio and C sets λ (see the package
	// documentation): λ itself, λ = LambdaRatio·λ_max, or λ = 1/(C·n).
	Lambda, LambdaRatio, C float64
	// Intercept fits an unpenalized intercept b.
	Intercept bool
	// Path, when at least 2, makes the job a regularization path (see
	// lasso.Path): Path penalties geometric from λ_max down to the λ that
	// Lambda, LambdaRatio or C sets, each solved from the solution at the
	// one before. The column layout only; 0 solves one λ.
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
	// Layout is lasso.LayoutRows or lasso.LayoutColumns (see
	// lasso.ParseLayout): Program runs the rows, ColumnProgram the
	// columns.
	Layout lasso.Layout
	// RoundWork bounds the work of a worker's round in the column layout,
	// in non-zeros, to innerWorkFactor times itself (0:
	// columnar.DefaultRoundWork).
	RoundWork int
	// InnerTol is the relative tolerance of a worker's Newton steps over
	// its working set in the column layout (0: DefaultInnerTol).
	InnerTol float64

	// fixedTheta, when positive, turns the adaptive joint-step factor off
	// and scales every round's steps by it (for tests of the safeguard).
	fixedTheta float64
}

// Validate reports the first bad field, as a *schmp.FieldError.
func (c *Config) Validate() error {
	if c.Data == "" {
		return schmp.Fieldf("Data", "is required")
	}
	set := 0
	for _, p := range []struct {
		field string
		v     float64
	}{{"Lambda", c.Lambda}, {"LambdaRatio", c.LambdaRatio}, {"C", c.C}} {
		if p.v < 0 || math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			return schmp.Fieldf(p.field, "must be a finite number > 0, got %v", p.v)
		}
		if p.v > 0 {
			set++
		}
	}
	switch set {
	case 0:
		return schmp.Fieldf("", "the penalty is required: give one of {Lambda}, {LambdaRatio} or {C}, > 0")
	case 2, 3:
		return schmp.Fieldf("", "give only one of {Lambda}, {LambdaRatio} and {C}")
	}
	switch {
	case c.Path < 0 || c.Path == 1:
		return schmp.Fieldf("Path", "must be 0 (off) or at least 2, got %d", c.Path)
	case c.Path > 0 && c.LambdaRatio >= 1:
		return schmp.Fieldf("LambdaRatio", "must be below 1 with {Path} (the path goes from λ_max down to {LambdaRatio}·λ_max), got %v", c.LambdaRatio)
	case c.RoundWork < 0:
		return schmp.Fieldf("RoundWork", "must be >= 0, got %d", c.RoundWork)
	case !(c.InnerTol >= 0 && c.InnerTol < 1):
		return schmp.Fieldf("InnerTol", "must be in [0, 1), got %v", c.InnerTol)
	case c.Layout == lasso.LayoutColumns && c.Schedule.Policy == scheduler.Shotgun:
		return schmp.InField("Schedule", schmp.Fieldf("Policy", "shotgun is a baseline of the Lasso's column layout and of the row layout; logistic regression's column layout takes priority, random or cyclic"))
	}
	return schmp.InField("Schedule", columnar.ValidateConfig(c.Schedule))
}

// Plan is the set of coordinates updated in a round. Logistic regression
// plans its coordinates exactly as the Lasso does, with the same scheduler.
type Plan = columnar.Plan

// Partial is a worker's share of a round: for j = Plan.Vars[k],
// Grad[k] = Σ x_ij·r_i and Curv[k] = Σ x_ij²·d_i over its rows, where
// r_i = −y_i·σ(−y_i·z_i) and d_i = σ(z_i)·σ(−z_i) at its margins z. SumR and
// SumD are Σ r_i and Σ d_i, for the intercept. AsOf is the round of the last
// update the worker applied (0: only the first), and LossChange[k] the
// change of Σ log(1 + exp(−y_i·z_i)) over its rows caused by the update of
// round Rounds[k], for every update applied since its previous partial.
type Partial struct {
	Grad       codec.Float64s `msgpack:"g"`
	Curv       codec.Float64s `msgpack:"h"`
	SumR       float64        `msgpack:"r"`
	SumD       float64        `msgpack:"d"`
	AsOf       uint64         `msgpack:"a"`
	Rounds     []uint64       `msgpack:"t"`
	LossChange codec.Float64s `msgpack:"l"`
}

// Update tells workers how the model changed in round Round: w_j += Delta[k]
// for j = Vars[k], and b += Bias. The first update of a job (Round 0) sets
// the initial intercept.
type Update struct {
	Round uint64         `msgpack:"t"`
	Vars  codec.Int32s   `msgpack:"v"`
	Delta codec.Float64s `msgpack:"d"`
	Bias  float64        `msgpack:"b"`
	// Features, in Start's update only, is the number of features of the
	// job, which bounds the variables of later updates.
	Features int `msgpack:"m,omitempty"`
}

// Summary describes a worker's shard when it joins (Rows … ColNNZ), and its
// state when it reports (Loss … QNeg). The report carries ‖w‖₁ from the
// worker's own copy of w, which with rounds in flight is older than the
// coordinator's, so that the objective describes one state.
type Summary struct {
	Rows     int `msgpack:"n"`
	Features int `msgpack:"m"`
	// Labels by value as written in the file: +1 or 1, −1, and 0.
	Pos  int `msgpack:"p"`
	Neg  int `msgpack:"q"`
	Zero int `msgpack:"z"`
	// Per column j of the shard: Σ x_ij², max |x_ij|, Σ x_ij, Σ x_ij·[y_i = +1]
	// and the number of non-zeros.
	ColSq  codec.Float64s `msgpack:"cq"`
	ColMax codec.Float64s `msgpack:"cm"`
	ColSum codec.Float64s `msgpack:"cs"`
	ColPos codec.Float64s `msgpack:"cp"`
	ColNNZ codec.Int32s   `msgpack:"cn"`

	Loss    float64 `msgpack:"l"`  // Σ log(1 + exp(−y_i·z_i))
	Correct int     `msgpack:"c"`  // rows with sign(z_i) = y_i (z_i = 0 counts as +1)
	L1      float64 `msgpack:"l1"` // ‖w‖₁ of the worker's copy
	NNZ     int     `msgpack:"nz"` // non-zeros of the worker's copy of w
	// For the duality gap, with q_i = σ(−y_i·z_i): V_j = Σ x_ij·y_i·q_i,
	// and with an intercept P_j = Σ_{y_i=+1} x_ij·q_i; HPos and HNeg sum the
	// binary entropy H(q_i) over each class, QPos and QNeg sum q_i.
	V    codec.Float64s `msgpack:"v"`
	P    codec.Float64s `msgpack:"pp"`
	HPos float64        `msgpack:"hp"`
	HNeg float64        `msgpack:"hn"`
	QPos float64        `msgpack:"qp"`
	QNeg float64        `msgpack:"qn"`
}

// Program returns the logistic regression program for cfg in the row
// layout, which refuses a regularization path (Config.Path).
func Program(cfg Config) schmp.Program[Plan, Partial, Update, Summary] {
	return schmp.Program[Plan, Partial, Update, Summary]{
		Name: "logreg",
		NewScheduler: func(ctx context.Context, part, parts int) (schmp.Scheduler[Plan], error) {
			return NewScheduler(cfg, part, parts)
		},
		NewWorker: func(ctx context.Context, shard, shards int) (schmp.Worker[Plan, Partial, Update, Summary], error) {
			return NewWorker(cfg, shard, shards)
		},
		NewCoordinator: func(ctx context.Context) (schmp.Coordinator[Plan, Partial, Update, Summary], error) {
			if cfg.Path > 0 {
				return nil, errors.New("a regularization path (Config.Path) runs in the column layout only")
			}
			return NewCoordinator(cfg)
		},
	}
}

// NewScheduler returns scheduler part of parts for cfg: the column
// scheduler the Lasso uses too, which reads its columns of cfg.Data and runs
// the dynamic engine over them (with Pearson correlations for the
// dependency check when the job fits an intercept, cosines otherwise).
func NewScheduler(cfg Config, part, parts int) (*columnar.Scheduler, error) {
	return columnar.NewScheduler(cfg.Data, cfg.Intercept, cfg.Schedule, part, parts)
}

// label maps a LIBSVM label to ±1; ok is false for anything but 0, 1 and
// −1.
func label(v float64) (y float64, ok bool) {
	switch v {
	case 1:
		return 1, true
	case 0, -1:
		return -1, true
	}
	return 0, false
}

// badLabel is the message for a label that is not a class.
func badLabel(v float64) string {
	return fmt.Sprintf("label %v is not a class: logistic regression wants labels 0/1 or -1/+1", v)
}

// errStop stops a libsvm.Read whose callback has kept its own error.
var errStop = errors.New("stop")

// CheckLabels reads the labels of the LIBSVM file at path (not its
// features: see libsvm.ReadLabels) and checks that every label is a class
// (0/1 or −1/+1) and that the file uses one convention: it returns a
// *libsvm.ParseError naming the first line that breaks either, or the
// file's own parse error. pos and neg count the two classes.
func CheckLabels(path string) (pos, neg int, err error) {
	var bad *libsvm.ParseError
	seen := map[float64]int{} // label value → first line
	err = libsvm.ReadLabels(path, func(line int, v float64) error {
		y, ok := label(v)
		if !ok {
			bad = &libsvm.ParseError{File: path, Line: line, Msg: badLabel(v)}
			return errStop
		}
		if _, ok := seen[v]; !ok {
			seen[v] = line
		}
		if l0, ok0 := seen[0]; ok0 {
			if l1, ok1 := seen[-1]; ok1 {
				bad = &libsvm.ParseError{File: path, Line: line,
					Msg: fmt.Sprintf("labels mix the 0/1 and -1/+1 conventions (label 0 on line %d, -1 on line %d)", l0, l1)}
				return errStop
			}
		}
		if y > 0 {
			pos++
		} else {
			neg++
		}
		return nil
	})
	if bad != nil {
		return 0, 0, bad
	}
	if err != nil {
		return 0, 0, err
	}
	return pos, neg, nil
}

// CheckData checks the labels of the training file at path as CheckLabels
// does, and that it has samples of both classes. Its features are checked
// by the roles that read them.
func CheckData(path string) error {
	pos, neg, err := CheckLabels(path)
	if err != nil {
		return err
	}
	return checkClasses(path, pos, neg)
}

func checkClasses(path string, pos, neg int) error {
	if pos == 0 || neg == 0 {
		which := "negative"
		if neg == 0 {
			which = "positive"
		}
		return &libsvm.ParseError{File: path, Msg: fmt.Sprintf("all %d samples are %s: logistic regression needs both classes", pos+neg, which)}
	}
	return nil
}
