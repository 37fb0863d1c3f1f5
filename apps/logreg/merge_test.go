package logreg

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/scheduler/columnar"
)

// mergeJob is a column layout job's roles, driven by hand: the workers and
// the coordinator, started, with the problem they hold.
type mergeJob struct {
	pr      *problem
	lambda  float64
	ws      []*ColWorker
	c       *ColCoordinator
	round   uint64
	applied uint64 // the round of the last update the workers applied
}

// newMergeJob starts the roles of a column layout job on pr with workers
// workers and applies the start's update.
func newMergeJob(t *testing.T, pr *problem, intercept bool, workers int) *mergeJob {
	t.Helper()
	cfg := Config{Data: pr.path, LambdaRatio: 0.1, Intercept: intercept, Schedule: colSchedule(scheduler.Priority)}
	j := &mergeJob{pr: pr}
	var sums []ColSummary
	for k := range workers {
		w, err := NewColWorker(cfg, k, workers)
		if err != nil {
			t.Fatal(err)
		}
		s, err := w.Describe()
		if err != nil {
			t.Fatal(err)
		}
		j.ws, sums = append(j.ws, w), append(sums, s)
	}
	c, err := NewColCoordinator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.Start(sums)
	if err != nil {
		t.Fatal(err)
	}
	j.c, j.lambda = c, c.Lambda()
	j.apply(t, u)
	return j
}

// apply applies u on every worker and checks that every worker's margins
// and values of the columns it owns or holds are the coordinator's, bit
// for bit.
func (j *mergeJob) apply(t *testing.T, u ColUpdate) {
	t.Helper()
	for k, w := range j.ws {
		if err := w.Apply(u); err != nil {
			t.Fatalf("worker %d: apply: %v", k, err)
		}
		for i, r := range w.rows {
			if math.Float64bits(r.z) != math.Float64bits(j.c.z[i]) {
				t.Fatalf("worker %d: margin %d is %v, the coordinator's %v", k, i, r.z, j.c.z[i])
			}
		}
		for l, v := range w.w {
			id := w.sh.First + l
			if l >= w.sh.X.Cols {
				id = int(w.sh.Held.IDs[l-w.sh.X.Cols])
			}
			if math.Float64bits(v) != math.Float64bits(j.c.w[id]) {
				t.Fatalf("worker %d: w_%d is %v, the coordinator's %v", k, id, v, j.c.w[id])
			}
		}
		if w.b != j.c.b {
			t.Fatalf("worker %d: intercept %v, the coordinator's %v", k, w.b, j.c.b)
		}
	}
	j.applied = u.Round
}

// partial returns worker shard k's partial that sets w_j to vals[j] for
// the columns of vals (all k's own) and, on shard 0, the intercept to bias,
// computed from the coordinator's model as a worker computes it.
func (j *mergeJob) partial(k int, vals map[int]float64, bias float64) ColPartial {
	c := j.c
	p := ColPartial{Bias: c.b, AsOf: j.applied}
	if k == 0 && c.cfg.Intercept {
		p.Bias = bias
	}
	ids := make([]int, 0, len(vals))
	for id := range vals {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if vals[id] != c.w[id] {
			p.Vars = append(p.Vars, int32(id))
			p.Value = append(p.Value, vals[id])
		}
	}
	if len(p.Vars) == 0 && p.Bias == c.b {
		return p
	}
	p.Dir = make(codec.Float64s, j.pr.n())
	for i := range p.Dir {
		p.Dir[i] = p.Bias - c.b
	}
	for t, id := range p.Vars {
		d := p.Value[t] - c.w[id]
		for i, x := range j.pr.cols[id] {
			p.Dir[i] += x * d
		}
	}
	return p
}

// objective returns F at the coordinator's model, computed plainly.
func (j *mergeJob) objective() float64 {
	return j.pr.objective(j.c.w, j.c.b, j.lambda)
}

// objectiveOf returns F after the changes of parts, taken at step alpha
// each, computed plainly.
func (j *mergeJob) objectiveOf(parts []ColPartial, alpha float64) float64 {
	w := slices.Clone(j.c.w)
	b := j.c.b
	for k, p := range parts {
		for t, id := range p.Vars {
			w[id] = moveTo(j.c.w[id], p.Value[t], alpha)
		}
		if k == 0 && p.Dir != nil {
			b = moveBias(j.c.b, p.Bias, alpha)
		}
	}
	return j.pr.objective(w, b, j.lambda)
}

// pull runs a round of the coordinator with parts and applies its update
// on the workers.
func (j *mergeJob) pull(t *testing.T, parts []ColPartial) ColUpdate {
	t.Helper()
	j.round++
	u, _, err := j.c.Pull(j.round, ColPlan{Blocks: make([]codec.Int32s, len(j.ws))}, parts)
	if err != nil {
		t.Fatalf("round %d: pull: %v", j.round, err)
	}
	j.apply(t, u)
	return u
}

// owned returns the columns of worker shard k.
func (j *mergeJob) owned(k int) (lo, hi int) {
	return columnar.OwnedRange(len(j.pr.cols), k, len(j.ws))
}

