package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/schmp"
)

// binary is the strads command built for the tests that run it as separate
// processes.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strads-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "strads")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runCLI runs the command line in this process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code = commandLine.Run(ctx, args, &o, &e)
	return code, o.String(), e.String()
}

// genData writes a small generated data set and returns its path.
func genData(t *testing.T, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.svm")
	args := append([]string{"gen", "lasso", "--samples", "120", "--features", "300", "--density", "0.05",
		"--corr-groups", "30", "--corr", "0.8", "--true-nnz", "15", "--seed", "3", "-o", path}, extra...)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	return path
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"non-numeric value", "1 1:0.5\n2 2:abc\n", ":2:"},
		{"non-numeric label", "x 1:0.5\n", ":1:"},
		{"index zero", "1 1:1\n1 0:1\n", ":2:"},
		{"negative index", "1 -3:1\n", ":1:"},
		{"duplicate index", "1 2:1 2:3\n", ":1:"},
		{"unsorted indices", "1 1:1\n1 1:2\n1 3:1 2:1\n", ":3:"},
		{"NaN", "1 1:1\n1 1:NaN\n", ":2:"},
		{"Inf label", "inf 1:1\n", ":1:"},
		{"missing label", "1 1:1\n2:1 3:1\n", ":2:"},
		{"empty file", "", "no samples"},
		{"blank line", "1 1:1\n\n1 2:1\n", ":2:"},
		{"CRLF line", "1 1:1\r\n1 2:1\r\n", ":1:"},
		// One index far past what the file's entries justify: state
		// per feature of 2³¹ features would exhaust the memory.
		{"feature index past the entries", "1 1:1\n1 2147483647:1\n1 2:1\n", ":2: feature index 2147483647"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "bad.svm")
			if err := os.WriteFile(data, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "model.csv")
			metrics := filepath.Join(dir, "metrics.csv")
			code, _, stderr := runCLI(t, "lasso", "--data", data, "--lambda", "0.1", "--workers", "2",
				"--out", out, "--metrics", metrics, "--progress", "0")
			if code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			if !strings.Contains(stderr, data) || !strings.Contains(stderr, tc.want) {
				t.Errorf("error %q does not name %s%s", stderr, data, tc.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
				t.Errorf("error has %d lines, want one: %q", n+1, stderr)
			}
			assertNoOutput(t, dir, "bad.svm")
		})
	}
}

