// Package local runs a whole job of a schmp.Program in one goroutine, with
// no network: the scheduler parts, the workers and the app's coordinator
// are plain values, and the rounds follow the same rules as a distributed
// job, those of package github.com/strads-go/strads/coordinator/pipeline.
// Every message still goes through msgpack, as it would between machines,
// so that a role never shares memory with another.
//
// It is meant for an app's tests: a job here computes the same model, bit
// for bit, as the same job on the runtime (job.Run, or separate processes)
// at every depth, and lets the test look into every role between rounds.
package local

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/worker"
)

// Options configures a local job.
type Options struct {
	// Config holds the rules' parameters: Workers is the number of workers
	// and Parts the number of scheduler parts built.
	pipeline.Config
	// AfterApply, if set, is called whenever the workers have applied
	// updates, once all of them have, before they report or push: round is
	// the round of the last update applied (0: Start's). With depth 1 it
	// sees every round in order; with depth D the task of round t brings
	// the update of round t−D, and the stop task the last D at once. An
	// error fails the job.
	AfterApply func(round uint64) error
	// Now is the clock of Config.TimeLimit and Config.Timeout; nil means
	// time.Now.
	Now func() time.Time
	// Out, if set, is the runtime's output path: the model's files
	// (schmp.ModelOutputs) are created before the job starts and written
	// and committed, all or none, once it is done, as the coordinator node
	// does.
	Out string
	// RestoreEvery, when > 0, takes the checkpoints that the runtime takes
	// with --checkpoint-every RestoreEvery (DESIGN "Checkpoints"), at every depth, and
	// moves the job to new roles restored from each: every role's snapshot
	// (schmp.Snapshotter) is taken at its cut (the coordinator's, with the
	// core's pipeline.Snapshot, at the pull of the round; a worker's
	// before it applies the next task's updates; a scheduler part's
	// before its first plan of a later round), encoded; once all are in,
	// the driver builds every role anew with the program's constructors,
	// restores them from the bytes (the coordinator after Start, whose
	// update is dropped), forgets every plan and partial in flight, and
	// goes on with a core resumed from the snapshot (pipeline.Resume), as
	// a job rolled back to that checkpoint does. The model must come out
	// the same, bit for bit; Restores counts the moves. It needs an app
	// whose roles are all Snapshotters.
	RestoreEvery uint64
	// RestoreInPlace changes what RestoreEvery does into what a rollback
	// to a checkpoint does on the runtime (DESIGN "Spares and
	// replacement"): once every piece of the checkpoint of round C is in,
	// the driver keeps them and goes on with the same roles; when the core
	// asks for the plan of round C + RestoreEvery/2 + 2 (a rollback goes
	// back to the last checkpoint, at most about RestoreEvery rounds), it
	// takes the job back to C: it restores the same worker and scheduler
	// objects in place from their pieces, their state having moved past C
	// (parts passed and not taken included; a schmp.Rebuilder is built
	// anew), builds the coordinator anew (started with the workers' first
	// summaries, then restored) as the coordinator node does, forgets
	// every plan and partial in flight, and runs the rounds after C again
	// from a core resumed from the snapshot. No other checkpoint is taken
	// meanwhile; the next is the first one due after the rollback. The
	// model must come out the same, bit for bit, as without; Restores
	// counts the rollbacks.
	//
	// At each rollback the driver also builds every worker and scheduler
	// part anew and restores it from the same piece (as a spare, or a
	// resumed job's node, does), gives it the same calls as the role
	// restored in place, with copies of the same arguments, until the next
	// checkpoint is complete, and checks that every plan, report, partial
	// and part passed of the two is the same, bit for bit (but for
	// Ignore): a difference fails the job, naming the role, the round and
	// where they differ.
	RestoreInPlace bool
	// Ignore names the keys of the roles' messages, and of the workers'
	// snapshots, as msgpack encodes them (a field's tag, at any depth),
	// that the checks of RestoreInPlace and CheckContract leave out: those
	// of times, which differ from run to run.
	Ignore []string
	// CheckContract has the driver check, at every task of every worker,
	// that the worker keeps the contract of schmp.Worker, with calls of
	// its own that the runtime does not make:
	//
	//   - At a task that asks for a report, it takes the worker's Snapshot
	//     (of a schmp.Snapshotter) and its Report before the core does: the
	//     Report must leave the snapshot as it was, and the core's Report
	//     must be the same.
	//   - At depth > 1, at such a task that also pushes, it calls Report
	//     again after the Push: the report must be the same.
	//   - At every task that pushes (but round 1's, whose cut comes before
	//     Start's update), it pushes the same plan twice from the same
	//     state, soundly, whatever the Push may change: it takes the
	//     worker's snapshot at the task's cut (worker.CoreConfig.Cut, where
	//     the runtime takes a checkpoint's piece, so that a Restore of it on
	//     the live worker resets it wholly, as a rollback's does), and once
	//     the core has pushed it restores the worker in place from it,
	//     applies copies of the task's updates and pushes a copy of the
	//     plan: the partial (with a schmp.Passer's part) and the snapshot
	//     after must be those of the first Push. This finds a Push or an
	//     Apply that depends on more than the worker's state and its
	//     arguments (a clock, a random source outside the state, the order
	//     of a map), and state that Snapshot or Restore misses; it costs a
	//     Snapshot, a Restore, the updates and a Push more per task, and is
	//     skipped for a worker that is no Snapshotter, or a schmp.Rebuilder.
	//
	// A violation fails the job with an error that names the worker shard,
	// the round and where the snapshot, report or partial differs. Reports
	// are checked only at tasks that ask for one: ReportEvery 1 checks them
	// every round. Ignore names the measures to leave out: times, and counts
	// of work that a cache changes (the Restore empties caches, so that a
	// job run with the check may measure more work than one without).
	CheckContract bool
}

