package job_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/schmp"
)

// freeWalkScheduler is the walk's scheduler for rounds in flight: part p of
// P plans the variables j with j mod P = p, never one that a round of its
// own in flight updates (planned, not yet fed back), so that no variable
// is in two rounds in flight. Which ones are in flight is state that a
// resume must restore too.
type freeWalkScheduler struct {
	walkScheduler
	own  []int
	busy []int // planned, not fed back yet, in the order planned
}

func (s *freeWalkScheduler) Schedule(round uint64, fb []schmp.Feedback) (walkPlan, schmp.PlanInfo, error) {
	for _, f := range fb {
		for _, v := range f.Vars {
			s.busy = slices.DeleteFunc(s.busy, func(j int) bool { return j == int(v) })
		}
	}
	if len(s.busy) >= len(s.own) {
		return walkPlan{}, schmp.PlanInfo{}, fmt.Errorf("round %d: all %d variables in flight", round, len(s.own))
	}
	j := s.own[s.rng.IntN(len(s.own))]
	for slices.Contains(s.busy, j) {
		j = s.own[s.rng.IntN(len(s.own))]
	}
	s.busy = append(s.busy, j)
	return walkPlan{j}, schmp.PlanInfo{Vars: []int32{int32(j)}, Candidates: len(s.own), Selected: 1}, nil
}

type freeWalkState struct {
	RNG  []byte `msgpack:"rng"`
	Busy []int  `msgpack:"busy"`
}

func (s *freeWalkScheduler) Snapshot() ([]byte, error) {
	rng, err := s.src.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return codec.Marshal(freeWalkState{RNG: rng, Busy: s.busy})
}

func (s *freeWalkScheduler) Restore(b []byte) error {
	var st freeWalkState
	if err := codec.Unmarshal(b, &st); err != nil {
		return err
	}
	s.busy = st.Busy
	return s.src.UnmarshalBinary(st.RNG)
}

// slowWalkWorker is a walk worker whose Push takes a millisecond, so that
// checkpoints, which take a few to store, are committed as the rounds go.
type slowWalkWorker struct{ *walkWorker }

func (w slowWalkWorker) Push(ctx context.Context, round uint64, p walkPlan) (walkPartial, error) {
	time.Sleep(time.Millisecond)
	return w.walkWorker.Push(ctx, round, p)
}

// freeWalkProgram is walkProgram with freeWalkScheduler and slowWalkWorker.
func freeWalkProgram() schmp.Program[walkPlan, walkPartial, walkUpdate, walkSummary] {
	prog := walkProgram()
	newWorker := prog.NewWorker
	prog.NewWorker = func(ctx context.Context, shard, shards int) (schmp.Worker[walkPlan, walkPartial, walkUpdate, walkSummary], error) {
		w, err := newWorker(ctx, shard, shards)
		if err != nil {
			return nil, err
		}
		return slowWalkWorker{w.(*walkWorker)}, nil
	}
	newSched := prog.NewScheduler
	prog.NewScheduler = func(ctx context.Context, part, parts int) (schmp.Scheduler[walkPlan], error) {
		s, err := newSched(ctx, part, parts)
		if err != nil {
			return nil, err
		}
		f := &freeWalkScheduler{walkScheduler: *s.(*walkScheduler)}
		for j := part; j < walkVars; j += parts {
			f.own = append(f.own, j)
		}
		return f, nil
	}
	return prog
}

// depthWalkJob runs a walk job (freeWalkProgram) of 2 workers and parts
// scheduler parts at depth, for 60 rounds, reporting every 3, with its
// checkpoints in store; interruptAt > 0 interrupts it at that progress
// line. It returns the model and the metrics CSV.
func depthWalkJob(t *testing.T, depth, parts int, store string, every uint64, resume bool, interruptAt int) (model, metrics []byte, res *coordinator.Result, err error) {
	t.Helper()
	dir := t.TempDir()
	out, csv := filepath.Join(dir, "model"), filepath.Join(dir, "metrics.csv")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	co := coordinator.Options{Workers: 2, Schedulers: parts, Depth: depth, MaxRounds: 60, ReportEvery: 3, Out: out, Metrics: csv,
		Timeout: 10 * time.Second, CheckpointEvery: every, Resume: resume}
	if interruptAt > 0 {
		testhelper.Interrupt(&co, interruptAt, cancel)
	}
	res, err = job.Run(ctx, freeWalkProgram(), job.Options{Job: "walk", Store: store, Timeout: 10 * time.Second, Coordinator: co})
	if err != nil {
		return nil, nil, res, err
	}
	if model, err = os.ReadFile(out); err == nil {
		metrics, err = os.ReadFile(csv)
	}
	return model, metrics, res, err
}

// objectives returns the rounds and objectives of a metrics CSV, without
// the times, which differ from run to run.
func objectives(t *testing.T, csv []byte) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	head := strings.Split(lines[0], ",")
	round, obj := slices.Index(head, "round"), slices.Index(head, "objective")
	if round < 0 || obj < 0 {
		t.Fatalf("metrics header %q: no round or objective", lines[0])
	}
	var b strings.Builder
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		fmt.Fprintf(&b, "%s %s\n", f[round], f[obj])
	}
	return b.String()
}

// TestResumeDepth interrupts jobs with rounds in flight (depth 3 with two
// scheduler parts, depth 2 with one) that take checkpoints, resumes each
// from its store, and checks that the resumed job ends with the model and
// the reports of the job never interrupted, bit for bit.
func TestResumeDepth(t *testing.T) {
	for _, tc := range []struct {
		depth, parts int
		every        uint64
		at           []int
	}{
		{3, 2, 4, []int{40, 110}},
		{2, 1, 5, []int{70}},
	} {
		t.Run(fmt.Sprintf("depth=%d/parts=%d", tc.depth, tc.parts), func(t *testing.T) {
			want, wantCSV, res, err := depthWalkJob(t, tc.depth, tc.parts, "", 0, false, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Rounds != 60 || res.MaxInFlight != tc.depth {
				t.Fatalf("%d rounds, at most %d in flight; want 60, %d", res.Rounds, res.MaxInFlight, tc.depth)
			}
			for _, at := range tc.at {
				store := t.TempDir()
				_, _, _, err := depthWalkJob(t, tc.depth, tc.parts, store, tc.every, false, at)
				if err == nil || !strings.HasPrefix(err.Error(), "test interrupt (the state after round") {
					t.Fatalf("interrupted at line %d: %v, want the interrupt with a checkpoint", at, err)
				}
				m := latest(t, store)
				if m.Round == 0 || m.Round >= 60 {
					t.Fatalf("last checkpoint of round %d", m.Round)
				}
				got, gotCSV, res, err := depthWalkJob(t, tc.depth, tc.parts, store, tc.every, true, 0)
				if err != nil {
					t.Fatalf("resumed from round %d: %v", m.Round, err)
				}
				t.Logf("interrupted at line %d, resumed from round %d", at, res.Resumed)
				if res.Resumed != m.Round || res.Rounds != 60 {
					t.Errorf("resumed from round %d (the checkpoint's %d), %d rounds", res.Resumed, m.Round, res.Rounds)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("resumed from round %d: the model differs from the uninterrupted job's:\n%s\nwant\n%s", m.Round, got, want)
				}
				if g, w := objectives(t, gotCSV), objectives(t, wantCSV); g != w {
					t.Errorf("resumed from round %d: the reports differ:\n%s\nwant\n%s", m.Round, g, w)
				}
			}
		})
	}
}
