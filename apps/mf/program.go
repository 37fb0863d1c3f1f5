package mf

import (
	"context"
	"errors"
	"fmt"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// RotationProgram returns DSGD on the static rotation engine: the plan of
// round r is sub-round r−1 (scheduler.Rotation), and H's blocks travel to
// their next owners in RotationUpdate.
func RotationProgram(cfg Config) schmp.Program[scheduler.Turn, RotationPartial, RotationUpdate, Summary] {
	return program(cfg, "RotationProgram",
		func(part, parts int) (schmp.Scheduler[scheduler.Turn], error) {
			return scheduler.NewRotation(cfg.Workers, part, parts)
		},
		func(p int) (schmp.Worker[scheduler.Turn, RotationPartial, RotationUpdate, Summary], error) {
			return newRotationWorker(cfg, p)
		},
		func(b base) schmp.Coordinator[scheduler.Turn, RotationPartial, RotationUpdate, Summary] {
			return &rotationCoordinator{base: b, rot: scheduler.Rotation{Workers: cfg.Workers}}
		})
}

// UnscheduledProgram returns the unscheduled SGD baseline: a round is an
// iteration, in which every worker updates its own copy of all of H, and
// the coordinator merges the copies.
func UnscheduledProgram(cfg Config) schmp.Program[scheduler.Turn, DeltaPartial, FullUpdate, Summary] {
	return program(cfg, "UnscheduledProgram", steps(cfg),
		func(p int) (schmp.Worker[scheduler.Turn, DeltaPartial, FullUpdate, Summary], error) {
			return newUnscheduledWorker(cfg, p)
		},
		func(b base) schmp.Coordinator[scheduler.Turn, DeltaPartial, FullUpdate, Summary] {
			return &unscheduledCoordinator{base: b}
		})
}

// CCDProgram returns CCD++: round r updates slot ⌊(r−1)/Inner⌋ mod
// (Rank+1) (mod Rank without biases) of W on the workers and of H on the
// coordinator: with biases, slot 0 is the biases and slot k feature k−1.
func CCDProgram(cfg Config) schmp.Program[scheduler.Turn, SumsPartial, FullUpdate, Summary] {
	return program(cfg, "CCDProgram", steps(cfg),
		func(p int) (schmp.Worker[scheduler.Turn, SumsPartial, FullUpdate, Summary], error) {
			return newCCDWorker(cfg, p)
		},
		func(b base) schmp.Coordinator[scheduler.Turn, SumsPartial, FullUpdate, Summary] {
			return &ccdCoordinator{base: b}
		})
}

// programFor returns the name of the function whose program runs cfg's
// algorithm.
func (c Config) programFor() string {
	switch {
	case c.onPS():
		return "RunPS"
	case c.Algo == ALS:
		return "ALSProgram"
	case c.Algo == CCD:
		return "CCDProgram"
	case c.Schedule == Unscheduled:
		return "UnscheduledProgram"
	}
	return "RotationProgram"
}

// check returns cfg's first bad setting, or that the program of name
// does not run cfg's algorithm.
func (c Config) check(name string) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if want := c.programFor(); want != name {
		return fmt.Errorf("mf.%s runs another algorithm than Config.Algo %q, Config.Schedule %q: use mf.%s", name, c.Algo, c.Schedule, want)
	}
	return nil
}

// program bundles the constructors of an algorithm's roles (the program
// of the function name), each checking cfg first.
func program[R, U any](cfg Config, name string,
	newScheduler func(part, parts int) (schmp.Scheduler[scheduler.Turn], error),
	newWorker func(p int) (schmp.Worker[scheduler.Turn, R, U, Summary], error),
	newCoordinator func(base) schmp.Coordinator[scheduler.Turn, R, U, Summary],
) schmp.Program[scheduler.Turn, R, U, Summary] {
	return schmp.Program[scheduler.Turn, R, U, Summary]{
		Name: "mf",
		NewScheduler: func(_ context.Context, part, parts int) (schmp.Scheduler[scheduler.Turn], error) {
			if err := cfg.check(name); err != nil {
				return nil, err
			}
			return newScheduler(part, parts)
		},
		NewWorker: func(_ context.Context, shard, shards int) (schmp.Worker[scheduler.Turn, R, U, Summary], error) {
			switch err := cfg.check(name); {
			case err != nil:
				return nil, err
			case shards != cfg.Workers:
				return nil, fmt.Errorf("the job has %d workers, the configuration %d", shards, cfg.Workers)
			case cfg.Train == "":
				return nil, errors.New("--train FILE is required")
			}
			return newWorker(shard)
		},
		NewCoordinator: func(context.Context) (schmp.Coordinator[scheduler.Turn, R, U, Summary], error) {
			if err := cfg.check(name); err != nil {
				return nil, err
			}
			return newCoordinator(newBase(cfg)), nil
		},
	}
}

// errNotStarted is a worker's answer to a task that comes before the first
// update, as it does with rounds in flight.
var errNotStarted = errors.New("a task before the first update: the job needs --depth 1")

// steps returns the schedule of the unscheduled SGD and of CCD++: round r
// is step r−1, which updates all of H (variable 0) or one feature.
func steps(cfg Config) func(part, parts int) (schmp.Scheduler[scheduler.Turn], error) {
	return func(part, parts int) (schmp.Scheduler[scheduler.Turn], error) {
		if parts != 1 || part != 0 {
			return nil, fmt.Errorf("mf takes one scheduler, got %d", parts)
		}
		return stepper{cfg}, nil
	}
}

type stepper struct{ cfg Config }

// Schedule implements schmp.Scheduler.
func (s stepper) Schedule(round uint64, _ []schmp.Feedback) (scheduler.Turn, schmp.PlanInfo, error) {
	v := int32(0)
	if s.cfg.Algo == CCD {
		v = int32(s.cfg.slot(round-1) + 1) // the biases are 0
	}
	return scheduler.Turn{SubRound: round - 1}, schmp.PlanInfo{Vars: codec.Int32s{v}, Candidates: 1, Selected: 1}, nil
}
