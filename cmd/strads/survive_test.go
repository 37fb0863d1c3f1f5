package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
)

// trials is the number of trials of TestKillWithSpare: each loses a node
// and waits out its heartbeats (5s).
var trials = flag.Int("survive.trials", 3, "trials of TestKillWithSpare")

// resumeTrials is the number of trials of TestKillAndResume for each node
// it kills.
var resumeTrials = flag.Int("survive.resume", 1, "trials of TestKillAndResume for each node killed")

// survival is a job of separate OS processes against a JetStream server,
// whose nodes a test kills with SIGKILL (DESIGN "Resume").
type survival struct {
	t     *testing.T
	url   string
	data  string
	job   string
	nc    *nats.Conn
	flags []string
	extra []string // the job's flags beyond the defaults, the reference's too
	// refMetrics is the metrics CSV of the reference run, once it ran.
	refMetrics string
}

// newSurvival starts a JetStream server for a job of name job, whose roles
// and reference run take the flags extra beyond the defaults.
func newSurvival(t *testing.T, job string, extra ...string) *survival {
	t.Helper()
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: t.TempDir()})
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s := &survival{t: t, url: srv.ClientURL(), data: genData(t), job: job, nc: nc, extra: extra}
	// Rounds slow enough (a worker's Push of thousands of coordinate
	// steps) that a kill falls in the middle of the job.
	s.flags = []string{"--nats", s.url, "--data", s.data, "--workers", "2", "--lambda-ratio", "0.01",
		"--max-rounds", "400", "--tol", "0", "--report-every", "20", "--progress", "0", "--job", job,
		"--timeout", "30s", "--join-timeout", "30s"}
	s.flags = append(s.flags, extra...)
	return s
}

// start starts a role process with the job's flags and extra ones.
func (s *survival) start(name, role string, extra ...string) *process {
	return startProcess(s.t, name, append(append([]string{role}, s.flags...), extra...)...)
}

// partials returns a subscription to the job's partials, whose count tells
// how far the job is.
func (s *survival) partials() *nats.Subscription {
	sub, err := s.nc.SubscribeSync("strads." + s.job + ".partial")
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.nc.Flush(); err != nil {
		s.t.Fatal(err)
	}
	return sub
}

// await waits for n partials of the job.
func (s *survival) await(sub *nats.Subscription, n int) {
	s.t.Helper()
	for range n {
		if _, err := sub.NextMsg(time.Minute); err != nil {
			s.t.Fatalf("the job did not go on: %v", err)
		}
	}
}

