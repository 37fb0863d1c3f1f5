// Package simnet runs a job on a simulated network: the roles' cores (the
// coordinator's pipeline core behind its coordinator.Gate, the scheduler
// parts' and the workers' cores) exchange the messages that their nodes
// exchange over NATS, encoded as on the wire, while a seeded schedule of
// faults duplicates them, delays them, drops them, replays old ones, sends
// them under another run, adds garbage, and cuts nodes off for a while.
// Time is virtual: a run takes microseconds, and the same seed gives the
// same run.
//
// The runtime's promise, which the tests check under many seeds, is that
// such a job ends with the model of the undisturbed job, bit for bit, or
// with a failure that its rules name (a deadline missed, a conflict),
// never with another model and never hanging.
//
// What the nodes add around the cores is not simulated: joins, heartbeats,
// resends after a reconnect, spares, checkpoints. A message lost is lost
// for good here, where a node would send it again after a reconnect.
package simnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/worker"
)

// Faults are the chances of the faults that a run's seed draws, per
// message sent (a partition, per message delivered).
type Faults struct {
	// Duplicate sends a message twice; Drop loses it; Replay sends it
	// again later, after its round has moved on; Foreign sends a copy
	// under another run's id; Garbage sends random bytes besides.
	Duplicate, Drop, Replay, Foreign, Garbage float64
	// Delay is the most a message is held back beyond the network's
	// latency; messages between two nodes keep their order, as NATS
	// keeps it. Reorder is the chance that one overtakes the others.
	Delay   time.Duration
	Reorder float64
	// Partition cuts a node off, as a message reaches it, until up to
	// PartitionFor later: the message, what the node sends and what is
	// sent to it wait until then.
	Partition    float64
	PartitionFor time.Duration
}

// latency is the time every message takes.
const latency = 100 * time.Microsecond

// Outcome is how a run ended.
type Outcome[P, R, U, S any] struct {
	// Coordinator is the app's coordinator: after a run that succeeded,
	// it holds the model.
	Coordinator schmp.Coordinator[P, R, U, S]
	// Status is the pipeline's.
	Status pipeline.Status
	// Err is the job's failure; nil if it succeeded.
	Err error
	// Faults counts the faults injected, by kind.
	Faults map[string]int
}

// endpoint names a node: the coordinator, scheduler part i, worker i.
type endpoint struct {
	role  string
	place int
}

var coord = endpoint{role: "coordinator"}

// envelope is a message in flight.
type envelope struct {
	from, to endpoint
	data     []byte
	at       time.Duration
	seq      int
	held     bool // held back by a partition once already
}

// sim is one run.
type sim[P, R, U, S any] struct {
	rng    *rand.Rand
	faults Faults
	now    time.Duration
	seq    int
	queue  []envelope
	last   map[[2]endpoint]time.Duration // the last delivery on a link
	cut    map[endpoint]time.Duration    // the nodes cut off, until when
	sent   []envelope                    // what was sent, for replays
	counts map[string]int

	core    *pipeline.Core[P, R, U, S]
	gate    *coordinator.Gate[P, R, U, S]
	app     schmp.Coordinator[P, R, U, S]
	scheds  []*node.Core[P]
	workers []*worker.Core[P, R, U, S]
	dead    map[endpoint]bool
	// answers are a worker's partials sent, by task, to answer a replayed
	// task again as its node does.
	answers map[endpoint]map[[2]uint64][]byte
}

// run is the job's run id; foreign is another run's.
const (
	run     = "run"
	foreign = "other"
)

