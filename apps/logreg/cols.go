package logreg

import (
	"context"
	"math"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
)

// The column layout (DESIGN "The column layout"), as the Lasso's (see lasso.ColumnProgram):
// worker k of P owns the columns columnar.OwnedRange(p, k, P) with all
// their rows, the labels, and a replica of the margins z = Xw + b over all
// n rows.
//
// Every worker works. Each round, each worker updates its working set
// (columnar.Screen: the violators of the optimality conditions, w_j = 0
// and |Σ_i x_ij·r_i|/n > λ with r_i the derivative of row i's loss, join
// it worst first, and coordinates settled at zero leave) and takes
// proximal Newton steps over it on a scratch copy of the margins, as
// liblinear's newGLMNET does (ColWorker.Push: coordinate descent on the
// quadratic model, then an Armijo line search on the exact objective, so
// that no step raises F), and returns its change of z and its new
// coefficients. The coordinator takes every worker's change whole if that
// comes close to the best it can do, and otherwise the merged change at the
// step of a line search (longer than 1 where the changes complement each
// other), or the one worker's change that lowers the objective most
// (ColCoordinator.Pull), each computed exactly: block Jacobi between the
// workers, made safe by the exact objective, so that columns on different
// workers that explain the same part of the margins can slow a round but
// never make F rise. With one worker the change, its own sequential
// descent from the current margins, is taken whole. The scheduler's plans
// are empty: the workers choose their columns from their own scans.
//
// With several workers, a worker shares each of its columns that comes out
// of a round non-zero a second time with the others, with its data
// (ColPartial.Cols → ColUpdate.Cols); when no working set grew in a round,
// or the changes did not all add up, the next round is joint: every worker
// sweeps the other workers' active columns it holds too, in column order,
// and moves the intercept, so that the workers solve the same problem alike
// (reporting only their own coordinates).
//
// Every update carries the new values of the w_j it changes, so every
// owner reports its columns exactly. The intercept, with Config.Intercept,
// is one more coordinate of worker shard 0's quadratic model, unpenalized;
// its change is part of that worker's change of z.

// ColPlan is the plan of a round in the column layout.
type ColPlan = columnar.BlockPlan

// ColPartial is a worker's share of a round in the column layout: Dir is
// the change of the margins z over all rows caused by its updates (nil if
// none), Value[k] the new value of w_j for j = Vars[k], for the coordinates
// it changed, all its own, and Bias the new intercept (worker shard 0; the
// others send the intercept they hold). AsOf is the round of the last
// update the worker applied before computing it, and Work counts the
// non-zeros it visited.
type ColPartial struct {
	Dir   codec.Float64s `msgpack:"d"`
	Vars  codec.Int32s   `msgpack:"v"`
	Value codec.Float64s `msgpack:"x"`
	Bias  float64        `msgpack:"b"`
	AsOf  uint64         `msgpack:"a"`
	Work  int64          `msgpack:"w"`
	// Updates is how many coordinate steps the worker took on its own
	// columns.
	Updates int64 `msgpack:"u"`
	// Added is how many columns joined the worker's working set.
	Added int `msgpack:"n"`
	// Cols are the worker's columns that stay in the active set, shared
	// once (with several workers), with their data, for the other workers.
	Cols columnar.Columns `msgpack:"c"`
}

// ColUpdate is the coordinator's merge of round Round: with step Alpha in
// [0, MaxStep] along the merged direction, every node sets z ← z + Alpha·Dir,
// w_j ← w_j + Alpha·(Value[k] − w_j) for j = Vars[k] (w_j ← Value[k] when
// Alpha is 1; a worker, for the columns it owns or holds) and
// b ← b + Alpha·(Bias − b), and the workers use the penalty Lambda from
// then on (0: unchanged; on a regularization path, the first update after
// a λ is solved carries the next). The first update of a job (Init)
// carries instead the penalty Lambda and the initial intercept Bias, at
// which every margin starts.
type ColUpdate struct {
	Round  uint64         `msgpack:"t"`
	Alpha  float64        `msgpack:"a"`
	Dir    codec.Float64s `msgpack:"d"`
	Vars   codec.Int32s   `msgpack:"v"`
	Value  codec.Float64s `msgpack:"x"`
	Bias   float64        `msgpack:"b"`
	Init   bool           `msgpack:"i"`
	Lambda float64        `msgpack:"l"`
	// Cols are the columns the workers shared in the round: each worker
	// keeps the others' (ColPartial.Cols), and ColValue[k] is w_j of
	// column j = Cols.IDs[k] after the update, the value at which a worker
	// that takes the column starts it.
	Cols     columnar.Columns `msgpack:"c"`
	ColValue codec.Float64s   `msgpack:"cv"`
	// Joint makes the next round joint: every worker's Newton steps take
	// the other workers' active columns too, and the intercept (reporting
	// only its own coordinates), so that they solve the same problem alike.
	Joint bool `msgpack:"j"`
}

