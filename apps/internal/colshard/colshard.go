// Package colshard is what the roles of the linear models (apps/lasso,
// apps/logreg) share in the column layout (DESIGN "The column layout"): a
// worker's shard (Shard: its own columns with all their rows, the other
// workers' columns that it holds, its working set and the state of its
// rounds over them, the columns it shares, and the part of its snapshot
// that says so), and the coordinator's check of the shards (CheckShards)
// and its feedback (Positions). The apps keep what differs: the replica of
// the residual or of the margins, the coefficients, how a round descends
// and how the coordinator merges the workers' changes.
package colshard

import (
	"errors"
	"fmt"
	"math"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/scheduler/columnar"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/sparse"
)

// Shard is a worker's share of the data and of the model in the column
// layout; the apps' workers embed it. A worker's local index l of a column
// is l < X.Cols for its own column First+l, and X.Cols+f for the f-th
// column it holds of the others' (columnar.Held): its per-column state
// (coefficients, curvatures) extends over the held columns in that order.
type Shard struct {
	Index int         // the worker's shard
	X     *sparse.CSC // the worker's own columns; column l is column First+l
	First int
	Total int // the columns of the data
	Rows  int // the rows of the data, all of which the worker holds
	N     float64
	Data  libsvm.Fingerprint

	Lambda float64 // the penalty the worker uses
	RelTol float64 // the inner tolerance, relative to the app's measure (0: not set yet)
	Screen *columnar.Screen
	Block  []int32 // a round's working set: the screen's, and in a joint round the other workers' active columns
	Joint  bool    // the next round is joint (the update said so)
	Active []int32 // scratch: the non-zero coordinates of Block

	// With several workers: the other workers' columns that joined the
	// active set, copied as they arrived, and how often each of the
	// worker's own came out of a round non-zero, up to Shared, when the
	// worker shares it.
	Held columnar.Held
	Seen []uint8
	ids  []int32 // scratch: the columns a round shares
}

// Shared is the count of rounds out of which a column came non-zero at
// which its worker shares it (Shard.Seen): the first rounds make and drop
// many non-zeros, each a column's data to copy.
const Shared = 2

// Read reads the columns of the LIBSVM file data that worker shard of
// shards owns in the column layout, with all their rows, and returns the
// shard, without its Screen (the app makes it, from its columns' norms),
// and the labels as the file writes them.
func Read(data string, shard, shards int) (Shard, []float64, error) {
	x, y, first, total, fp, err := libsvm.ReadOwnedColumns(data, shard, shards)
	if err != nil {
		return Shard{}, nil, err
	}
	if total < shards {
		return Shard{}, nil, fmt.Errorf("%s: %d features are too few for %d workers in the column layout", data, total, shards)
	}
	s := Shard{
		Index: shard, X: x, First: first, Total: total, Rows: len(y), N: float64(len(y)), Data: fp,
		Held: columnar.NewHeld(first, x.Cols, total),
	}
	if shards > 1 {
		s.Seen = make([]uint8, x.Cols)
	}
	return s, y, nil
}

// CheckShards checks the workers' summaries as the coordinator gets them
// when they join, indexed by shard, whose columns and labels owned returns:
// that there are some, of data with rows, that worker shard 0 sent the
// labels, that they read the same data (an error wrapping
// libsvm.ErrDifferentData otherwise) and that each holds its
// columnar.OwnedRange of the columns.
func CheckShards[S any](data string, shards []S, owned func(S) (columnar.OwnedShard, int)) error {
	if len(shards) == 0 {
		return errors.New("no workers")
	}
	s0, labels := owned(shards[0])
	if s0.Rows == 0 {
		return fmt.Errorf("%s: no samples", data)
	}
	if labels != s0.Rows {
		return fmt.Errorf("worker shard 0 sent %d labels for %d rows", labels, s0.Rows)
	}
	all := make([]columnar.OwnedShard, len(shards))
	for k, s := range shards {
		all[k], _ = owned(s)
	}
	return columnar.CheckOwnedShards(all)
}

// Positions is a coordinator's map from a column to its index in a round's
// feedback (schmp.Feedback.Vars), or -1: -1 for every column but during
// Set.
type Positions []int32

