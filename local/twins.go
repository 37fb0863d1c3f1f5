package local

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// twins are the roles that a rollback (Options.RestoreInPlace) builds
// anew and restores from the same snapshots as the roles it restores in
// place: they get the same calls, with copies of the same arguments, up
// to the next snapshot, and every answer of the two must be the same.
type twins[P, R, U, S any] struct {
	scheds  []schmp.Scheduler[P]
	workers []schmp.Worker[P, R, U, S]
}

// buildTwins builds the twins of the roles restored in place from ct, as
// a spare (or a resumed job's node) builds a role: the constructor, a
// worker's Describe, then Restore.
func (j *Job[P, R, U, S]) buildTwins(ct *pieces) (*twins[P, R, U, S], error) {
	t := &twins[P, R, U, S]{}
	parts := len(j.Schedulers)
	for p := range parts {
		s, err := j.prog.NewScheduler(j.ctx, p, parts)
		if err == nil {
			err = s.(schmp.Snapshotter).Restore(ct.scheds[p])
		}
		if err != nil {
			return nil, fmt.Errorf("scheduler %d: a new one: %w", p, err)
		}
		t.scheds = append(t.scheds, s)
	}
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
		t.workers = append(t.workers, w)
	}
	return t, nil
}

// schedule has scheduler p's twin plan what the scheduler planned, plan
// and info, from the same feedback, and reports a difference.
func (t *twins[P, R, U, S]) schedule(j *Job[P, R, U, S], p int, round uint64, fb []schmp.Feedback, plan P, info schmp.PlanInfo) error {
	fb, err := roundTrip(fb)
	if err != nil {
		return err
	}
	plan2, info2, err := t.scheds[p].Schedule(round, fb)
	if err != nil {
		return fmt.Errorf("restored anew, it failed where the one restored in place did not: %w", err)
	}
	return j.same("the plan", []any{plan, info}, []any{plan2, info2})
}

// apply has worker k's twin apply copies of us.
func (t *twins[P, R, U, S]) apply(k int, us []U) error {
	us, err := roundTrip(us)
	for _, u := range us {
		if err != nil {
			break
		}
		err = t.workers[k].Apply(u)
	}
	if err != nil {
		return fmt.Errorf("restored anew, it failed where the one restored in place did not: %w", err)
	}
	return nil
}

// report has worker k's twin report as the worker reported, r.
func (t *twins[P, R, U, S]) report(j *Job[P, R, U, S], k int, final bool, r S) error {
	var r2 S
	var err error
	if f, ok := t.workers[k].(schmp.FinalReporter[S]); ok && final {
		r2, err = f.FinalReport()
	} else {
		r2, err = t.workers[k].Report()
	}
	if err != nil {
		return fmt.Errorf("restored anew, its report failed where the one restored in place did not: %w", err)
	}
	return j.same("the report", r, r2)
}

// push has worker k's twin push the plan that the worker pushed, and
// returns its partial, which must be r.
func (t *twins[P, R, U, S]) push(ctx context.Context, j *Job[P, R, U, S], k int, round uint64, plan P, r R) (R, error) {
	plan, err := roundTrip(plan)
	if err != nil {
		return r, err
	}
	r2, err := t.workers[k].Push(ctx, round, plan)
	if err != nil {
		return r2, fmt.Errorf("restored anew, its push failed where the one restored in place did not: %w", err)
	}
	return r2, j.same("the partial", r, r2)
}

// pass has worker k's twin, a Passer as the worker is, pass r2, its
// partial, as the worker passed coord, part and to.
func (t *twins[P, R, U, S]) pass(j *Job[P, R, U, S], k int, round uint64, r2 R, coord, part R, to int, ok bool) error {
	coord2, part2, to2, ok2 := t.workers[k].(schmp.Passer[R]).Pass(round, r2)
	return j.same("what it passes", []any{coord, part, to, ok}, []any{coord2, part2, to2, ok2})
}

// take has worker k's twin take a copy of part, which it must await from
// the same worker.
func (t *twins[P, R, U, S]) take(j *Job[P, R, U, S], k int, round uint64, from int, part R) error {
	w := t.workers[k].(schmp.Passer[R])
	from2, ok := w.Awaits(round)
	if err := j.same("the part it awaits", []any{from, true}, []any{from2, ok}); err != nil {
		return err
	}
	part, err := roundTrip(part)
	if err == nil {
		err = w.Take(round, from, part)
	}
	if err != nil {
		return fmt.Errorf("restored anew, its take failed where the one restored in place did not: %w", err)
	}
	return nil
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
	if bytes.Equal(ba, bb) {
		return nil
	}
	var ga, gb any
	if err := codec.Unmarshal(ba, &ga); err != nil {
		return err
	}
	if err := codec.Unmarshal(bb, &gb); err != nil {
		return err
	}
	if path, ok := alike(ga, gb, j.opts.Ignore, ""); !ok {
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