// start is the virtual clock's origin.
var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Run runs prog's job of cfg (Workers workers, Parts scheduler parts;
// Config.Timeout is virtual time) on a network with faults drawn from
// seed. An error is the setup's; the job's own failure is the Outcome's.
func Run[P, R, U, S any](ctx context.Context, prog schmp.Program[P, R, U, S], cfg pipeline.Config, faults Faults, seed uint64) (*Outcome[P, R, U, S], error) {
	s := &sim[P, R, U, S]{
		rng: rand.New(rand.NewPCG(seed, 0x5eed)), faults: faults,
		last: map[[2]endpoint]time.Duration{}, cut: map[endpoint]time.Duration{}, counts: map[string]int{},
		dead: map[endpoint]bool{}, answers: map[endpoint]map[[2]uint64][]byte{},
	}
	parts := max(cfg.Parts, 1)
	cfg.Parts = parts
	var sums []S
	for p := range parts {
		sc, err := prog.NewScheduler(ctx, p, parts)
		if err != nil {
			return nil, fmt.Errorf("scheduler %d: %w", p, err)
		}
		s.scheds = append(s.scheds, node.NewCore(sc, node.CoreConfig{Part: p, Parts: parts}))
	}
	for k := range cfg.Workers {
		w, err := prog.NewWorker(ctx, k, cfg.Workers)
		if err != nil {
			return nil, fmt.Errorf("worker shard %d: %w", k, err)
		}
		sum, err := w.Describe()
		if err == nil {
			sum, err = roundTrip(sum)
		}
		if err != nil {
			return nil, fmt.Errorf("worker shard %d: %w", k, err)
		}
		sums = append(sums, sum)
		s.workers = append(s.workers, worker.NewCore(w, worker.CoreConfig{Shard: k, Shards: cfg.Workers}))
	}
	app, err := prog.NewCoordinator(ctx)
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	s.app = app
	if _, ok := app.(schmp.Finisher[S]); ok {
		cfg.Final = true
	}
	if s.core, err = pipeline.New(cfg, app, app); err != nil {
		return nil, err
	}
	s.gate = coordinator.NewGate[P, R, U, S](parts, cfg.Workers)
	u, err := app.Start(sums)
	if err != nil {
		return nil, fmt.Errorf("coordinator: start: %w", err)
	}
	s.core.Start(start, u)
	out := &Outcome[P, R, U, S]{Coordinator: app, Faults: s.counts}
	out.Err = s.loop(ctx)
	out.Status = s.core.Status()
	if out.Err == nil {
		if f, ok := app.(schmp.Finisher[S]); ok {
			out.Err = f.Finish(s.core.Finals())
		}
	}
	return out, nil
}

// loop runs the job until it is done or fails.
func (s *sim[P, R, U, S]) loop(ctx context.Context) error {
	for steps := 0; ; steps++ {
		if steps > 1_000_000 {
			return errors.New("simnet: a million deliveries and the job goes on")
		}
		done, err := s.perform()
		if done || err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		deadline, _, awaits := s.core.Deadline()
		if len(s.queue) == 0 && !awaits {
			return errors.New("simnet: the job is stuck: nothing in flight, nothing awaited")
		}
		i := s.next()
		if i < 0 || awaits && start.Add(s.queue[i].at).After(deadline) {
			// Nothing comes before the deadline: tick past it.
			s.now = deadline.Sub(start)
			if err := s.core.Step(pipeline.Event[P, R, S]{Kind: pipeline.Tick, Time: deadline}); err != nil {
				return err
			}
			continue
		}
		e := s.queue[i]
		s.queue = slices.Delete(s.queue, i, i+1)
		s.now = max(s.now, e.at)
		if err := s.deliver(e); err != nil {
			return err
		}
	}
}

// next returns the index of the next message to deliver, -1 if none.
func (s *sim[P, R, U, S]) next() int {
	best := -1
	for i, e := range s.queue {
		if best < 0 || e.at < s.queue[best].at || e.at == s.queue[best].at && e.seq < s.queue[best].seq {
			best = i
		}
	}
	return best
}

// chance draws an event of probability p.
func (s *sim[P, R, U, S]) chance(p float64) bool { return p > 0 && s.rng.Float64() < p }

// send puts data from one node to another on the network, with the
// faults drawn.
func (s *sim[P, R, U, S]) send(from, to endpoint, data []byte) {
	f := s.faults
	if s.chance(f.Drop) {
		s.counts["drop"]++
	} else {
		s.put(from, to, data, false)
	}
	if s.chance(f.Duplicate) {
		s.counts["duplicate"]++
		s.put(from, to, data, false)
	}
	if s.chance(f.Foreign) {
		s.counts["foreign"]++
		s.put(from, to, reRun(data), false)
	}
	if s.chance(f.Garbage) {
		s.counts["garbage"]++
		junk := make([]byte, 1+s.rng.IntN(64))
		for i := range junk {
			junk[i] = byte(s.rng.UintN(256))
		}
		s.put(from, to, junk, false)
	}
	if len(s.sent) > 0 && s.chance(f.Replay) {
		s.counts["replay"]++
		old := s.sent[s.rng.IntN(len(s.sent))]
		s.put(old.from, old.to, old.data, true)
	}
	s.sent = append(s.sent, envelope{from: from, to: to, data: data})
}