// assertNoOutput fails if dir holds anything but the named files.
func assertNoOutput(t *testing.T, dir string, keep ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !contains(keep, e.Name()) {
			t.Errorf("%s left behind", e.Name())
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestBadFlags(t *testing.T) {
	data := genData(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"negative lambda", []string{"--lambda", "-1"}, "--lambda"},
		{"negative lambda ratio", []string{"--lambda-ratio", "-0.5"}, "--lambda-ratio"},
		{"lambda and ratio", []string{"--lambda", "0.1"}, "only one of --lambda and --lambda-ratio"},
		{"zero workers", []string{"--workers", "0"}, "--workers"},
		{"negative workers", []string{"--workers", "-2"}, "--workers"},
		{"unknown schedule", []string{"--schedule", "fastest"}, "--schedule"},
		{"block above candidates", []string{"--block", "10", "--candidates", "5"}, "--candidates"},
		{"negative tol", []string{"--tol", "-1"}, "--tol"},
		{"bad job name", []string{"--job", "a.b"}, "--job"},
		{"unknown flag", []string{"--speed", "3"}, "speed"},
		{"missing data", []string{"--data", ""}, "--data"},
		{"missing file", []string{"--data", filepath.Join(t.TempDir(), "nope.svm")}, "nope.svm"},
		{"out dir missing", []string{"--out", filepath.Join(t.TempDir(), "no", "model.csv")}, "--out"},
		{"NaN target", []string{"--target", "NaN"}, "--target"},
		{"infinite target", []string{"--target", "-Inf"}, "--target"},
		{"non-numeric target", []string{"--target", "low"}, "-target"},
		// A random key's checkpoints could never be resumed (issue 28).
		{"keyless checkpoints over --nats", []string{"--nats", "nats://127.0.0.1:1", "--checkpoint-every", "10"}, "needs --key FILE"},
		{"keyless resume over --nats", []string{"--nats", "nats://127.0.0.1:1", "--resume"}, "needs --key FILE"},
		{"one fold", []string{"--cv", "1", "--lambda-path", "5"}, "at least 2 folds"},
		{"cv without a path", []string{"--cv", "3"}, "--cv needs --lambda-path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"lasso", "--data", data, "--lambda-ratio", "0.1", "--progress", "0"}, tc.args...)
			code, _, stderr := runCLI(t, args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("error %q: want one line naming %s", stderr, tc.want)
			}
		})
	}
	if code, _, stderr := runCLI(t, "lasso", "--data", data, "--progress", "0"); code != 2 || !strings.Contains(stderr, "--lambda-ratio") {
		t.Errorf("no penalty: exit %d, %q; want 2 and a message naming --lambda-ratio", code, stderr)
	}
	if code, _, stderr := runCLI(t, "coordinator", "--app", "lasso", "--nats", "nats://127.0.0.1:1", "--data", data, "--lambda-ratio", "0.1",
		"--lambda-path", "5", "--cv", "3"); code != 2 || !strings.Contains(stderr, "--cv: a whole job only") {
		t.Errorf("--cv in a role: exit %d, %q; want 2 and a whole job only", code, stderr)
	}
	if code, _, _ := runCLI(t, "frobnicate"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	if code, stdout, _ := runCLI(t, "lasso", "--help"); code != 0 || !strings.Contains(stdout, "--lambda-ratio") {
		t.Errorf("--help: exit %d, output %q", code, stdout)
	}
	for _, args := range [][]string{
		{"worker", "--app", "nope", "--nats", "nats://127.0.0.1:1"},
		{"gen", "nope", "-o", filepath.Join(t.TempDir(), "x")},
		{"scheduler", "--app=lasso", "--data", data},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
}

func TestLassoCommand(t *testing.T) {
	data := genData(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "model.csv")
	metrics := filepath.Join(dir, "metrics.csv")
	code, stdout, stderr := runCLI(t, "lasso", "--data", data, "--workers", "2", "--lambda-ratio", "0.1",
		"--intercept", "--tol", "1e-6", "--out", out, "--metrics", metrics, "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "(converged)") {
		t.Errorf("output %q: want a converged run", stdout)
	}
	model, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if lm, err := linear.ReadFile(out); err != nil || lm.App != linear.Lasso || !lm.HasIntercept || lm.NNZ() == 0 {
		t.Errorf("model %q (%v): want a Lasso model with an intercept and coefficients", model, err)
	}
	m, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(m), "time_s,round,objective,nnz,updates,gap,plan_ms,") || strings.Count(string(m), "\n") < 3 {
		t.Errorf("metrics %.200q…", m)
	}
	assertNoOutput(t, dir, "model.csv", "metrics.csv")
}

// process is a role running as its own OS process.
type process struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

func startProcess(t *testing.T, name string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(binary, args...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill() })
	return p
}

// wait waits for the process to exit, at most timeout, and returns its exit
// status.
func (p *process) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		t.Fatalf("%s did not exit within %s; stderr: %s", p.name, timeout, p.stderr.String())
		return -1
	}
}

// waitAll waits for each of procs to exit, a minute at most, and fails the
// test for each that exits otherwise than with status 0.
func waitAll(t *testing.T, procs ...*process) {
	t.Helper()
	for _, p := range procs {
		if code := p.wait(t, time.Minute); code != 0 {
			t.Errorf("%s: exit %d: %s", p.name, code, p.stderr.String())
		}
	}
}

