package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/strads-go/strads/protocol"
)

// ring is a worker that logs its calls and passes its push of every round
// to the next worker of a ring, as the static rotation does.
type ring struct {
	shard, shards int
	state         int
	log           []string
}

func (r *ring) Describe() (int, error) { return r.shard, nil }
func (r *ring) Apply(u int) error {
	r.state += u
	r.log = append(r.log, fmt.Sprintf("apply %d", u))
	return nil
}
func (r *ring) Push(_ context.Context, round uint64, plan int) (int, error) {
	r.log = append(r.log, fmt.Sprintf("push %d plan %d", round, plan))
	return r.state*10 + plan, nil
}
func (r *ring) Report() (int, error) {
	r.log = append(r.log, "report")
	return r.state, nil
}
func (r *ring) Snapshot() ([]byte, error) { return []byte{byte(r.state)}, nil }
func (r *ring) Restore(b []byte) error    { r.state = int(b[0]); return nil }

// passer is a ring worker that passes.
type passer struct{ *ring }

func (p passer) Pass(round uint64, r int) (coord, part int, to int, ok bool) {
	return r, r + 1, (p.shard + 1) % p.shards, true
}
func (p passer) Awaits(uint64) (int, bool) { return (p.shard + p.shards - 1) % p.shards, true }
func (p passer) Take(round uint64, from int, part int) error {
	p.state += part
	p.log = append(p.log, fmt.Sprintf("take %d from %d: %d", round, from, part))
	return nil
}

// tasks returns the tasks of a job of rounds rounds (a check before round
// check, a checkpoint piece asked at round ckpt+1, reports every other
// round) and its stop, each task with the updates of the round before.
func tasks(rounds, check, ckpt uint64) []protocol.Task[int, int] {
	var ts []protocol.Task[int, int]
	for r := uint64(1); r <= rounds; r++ {
		if r == check {
			ts = append(ts, protocol.Task[int, int]{Round: r, Check: true, Report: true, Updates: []int{int(r)}})
		}
		t := protocol.Task[int, int]{Round: r, Plan: int(r) * 3, Report: r%2 == 0}
		if r != check {
			t.Updates = []int{int(r)}
		}
		if r == ckpt+1 {
			t.Checkpoint = ckpt
		}
		ts = append(ts, t)
	}
	return append(ts, protocol.Task[int, int]{Round: rounds + 1, Stop: true, Report: true, Final: true, Updates: []int{7}})
}

// hash returns a hash of t for Core.Task: the same task, the same hash.
func hash(t protocol.Task[int, int]) uint64 {
	h := uint64(1)
	for _, c := range fmt.Sprintf("%+v", t) {
		h = h*1099511628211 ^ uint64(c)
	}
	return h | 1
}