// newtonChange returns, for worker shard k, new values of some of its
// columns: each a coordinate's proximal Newton step from the coordinator's
// model, scaled by scale, for a fraction frac of its columns.
func (j *mergeJob) newtonChange(rng *rand.Rand, k int, frac, scale float64) map[int]float64 {
	g := j.pr.gradient(j.c.w, j.c.b)
	z := j.pr.margins(j.c.w, j.c.b)
	n := float64(j.pr.n())
	vals := map[int]float64{}
	lo, hi := j.owned(k)
	for id := lo; id < hi; id++ {
		if rng.Float64() >= frac {
			continue
		}
		var h float64
		for i, x := range j.pr.cols[id] {
			s := 1 / (1 + math.Exp(-z[i]))
			h += x * x * s * (1 - s) / n
		}
		if h > 0 {
			vals[id] = j.c.w[id] + scale*proxStep(j.c.w[id], g[id], h, j.lambda)
		}
	}
	return vals
}

// newtonBias returns the Newton step of the intercept from the
// coordinator's model.
func (j *mergeJob) newtonBias() float64 {
	g := j.pr.gradient(j.c.w, j.c.b)
	var h float64
	for _, z := range j.pr.margins(j.c.w, j.c.b) {
		s := 1 / (1 + math.Exp(-z))
		h += s * (1 - s)
	}
	return -g[len(g)-1] / (h / float64(j.pr.n()))
}

// TestColumnsMerge drives the coordinator's merge with changes of one to
// three workers built by hand, on problems with and without an intercept:
// proximal Newton steps of some coordinates (and the intercept), each
// worker's alone a descent, that fit the same margins (whole, they
// overshoot), steps too short (stretched, they do better), and changes
// against such steps, along which the objective rises.
// Every round must leave F no higher; take every change whole only if that
// comes within nearWhole of the best single change; otherwise do at least
// as well as each single change and the whole; never take a change that
// raises F; make the next round joint as the rule says; and leave every
// worker's margins and coefficients the coordinator's, bit for bit.
func TestColumnsMerge(t *testing.T) {
	type kind int
	const (
		newton   kind = iota // every worker's Newton steps, whole
		short                // a tenth of them
		raise                // worker 0's change raises F
		allRaise             // every worker's change raises F
	)
	kinds := map[kind]string{newton: "newton", short: "short", raise: "raise", allRaise: "all raise"}
	for _, intercept := range []bool{false, true} {
		pr := newProblem(t, genConfig(60, 40, 8, 7))
		for _, workers := range []int{2, 3} {
			for _, kd := range []kind{newton, short, raise, allRaise} {
				t.Run(fmt.Sprintf("intercept=%t/workers=%d/%s", intercept, workers, kinds[kd]), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(workers), uint64(kd)))
					j := newMergeJob(t, pr, intercept, workers)
					// A few rounds of Newton steps first, from w = 0.
					for round := range 8 {
						f0 := j.objective()
						parts := make([]ColPartial, workers)
						added := round%3 == 0
						for k := range parts {
							scale := 1.0
							switch {
							case kd == short:
								scale = 0.1
							case kd == raise && k == 0 || kd == allRaise:
								// Against a descent direction: F rises
								// along it, and along the sum of such
								// changes of disjoint coordinates.
								scale = -3
							}
							vals := j.newtonChange(rng, k, 0.5, scale)
							parts[k] = j.partial(k, vals, j.c.b+scale*j.newtonBias())
							if added {
								parts[k].Added = 1
							}
						}
						whole := j.objectiveOf(parts, 1) - f0
						best := math.Inf(1)
						for k := range parts {
							alone := make([]ColPartial, workers)
							alone[k] = parts[k]
							best = min(best, j.objectiveOf(alone, 1)-f0)
						}
						before := j.c.Stats()
						u := j.pull(t, parts)
						got := j.objective() - f0
						st := j.c.Stats()
						took := len(u.Vars) > 0 || u.Dir != nil
						allWhole := took && u.Alpha == 1 && st.Whole > before.Whole
						const eps = 1e-13
						switch {
						case got > eps*f0:
							t.Fatalf("round %d: F rose by %.3g", round, got)
						case !took && (whole < -eps*f0 || best < -eps*f0):
							t.Errorf("round %d: nothing taken, but the whole changes change F by %.3g, the best single by %.3g", round, whole, best)
						case allWhole && whole > nearWhole*best+eps*f0:
							t.Errorf("round %d: the whole changes taken, which change F by %.3g, the best single by %.3g", round, whole, best)
						case took && !allWhole && (got > best+eps*f0 || got > whole+eps*f0):
							t.Errorf("round %d: took a change of F of %.3g, the whole changes %.3g, the best single %.3g", round, got, whole, best)
						}
						if kd == allRaise && took {
							t.Errorf("round %d: took changes that each raise F (α %v, %d variables)", round, u.Alpha, len(u.Vars))
						}
						if want := took && (!added || !allWhole); u.Joint != want {
							t.Errorf("round %d: joint %t, want %t (took %t, grew %t, all whole %t)", round, u.Joint, want, took, added, allWhole)
						}
						t.Logf("round %d: F %.10g, change %.3g (whole %.3g, best single %.3g), α %v; %+v", round, f0, got, whole, best, u.Alpha, st)
					}
					if st := j.c.Stats(); kd == short && st.Stretched == 0 {
						t.Errorf("short changes never stretched: %+v", st)
					}
				})
			}
		}
	}
}

