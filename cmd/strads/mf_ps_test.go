package main

import (
	"bytes"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/mf"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
)

// TestMFPSModes runs strads mf --mode for every parameter-server mode: the
// result line, the metrics CSV with the staleness columns, and the files
// of --out, which give back the test RMSE the job reported.
func TestMFPSModes(t *testing.T) {
	train, test := genMFData(t)
	var ratings []mf.Rating
	if err := mf.ReadRatings(test, func(_ int, r mf.Rating) error { ratings = append(ratings, r); return nil }); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`test RMSE ([0-9.]+) .* iterations 20  clocks 200 `)
	for _, mode := range []string{"bsp", "ssp", "essp", "async"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			prefix, metrics, pred := filepath.Join(dir, "model"), filepath.Join(dir, "metrics.csv"), filepath.Join(dir, "pred.txt")
			code, stdout, stderr := runCLI(t, "mf", "--mode", mode, "--train", train, "--test", test, "--rank", "3", "--iters", "20",
				"--workers", "2", "--tol", "0", "--out", prefix, "--metrics", metrics, "--predict", test, "--predict-out", pred, "--progress", "1ms")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			m := line.FindStringSubmatch(stdout)
			if m == nil || !strings.Contains(stderr, "staleness mean") {
				t.Fatalf("no result line or progress: stdout %q, stderr %q", stdout, stderr)
			}
			reported, _ := strconv.ParseFloat(m[1], 64)
			rows := readLines(t, metrics)
			header := strings.Split(rows[0], ",")
			col := slices.Index(header, "test_rmse")
			if len(rows) != 22 || col < 0 || !strings.HasSuffix(rows[0], ",staleness_mean,staleness_var,staleness_max") {
				t.Fatalf("metrics: %d lines, header %q; want 22 (a header and 21 evaluations) with the staleness columns", len(rows), rows[0])
			}
			if got := savedRMSE(t, prefix, test); math.Abs(got-reported) > 1e-6 || reported > 0.3 {
				t.Errorf("the files written give a test RMSE of %.9f, the job reported %.6f (want it below 0.3)", got, reported)
			}
			if got, want := len(readLines(t, pred)), len(ratings); got != want {
				t.Errorf("%d predictions for %d pairs", got, want)
			}
		})
	}
}

// TestMFPSBadFlags checks the flags that a parameter-server mode refuses,
// and those of its own that the scheduled mode does.
func TestMFPSBadFlags(t *testing.T) {
	train, _ := genMFData(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown mode", []string{"--mode", "hogwild"}, "--mode"},
		{"staleness with bsp", []string{"--mode", "bsp", "--staleness", "1"}, "--staleness"},
		{"staleness with async", []string{"--mode", "async", "--staleness", "1"}, "--staleness"},
		{"staleness scheduled", []string{"--staleness", "1"}, "--staleness"},
		{"slow worker scheduled", []string{"--slow-worker", "2"}, "--slow-worker"},
		{"ccd", []string{"--mode", "ssp", "--algo", "ccd"}, "--algo"},
		{"als", []string{"--mode", "bsp", "--algo", "als"}, "--algo"},
		{"schedule", []string{"--mode", "ssp", "--schedule", "rotation"}, "--schedule"},
		{"unscheduled", []string{"--mode", "ssp", "--schedule", "unscheduled"}, "--schedule"},
		{"validate", []string{"--mode", "ssp", "--validate", "0.1"}, "--validate"},
		{"lambda auto", []string{"--mode", "ssp", "--lambda", "auto"}, "--lambda auto"},
		{"no iteration limit", []string{"--mode", "ssp", "--iters", "0"}, "--iters"},
		{"huge staleness", []string{"--mode", "ssp", "--staleness", "100"}, "--staleness"},
		{"negative staleness", []string{"--mode", "essp", "--staleness", "-1"}, "--staleness"},
		{"slow worker below 1", []string{"--mode", "ssp", "--slow-worker", "0.5"}, "--slow-worker"},
		{"slow turns alone", []string{"--mode", "ssp", "--slow-turns"}, "--slow-turns"},
		{"slow turns scheduled", []string{"--slow-turns"}, "--slow-turns"},
		{"checkpoints at a time", []string{"--mode", "ssp", "--checkpoint-every", "5m"}, "--checkpoint-every 5m0s: --mode ssp takes a checkpoint every N clocks"},
		{"clocks per iter", []string{"--mode", "bsp", "--clocks-per-iter", "0"}, "--clocks-per-iter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"mf", "--train", train, "--progress", "0", "--metrics", filepath.Join(dir, "m.csv")}, tc.args...)
			code, _, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit status %d, error %q; want 2 and one that names %s", code, stderr, tc.want)
			}
			assertNoOutput(t, dir)
		})
	}
}

