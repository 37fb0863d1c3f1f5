package testhelper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/coordinator/pipeline"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/local"
	"github.com/strads-go/strads/schmp"
)

// NodeTimeout bounds the joins and the waits of the nodes of the jobs that
// RunJob and CheckResume run.
const NodeTimeout = 20 * time.Second

// RunJob runs prog's job on an embedded nats-server (job.Run) with the
// coordinator options co, its model written to a file in a fresh
// temporary directory, the joins and the waits of the nodes bounded by
// NodeTimeout and the whole job by within. It returns the result, the path
// of the model and job.Run's error.
func RunJob[P, R, U, S any](tb testing.TB, prog schmp.Program[P, R, U, S], co coordinator.Options, within time.Duration) (*coordinator.Result, string, error) {
	tb.Helper()
	co.Out = filepath.Join(tb.TempDir(), "model.csv")
	co.JoinTimeout, co.Timeout = NodeTimeout, NodeTimeout
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	res, err := job.Run(ctx, prog, job.Options{Job: "test", Coordinator: co, Timeout: NodeTimeout})
	return res, co.Out, err
}

// ErrInterrupt is the cause with which Interrupt cancels a job: the job's
// error starts with its text.
var ErrInterrupt = errors.New("test interrupt")

// Interrupt sets co so that cancel, which cancels the job's context, is
// called with ErrInterrupt at the coordinator's at-th progress line: with
// the tiny ProgressEvery it sets, a line comes after every message.
func Interrupt(co *coordinator.Options, at int, cancel context.CancelCauseFunc) {
	co.Progress, co.ProgressEvery = &interrupter{at: at, cancel: cancel}, time.Nanosecond
}

// interrupter is a progress writer that cancels the job at its at-th line.
type interrupter struct {
	mu     sync.Mutex
	lines  int
	at     int
	cancel context.CancelCauseFunc
}

// Write implements io.Writer: each call is a line.
func (r *interrupter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lines++; r.lines == r.at {
		r.cancel(ErrInterrupt)
	}
	return len(p), nil
}

// A ResumeRun runs a job for CheckResume: job.Run under ctx with opts,
// which CheckResume sets (the store, the checkpoints and the interrupt)
// but for the job's outputs, which it writes in dir, a fresh directory of
// each run. It returns how the job ended, every number bit for bit: what
// it wrote, and what the coordinator holds.
type ResumeRun func(ctx context.Context, opts job.Options, dir string) (string, *coordinator.Result, error)

// checkpointed runs a job (run) on the runtime (an embedded NATS server
// with JetStream in store) with co, taking a checkpoint every `every`
// rounds, resuming from the last one if resume, and interrupted at
// progress line interruptAt if > 0, all within 2 minutes.
func checkpointed(t *testing.T, co coordinator.Options, run ResumeRun, store string, every uint64, resume bool, interruptAt int) (string, *coordinator.Result, error) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	co.CheckpointEvery, co.Resume = every, resume
	if interruptAt > 0 {
		Interrupt(&co, interruptAt, cancel)
	}
	return run(ctx, job.Options{Job: "resume", Store: store, Timeout: NodeTimeout, Coordinator: co}, t.TempDir())
}

// CheckResume runs a job (run) on the runtime with the coordinator options
// co, uninterrupted, then interrupted at each progress line of at while it
// takes checkpoints every `every` rounds and resumed from its store, and
// checks that the resumed jobs end as the uninterrupted one, bit for bit.
func CheckResume(t *testing.T, co coordinator.Options, run ResumeRun, every uint64, at ...int) {
	t.Helper()
	want, res, err := checkpointed(t, co, run, "", 0, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uninterrupted: %d rounds, %s", res.Rounds, res.Why())
	for _, line := range at {
		store := t.TempDir()
		if _, _, err := checkpointed(t, co, run, store, every, false, line); err == nil || !strings.HasPrefix(err.Error(), ErrInterrupt.Error()) {
			t.Fatalf("interrupted at line %d: %v, want the interrupt", line, err)
		}
		got, res, err := checkpointed(t, co, run, store, every, true, 0)
		if err != nil {
			t.Fatalf("resumed after line %d: %v", line, err)
		}
		t.Logf("interrupted at line %d, resumed from round %d of %d", line, res.Resumed, res.Rounds)
		if res.Resumed == 0 {
			t.Errorf("interrupted at line %d: resumed from round 0", line)
		}
		if got != want {
			t.Errorf("resumed from round %d: the job ends otherwise:\n%s\nwant\n%s", res.Resumed, got, want)
		}
	}
}

// CheckModelResume is CheckResume for prog's job, whose output is its
// model file, with the joins and the waits of the nodes bounded by
// NodeTimeout: how the job ends is its model, what extra says of the
// coordinator, and the rounds, stop and reports of its result.
func CheckModelResume[P, R, U, S any](t *testing.T, prog schmp.Program[P, R, U, S], co coordinator.Options, extra func() string, every uint64, at ...int) {
	t.Helper()
	co.JoinTimeout, co.Timeout = NodeTimeout, NodeTimeout
	CheckResume(t, co, func(ctx context.Context, opts job.Options, dir string) (string, *coordinator.Result, error) {
		opts.Coordinator.Out = filepath.Join(dir, "model.csv")
		res, err := job.Run(ctx, prog, opts)
		if err != nil {
			return "", res, err
		}
		model, err := os.ReadFile(opts.Coordinator.Out)
		if err != nil {
			return "", res, err
		}
		var b strings.Builder
		b.Write(model)
		b.WriteString(extra())
		fmt.Fprintf(&b, "rounds %d updates %d reason %s final %.17g gap %.17g nnz %d\n", res.Rounds, res.Updates, res.Reason, res.Final.Objective, res.Final.Gap, res.Final.NNZ)
		for _, s := range res.Trace {
			fmt.Fprintf(&b, "%d: %.17g gap %.17g nnz %d\n", s.Round, s.Objective, s.Gap, s.NNZ)
		}
		return b.String(), res, nil
	}, every, at...)
}

// DirFiles returns the files of dir, in the order of their names, each as
// its name on a line and then its bytes.
func DirFiles(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", err
		}
		b.WriteString(e.Name() + "\n")
		b.Write(data)
	}
	return b.String(), nil
}