// TestSeparateProcesses runs the scheduler, the coordinator and two workers
// as separate OS processes against one nats-server, and checks that they
// find the same β as the all-in-one mode.
func TestSeparateProcesses(t *testing.T) {
	data := genData(t)
	for _, tc := range []struct {
		schedulers, depth int
		layout            string
	}{{1, 1, "rows"}, {2, 3, "rows"}, {1, 1, "cols"}} {
		t.Run(fmt.Sprintf("schedulers=%d/depth=%d/%s", tc.schedulers, tc.depth, tc.layout), func(t *testing.T) {
			dir := t.TempDir()
			job := fmt.Sprintf("proc-%d-%d-%s", tc.schedulers, tc.depth, tc.layout)
			rounds := "400"
			if tc.layout == "cols" {
				rounds = "40"
			}
			common := []string{"--data", data, "--workers", "2", "--lambda-ratio", "0.05", "--schedule", "priority",
				"--seed", "7", "--max-rounds", rounds, "--tol", "0", "--progress", "0", "--job", job, "--layout", tc.layout,
				"--schedulers", strconv.Itoa(tc.schedulers), "--depth", strconv.Itoa(tc.depth)}
			if tc.layout == "cols" {
				// Small blocks, so that the workers' changes are merged over
				// many rounds.
				common = append(common, "--round-work", "500")
			}

			allInOne := filepath.Join(dir, "all-in-one.csv")
			if code, _, stderr := runCLI(t, append([]string{"lasso", "--out", allInOne}, common...)...); code != 0 {
				t.Fatalf("all-in-one: exit %d: %s", code, stderr)
			}

			url := testhelper.ServerURL(t)
			distributed := filepath.Join(dir, "distributed.csv")
			roles := append([]string{"--nats", url}, common...)
			// Start the workers first: they wait for the coordinator.
			procs := []*process{
				startProcess(t, "worker 1", append([]string{"worker"}, roles...)...),
				startProcess(t, "worker 2", append([]string{"worker"}, roles...)...),
				startProcess(t, "coordinator", append([]string{"coordinator", "--out", distributed}, roles...)...),
			}
			for i := range tc.schedulers {
				procs = append(procs, startProcess(t, fmt.Sprintf("scheduler %d", i), append([]string{"scheduler"}, roles...)...))
			}
			waitAll(t, procs...)
			// Rounds in flight or not, the computation is deterministic.
			want := sameFiles(t, distributed, allInOne)
			if strings.Count(string(want), "\n") < 3 {
				t.Errorf("model has no coefficients: %q", want)
			}
		})
	}
}

// TestWorkerNeverJoins checks that a job missing a worker fails within the
// join timeout with a clear error, exit status 1 and no output.
func TestWorkerNeverJoins(t *testing.T) {
	data := genData(t)
	dir := t.TempDir()
	url := testhelper.ServerURL(t)
	args := []string{"--nats", url, "--data", data, "--workers", "2", "--lambda-ratio", "0.1",
		"--join-timeout", "2s", "--timeout", "2s", "--progress", "0", "--job", "lonely"}
	sched := startProcess(t, "scheduler", append([]string{"scheduler"}, args...)...)
	w := startProcess(t, "worker", append([]string{"worker"}, args...)...)
	coord := startProcess(t, "coordinator", append([]string{"coordinator", "--out", filepath.Join(dir, "model.csv"),
		"--metrics", filepath.Join(dir, "metrics.csv")}, args...)...)
	if code := coord.wait(t, 30*time.Second); code != 1 {
		t.Errorf("coordinator: exit %d, want 1", code)
	}
	msg := coord.stderr.String()
	if !strings.Contains(msg, "1 of 2 workers") || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
		t.Errorf("coordinator error %q: want one line saying 1 of 2 workers joined", msg)
	}
	// The others learn of the failure and exit too, with status 1.
	for _, p := range []*process{sched, w} {
		if code := p.wait(t, 30*time.Second); code != 1 {
			t.Errorf("%s: exit %d, want 1: %s", p.name, code, p.stderr.String())
		}
	}
	assertNoOutput(t, dir)
}

// growth is a toy app for the tests of the runtime's stops: its objective
// x starts at 1 and is multiplied by --growth every round, with a gap of
// x/2 (never within --tol).
type growth struct {
	g float64
	x float64 // the coordinator's, or the worker's as of the last update
}

func (g *growth) Schedule(round uint64, _ []schmp.Feedback) (int, schmp.PlanInfo, error) {
	return int(round), schmp.PlanInfo{Selected: 1}, nil
}
func (g *growth) Describe() (float64, error)                         { return 0, nil }
func (g *growth) Apply(x float64) error                              { g.x = x; return nil }
func (g *growth) Push(context.Context, uint64, int) (float64, error) { return 0, nil }
func (g *growth) Report() (float64, error)                           { return g.x, nil }
func (g *growth) Start([]float64) (float64, error)                   { g.x = 1; return g.x, nil }
func (g *growth) Pull(uint64, int, []float64) (float64, schmp.Feedback, error) {
	g.x *= g.g
	return g.x, schmp.Feedback{}, nil
}
func (g *growth) Objective(reports []float64) (schmp.Progress, error) {
	return schmp.Progress{Objective: reports[0], Gap: reports[0] / 2, HasGap: true}, nil
}
func (g *growth) WriteModel(w io.Writer) error { _, err := fmt.Fprintln(w, g.x); return err }