// put queues one message: after the latency and a delay, and after the
// messages on its link unless it overtakes them (or is a replay, which
// comes from elsewhere).
func (s *sim[P, R, U, S]) put(from, to endpoint, data []byte, replay bool) {
	at := s.now + latency
	if s.faults.Delay > 0 {
		at += time.Duration(s.rng.Int64N(int64(s.faults.Delay)))
	}
	for _, n := range []endpoint{from, to} {
		if until, ok := s.cut[n]; ok && until > at {
			at = until
		}
	}
	link := [2]endpoint{from, to}
	if s.chance(s.faults.Reorder) {
		s.counts["reorder"]++
	} else if !replay {
		at = max(at, s.last[link])
		s.last[link] = at
	}
	s.seq++
	s.queue = append(s.queue, envelope{from: from, to: to, data: data, at: at, seq: s.seq})
}

// reRun returns a copy of a message under another run's id: what a node
// of another run of the job's name would send.
func reRun(data []byte) []byte {
	var m map[string]any
	if codec.Unmarshal(data, &m) != nil {
		return data
	}
	m["run"] = foreign
	b, err := codec.Marshal(m)
	if err != nil {
		return data
	}
	return b
}

// deliver hands e to its addressee, cutting the addressee off first if
// the schedule says so.
func (s *sim[P, R, U, S]) deliver(e envelope) error {
	if !e.held && s.chance(s.faults.Partition) && s.faults.PartitionFor > 0 {
		s.counts["partition"]++
		s.cut[e.to] = s.now + time.Duration(s.rng.Int64N(int64(s.faults.PartitionFor)))
	}
	if until := s.cut[e.to]; until > s.now {
		// It comes once the cut heals, in order.
		s.seq++
		e.at, e.seq, e.held = until, s.seq, true
		s.queue = append(s.queue, e)
		return nil
	}
	if s.dead[e.to] {
		return nil
	}
	switch e.to.role {
	case coord.role:
		return s.toCoordinator(e)
	case protocol.RoleScheduler:
		s.toScheduler(e)
	default:
		s.toWorker(e)
	}
	return nil
}

// perform performs the core's actions; done is set once the job is.
func (s *sim[P, R, U, S]) perform() (done bool, err error) {
	for _, a := range s.core.Ready() {
		s.gate.Done(a)
		switch a.Kind {
		case pipeline.AskPlan:
			req := a.Request.Message(run)
			data, err := codec.Marshal(req)
			if err != nil {
				return false, err
			}
			s.send(coord, endpoint{protocol.RoleScheduler, a.Part}, data)
		case pipeline.SendTask:
			task := a.Task.Message(run)
			s.gate.Sent(task)
			split := pipeline.Split(task.Updates)
			all := task.Updates
			for k := range s.workers {
				if split {
					task.Split, task.Shard, task.Updates = true, k, pipeline.ForShard(all, k)
				}
				data, err := codec.Marshal(task)
				if err != nil {
					return false, err
				}
				s.send(coord, endpoint{protocol.RoleWorker, k}, data)
			}
			if task.Stop {
				// The scheduler parts stop too.
				for p := range s.scheds {
					data, err := codec.Marshal(protocol.PlanRequest{Header: protocol.Header{Type: protocol.TypePlanRequest, Run: run}, Stop: true})
					if err != nil {
						return false, err
					}
					s.send(coord, endpoint{protocol.RoleScheduler, p}, data)
				}
			}
		case pipeline.JobDone:
			done = true
		}
	}
	return done, nil
}

// toCoordinator admits a plan or a partial through the gate and steps the
// core with it.
func (s *sim[P, R, U, S]) toCoordinator(e envelope) error {
	h := s.gate.Hash(e.data)
	var (
		adm coordinator.Admission[P, R, S]
		err error
	)
	if e.from.role == protocol.RoleScheduler {
		var rep protocol.PlanReply[P]
		if protocol.Open(e.data, &rep, protocol.TypePlanReply, run) != nil {
			return nil // garbage, or another run's: dropped
		}
		adm, err = s.gate.Plan(rep, h)
	} else {
		var p protocol.Partial[R, S]
		if protocol.Open(e.data, &p, protocol.TypePartial, run) != nil {
			return nil
		}
		adm, err = s.gate.Partial(p, h)
	}
	if err != nil || adm.Drop != nil {
		return err
	}
	adm.Event.Time = start.Add(s.now)
	switch err := s.core.Step(adm.Event); {
	case errors.Is(err, pipeline.ErrRefused):
		return nil
	case err != nil:
		return err
	}
	adm.Take()
	return nil
}