// TestMFPSProcesses runs --mode bsp as separate OS processes, a coordinator
// and two workers against a NATS server, the workers started with no
// setting but their data: they take the job's from the coordinator, and
// the model is as good as the whole job's, and the files written are the
// model reported. (Not bit for bit: a read under bsp sees every change of
// the clocks before its own, and may see some of its clock's too, as they
// come; two whole jobs differ as much.) A scheduler is refused.
func TestMFPSProcesses(t *testing.T) {
	train, test := genMFData(t)
	dir := t.TempDir()
	data := []string{"--train", train, "--test", test, "--job", "mfps"}
	settings := []string{"--mode", "bsp", "--rank", "3", "--workers", "2", "--iters", "4", "--progress", "0"}
	whole := filepath.Join(dir, "whole")
	code, stdout, stderr := runCLI(t, slices.Concat([]string{"mf", "--out", whole}, settings, data)...)
	if code != 0 {
		t.Fatalf("whole job: exit %d: %s", code, stderr)
	}
	want := rmseOf(t, stdout)
	url := testhelper.ServerURL(t)
	roles := slices.Concat([]string{"--app", "mf", "--nats", url}, data)
	dist := filepath.Join(dir, "dist")
	coord := startProcess(t, "coordinator", slices.Concat([]string{"coordinator", "--out", dist}, settings, roles)...)
	waitAll(t, coord,
		startProcess(t, "worker 1", append([]string{"worker"}, roles...)...),
		startProcess(t, "worker 2", append([]string{"worker"}, roles...)...))
	if got := rmseOf(t, coord.stdout.String()); math.Abs(got-want) > 0.01*want {
		t.Errorf("test RMSE %v, the whole job's %v", got, want)
	}
	if got, reported := savedRMSE(t, dist, test), rmseOf(t, coord.stdout.String()); math.Abs(got-reported) > 1e-6 {
		t.Errorf("the files written give a test RMSE of %.9f, the job reported %.6f", got, reported)
	}
	code, _, stderr = runCLI(t, slices.Concat([]string{"scheduler", "--app", "mf", "--nats", url}, settings, data)...)
	if code != 2 || !strings.Contains(stderr, "--mode bsp has no scheduler role") {
		t.Errorf("a scheduler: exit %d, %s", code, stderr)
	}
}