// Job is a job's roles, built on the caller's goroutine.
type Job[P, R, U, S any] struct {
	// Schedulers holds scheduler part p at index p.
	Schedulers []schmp.Scheduler[P]
	// Workers holds worker shard k at index k.
	Workers []schmp.Worker[P, R, U, S]
	// Coordinator is the app's coordinator: after Run, it holds the model
	// that the final report showed.
	Coordinator schmp.Coordinator[P, R, U, S]

	// Restores counts the moves to new roles (Options.RestoreEvery).
	Restores int
	// cut holds the pieces of the checkpoint under way (RestoreEvery).
	cut *pieces
	// saved holds the pieces of the last checkpoint (RestoreInPlace), to
	// which the job goes back once, sums the workers' summaries of the
	// start, and twins the roles restored anew at the last rollback.
	saved *pieces
	sums  []S
	twins *twins[P, R, U, S]

	prog    schmp.Program[P, R, U, S]
	ctx     context.Context
	opts    Options
	ran     bool
	applied int64 // the last round whose update the workers applied (−1: none)
	// cores and scheds run the workers' and the scheduler parts' rules,
	// as their nodes do (worker.Core, node.Core).
	cores  []*worker.Core[P, R, U, S]
	scheds []*node.Core[P]
	// cuts holds each worker's snapshot at the cut of its task under way
	// (Options.CheckContract).
	cuts []cutSnap
}

// pieces are the encoded snapshots of a checkpoint's cut, as the roles
// take them (Options.RestoreEvery).
type pieces struct {
	round         uint64
	core, coord   []byte
	works, scheds [][]byte
	used          bool // the job went back to it (Options.RestoreInPlace)
}

// complete reports whether every piece is in.
func (p *pieces) complete() bool {
	missing := func(b []byte) bool { return b == nil }
	return p.core != nil && !slices.ContainsFunc(p.works, missing) && !slices.ContainsFunc(p.scheds, missing)
}