// drive feeds the cores the tasks, each to every core, and the parts they
// pass, in an order that rng shuffles (nil: in order), with duplicates,
// and steps them until they stop. It returns every core's answers.
func drive(t *testing.T, cores []*Core[int, int, int, int], ts []protocol.Task[int, int], rng *rand.Rand) [][]Answer[int, int] {
	t.Helper()
	type msg struct {
		to   int
		task *protocol.Task[int, int]
		pass *protocol.Pass[int]
	}
	var queue []msg
	for _, task := range ts {
		for k := range cores {
			queue = append(queue, msg{to: k, task: &task})
		}
	}
	answers := make([][]Answer[int, int], len(cores))
	stopped := make([]bool, len(cores))
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 100000 {
			t.Fatal("the cores do not stop")
		}
		i := 0
		if rng != nil {
			// Mostly in order, sometimes ahead; a check and the task of
			// its round travel on one subject, in order.
			i = min(rng.IntN(4), len(queue)-1)
			if m := queue[i]; m.task != nil && !m.task.Check && slices.ContainsFunc(queue[:i], func(e msg) bool {
				return e.to == m.to && e.task != nil && e.task.Check && e.task.Round == m.task.Round
			}) {
				i = 0
			}
			if rng.IntN(8) == 0 {
				queue = append(queue, queue[i]) // a duplicate, later
			}
		}
		m := queue[i]
		queue = slices.Delete(queue, i, i+1)
		c := cores[m.to]
		var d *protocol.Drop
		var err error
		if m.task != nil {
			d, err = c.Task(*m.task, hash(*m.task))
		} else {
			d, err = c.Pass(*m.pass, uint64(m.pass.Round)<<8|uint64(m.pass.From)|1)
		}
		if err != nil {
			t.Fatalf("worker %d: %v", m.to, err)
		}
		if d != nil && (d.Reason != protocol.DropDuplicate || rng == nil) && !stopped[m.to] {
			t.Fatalf("worker %d: dropped: %s: %v", m.to, d.Reason, d.Err)
		}
		for {
			out, ran, err := c.Step(context.Background())
			if err != nil {
				t.Fatalf("worker %d: %v", m.to, err)
			}
			if !ran {
				break
			}
			if h := out.Pass; h != nil {
				queue = append(queue, msg{to: h.To, pass: &protocol.Pass[int]{Round: h.Round, From: h.From, To: h.To, Part: h.Part}})
			}
			if out.Answer != nil {
				answers[m.to] = append(answers[m.to], *out.Answer)
			}
			stopped[m.to] = stopped[m.to] || out.Stop
		}
	}
	for k, s := range stopped {
		if !s {
			t.Fatalf("worker %d did not stop", k)
		}
	}
	return answers
}

// TestCoreOrder checks that a worker's calls, answers and state depend on
// the tasks and the parts passed alone, never on the order they come in or
// on duplicates: 300 random orders against the order sent, with and
// without passing.
func TestCoreOrder(t *testing.T) {
	for _, pass := range []bool{false, true} {
		t.Run(fmt.Sprintf("pass=%v", pass), func(t *testing.T) {
			build := func() ([]*Core[int, int, int, int], []*ring) {
				var cores []*Core[int, int, int, int]
				var rings []*ring
				for k := range 3 {
					r := &ring{shard: k, shards: 3}
					rings = append(rings, r)
					if pass {
						cores = append(cores, NewCore[int, int, int, int](passer{r}, CoreConfig{Shard: k, Shards: 3, Checkpoints: true}))
					} else {
						cores = append(cores, NewCore[int, int, int, int](r, CoreConfig{Shard: k, Shards: 3, Checkpoints: true}))
					}
				}
				return cores, rings
			}
			ts := tasks(12, 5, 8)
			cores, rings := build()
			want := drive(t, cores, ts, nil)
			for seed := range uint64(300) {
				cores, got := build()
				answers := drive(t, cores, ts, rand.New(rand.NewPCG(seed, 1)))
				for k := range rings {
					if !slices.Equal(got[k].log, rings[k].log) {
						t.Fatalf("seed %d, worker %d: calls\n%v\nwant\n%v", seed, k, got[k].log, rings[k].log)
					}
					if !slices.Equal(answers[k], want[k]) {
						t.Fatalf("seed %d, worker %d: answers %v, want %v", seed, k, answers[k], want[k])
					}
				}
			}
			if pass && !slices.ContainsFunc(rings[1].log, func(s string) bool { return strings.HasPrefix(s, "take 11 from 0") }) {
				t.Errorf("worker 1 took no part of round 11 from worker 0: %v", rings[1].log)
			}
		})
	}
}