// rmseOf returns the test RMSE of the result line in stdout.
func rmseOf(t *testing.T, stdout string) float64 {
	t.Helper()
	m := regexp.MustCompile(`test RMSE ([0-9.]+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no result line: %q", stdout)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// savedRMSE returns the RMSE over the ratings of test of the model that
// the files of prefix hold.
func savedRMSE(t *testing.T, prefix, test string) float64 {
	t.Helper()
	var ratings []mf.Rating
	if err := mf.ReadRatings(test, func(_ int, r mf.Rating) error { ratings = append(ratings, r); return nil }); err != nil {
		t.Fatal(err)
	}
	s, err := mf.LoadSaved(prefix)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := s.Predict(test, &b); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for k, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		p, err := strconv.ParseFloat(strings.Fields(l)[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += (ratings[k].Value - p) * (ratings[k].Value - p)
	}
	return math.Sqrt(sum / float64(len(ratings)))
}

// TestMFPSResume runs a job that takes checkpoints, then the same job
// with --resume: it starts again at the last checkpoint and ends with the
// same model, bit for bit (one worker: its reads are exact).
func TestMFPSResume(t *testing.T) {
	train, test := genMFData(t)
	dir := t.TempDir()
	args := []string{"mf", "--mode", "bsp", "--workers", "1", "--rank", "3", "--iters", "6", "--progress", "0",
		"--train", train, "--test", test, "--checkpoint-every", "40", "--store", filepath.Join(dir, "store")}
	first, again := filepath.Join(dir, "first"), filepath.Join(dir, "again")
	if code, _, stderr := runCLI(t, append(args, "--out", first)...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, append(args, "--out", again, "--resume", "--verbose")...)
	if code != 0 || !strings.Contains(stderr, "resumed") || !strings.Contains(stdout, "clocks 60") {
		t.Fatalf("--resume: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, suffix := range []string{".W.txt", ".H.txt", ".bias.txt"} {
		sameFiles(t, again+suffix, first+suffix)
	}
	code, _, stderr = runCLI(t, append(args, "--out", again, "--resume", "--rank", "4")...)
	if code == 0 || !strings.Contains(stderr, "other tables") {
		t.Errorf("--resume with another rank: exit %d, %s", code, stderr)
	}
}

// TestMFPSProcessesResume runs a coordinator that takes checkpoints and a
// worker, then both again with --resume given to the coordinator alone:
// the worker learns of it as it joins, starts again at the last
// checkpoint, and the files are the first run's and the whole job's, bit
// for bit (one worker).
func TestMFPSProcessesResume(t *testing.T) {
	train, test := genMFData(t)
	dir := t.TempDir()
	data := []string{"--train", train, "--test", test}
	settings := []string{"--mode", "bsp", "--workers", "1", "--rank", "3", "--iters", "5", "--progress", "0"}
	whole := filepath.Join(dir, "whole")
	if code, _, stderr := runCLI(t, slices.Concat([]string{"mf", "--out", whole}, settings, data)...); code != 0 {
		t.Fatalf("whole job: exit %d: %s", code, stderr)
	}
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: t.TempDir()})
	roles := slices.Concat([]string{"--app", "mf", "--nats", srv.ClientURL(), "--job", "mfpsresume"}, data)
	first, again := filepath.Join(dir, "first"), filepath.Join(dir, "again")
	resumeRoles(t, slices.Concat([]string{"--checkpoint-every", "20"}, settings), roles, first, again)
	for _, suffix := range []string{".W.txt", ".H.txt", ".bias.txt"} {
		sameFiles(t, again+suffix, first+suffix)
		sameFiles(t, first+suffix, whole+suffix)
	}
}

// resumeRoles runs a coordinator with settings and a worker (roles: the
// flags of both) that write to first, then both again with --resume given
// to the coordinator alone, writing to again: the worker must say it
// resumed, and the job end at clock 50.
func resumeRoles(t *testing.T, settings, roles []string, first, again string) {
	t.Helper()
	run := func(out string, extra ...string) (coord, worker *process) {
		coord = startProcess(t, "coordinator", slices.Concat([]string{"coordinator", "--out", out}, settings, roles, extra)...)
		worker = startProcess(t, "worker", slices.Concat([]string{"worker", "--verbose"}, roles)...)
		waitAll(t, coord, worker)
		return coord, worker
	}
	run(first)
	coord, worker := run(again, "--resume")
	if !strings.Contains(worker.stderr.String(), "ps: resumed from the checkpoint") || !strings.Contains(coord.stdout.String(), "clocks 50") {
		t.Errorf("--resume: coordinator's output %q, worker's log %q", coord.stdout.String(), worker.stderr.String())
	}
}