// reference runs the job whole, in one process, and returns its model.
func (s *survival) reference() []byte {
	s.t.Helper()
	out := filepath.Join(s.t.TempDir(), "ref.csv")
	s.refMetrics = filepath.Join(s.t.TempDir(), "ref-metrics.csv")
	args := []string{"lasso", "--data", s.data, "--workers", "2", "--lambda-ratio", "0.01", "--max-rounds", "400",
		"--tol", "0", "--report-every", "20", "--progress", "0", "--out", out, "--metrics", s.refMetrics}
	args = append(args, s.extra...)
	if code, _, stderr := runCLI(s.t, args...); code != 0 {
		s.t.Fatalf("reference run: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

// TestKillWithSpare kills processes of a job with spares and checkpoints
// with SIGKILL: in turn, a worker at a random point, a worker before the
// first checkpoint is committed, and a worker and the scheduler at once.
// Spares take their places (the survivors restore their apps in place,
// the spares build their own), the job rolls back to its last checkpoint
// (or its start) and ends with the model of the job that lost nothing, bit
// for bit.
func TestKillWithSpare(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for trial := range *trials {
		t.Run(fmt.Sprint("trial ", trial), func(t *testing.T) {
			switch trial % 3 {
			case 0:
				killWithSpare(t, fmt.Sprint("spare", trial), lossWorker)
			case 1:
				killWithSpare(t, fmt.Sprint("spare", trial), lossEarly)
			default:
				killWithSpare(t, fmt.Sprint("spare", trial), lossBoth)
			}
		})
	}
}

// loss is what killWithSpare kills.
type loss int

const (
	lossWorker loss = iota // a worker at a random point
	lossEarly              // a worker before the first checkpoint is committed
	lossBoth               // a worker and the first scheduler, at once
)

// TestKillWithSpareDepth is TestKillWithSpare with rounds in flight
// (--depth 3) and two scheduler parts, in one trial that loses a worker:
// the checkpoint rolled back to holds the rounds sent after its own, which
// the workers restored push again.
func TestKillWithSpareDepth(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	killWithSpare(t, "sparedepth", lossWorker, "--depth", "3", "--schedulers", "2")
}

// killWithSpare runs a job of separate processes (a coordinator with
// checkpoints and a spare of each role, schedulers, two workers) with the
// flags extra, kills what what says with SIGKILL, and checks that the job,
// rolled back, ends with the model of the job that lost nothing, bit for
// bit.
func killWithSpare(t *testing.T, job string, what loss, extra ...string) {
	s := newSurvival(t, job, extra...)
	want := s.reference()
	sub := s.partials()
	out, metrics := filepath.Join(t.TempDir(), "m.csv"), filepath.Join(t.TempDir(), "metrics.csv")
	coord := s.start("coordinator", "coordinator", "--checkpoint-every", "10", "--spares", "1", "--out", out, "--metrics", metrics)
	// --verbose: the nodes say how they restored.
	scheds := []*process{s.start("scheduler", "scheduler", "--verbose")}
	if slices.Contains(extra, "--schedulers") {
		scheds = append(scheds, s.start("scheduler 1", "scheduler", "--verbose"))
	}
	w0 := s.start("worker 0", "worker", "--verbose")
	w1 := s.start("worker 1", "worker", "--verbose")
	s.await(sub, 2) // both workers hold their places
	victims := []*process{w1}
	if rand.IntN(2) == 0 {
		victims[0] = w0
	}
	spares := []*process{s.start("spare", "worker", "--verbose")}
	// A checkpoint every 10 rounds, 2 partials a round: the first is
	// committed after partial 22 or so.
	at := 40 + rand.IntN(300)
	switch what {
	case lossEarly:
		at = 3 + rand.IntN(12)
	case lossBoth:
		victims = append(victims, scheds[0])
		spares = append(spares, s.start("spare scheduler", "scheduler", "--verbose"))
	}
	s.await(sub, at)
	for _, v := range victims {
		if err := v.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	if code := coord.wait(t, time.Minute); code != 0 {
		t.Fatalf("coordinator: exit %d after %d processes were killed at partial %d: %s", code, len(victims), at, coord.stderr.String())
	}
	all := append(append(scheds, w0, w1), spares...)
	for _, p := range all {
		if slices.Contains(victims, p) {
			continue
		}
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Errorf("%s: exit %d: %s", p.name, code, p.stderr.String())
		}
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s killed at partial %d: the model differs from the job's that lost nothing", victims[0].name, at)
	}
	if msg := coord.stderr.String(); !strings.Contains(msg, "replacing lost nodes") {
		t.Errorf("the coordinator did not say it replaced the worker: %s", msg)
	}
	// The metrics, rewound to the checkpoint and written on, have the rows
	// of the job that lost nothing.
	if g, w := reportRows(t, metrics), reportRows(t, s.refMetrics); g != w {
		t.Errorf("%s killed at partial %d: the metrics' reports differ:\n%s\nwant\n%s", victims[0].name, at, g, w)
	}
	if what == lossEarly && !strings.Contains(coord.stderr.String(), "round=0") {
		t.Errorf("the rollback was not to the job's start: %s", coord.stderr.String())
	}
	// The survivors restored their apps in place, their data loaded; the
	// spares built their own (DESIGN "Spares and replacement"). At the
	// job's start there is nothing to restore.
	for _, p := range all {
		want := "in_place=true"
		switch {
		case slices.Contains(victims, p):
			continue
		case what == lossEarly:
			continue
		case slices.Contains(spares, p):
			want = "in_place=false"
		}
		if msg := p.stderr.String(); !strings.Contains(msg, "msg=restored") || !strings.Contains(msg, want) {
			t.Errorf("%s did not say it restored with %s: %s", p.name, want, msg)
		} else if i := strings.Index(msg, "msg=restored"); i >= 0 {
			t.Logf("%s: %s", p.name, strings.SplitN(msg[i:], "\n", 2)[0])
		}
	}
}

// reportRows returns the columns of a metrics CSV that do not depend on
// timing (round, objective, nnz, updates, gap), a row a line.
func reportRows(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "time_s,round,objective,nnz,updates,gap,") {
		t.Fatalf("%s: not a metrics CSV with rows: %.200q", path, b)
	}
	var rows strings.Builder
	for _, l := range lines {
		f := strings.Split(l, ",")
		rows.WriteString(strings.Join(f[1:min(len(f), 6)], ",") + "\n")
	}
	return rows.String()
}

// TestKillAndResume kills a worker, a scheduler or the coordinator with
// SIGKILL at a random point of a job without spares: the others exit
// non-zero within seconds, naming the lost node (a lost coordinator: the
// others stop), and the job, started again with --resume, ends with the
// model of the job that was never interrupted, bit for bit.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for trial, victim := range slices.Repeat([]string{"worker 1", "scheduler", "coordinator"}, *resumeTrials) {
		t.Run(victim, func(t *testing.T) {
			s := newSurvival(t, fmt.Sprintf("resume-%s-%d", strings.ReplaceAll(victim, " ", ""), trial))
			want := s.reference()
			sub := s.partials()
			out := filepath.Join(t.TempDir(), "m.csv")
			procs := map[string]*process{
				"coordinator": s.start("coordinator", "coordinator", "--checkpoint-every", "10", "--out", out),
				"scheduler":   s.start("scheduler", "scheduler"),
				"worker 0":    s.start("worker 0", "worker"),
				"worker 1":    s.start("worker 1", "worker"),
			}
			at := 60 + rand.IntN(280)
			s.await(sub, at)
			if err := procs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			for name, p := range procs {
				if name == victim {
					continue
				}
				if code := p.wait(t, time.Minute); code == 0 {
					t.Errorf("%s: exit 0 after %s was killed", name, victim)
				}
				if took := time.Since(killed); took > 10*time.Second {
					t.Errorf("%s exited %s after %s was killed, want within 10s (the timeout is 30s)", name, took.Round(time.Millisecond), victim)
				}
			}
			if victim != "coordinator" {
				msg := procs["coordinator"].stderr.String()
				if want := map[string]string{"worker 1": "worker shard", "scheduler": "scheduler 0"}[victim]; !strings.Contains(msg, want) || !strings.Contains(msg, "no heartbeat") {
					t.Errorf("the coordinator said %q, want the lost node named", msg)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatal("the failed job wrote its model")
			}
			coord := s.start("coordinator", "coordinator", "--checkpoint-every", "10", "--resume", "--out", out)
			rest := []*process{s.start("scheduler", "scheduler"), s.start("worker 0", "worker"), s.start("worker 1", "worker")}
			if code := coord.wait(t, time.Minute); code != 0 {
				t.Fatalf("resumed coordinator: exit %d: %s", code, coord.stderr.String())
			}
			for _, p := range rest {
				if code := p.wait(t, 30*time.Second); code != 0 {
					t.Errorf("resumed %s: exit %d: %s", p.name, code, p.stderr.String())
				}
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s killed at partial %d, resumed: the model differs from the uninterrupted job's", victim, at)
			}
		})
	}
}

// TestSignalResume interrupts a whole job that takes checkpoints with
// SIGINT or SIGTERM: it takes a final checkpoint, exits 130 or 143 and
// writes nothing; the same command with --resume then ends with the model
// of the job that was never interrupted, bit for bit.
func TestSignalResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	data := genData(t)
	job := []string{"lasso", "--data", data, "--workers", "2", "--lambda-ratio", "0.01", "--max-rounds", "3000",
		"--tol", "0", "--report-every", "20", "--progress", "10ms"}
	ref := filepath.Join(t.TempDir(), "ref.csv")
	if code, _, stderr := runCLI(t, append(job, "--out", ref)...); code != 0 {
		t.Fatalf("reference run: exit %d: %s", code, stderr)
	}
	want, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			store, out := t.TempDir(), filepath.Join(t.TempDir(), "m.csv")
			args := append(job, "--checkpoint-every", "50", "--store", store, "--out", out)
			p := startProcess(t, "job", args...)
			// The progress lines say that the rounds run.
			deadline := time.Now().Add(time.Minute)
			for !strings.Contains(p.stderr.String(), "round ") {
				if time.Now().After(deadline) {
					t.Fatalf("the job did not start: %s", p.stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code := p.wait(t, time.Minute)
			if code == 0 {
				t.Skip("the job ended before the signal")
			}
			if code != 128+int(sig) {
				t.Fatalf("exit %d, want %d: %s", code, 128+int(sig), p.stderr.String())
			}
			if msg := p.stderr.String(); !strings.Contains(msg, "checkpoint") {
				t.Errorf("no word of the final checkpoint: %s", msg)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatal("the interrupted job wrote its model")
			}
			if code, _, stderr := runCLI(t, append(args, "--resume")...); code != 0 {
				t.Fatalf("resume: exit %d: %s", code, stderr)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatal("the resumed job's model differs from the uninterrupted job's")
			}
		})
	}
}

// TestKillThenStartSpare kills a worker of a job that admits a spare but
// has none waiting: the coordinator waits for one, a worker started after
// the loss takes the place, and the job ends with the model of the job
// that lost nothing.
func TestKillThenStartSpare(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	s := newSurvival(t, "late-spare")
	want := s.reference()
	sub := s.partials()
	out := filepath.Join(t.TempDir(), "m.csv")
	coord := s.start("coordinator", "coordinator", "--checkpoint-every", "10", "--spares", "1", "--out", out)
	sched := s.start("scheduler", "scheduler")
	w0 := s.start("worker 0", "worker")
	w1 := s.start("worker 1", "worker")
	s.await(sub, 100+rand.IntN(200))
	if err := w1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(coord.stderr.String(), "waiting for spares") {
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator did not wait for a spare: %s", coord.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	late := s.start("late worker", "worker")
	if code := coord.wait(t, time.Minute); code != 0 {
		t.Fatalf("coordinator: exit %d: %s", code, coord.stderr.String())
	}
	for _, p := range []*process{sched, w0, late} {
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Errorf("%s: exit %d: %s", p.name, code, p.stderr.String())
		}
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the model differs from the job's that lost nothing")
	}
}