// StatusLines describes a job's status and trace as text, every number
// bit for bit (%.17g), without the times.
func StatusLines(st pipeline.Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rounds %d updates %d candidates %d reason %q (%q) decided %d last %d refuted %d done %t in flight %d/%d\n",
		st.Rounds, st.Updates, st.Candidates, st.Reason, st.AppReason, st.Decided, st.Last, st.Refuted, st.Done, st.MaxInFlight, st.MaxVarsInFlight)
	fmt.Fprintf(&b, "final %.17g gap %.17g nnz %d\n", st.Final.Objective, st.Final.Gap, st.Final.NNZ)
	for _, s := range st.Trace {
		fmt.Fprintf(&b, "%d: %.17g gap %.17g nnz %d updates %d", s.Round, s.Objective, s.Gap, s.NNZ, s.Updates)
		for _, m := range s.Metrics {
			fmt.Fprintf(&b, " %s %.17g", m.Name, m.Value)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// CheckRestores runs prog's job through the local driver with pc, then
// again moving every role to a new one restored from its snapshot every k
// rounds for each k of every, and checks that every run ends as the first:
// the same model (and what extra, if not nil, describes of the
// coordinator), bit for bit, the same reports and the same stop, having
// restored at least once; and the same with the roles restored in place,
// as a rollback to a checkpoint does (local.Options.RestoreInPlace), which
// needs a job long enough to roll back.
func CheckRestores[P, R, U, S any](t *testing.T, prog schmp.Program[P, R, U, S], pc pipeline.Config, extra func(schmp.Coordinator[P, R, U, S]) string, every ...uint64) {
	t.Helper()
	var rounds uint64 // the job's, which a rollback needs enough of
	run := func(k uint64, inPlace bool) (model, status string, restores int) {
		j, st, err := local.Run(context.Background(), prog, local.Options{Config: pc, RestoreEvery: k, RestoreInPlace: inPlace})
		if err != nil {
			t.Fatalf("restore every %d (in place %t): %v", k, inPlace, err)
		}
		var buf bytes.Buffer
		if err := j.Coordinator.WriteModel(&buf); err != nil {
			t.Fatal(err)
		}
		if extra != nil {
			buf.WriteString(extra(j.Coordinator))
		}
		rounds = st.Rounds
		return buf.String(), StatusLines(st), j.Restores
	}
	model, status, _ := run(0, false)
	base := rounds
	t.Logf("%s", strings.SplitN(status, "\n", 2)[0])
	for _, inPlace := range []bool{false, true} {
		for _, k := range every {
			m, s, restores := run(k, inPlace)
			if restores == 0 && (!inPlace || base >= k+k/2+2) {
				t.Errorf("restore every %d (in place %t): no restore", k, inPlace)
			}
			if m != model {
				t.Errorf("restore every %d (in place %t): the model differs:\n%s\nwant\n%s", k, inPlace, m, model)
			}
			if s != status {
				t.Errorf("restore every %d (in place %t): the status differs:\n%s\nwant\n%s", k, inPlace, s, status)
			}
		}
	}
}

// TraceLines renders a job's reports, a line each, every number bit for
// bit (its bits in hex), but for the metrics named in timed: those that
// measure time, which differ between any two runs.
func TraceLines(trace []schmp.Sample, timed ...string) []string {
	var out []string
	for _, s := range trace {
		line := fmt.Sprintf("round %d updates %d objective %x nnz %d gap %x/%v stop %q", s.Round, s.Updates,
			math.Float64bits(s.Objective), s.NNZ, math.Float64bits(s.Gap), s.HasGap, s.Stop)
		for _, m := range s.Metrics {
			if !slices.Contains(timed, m.Name) {
				line += fmt.Sprintf(" %s=%x", m.Name, math.Float64bits(m.Value))
			}
		}
		out = append(out, line)
	}
	return out
}
