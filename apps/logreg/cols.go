package logreg

import (
	"context"
	"math"

	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// The column layout (DESIGN §5), as the Lasso's: worker k of P owns the
// columns columnar.OwnedRange(p, k, P) with all their rows, the labels,
// and a replica of the margins z = Xw + b over all n rows. A round gives
// each worker a block of its own columns (columnar.BlockScheduler); the
// worker takes proximal Newton steps over the block and its non-zero
// coordinates on a scratch copy of z, as newGLMNET does (ColWorker.Push:
// coordinate descent on the quadratic model, then an Armijo line search on
// the exact objective, so that no step raises F), and returns its change of
// z. With one worker the change is taken whole.
//
// With several, what is parallel is split from what is sequential, exactly
// as in the Lasso's column layout (see lasso.ColumnProgram): every worker
// scans its columns each round for violators of the optimality conditions
// (w_j = 0 and |∇_j L| > λ), the others hand theirs, once, with their data,
// to worker columnar.Leader (ColPartial.Cols → ColUpdate.Cols, a
// schmp.Splitter), and the leader alone takes the Newton steps over its
// working set: the columns it picked from its own and every column handed
// to it. A round's change is then one worker's sequence of Newton steps,
// each accepted by an Armijo line search on the exact objective, from the
// margins every node holds, and is taken whole as one worker's is; the
// coordinator's backtracking merge (d-GLMNET's) remains for a change
// computed from older margins. Every update carries the new values of the
// w_j it changes, so every owner reports its columns exactly.
//
// The intercept, with Config.Intercept, is one more coordinate of worker
// shard 0's quadratic model, unpenalized; its change is part of that
// worker's change of z. Shard 0 is the leader.

// ColPlan is the plan of a round in the column layout.
type ColPlan = columnar.BlockPlan

// ColPartial is a worker's share of a round in the column layout: Dir is
// the change of the margins z over all rows caused by its updates (nil if
// none), Value[k] the new value of w_j for j = Vars[k], for the coordinates
// it changed, and Bias the new intercept (worker shard 0; the others send
// the intercept they hold). AsOf is the round of the last update the worker
// applied before computing it, and Work counts the non-zeros it visited.
type ColPartial struct {
	Dir   wire.Float64s `msgpack:"d"`
	Vars  wire.Int32s   `msgpack:"v"`
	Value wire.Float64s `msgpack:"x"`
	Bias  float64       `msgpack:"b"`
	AsOf  uint64        `msgpack:"a"`
	Work  int64         `msgpack:"w"`
	// Cols are the columns a worker other than the leader hands to it.
	Cols columnar.Columns `msgpack:"c"`
}

// ColUpdate is the coordinator's merge of round Round: with step Alpha
// along the merged direction, every node sets z ← z + Alpha·Dir,
// w_j ← w_j + Alpha·(Value[k] − w_j) for j = Vars[k] (w_j ← Value[k] when
// Alpha is 1) and b ← b + Alpha·(Bias − b), and the workers use the penalty
// Lambda from then on (0: unchanged; on a regularization path, the first
// update after a λ is solved carries the next). The first update of a job
// (Init) carries instead the penalty Lambda and the initial intercept Bias,
// at which every margin starts.
type ColUpdate struct {
	Round  uint64        `msgpack:"t"`
	Alpha  float64       `msgpack:"a"`
	Dir    wire.Float64s `msgpack:"d"`
	Vars   wire.Int32s   `msgpack:"v"`
	Value  wire.Float64s `msgpack:"x"`
	Bias   float64       `msgpack:"b"`
	Init   bool          `msgpack:"i"`
	Lambda float64       `msgpack:"l"`
	// Cols are the columns handed to the leader in the round, which only
	// the leader receives (ForShard).
	Cols columnar.Columns `msgpack:"c"`
}

// ForShard implements schmp.Splitter: the handed columns go to the leader
// alone.
func (u ColUpdate) ForShard(shard int) ColUpdate {
	if shard != columnar.Leader {
		u.Cols = columnar.Columns{}
	}
	return u
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
	Y wire.Float64s `msgpack:"y"`
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
	// the intercept (1 without one; see the package documentation).
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
			// With several workers, the workers choose their columns
			// themselves: the plans are empty.
			return columnar.NewBlockScheduler(cfg.Data, columnar.BlockConfig{Engine: cfg.Schedule, Work: cfg.RoundWork, NoBlocks: workers > 1}, workers, part, parts)
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
// to this many times the block's budget (as the Lasso's).
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