// NewPositions returns the Positions of total columns.
func NewPositions(total int) Positions {
	p := make(Positions, total)
	for j := range p {
		p[j] = -1
	}
	return p
}

// Set sets coef_j to move(coef_j, vals[i]) for each column j = vars[i], and
// the change of each that the feedback fb names to its Delta.
func (p Positions) Set(fb *schmp.Feedback, coef []float64, vars []int32, vals []float64, move func(old, v float64) float64) {
	for k, j := range fb.Vars {
		p[j] = int32(k)
	}
	for i, j := range vars {
		old := coef[j]
		coef[j] = move(old, vals[i])
		if k := p[j]; k >= 0 {
			fb.Delta[k] = coef[j] - old
		}
	}
	for _, j := range fb.Vars {
		p[j] = -1
	}
}

// Col returns the row indices and values of the column of local index l.
func (s *Shard) Col(l int) ([]int32, []float64) {
	if l < s.X.Cols {
		return s.X.Col(l)
	}
	return s.Held.Col(l - s.X.Cols)
}

// NewLambda switches to the penalty of an update, lambda, if it carries a
// new one (0: unchanged). The inner tolerance then starts afresh, since its
// tightening was the previous λ's.
func (s *Shard) NewLambda(lambda float64) {
	if lambda != 0 && lambda != s.Lambda {
		s.Lambda = lambda
		s.RelTol = 0
	}
}

// Take keeps the columns cols that the other workers shared in a round,
// with several workers: coef, the worker's coefficients by local index,
// extends over each new one, set to its value values[k] for column
// cols.IDs[k], and added is called with each new one's values, in order,
// so that the worker extends its other per-column state. The worker's own
// columns are skipped; a column it holds already is an error. With grow,
// Take first makes room for all of cols (columnar.Columns.Grow), so that
// taking them copies none of those held before; the held columns are then
// empty rather than nil where cols were all the worker's own, which its
// snapshot encodes otherwise.
func (s *Shard) Take(cols *columnar.Columns, values []float64, grow bool, coef *[]float64, added func(vals []float64)) error {
	if cols.Len() == 0 || s.Seen == nil {
		return nil
	}
	from := len(*coef)
	if grow {
		s.Held.Columns.Grow(cols.Len(), len(cols.Rows))
	}
	err := s.Held.Take(cols, s.Rows, true, func(vals []float64) {
		*coef = append(*coef, 0)
		added(vals)
	})
	if err != nil {
		return err
	}
	for k, j := range cols.IDs {
		if l := s.Held.Local(j); l >= from {
			(*coef)[l] = values[k]
		}
	}
	return nil
}

// Changes returns what a round changed of the worker's own coefficients
// over Block, from coef to trial (both by local index): the columns and
// their new values, in column order. It counts the own columns of Block
// that trial leaves non-zero (Seen), and returns those that reach Shared
// with their data, to share: the worker reports the changes of its own
// coefficients only, those of the other workers' columns having made its
// own fit the whole active set, and their owners reporting theirs.
func (s *Shard) Changes(trial, coef []float64) (vars codec.Int32s, vals codec.Float64s, share columnar.Columns) {
	ids, nnz := s.ids[:0], 0
	for _, j := range s.Block {
		l := s.Held.Local(j)
		if l >= s.X.Cols {
			continue
		}
		if trial[l] != coef[l] {
			vars = append(vars, j)
			vals = append(vals, trial[l])
		}
		if s.Seen != nil && trial[l] != 0 && s.Seen[l] < Shared {
			if s.Seen[l]++; s.Seen[l] == Shared {
				ids = append(ids, j)
				nnz += s.X.NNZ(l)
			}
		}
	}
	s.ids = ids
	share.Grow(len(ids), nnz)
	share.AddOwned(s.X, s.First, ids)
	return vars, vals, share
}

// Dir returns the change of every row's margin (or of Xβ) that setting the
// worker's own coefficients vars to vals, from coef (by local index),
// makes, plus db: computed afresh from the changes of the coefficients,
// not as the difference of the replica and its scratch copy, whose
// rounding (of the replica's size) would swamp the small changes near the
// optimum, and with them the coordinator's merge.
func (s *Shard) Dir(vars []int32, vals, coef []float64, db float64) []float64 {
	dir := make([]float64, s.Rows)
	if db != 0 {
		for i := range dir {
			dir[i] = db
		}
	}
	for k, j := range vars {
		l := int(j) - s.First
		d := vals[k] - coef[l]
		rows, v := s.X.Col(l)
		for t, i := range rows {
			dir[i] += v[t] * d
		}
	}
	return dir
}