// TestCoreTasks checks what a core does with single tasks that no
// coordinator sends, or that end the worker.
func TestCoreTasks(t *testing.T) {
	cases := []struct {
		name   string
		first  []protocol.Task[int, int] // taken and run first
		task   protocol.Task[int, int]
		drop   string
		err    error
		errAs  bool // err is a *protocol.RollbackError
		errMsg string
	}{
		{name: "a round run", first: []protocol.Task[int, int]{{Round: 1}, {Round: 2}}, task: protocol.Task[int, int]{Round: 1, Check: true}, drop: protocol.DropUnexpected},
		{name: "a replay", first: []protocol.Task[int, int]{{Round: 1}}, task: protocol.Task[int, int]{Round: 1}, drop: protocol.DropDuplicate},
		{name: "far ahead", task: protocol.Task[int, int]{Round: maxEarly + 1}, drop: protocol.DropUnexpected},
		{name: "another shard's", task: protocol.Task[int, int]{Round: 1, Split: true, Shard: 1}, drop: protocol.DropUnexpected},
		{name: "a conflict", first: []protocol.Task[int, int]{{Round: 1}}, task: protocol.Task[int, int]{Round: 1, Plan: 4}, err: protocol.ErrConflict},
		{name: "an early conflict", first: []protocol.Task[int, int]{{Round: 3}}, task: protocol.Task[int, int]{Round: 3, Plan: 4}, err: protocol.ErrConflict},
		{name: "an abort", task: protocol.Task[int, int]{Abort: "disk full"}, err: protocol.ErrAborted, errMsg: "disk full"},
		{name: "a rollback", task: protocol.Task[int, int]{Rollback: &protocol.Rollback{Round: 4, Run: "r2"}}, errAs: true},
		{name: "invalid", task: protocol.Task[int, int]{Round: 2, Check: true, Stop: true}, errMsg: "both a check and a stop"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCore[int, int, int, int](&ring{}, CoreConfig{Shard: 0, Shards: 2})
			for _, f := range tc.first {
				if d, err := c.Task(f, hash(f)); d != nil || err != nil {
					t.Fatalf("task %+v: %v, %v", f, d, err)
				}
				for {
					if _, ran, err := c.Step(context.Background()); err != nil {
						t.Fatal(err)
					} else if !ran {
						break
					}
				}
			}
			d, err := c.Task(tc.task, hash(tc.task))
			var rb *protocol.RollbackError
			switch {
			case tc.drop != "" && (d == nil || d.Reason != tc.drop || err != nil):
				t.Fatalf("got %v, %v; want a drop for %s", d, err, tc.drop)
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Fatalf("error %v, want %v", err, tc.err)
			case tc.errAs && !errors.As(err, &rb):
				t.Fatalf("error %v, want a rollback", err)
			case tc.errMsg != "" && (err == nil || !strings.Contains(err.Error(), tc.errMsg)):
				t.Fatalf("error %v, want one saying %q", err, tc.errMsg)
			}
		})
	}
}