// toScheduler has a scheduler part's core take a plan request.
func (s *sim[P, R, U, S]) toScheduler(e envelope) {
	var req protocol.PlanRequest
	if protocol.Open(e.data, &req, protocol.TypePlanRequest, run) != nil {
		return
	}
	c := s.scheds[e.to.place]
	out, drop, err := c.Request(req, c.Hash(e.data), e.from == coord)
	switch {
	case out.Stop || errors.Is(err, protocol.ErrAborted):
		s.dead[e.to] = true
		return
	case drop != nil && drop.Reason == protocol.DropDuplicate:
		// The node answers a request again with the plan it sent; the
		// gate drops it as a replay. Sending the reply again is the
		// node's business: here it is the same bytes, so nothing is
		// lost by not sending it.
		return
	case drop != nil:
		return
	case out.Reply == nil:
		// An invalid request ends the part; the coordinator's deadline
		// names it.
		s.dead[e.to] = true
		return
	}
	r := out.Reply
	rep := protocol.PlanReply[P]{Header: protocol.Header{Type: protocol.TypePlanReply, Run: run}, Round: r.Round, Part: e.to.place, Plan: r.Plan, Info: r.Info}
	if r.Err != nil {
		rep.Err = r.Err.Error()
		s.dead[e.to] = true
	}
	if data, err := codec.Marshal(rep); err == nil {
		s.send(e.to, coord, data)
	}
}

// toWorker has a worker's core take a task or a part passed, runs what
// can run, and sends what it gives.
func (s *sim[P, R, U, S]) toWorker(e envelope) {
	c := s.workers[e.to.place]
	var err error
	if e.from == coord {
		var t protocol.Task[P, U]
		if protocol.Open(e.data, &t, protocol.TypeTask, run) != nil {
			return
		}
		var drop *protocol.Drop
		drop, err = c.Task(t, c.Hash(e.data))
		if drop != nil && drop.Reason == protocol.DropDuplicate {
			// Answered again, as the node does.
			if data, ok := s.answers[e.to][[2]uint64{t.Round, b2u(t.Check)}]; ok {
				s.send(e.to, coord, data)
			}
		}
	} else {
		var p protocol.Pass[R]
		if protocol.Open(e.data, &p, protocol.TypePass, run) != nil {
			return
		}
		_, err = c.Pass(p, c.Hash(e.data))
	}
	if err != nil {
		// The worker ends; the coordinator's deadline names it.
		s.dead[e.to] = true
		return
	}
	for {
		out, ran, err := c.Step(context.Background())
		if !ran {
			return
		}
		if h := out.Pass; h != nil && err == nil {
			m := protocol.Pass[R]{Header: protocol.Header{Type: protocol.TypePass, Run: run}, Round: h.Round, From: h.From, To: h.To, Part: h.Part}
			if data, merr := codec.Marshal(m); merr == nil {
				s.send(e.to, endpoint{protocol.RoleWorker, h.To}, data)
			}
		}
		if a := out.Answer; a != nil {
			p := protocol.Partial[R, S]{Header: protocol.Header{Type: protocol.TypePartial, Run: run}, Round: a.Round, Check: a.Check, Final: a.Final,
				Shard: e.to.place, Partial: a.Partial, Report: a.Report, HasReport: a.HasReport}
			if a.Err != nil {
				p.Err = a.Err.Error()
			}
			if data, merr := codec.Marshal(p); merr == nil {
				if s.answers[e.to] == nil {
					s.answers[e.to] = map[[2]uint64][]byte{}
				}
				s.answers[e.to][[2]uint64{a.Round, b2u(a.Check)}] = data
				s.send(e.to, coord, data)
			}
		}
		if err != nil || out.Stop {
			s.dead[e.to] = true
			return
		}
	}
}

// b2u is 1 for true.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// roundTrip returns a copy of v through msgpack.
func roundTrip[T any](v T) (T, error) {
	var out T
	b, err := codec.Marshal(v)
	if err == nil {
		err = codec.Unmarshal(b, &out)
	}
	return out, err
}