// L1 returns ‖coef‖₁ and the number of non-zeros over the worker's own
// columns (coef by local index).
func (s *Shard) L1(coef []float64) (l1 float64, nnz int) {
	for _, v := range coef[:s.X.Cols] {
		if v != 0 {
			l1 += math.Abs(v)
			nnz++
		}
	}
	return l1, nnz
}

// Saved is what a worker's snapshot saves of its shard: its data and
// columns, to check that it is restored into the same shard, the penalty
// and the inner tolerance, the working set, and with several workers the
// columns held and how often each of its own came out non-zero. The apps'
// snapshots hold these fields among their own, in their own encoding. The
// screen's correlations are not saved: a restored worker computes them
// afresh, and what it decides from them is the same (columnar.Screen).
type Saved struct {
	Data   libsvm.Fingerprint
	Shard  int
	First  int
	Cols   int
	Lambda float64
	RelTol float64
	Screen columnar.ScreenState
	Held   columnar.Columns
	Seen   []uint8
}

// Save returns what a snapshot saves of s.
func (s *Shard) Save() (Saved, error) {
	sc, err := s.Screen.State()
	if err != nil {
		return Saved{}, err
	}
	return Saved{
		Data: s.Data, Shard: s.Index, First: s.First, Cols: s.X.Cols, Lambda: s.Lambda, RelTol: s.RelTol,
		Screen: sc, Held: s.Held.Columns, Seen: s.Seen,
	}, nil
}

// Check checks v, of a snapshot whose replica is over rows rows and whose
// coefficients (named noun in the error: "coefficients", "weights") are
// coefs, against s: another shard or data, counts of columns that do not
// fit, or numbers out of range, among them the app's, which are finite if
// finite, are an error.
func (s *Shard) Check(v Saved, rows, coefs int, noun string, finite bool) error {
	switch {
	case v.Data != s.Data || v.Shard != s.Index || v.First != s.First || v.Cols != s.X.Cols || rows != s.Rows:
		return fmt.Errorf("snapshot of worker shard %d, of columns [%d, %d) and %d rows of %v; this one is shard %d, of [%d, %d) and %d rows of %v",
			v.Shard, v.First, v.First+v.Cols, rows, v.Data, s.Index, s.First, s.First+s.X.Cols, s.Rows, s.Data)
	case len(v.Seen) != len(s.Seen) || v.Held.Len() > 0 && s.Seen == nil:
		return fmt.Errorf("snapshot with %d columns counted non-zero and %d held, for a worker of %d", len(v.Seen), v.Held.Len(), len(s.Seen))
	case coefs != s.X.Cols+v.Held.Len():
		return fmt.Errorf("snapshot of %d %s for %d columns", coefs, noun, s.X.Cols+v.Held.Len())
	case !(v.Lambda >= 0) || math.IsInf(v.Lambda, 0) || !(v.RelTol >= 0 && v.RelTol <= 1) || !finite:
		return errors.New("snapshot with numbers that are not finite, or out of range")
	}
	return nil
}

// Restore sets s to v, checked (Check): the working set, and the held
// columns, calling added with each one's values, in order, as Take does.
// A worker restored in place (a rollback, DESIGN "Spares and replacement")
// drops the columns it held, and what extends over them, first: drop,
// called once the screen is restored, cuts the worker's per-column state
// to its own columns. A working set of columns not the worker's, or
// columns held that do not fit (as for an update that shares them), are
// an error.
func (s *Shard) Restore(v Saved, drop func(own int), added func(vals []float64)) error {
	if err := s.Screen.Restore(v.Screen); err != nil {
		return err
	}
	drop(s.X.Cols)
	if err := s.Held.Restore(v.Held, s.Rows, added); err != nil {
		return err
	}
	s.Lambda, s.RelTol = v.Lambda, v.RelTol
	copy(s.Seen, v.Seen)
	return nil
}