// ColSummary describes a worker's shard in the column layout when it joins
// (Rows … LambdaMax), and its state when it reports (Loss … NNZ). Every
// worker holds the same rows and the same margins, so the sums over the
// rows (Loss … QNeg) must agree between workers, bit for bit; the
// coordinator checks that they do.
type ColSummary struct {
	Rows     int                `msgpack:"n"`
	Features int                `msgpack:"m"` // all columns of the data
	First    int                `msgpack:"f"` // the worker's columns [First, First+Cols)
	Cols     int                `msgpack:"k"`
	Data     libsvm.Fingerprint `msgpack:"fp"`
	// Y is the labels as ±1, from shard 0 only: the coordinator keeps its
	// own margins.
	Y codec.Float64s `msgpack:"y"`
	// Labels by value as written in the file: +1 or 1, −1, and 0.
	Pos  int `msgpack:"p"`
	Neg  int `msgpack:"q"`
	Zero int `msgpack:"z"`
	// LambdaMax is max_j |Σ_i x_ij·(y01_i − c)|/n over the worker's
	// columns (c = ȳ with an intercept, ½ without).
	LambdaMax float64 `msgpack:"lm"`

	Loss    float64 `msgpack:"l"`  // Σ log(1 + exp(−y_i·z_i))
	Correct int     `msgpack:"c"`  // rows with sign(z_i) = y_i (z_i = 0 counts as +1)
	HPos    float64 `msgpack:"hp"` // Σ H(q_i) over the positive rows, q_i = σ(−y_i·z_i)
	HNeg    float64 `msgpack:"hn"` // and over the negative ones
	QPos    float64 `msgpack:"qp"` // Σ q_i over the positive rows
	QNeg    float64 `msgpack:"qn"` // and over the negative ones
	// Dual is max_j |Σ_i x_ij·s_i·y_i·q_i| over the worker's columns, with
	// s_i the scale of row i's class that makes the dual point feasible for
	// the intercept (1 without one; see the package documentation). Without
	// an intercept it is exact wherever it exceeds nλ, and may be less
	// below (the screen skips the columns it proves below nλ): the duality
	// gap, which uses it only above nλ, is exact.
	Dual float64 `msgpack:"du"`
	L1   float64 `msgpack:"l1"` // ‖w‖₁ over the worker's columns
	NNZ  int     `msgpack:"nz"` // non-zeros of w over the worker's columns
}

// ColumnProgram returns the logistic regression program for cfg in the
// column layout, with workers workers.
func ColumnProgram(cfg Config, workers int) schmp.Program[ColPlan, ColPartial, ColUpdate, ColSummary] {
	return schmp.Program[ColPlan, ColPartial, ColUpdate, ColSummary]{
		Name: "logreg",
		NewScheduler: func(ctx context.Context, part, parts int) (schmp.Scheduler[ColPlan], error) {
			// The workers choose their columns themselves: the plans are
			// empty.
			return columnar.NewBlockScheduler(workers, part, parts)
		},
		NewWorker: func(ctx context.Context, shard, shards int) (schmp.Worker[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			return NewColWorker(cfg, shard, shards)
		},
		NewCoordinator: func(ctx context.Context) (schmp.Coordinator[ColPlan, ColPartial, ColUpdate, ColSummary], error) {
			return NewColCoordinator(cfg)
		},
	}
}

// innerWorkFactor bounds a worker's work in a round, in the column layout,
// to this many times Config.RoundWork (as the Lasso's).
const innerWorkFactor = 8

// DefaultInnerTol is the default Config.InnerTol: a step has settled when
// no coordinate's move lowers the model by more than about
// DefaultInnerTol·F. Tighter than the Lasso's (lasso.DefaultInnerTol):
// a round of Newton steps costs more than one of coordinate descent, and
// fewer rounds measured faster (bench/RESULTS.md, "The column layout
// without a leader").
const DefaultInnerTol = 1e-9

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

// moveMargin returns z moved by alpha·d, as every node of the job computes
// it: the conversion keeps the compiler from fusing the multiply and the
// add on some machines and not others, so that all nodes agree bit for bit.
func moveMargin(z, alpha, d float64) float64 {
	return z + float64(alpha*d)
}

// moveTo returns w_j moved by alpha from v towards target: target itself
// when alpha is 1, and exactly 0 where the move crosses zero at alpha (up
// to rounding).
func moveTo(v, target, alpha float64) float64 {
	if alpha == 1 {
		return target
	}
	x := v + float64(alpha*(target-v))
	if math.Abs(x) <= 1e-12*math.Abs(v) {
		return 0
	}
	return x
}

// moveBias returns the intercept b moved by alpha towards target.
func moveBias(b, target, alpha float64) float64 {
	if alpha == 1 {
		return target
	}
	return b + float64(alpha*(target-b))
}