// TestCoreAwaiting checks that a task waits for the part it awaits, says
// which, drops parts nobody awaits, and that a checkpoint asked of a job
// that takes none is dropped, not taken.
func TestCoreAwaiting(t *testing.T) {
	r := &ring{shard: 1, shards: 3}
	c := NewCore[int, int, int, int](passer{r}, CoreConfig{Shard: 1, Shards: 3})
	run := func(task protocol.Task[int, int]) Output[int, int] {
		t.Helper()
		if d, err := c.Task(task, hash(task)); d != nil || err != nil {
			t.Fatalf("task %+v: %v, %v", task, d, err)
		}
		out, ran, err := c.Step(context.Background())
		if err != nil || !ran {
			t.Fatalf("round %d: ran %v, %v", task.Round, ran, err)
		}
		return out
	}
	out := run(protocol.Task[int, int]{Round: 1, Plan: 2})
	if out.Pass == nil || out.Pass.To != 2 || out.Pass.Part != 3 {
		t.Fatalf("round 1 passes %+v, want part 3 to worker 2", out.Pass)
	}
	// A part from a worker that round 1 does not await, before it is due.
	if d, err := c.Pass(protocol.Pass[int]{Round: 1, From: 2, To: 1, Part: 5}, 11); d != nil || err != nil {
		t.Fatalf("an early part: %v, %v", d, err)
	}
	task := protocol.Task[int, int]{Round: 2, Checkpoint: 1}
	if d, err := c.Task(task, hash(task)); d != nil || err != nil {
		t.Fatal(d, err)
	}
	if _, ran, err := c.Step(context.Background()); ran || err != nil {
		t.Fatalf("round 2 ran (%v) before the part it awaits", err)
	}
	if round, from, ok := c.Awaiting(); !ok || round != 1 || from != 0 {
		t.Fatalf("awaiting %d from %d (%v), want round 1 from worker 0", round, from, ok)
	}
	if d, err := c.Pass(protocol.Pass[int]{Round: 1, From: 2, To: 1, Part: 6}, 13); d == nil || d.Reason != protocol.DropUnexpected || err != nil {
		t.Fatalf("a part from the wrong worker: %v, %v", d, err)
	}
	if d, err := c.Pass(protocol.Pass[int]{Round: 1, From: 0, To: 1, Part: 7}, 17); d != nil || err != nil {
		t.Fatalf("the part awaited: %v, %v", d, err)
	}
	if _, err := c.Pass(protocol.Pass[int]{Round: 1, From: 0, To: 1, Part: 8}, 19); !errors.Is(err, protocol.ErrConflict) {
		t.Fatalf("another part of the same round: %v, want a conflict", err)
	}
	out, ran, err := c.Step(context.Background())
	if err != nil || !ran {
		t.Fatalf("round 2: ran %v, %v", ran, err)
	}
	if out.Piece != nil || len(out.Drops) != 2 {
		t.Fatalf("round 2: piece %v, drops %v; want no piece, the early part and the checkpoint dropped", out.Piece, out.Drops)
	}
	if want := []string{"push 1 plan 2", "take 1 from 0: 7", "push 2 plan 0"}; !slices.Equal(r.log, want) {
		t.Fatalf("calls %v, want %v", r.log, want)
	}
}

// TestCoreCut checks that CoreConfig.Cut is called once for each task
// that begins, at its cut: after the parts passed to the worker are taken,
// before the task's updates are applied; a task that waits for a part has
// no cut yet.
func TestCoreCut(t *testing.T) {
	r := &ring{shard: 1, shards: 3}
	c := NewCore[int, int, int, int](passer{r}, CoreConfig{Shard: 1, Shards: 3, Cut: func(round uint64) {
		r.log = append(r.log, fmt.Sprintf("cut %d", round))
	}})
	steps := []struct {
		task *protocol.Task[int, int]
		pass *protocol.Pass[int]
		ran  bool
		log  []string // the calls it adds
	}{
		{task: &protocol.Task[int, int]{Round: 1, Plan: 2, Updates: []int{1}}, ran: true,
			log: []string{"cut 1", "apply 1", "push 1 plan 2"}},
		{task: &protocol.Task[int, int]{Round: 2, Report: true, Updates: []int{2}}},
		{pass: &protocol.Pass[int]{Round: 1, From: 0, To: 1, Part: 7}, ran: true,
			log: []string{"take 1 from 0: 7", "cut 2", "apply 2", "report", "push 2 plan 0"}},
		{task: &protocol.Task[int, int]{Round: 3, Check: true, Report: true, Updates: []int{3}}},
		{pass: &protocol.Pass[int]{Round: 2, From: 0, To: 1, Part: 5}, ran: true,
			log: []string{"take 2 from 0: 5", "cut 3", "apply 3", "report"}},
	}
	for i, s := range steps {
		var d *protocol.Drop
		var err error
		if s.task != nil {
			d, err = c.Task(*s.task, hash(*s.task))
		} else {
			d, err = c.Pass(*s.pass, uint64(i+1))
		}
		if d != nil || err != nil {
			t.Fatalf("step %d: %v, %v", i, d, err)
		}
		before := len(r.log)
		_, ran, err := c.Step(context.Background())
		if err != nil || ran != s.ran {
			t.Fatalf("step %d: ran %v (%v), want %v", i, ran, err, s.ran)
		}
		if got := r.log[before:]; !slices.Equal(got, s.log) {
			t.Fatalf("step %d: calls %v, want %v", i, got, s.log)
		}
	}
}