// TestColumnsPullBad checks that the coordinator refuses partials that a
// worker cannot have sent, and that a worker refuses an update that does
// not fit it.
func TestColumnsPullBad(t *testing.T) {
	pr := newProblem(t, genConfig(30, 20, 4, 3))
	good := func(j *mergeJob) []ColPartial {
		return []ColPartial{j.partial(0, map[int]float64{1: 0.1}, 0), j.partial(1, map[int]float64{15: -0.1}, 0)}
	}
	for _, tc := range []struct {
		name  string
		parts func(j *mergeJob) []ColPartial
		want  string
	}{
		{"another's column", func(j *mergeJob) []ColPartial {
			p := good(j)
			p[0].Vars[0] = 15
			return p
		}, "outside its columns"},
		{"short direction", func(j *mergeJob) []ColPartial {
			p := good(j)
			p[1].Dir = p[1].Dir[:5]
			return p
		}, "direction over 5 rows"},
		{"NaN value", func(j *mergeJob) []ColPartial {
			p := good(j)
			p[1].Value[0] = math.NaN()
			return p
		}, "set column 15 to NaN"},
		{"infinite intercept", func(j *mergeJob) []ColPartial {
			p := good(j)
			p[0].Bias = math.Inf(1)
			return p
		}, "intercept to +Inf"},
		{"another's shared column", func(j *mergeJob) []ColPartial {
			p := good(j)
			p[0].Cols.Add(15, []int32{0}, []float64{1})
			return p
		}, "outside its columns"},
		{"too few partials", func(j *mergeJob) []ColPartial { return good(j)[:1] }, "1 partials for 2 workers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newMergeJob(t, pr, true, 2)
			_, _, err := j.c.Pull(1, ColPlan{Blocks: make([]codec.Int32s, 2)}, tc.parts(j))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("pull: %v, want an error with %q", err, tc.want)
			}
		})
	}
	t.Run("shared twice", func(t *testing.T) {
		j := newMergeJob(t, pr, true, 2)
		parts := good(j)
		parts[1].Cols.Add(15, []int32{0}, []float64{1})
		j.pull(t, parts)
		parts = good(j)
		parts[1].Cols.Add(15, []int32{0}, []float64{1})
		if _, _, err := j.c.Pull(2, ColPlan{Blocks: make([]codec.Int32s, 2)}, parts); err == nil || !strings.Contains(err.Error(), "a second time") {
			t.Fatalf("pull: %v, want an error about a column shared a second time", err)
		}
	})
	for _, tc := range []struct {
		name string
		u    ColUpdate
		want string
	}{
		{"step too long", ColUpdate{Alpha: MaxStep * 2}, "step 8"},
		{"column values", ColUpdate{Alpha: 1, Cols: columnar.Columns{IDs: codec.Int32s{15}, Ptr: codec.Int32s{0, 0}}}, "1 columns with 0 values"},
		{"short direction", ColUpdate{Alpha: 1, Dir: make(codec.Float64s, 3)}, "direction over 3 rows"},
	} {
		t.Run("apply/"+tc.name, func(t *testing.T) {
			j := newMergeJob(t, pr, true, 2)
			if err := j.ws[0].Apply(tc.u); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("apply: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestColumnsSharedValue checks that a column shared in a round that does
// not change it reaches the other workers with its value in the model, and
// that they then push.
func TestColumnsSharedValue(t *testing.T) {
	pr := newProblem(t, genConfig(30, 20, 4, 3))
	j := newMergeJob(t, pr, false, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	j.pull(t, []ColPartial{j.partial(0, nil, 0), j.partial(1, j.newtonChange(rng, 1, 1, 1), 0)})
	id := -1
	for l := range j.ws[1].sh.X.Cols {
		if j.c.w[j.ws[1].sh.First+l] != 0 {
			id = j.ws[1].sh.First + l
		}
	}
	if id < 0 {
		t.Fatalf("worker 1's change was not taken: %+v", j.c.Stats())
	}
	parts := []ColPartial{j.partial(0, nil, 0), j.partial(1, nil, 0)}
	rows, vals := j.ws[1].sh.X.Col(id - j.ws[1].sh.First)
	parts[1].Cols.Add(int32(id), rows, vals)
	u := j.pull(t, parts) // which checks the value held
	if l := j.ws[0].sh.Held.Local(int32(id)); l < 0 || len(u.ColValue) != 1 {
		t.Fatalf("worker 0 holds column %d at local index %d; the update carries %v", id, l, u.ColValue)
	}
	for k, w := range j.ws {
		if _, err := w.Push(context.Background(), 3, ColPlan{}); err != nil {
			t.Fatalf("worker %d: push: %v", k, err)
		}
	}
}
