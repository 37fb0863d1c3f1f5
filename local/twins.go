package local

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/worker"
)

// twins are the roles that a rollback (Options.RestoreInPlace) builds
// anew and restores from the same snapshots as the roles it restores in
// place: they get the same calls, with copies of the same arguments, up
// to the next snapshot, and every answer of the two must be the same.
type twins[P, R, U, S any] struct {
	scheds []*node.Core[P]
	cores  []*worker.Core[P, R, U, S]
}

// buildTwins builds the twins of the roles restored in place from ct, as
// a spare (or a resumed job's node) builds a role: the constructor, a
// worker's Describe, then Restore.
func (j *Job[P, R, U, S]) buildTwins(ct *pieces) (*twins[P, R, U, S], error) {
	t := &twins[P, R, U, S]{}
	parts := len(j.Schedulers)
	var scheds []schmp.Scheduler[P]
	for p := range parts {
		s, err := j.prog.NewScheduler(j.ctx, p, parts)
		if err == nil {
			err = s.(schmp.Snapshotter).Restore(ct.scheds[p])
		}
		if err != nil {
			return nil, fmt.Errorf("scheduler %d: a new one: %w", p, err)
		}
		scheds = append(scheds, s)
	}
	t.scheds = j.newScheds(scheds, ct.round)
	var workers []schmp.Worker[P, R, U, S]
	for k := range j.Workers {
		w, err := j.prog.NewWorker(j.ctx, k, len(j.Workers))
		if err == nil {
			_, err = w.Describe()
		}
		if err == nil {
			err = w.(schmp.Snapshotter).Restore(ct.works[k])
		}
		if err != nil {
			return nil, fmt.Errorf("worker shard %d: a new one: %w", k, err)
		}
		workers = append(workers, w)
	}
	t.cores = j.newCores(workers, ct.round, false)
	return t, nil
}

// schedule has scheduler p's twin plan from a copy of req, and reports a
// difference from r, the reply of the scheduler restored in place.
func (t *twins[P, R, U, S]) schedule(j *Job[P, R, U, S], p int, req protocol.PlanRequest, r *node.Reply[P]) error {
	out, err := request(t.scheds[p], req)
	if err != nil {
		return fmt.Errorf("restored anew, it failed where the one restored in place did not: %w", err)
	}
	return j.same("the plan", []any{r.Plan, r.Info}, []any{out.Reply.Plan, out.Reply.Info})
}

// finish has worker k's twin finish the task that the worker finished
// with out, delivers the part it passes to the twin it passes it to, and
// reports a difference in what the two give.
func (t *twins[P, R, U, S]) finish(ctx context.Context, j *Job[P, R, U, S], k int, out worker.Output[R, S]) error {
	twin, err := t.cores[k].Finish(ctx)
	if err != nil {
		return fmt.Errorf("restored anew, it failed where the one restored in place did not: %w", err)
	}
	a, b := out.Answer, twin.Answer
	if (a == nil) != (b == nil) {
		return errors.New("restored in place, it answers where the one restored anew does not, or the other way round")
	}
	if a != nil {
		if err := j.same("the report", []any{a.HasReport, a.Report}, []any{b.HasReport, b.Report}); err != nil {
			return err
		}
		if err := j.same("the partial", a.Partial, b.Partial); err != nil {
			return err
		}
	}
	if err := j.same("what it passes", out.Pass, twin.Pass); err != nil {
		return err
	}
	return deliver(t.cores, twin.Pass)
}

// same reports an error unless a, of a role restored in place, and b, of
// the same role restored anew, encode alike (up to Options.Ignore).
func (j *Job[P, R, U, S]) same(what string, a, b any) error {
	ba, err := codec.Marshal(a)
	if err != nil {
		return err
	}
	bb, err := codec.Marshal(b)
	if err != nil {
		return err
	}
	if path, ok := j.sameMsg(ba, bb); !ok {
		return fmt.Errorf("restored in place, %s differs at %s from that of the role restored anew from the same snapshot", what, path)
	}
	return nil
}

// alike reports whether the decoded msgpack values a and b are the same,
// numbers bit for bit, leaving out the map entries under the keys ignore;
// if not, it returns the path where they differ.
func alike(a, b any, ignore []string, path string) (string, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range x {
			if slices.Contains(ignore, k) {
				continue
			}
			if p, ok := alike(v, y[k], ignore, path+"."+k); !ok {
				return p, false
			}
		}
		for k := range y {
			if _, ok := x[k]; !ok && !slices.Contains(ignore, k) {
				return path + "." + k, false
			}
		}
		return "", true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return path, false
		}
		for i := range x {
			if p, ok := alike(x[i], y[i], ignore, fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	case float64:
		y, ok := b.(float64)
		return path, ok && math.Float64bits(x) == math.Float64bits(y)
	case float32:
		y, ok := b.(float32)
		return path, ok && math.Float32bits(x) == math.Float32bits(y)
	}
	return path, reflect.DeepEqual(a, b)
}