// checkpoints is the core's pipeline.Checkpointer of a job that restores
// (Options.RestoreEvery).
type checkpoints[P, R, U, S any] struct{ j *Job[P, R, U, S] }

// Due takes the checkpoint of every RestoreEvery-th round, one at a time.
func (k checkpoints[P, R, U, S]) Due(round uint64, _ time.Time) bool {
	j := k.j
	if round%j.opts.RestoreEvery != 0 || j.cut != nil || j.saved != nil && !j.saved.used {
		return false
	}
	j.cut = &pieces{round: round, works: make([][]byte, len(j.Workers)), scheds: make([][]byte, len(j.Schedulers))}
	return true
}

// Save returns the coordinator's snapshot.
func (k checkpoints[P, R, U, S]) Save(uint64) ([]byte, error) {
	return save("coordinator", k.j.Coordinator)
}

// save returns the snapshot of v, a role.
func save(role string, v any) ([]byte, error) {
	s, ok := v.(schmp.Snapshotter)
	if !ok {
		return nil, fmt.Errorf("%s: %T is not a schmp.Snapshotter", role, v)
	}
	b, err := s.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("%s: snapshot: %w", role, err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// New builds the roles of prog's job: opts.Parts scheduler parts (at least
// 1), opts.Workers workers and the coordinator.
func New[P, R, U, S any](ctx context.Context, prog schmp.Program[P, R, U, S], opts Options) (*Job[P, R, U, S], error) {
	if opts.Workers < 1 {
		return nil, fmt.Errorf("local: Workers must be at least 1, got %d", opts.Workers)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	j := &Job[P, R, U, S]{prog: prog, ctx: ctx, opts: opts, applied: -1}
	if err := j.build(); err != nil {
		return nil, err
	}
	return j, nil
}

// build builds the roles anew with the program's constructors.
func (j *Job[P, R, U, S]) build() error {
	ctx, prog, opts := j.ctx, j.prog, j.opts
	j.Schedulers, j.Workers = nil, nil
	parts := max(opts.Parts, 1)
	for p := range parts {
		s, err := prog.NewScheduler(ctx, p, parts)
		if err != nil {
			return fmt.Errorf("scheduler %d: %w", p, err)
		}
		j.Schedulers = append(j.Schedulers, s)
	}
	j.scheds = j.newScheds(j.Schedulers, 0)
	for k := range opts.Workers {
		w, err := prog.NewWorker(ctx, k, opts.Workers)
		if err != nil {
			return fmt.Errorf("worker shard %d: %w", k, err)
		}
		j.Workers = append(j.Workers, w)
	}
	j.cores = j.newCores(j.Workers, 0, true)
	c, err := prog.NewCoordinator(ctx)
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	j.Coordinator = c
	return nil
}

// Run builds prog's job and runs it to the end. It returns the job, whose
// roles hold their final state, and the pipeline's status.
func Run[P, R, U, S any](ctx context.Context, prog schmp.Program[P, R, U, S], opts Options) (*Job[P, R, U, S], pipeline.Status, error) {
	j, err := New(ctx, prog, opts)
	if err != nil {
		return nil, pipeline.Status{}, err
	}
	st, err := j.Run(ctx)
	return j, st, err
}

// Run runs the job to the end, once: the workers describe their shards,
// the coordinator starts, and the rounds run until a stop (as
// opts.Config says), confirmed by its check. Plans are made and tasks computed
// as soon as the rules allow; the partials of a round are taken in only
// when nothing else is to be done, so that rounds are in flight together
// up to the depth, as on the runtime.
func (j *Job[P, R, U, S]) Run(ctx context.Context) (pipeline.Status, error) {
	if j.ran {
		return pipeline.Status{}, errors.New("local: the job has already run")
	}
	j.ran = true
	cfg := j.opts.Config
	_, final := j.Coordinator.(schmp.Finisher[S])
	cfg.Final = cfg.Final || final
	if j.opts.RestoreEvery > 0 {
		cfg.Checkpoints = checkpoints[P, R, U, S]{j}
	}
	core, err := pipeline.New(cfg, j.Coordinator, j.Coordinator)
	if err != nil {
		return pipeline.Status{}, err
	}
	// The outputs before Start, as the coordinator node makes them: an
	// app may set itself up for them (mf's evaluations then carry the
	// factors, Start's update says so).
	outs, err := schmp.ModelOutputs(j.Coordinator, j.opts.Out)
	if err != nil {
		return pipeline.Status{}, fmt.Errorf("coordinator: outputs: %w", err)
	}
	var paths []string
	for _, o := range outs {
		paths = append(paths, o.Path)
	}
	files, err := atomicfile.CreateGroup(paths...)
	if err != nil {
		return pipeline.Status{}, err
	}
	defer files.Abort()
	u, err := j.start()
	if err != nil {
		return pipeline.Status{}, err
	}
	core.Start(j.opts.Now(), u)

	var partials []pipeline.Event[P, R, S] // computed, not yet taken in
	queue := core.Ready()
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return core.Status(), err
		}
		if len(queue) == 0 {
			if len(partials) == 0 {
				return core.Status(), errors.New("local: the job is stuck: nothing to do and not done")
			}
			e := partials[0]
			partials = partials[1:]
			e.Time = j.opts.Now()
			if err := core.Step(e); err != nil {
				return core.Status(), fmt.Errorf("coordinator: %w", err)
			}
			queue = core.Ready()
			continue
		}
		a := queue[0]
		queue = queue[1:]
		switch a.Kind {
		case pipeline.AskPlan:
			if sv := j.saved; sv != nil && !sv.used && a.Round >= sv.round+j.opts.RestoreEvery/2+2 {
				c, err := j.rollback(cfg)
				if err != nil {
					return core.Status(), fmt.Errorf("local: roll back to round %d: %w", sv.round, err)
				}
				// Everything in flight is lost.
				core, queue, partials = c, c.Ready(), nil
				continue
			}
			e, err := j.plan(a)
			if err != nil {
				return core.Status(), err
			}
			e.Time = j.opts.Now()
			if err := core.Step(e); err != nil {
				return core.Status(), fmt.Errorf("coordinator: %w", err)
			}
		case pipeline.SendTask:
			ps, err := j.task(ctx, a)
			if err != nil {
				return core.Status(), err
			}
			partials = append(partials, ps...)
		case pipeline.JobDone:
			done = true
		case pipeline.CheckpointTaken:
			if j.cut == nil || j.cut.round != a.Round {
				return core.Status(), fmt.Errorf("local: the checkpoint of round %d taken, not under way", a.Round)
			}
			if j.cut.core, err = codec.Marshal(*a.Snapshot); err != nil {
				return core.Status(), fmt.Errorf("local: core snapshot: %w", err)
			}
			j.cut.coord = a.App
		case pipeline.CheckpointAbandoned:
			j.cut = nil
		}
		queue = append(queue, core.Ready()...)
		if j.cut != nil && j.cut.complete() && j.opts.RestoreInPlace {
			// Kept for the rollback; the twins' check ends here.
			j.saved, j.cut, j.twins = j.cut, nil, nil
		} else if j.cut != nil && j.cut.complete() {
			c, err := j.restore(cfg)
			if err != nil {
				return core.Status(), fmt.Errorf("local: restore from round %d: %w", j.cut.round, err)
			}
			j.cut = nil
			// Everything in flight is lost, as in a rollback.
			core, queue, partials = c, c.Ready(), nil
		}
	}
	if finisher, ok := j.Coordinator.(schmp.Finisher[S]); ok {
		if err := finisher.Finish(core.Finals()); err != nil {
			return core.Status(), fmt.Errorf("coordinator: finish: %w", err)
		}
	}
	if j.Restores > 0 {
		// The files' writers are the first coordinator's.
		if outs, err = schmp.ModelOutputs(j.Coordinator, j.opts.Out); err != nil {
			return core.Status(), fmt.Errorf("coordinator: outputs: %w", err)
		}
	}
	for i, o := range outs {
		if err := o.Write(files.Files()[i]); err != nil {
			return core.Status(), fmt.Errorf("coordinator: write %s: %w", o.Path, err)
		}
	}
	return core.Status(), files.Commit()
}

// plan asks the scheduler part for the plan that a asks for.
// start describes the workers' shards and starts the coordinator with them,
// returning its first update.
func (j *Job[P, R, U, S]) start() (U, error) {
	var u U
	sums := make([]S, len(j.Workers))
	for k, w := range j.Workers {
		s, err := w.Describe()
		if err == nil {
			sums[k], err = roundTrip(s)
		}
		if err != nil {
			return u, fmt.Errorf("worker shard %d: %w", k, err)
		}
	}
	if j.sums == nil {
		j.sums = sums
	}
	u, err := j.Coordinator.Start(sums)
	if err != nil {
		return u, fmt.Errorf("coordinator: start: %w", err)
	}
	return u, nil
}

// restore moves the job to new roles (Options.RestoreEvery) restored from
// the pieces of the checkpoint under way, all in, and returns the core that
// goes on with them, resumed from the core's snapshot.
func (j *Job[P, R, U, S]) restore(cfg pipeline.Config) (*pipeline.Core[P, R, U, S], error) {
	cut := j.cut
	if err := j.build(); err != nil {
		return nil, err
	}
	for p, s := range j.Schedulers {
		if err := s.(schmp.Snapshotter).Restore(cut.scheds[p]); err != nil {
			return nil, fmt.Errorf("scheduler %d: restore: %w", p, err)
		}
	}
	// The outputs before Start, as the coordinator node of a resumed job
	// makes them (their files are the first coordinator's).
	if _, err := schmp.ModelOutputs(j.Coordinator, j.opts.Out); err != nil {
		return nil, fmt.Errorf("coordinator: outputs: %w", err)
	}
	if _, err := j.start(); err != nil {
		return nil, err
	}
	for k, w := range j.Workers {
		if err := w.(schmp.Snapshotter).Restore(cut.works[k]); err != nil {
			return nil, fmt.Errorf("worker shard %d: restore: %w", k, err)
		}
	}
	if err := j.Coordinator.(schmp.Snapshotter).Restore(cut.coord); err != nil {
		return nil, fmt.Errorf("coordinator: restore: %w", err)
	}
	var back pipeline.Snapshot[U]
	if err := codec.Unmarshal(cut.core, &back); err != nil {
		return nil, fmt.Errorf("core snapshot: %w", err)
	}
	// The workers took every part passed to them before their pieces.
	j.cores, j.scheds = j.newCores(j.Workers, cut.round, true), j.newScheds(j.Schedulers, cut.round)
	j.Restores++
	return pipeline.Resume(cfg, j.Coordinator, j.Coordinator, back, j.opts.Now())
}

// rollback takes the job back to the last checkpoint's pieces
// (Options.RestoreInPlace), restoring the workers and schedulers in place,
// and returns the core that goes on from them.
func (j *Job[P, R, U, S]) rollback(cfg pipeline.Config) (*pipeline.Core[P, R, U, S], error) {
	sv := j.saved
	sv.used = true
	// A role that cannot restore in place (schmp.Rebuilder) is built anew
	// first, as the nodes do.
	parts := len(j.Schedulers)
	for p, s := range j.Schedulers {
		if schmp.RebuildsOnRollback(s) {
			fresh, err := j.prog.NewScheduler(j.ctx, p, parts)
			if err != nil {
				return nil, fmt.Errorf("scheduler %d: %w", p, err)
			}
			j.Schedulers[p], s = fresh, fresh
		}
		if err := s.(schmp.Snapshotter).Restore(sv.scheds[p]); err != nil {
			return nil, fmt.Errorf("scheduler %d: restore in place: %w", p, err)
		}
	}
	for k, w := range j.Workers {
		if schmp.RebuildsOnRollback(w) {
			fresh, err := j.prog.NewWorker(j.ctx, k, len(j.Workers))
			if err == nil {
				_, err = fresh.Describe()
			}
			if err != nil {
				return nil, fmt.Errorf("worker shard %d: %w", k, err)
			}
			j.Workers[k], w = fresh, fresh
		}
		if err := w.(schmp.Snapshotter).Restore(sv.works[k]); err != nil {
			return nil, fmt.Errorf("worker shard %d: restore in place: %w", k, err)
		}
	}
	// What was in flight between the workers is lost with the old run.
	j.cores, j.scheds = j.newCores(j.Workers, sv.round, true), j.newScheds(j.Schedulers, sv.round)
	var err error
	if j.twins, err = j.buildTwins(sv); err != nil {
		return nil, err
	}
	// The coordinator is built anew, as the coordinator node does, and
	// started with the summaries the workers gave first.
	c, err := j.prog.NewCoordinator(j.ctx)
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	j.Coordinator = c
	if _, err := schmp.ModelOutputs(c, j.opts.Out); err != nil {
		return nil, fmt.Errorf("coordinator: outputs: %w", err)
	}
	sums := make([]S, len(j.sums))
	for k, s := range j.sums {
		if sums[k], err = roundTrip(s); err != nil {
			return nil, err
		}
	}
	if _, err := c.Start(sums); err != nil {
		return nil, fmt.Errorf("coordinator: start: %w", err)
	}
	if err := c.(schmp.Snapshotter).Restore(sv.coord); err != nil {
		return nil, fmt.Errorf("coordinator: restore: %w", err)
	}
	var back pipeline.Snapshot[U]
	if err := codec.Unmarshal(sv.core, &back); err != nil {
		return nil, fmt.Errorf("core snapshot: %w", err)
	}
	j.Restores++
	return pipeline.Resume(cfg, c, c, back, j.opts.Now())
}

// plan has scheduler part a.Part's core plan the round that a asks for,
// as a scheduler node does (its checkpoint piece, if asked, first).
func (j *Job[P, R, U, S]) plan(a pipeline.Action[P, U]) (pipeline.Event[P, R, S], error) {
	e := pipeline.Event[P, R, S]{Kind: pipeline.PlanArrived, Round: a.Round, From: a.Part}
	req := a.Request.Message("")
	out, err := request(j.scheds[a.Part], req)
	if err == nil && out.Piece != nil {
		err = j.keep(out.Piece, a.Round, func(b []byte) { j.cut.scheds[a.Part] = b })
	}
	if err == nil && j.twins != nil {
		err = j.twins.schedule(j, a.Part, req, out.Reply)
	}
	if err == nil {
		e.Plan, err = roundTrip(out.Reply.Plan)
	}
	if err == nil {
		e.Info, err = roundTrip(out.Reply.Info)
	}
	if err != nil {
		return e, fmt.Errorf("scheduler %d: round %d: %w", a.Part, a.Round, err)
	}
	return e, nil
}

// request hands core a copy of req, as the coordinator node sends it, and
// returns what it gives.
func request[P any](core *node.Core[P], req protocol.PlanRequest) (node.Output[P], error) {
	req, data, err := message(req)
	if err != nil {
		return node.Output[P]{}, err
	}
	out, drop, err := core.Request(req, core.Hash(data), true)
	if err == nil && drop != nil {
		err = fmt.Errorf("local: the plan request dropped: %w", drop.Err)
	}
	return out, err
}

// keep stores p, a role's piece of the checkpoint under way, which a task
// or request of round asked for, with set.
func (j *Job[P, R, U, S]) keep(p *checkpoint.Taken, round uint64, set func([]byte)) error {
	if j.cut == nil || j.cut.round != p.Round {
		return fmt.Errorf("local: round %d asks for the checkpoint of round %d, not under way", round, p.Round)
	}
	if p.Err != nil {
		return fmt.Errorf("snapshot: %w", p.Err)
	}
	set(append([]byte{}, p.Data...))
	return nil
}

// newScheds returns the cores of scheduler parts scheds, which start after
// round resume.
func (j *Job[P, R, U, S]) newScheds(scheds []schmp.Scheduler[P], resume uint64) []*node.Core[P] {
	cores := make([]*node.Core[P], len(scheds))
	for p, s := range scheds {
		cores[p] = node.NewCore(s, node.CoreConfig{Part: p, Parts: len(scheds), Resume: resume, Checkpoints: j.opts.RestoreEvery > 0})
	}
	return cores
}

// newCores returns the cores of workers, which start after round resume;
// with main, those of the job's workers, whose contract the job checks
// (Options.CheckContract) from their cuts.
func (j *Job[P, R, U, S]) newCores(workers []schmp.Worker[P, R, U, S], resume uint64, main bool) []*worker.Core[P, R, U, S] {
	cores := make([]*worker.Core[P, R, U, S], len(workers))
	if main && j.opts.CheckContract {
		j.cuts = make([]cutSnap, len(workers))
	}
	for k, w := range workers {
		cfg := worker.CoreConfig{Shard: k, Shards: len(workers), Resume: resume, Checkpoints: j.opts.RestoreEvery > 0}
		if main && j.opts.CheckContract {
			cfg.Cut = func(round uint64) { j.cuts[k] = takeCut(w, round) }
		}
		cores[k] = worker.NewCore(w, cfg)
	}
	return cores
}

// task runs the task of a on every worker's core, as a worker node does
// (take the parts passed; the checkpoint piece; apply the updates; report
// if asked; push and pass unless at a check or the stop), and returns
// their answers (none to a stop without a report).
func (j *Job[P, R, U, S]) task(ctx context.Context, a pipeline.Action[P, U]) ([]pipeline.Event[P, R, S], error) {
	task := a.Task.Message("")
	round := task.Round
	for k, core := range j.cores {
		err := give(core, k, task)
		if err == nil && j.twins != nil {
			err = give(j.twins.cores[k], k, task)
		}
		if err == nil {
			err = j.begin(k)
		}
		if err != nil {
			return nil, fmt.Errorf("worker shard %d: round %d: %w", k, round, err)
		}
	}
	if j.opts.AfterApply != nil && int64(a.Through) > j.applied {
		j.applied = int64(a.Through)
		if err := j.opts.AfterApply(a.Through); err != nil {
			return nil, fmt.Errorf("round %d: after the updates of round %d: %w", round, a.Through, err)
		}
	}
	var es []pipeline.Event[P, R, S]
	for k, core := range j.cores {
		e, err := j.finish(ctx, k, core, &task)
		if err != nil {
			return nil, fmt.Errorf("worker shard %d: round %d: %w", k, round, err)
		}
		if e != nil {
			es = append(es, *e)
		}
	}
	return es, nil
}

// give hands core, worker k's, a copy of task with its own updates, as
// the coordinator node sends it.
func give[P, R, U, S any](core *worker.Core[P, R, U, S], k int, task protocol.Task[P, U]) error {
	task.Updates = pipeline.ForShard(task.Updates, k)
	task, data, err := message(task)
	if err != nil {
		return err
	}
	drop, err := core.Task(task, core.Hash(data))
	if err == nil && drop != nil {
		err = fmt.Errorf("local: the task dropped: %w", drop.Err)
	}
	return err
}

// begin has worker k's core begin its task: take its parts, store its
// checkpoint piece, apply the updates. The twin, if any, does too.
func (j *Job[P, R, U, S]) begin(k int) error {
	out, ran, err := j.cores[k].Begin()
	if err == nil && !ran {
		err = stuck(j.cores[k])
	}
	if err != nil {
		return err
	}
	if p := out.Piece; p != nil {
		if err := j.keep(p, p.Round+1, func(b []byte) { j.cut.works[k] = b }); err != nil {
			return err
		}
	}
	if j.twins != nil {
		_, ran, err := j.twins.cores[k].Begin()
		if err == nil && !ran {
			err = stuck(j.twins.cores[k])
		}
		if err != nil {
			return fmt.Errorf("restored anew, it failed where the one restored in place did not: %w", err)
		}
	}
	return nil
}

// stuck says why core cannot begin the task it was given.
func stuck[P, R, U, S any](core *worker.Core[P, R, U, S]) error {
	if round, from, ok := core.Awaiting(); ok {
		return fmt.Errorf("no block (pass) of round %d from worker shard %d", round, from)
	}
	return errors.New("local: the worker cannot begin its task")
}

// finish has worker k's core finish its task t, delivers the part it
// passes, and returns its answer (nil: none). The twin, if any, must give
// the same, and the worker must keep its contract (Options.CheckContract).
func (j *Job[P, R, U, S]) finish(ctx context.Context, k int, core *worker.Core[P, R, U, S], t *protocol.Task[P, U]) (*pipeline.Event[P, R, S], error) {
	var pr probe
	if j.opts.CheckContract {
		var err error
		if pr, err = j.before(core.Worker(), t); err != nil {
			return nil, err
		}
	}
	out, err := core.Finish(ctx)
	if err != nil {
		return nil, err
	}
	if j.twins != nil {
		if err := j.twins.finish(ctx, j, k, out); err != nil {
			return nil, err
		}
	}
	if err := deliver(j.cores, out.Pass); err != nil {
		return nil, err
	}
	var e *pipeline.Event[P, R, S]
	if a := out.Answer; a != nil {
		e = &pipeline.Event[P, R, S]{Kind: pipeline.PartialArrived, Round: a.Round, From: k}
		if a.HasReport {
			e.HasReport, e.Final = true, a.Final
			if e.Report, err = roundTrip(a.Report); err != nil {
				return nil, err
			}
		}
		if !out.Stop && !a.Check {
			if e.Partial, err = roundTrip(a.Partial); err != nil {
				return nil, err
			}
		}
	}
	// The check's own calls come once the answer and the part passed
	// are copies.
	if j.opts.CheckContract {
		if err := j.after(ctx, k, core.Worker(), t, pr, out); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// deliver hands h, a part passed, if any, to its addressee's core, as a
// message carries it.
func deliver[P, R, U, S any](cores []*worker.Core[P, R, U, S], h *worker.Handoff[R]) error {
	if h == nil {
		return nil
	}
	msg, data, err := message(protocol.Pass[R]{Round: h.Round, From: h.From, To: h.To, Part: h.Part})
	if err != nil {
		return err
	}
	core := cores[h.To] // Handoff.To is in range: the core checks it
	drop, err := core.Pass(msg, core.Hash(data))
	if err == nil && drop != nil {
		err = fmt.Errorf("local: the part passed to worker %d dropped: %w", h.To, drop.Err)
	}
	return err
}

// roundTrip returns a copy of v through msgpack, as a message carries it.
func roundTrip[T any](v T) (T, error) {
	out, _, err := message(v)
	return out, err
}

// message returns a copy of v through msgpack, as a message carries it,
// and its bytes, which a core hashes to tell a replay.
func message[T any](v T) (T, []byte, error) {
	var out T
	b, err := codec.Marshal(v)
	if err == nil {
		err = codec.Unmarshal(b, &out)
	}
	if err != nil {
		return out, nil, fmt.Errorf("local: msgpack: %w", err)
	}
	return out, b, nil
}