func init() {
	commandLine.Apps = append(commandLine.Apps, cli.App{
		Name:    "test-growth",
		Summary: "a toy for the tests: an objective multiplied by --growth every round",
		Flags: func(fs *flag.FlagSet) func(*cli.Env) (*cli.Job, error) {
			g := fs.Float64("growth", 0.5, "factor of the objective every round")
			return func(*cli.Env) (*cli.Job, error) {
				return cli.NewJob(schmp.Program[int, float64, float64, float64]{
					Name: "test-growth",
					NewScheduler: func(context.Context, int, int) (schmp.Scheduler[int], error) {
						return &growth{g: *g}, nil
					},
					NewWorker: func(context.Context, int, int) (schmp.Worker[int, float64, float64, float64], error) {
						return &growth{g: *g}, nil
					},
					NewCoordinator: func(context.Context) (schmp.Coordinator[int, float64, float64, float64], error) {
						return &growth{g: *g}, nil
					},
				}), nil
			}
		},
	})
}

// TestObjectiveStops runs the toy app from the command line: a model that
// diverges fails the job (exit status 1, one line naming the round and the
// cause, no output) instead of stopping as converged, and --target stops
// it at the first report at or below the target.
func TestObjectiveStops(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string // in stdout
		stderr string // stderr, all of it
	}{
		// The state after round 4 is 1e400: +Inf, and +Inf ≤ tol·Inf.
		{"diverged", []string{"--growth", "1e100"}, 1, "",
			"strads test-growth: coordinator: round 4: the objective is not finite (+Inf): the model diverged\n"},
		// The report of round 5 shows the state after round 4, 2^-4.
		{"target", []string{"--growth", "0.5", "--target", "0.1"}, 0, "rounds 5  updates 5", ""},
		{"target unmet", []string{"--growth", "0.5", "--target", "0", "--max-rounds", "6"}, 0, "rounds 6  updates 6", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"test-growth", "--workers", "2", "--report-every", "1", "--progress", "0", "--tol", "1e-4",
				"--out", filepath.Join(dir, "model.txt"), "--metrics", filepath.Join(dir, "metrics.csv")}, tc.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != tc.code || stderr != tc.stderr || !strings.Contains(stdout, tc.stdout) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
			if strings.Contains(stdout, "(converged)") {
				t.Errorf("stdout %q: not a converged run", stdout)
			}
			if tc.code != 0 {
				assertNoOutput(t, dir)
			} else {
				assertNoOutput(t, dir, "model.txt", "metrics.csv")
			}
		})
	}
}

// TestCorrelatedNoCheck runs the Lasso on strongly correlated data with the
// dependency check off (--rho 1): in the row layout, parallel updates of
// correlated coordinates diverge, and the job must fail with exit status 1,
// a message naming the round, and no model; in the column layout, the
// merged steps cannot raise the objective, and the job converges.
func TestCorrelatedNoCheck(t *testing.T) {
	data := genData(t, "--samples", "60", "--features", "600", "--density", "1", "--corr-groups", "10", "--corr", "0.95", "--true-nnz", "20")
	for _, layout := range []string{"rows", "cols"} {
		t.Run(layout, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "model.csv")
			code, stdout, stderr := runCLI(t, "lasso", "--data", data, "--lambda-ratio", "0.05", "--rho", "1", "--workers", "2",
				"--layout", layout, "--progress", "0", "--max-rounds", "20000", "--out", out)
			switch layout {
			case "rows":
				if code != 1 || !strings.Contains(stderr, "diverged") || !strings.Contains(stderr, "round ") {
					t.Fatalf("exit %d, stderr %q: want exit 1 and a message naming the round and the divergence", code, stderr)
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("a failed job left its model: %v", err)
				}
			case "cols":
				if code != 0 || !strings.Contains(stdout, "(converged)") {
					t.Fatalf("exit %d, stdout %q, stderr %q: want a converged job", code, stdout, stderr)
				}
			}
		})
	}
}

// TestResumeNothing checks that --resume of a job with no checkpoint says
// what it needs, not which bucket it did not find (issue 27).
func TestResumeNothing(t *testing.T) {
	data := genData(t)
	code, _, stderr := runCLI(t, "lasso", "--data", data, "--lambda-ratio", "0.1", "--progress", "0", "--resume",
		"--store", t.TempDir(), "--out", filepath.Join(t.TempDir(), "m.csv"))
	if code == 0 || !strings.Contains(stderr, `--resume: job "lasso" has no checkpoint on this server`) || !strings.Contains(stderr, "--store") {
		t.Errorf("exit %d, %q; want a failure saying what a resume needs", code, stderr)
	}
}
