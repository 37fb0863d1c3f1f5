package main

import (
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/natsserver"
)

// objectiveOf returns the objective on a command's first line.
func objectiveOf(t *testing.T, stdout string) float64 {
	t.Helper()
	m := regexp.MustCompile(`^objective (\S+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no objective in %q", stdout)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// recompute returns F = (1/n)Σ log(1 + exp(−y·(x·w + b))) + λ·penalty and
// the accuracy of the model file at path on the LIBSVM file data, computed
// here from scratch.
func recompute(t *testing.T, model, data string) (obj, acc float64) {
	t.Helper()
	m, err := linear.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	w := m.Dense()
	var loss float64
	n, correct := 0, 0
	err = libsvm.Read(data, func(_ int, r libsvm.Row) error {
		y := -1.0
		if r.Label == 1 {
			y = 1
		}
		z := m.Intercept
		for k, j := range r.Index {
			z += w[j] * r.Value[k]
		}
		loss += math.Log1p(math.Exp(-y * z))
		if (z >= 0) == (y > 0) {
			correct++
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pen := 0.0
	for _, v := range w {
		if m.Penalty == linear.PenaltyL2 {
			pen += v * v / 2
		} else {
			pen += math.Abs(v)
		}
	}
	return loss/float64(n) + m.Lambda*pen, float64(correct) / float64(n)
}

// TestLogregModes runs every parameter-server mode on a small generated
// set: the objective ends within 3% of the scheduled solver's optimum,
// the metrics decrease it, and the model file reloads to the objective
// and accuracy printed.
func TestLogregModes(t *testing.T) {
	data := genLogregData(t, 400, "--labels", "01", "--bias", "0.5")
	code, stdout, stderr := runCLI(t, "logreg", "--data", data, "--lambda-ratio", "0.1", "--tol", "1e-8", "--progress", "0")
	if code != 0 {
		t.Fatalf("scheduled: exit %d: %s", code, stderr)
	}
	opt := objectiveOf(t, stdout)
	for _, tc := range []struct {
		mode    string
		workers string
		extra   []string
	}{
		{"bsp", "1", nil},
		{"bsp", "2", nil},
		{"ssp", "2", []string{"--staleness", "3"}},
		{"essp", "2", nil},
		{"async", "2", []string{"--servers", "2"}},
	} {
		t.Run(tc.mode+"-"+tc.workers, func(t *testing.T) {
			dir := t.TempDir()
			out, metrics := filepath.Join(dir, "w.csv"), filepath.Join(dir, "m.csv")
			args := append([]string{"logreg", "--mode", tc.mode, "--data", data, "--lambda-ratio", "0.1", "--workers", tc.workers,
				"--out", out, "--metrics", metrics, "--progress", "0", "--tol", "0"}, tc.extra...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			f := objectiveOf(t, stdout)
			t.Logf("%s: objective %.6g, scheduled %.6g (+%.2f%%)", tc.mode, f, opt, 100*(f/opt-1))
			if f > opt*1.03 || f < opt*(1-1e-9) {
				t.Errorf("objective %.9g, want within 3%% above the optimum %.9g", f, opt)
			}
			obj, acc := recompute(t, out, data)
			if math.Abs(obj-f) > 1e-9*f {
				t.Errorf("the model file's objective %.12g, printed %.12g", obj, f)
			}
			if want := "train accuracy " + strconv.FormatFloat(acc, 'f', 4, 64); !strings.Contains(stdout, want) {
				t.Errorf("output %q: want %q", stdout, want)
			}
			rows := readLines(t, metrics)
			if rows[0] != psMetricsHeader || len(rows) < 3 {
				t.Fatalf("metrics %q", rows)
			}
			first, _ := strconv.ParseFloat(strings.Split(rows[1], ",")[2], 64)
			last, _ := strconv.ParseFloat(strings.Split(rows[len(rows)-1], ",")[2], 64)
			if !(last < first) {
				t.Errorf("metrics objective from %v to %v: want a decrease", first, last)
			}
		})
	}
}

// TestLogregL2 fits the L2 penalty: the file says so and reloads to the
// objective printed.
func TestLogregL2(t *testing.T) {
	data := genLogregData(t, 300)
	out := filepath.Join(t.TempDir(), "w.csv")
	code, stdout, stderr := runCLI(t, "logreg", "--mode", "ssp", "--penalty", "l2", "--C", "1", "--data", data, "--workers", "2", "--out", out, "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m, err := linear.ReadFile(out)
	if err != nil || m.Penalty != linear.PenaltyL2 || m.Lambda != 1.0/300 {
		t.Fatalf("model %+v (%v): want penalty l2, λ 1/300", m, err)
	}
	if obj, _ := recompute(t, out, data); math.Abs(obj-objectiveOf(t, stdout)) > 1e-9*obj {
		t.Errorf("the model file's objective %.12g, printed %q", obj, stdout)
	}
}

// TestLogregModeFlags: flags of another mode are refused, naming them.
func TestLogregModeFlags(t *testing.T) {
	data := genLogregData(t, 50)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "bsp", "--staleness", "2"}, "--staleness is for ssp and essp"},
		{[]string{"--mode", "async", "--staleness", "2"}, "--staleness is for ssp and essp"},
		{[]string{"--staleness", "2"}, "--staleness is for the parameter-server modes"},
		{[]string{"--penalty", "l2"}, "--penalty is for the parameter-server modes"},
		{[]string{"--mode", "ssp", "--layout", "cols"}, "--layout is for --mode scheduled"},
		{[]string{"--mode", "ssp", "--schedule", "random"}, "--schedule is for --mode scheduled"},
		{[]string{"--mode", "ssp", "--lambda-path", "5"}, "--lambda-path is for --mode scheduled"},
		{[]string{"--mode", "ssp", "--staleness", "64"}, "--staleness must be in [0, 63]"},
		{[]string{"--mode", "ssp", "--penalty", "l2"}, "--lambda-ratio is the L1 penalty's"},
		{[]string{"--mode", "ssp", "--penalty", "l3"}, "unknown penalty"},
		{[]string{"--mode", "sgd"}, "want scheduled, bsp, ssp, essp or async"},
		{[]string{"--mode", "ssp", "--clocks-per-pass", "0"}, "--clocks-per-pass must be >= 1"},
	} {
		args := append([]string{"logreg", "--data", data, "--lambda-ratio", "0.1"}, tc.args...)
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestLogregPSProcesses runs --mode ssp as separate OS processes, a
// coordinator and two workers against a NATS server, the workers started
// with their data alone: the model is as good as the whole job's, and the
// file written is the model reported.
func TestLogregPSProcesses(t *testing.T) {
	data := genLogregData(t, 400, "--labels", "01", "--bias", "0.5")
	settings := []string{"--mode", "ssp", "--lambda-ratio", "0.1", "--workers", "2", "--progress", "0", "--tol", "0"}
	code, stdout, stderr := runCLI(t, slices.Concat([]string{"logreg", "--data", data}, settings)...)
	if code != 0 {
		t.Fatalf("whole job: exit %d: %s", code, stderr)
	}
	want := objectiveOf(t, stdout)
	url := testhelper.ServerURL(t)
	roles := []string{"--app", "logreg", "--nats", url, "--job", "lrps", "--data", data}
	out := filepath.Join(t.TempDir(), "w.csv")
	coord := startProcess(t, "coordinator", slices.Concat([]string{"coordinator", "--out", out}, settings, roles)...)
	waitAll(t, coord,
		startProcess(t, "worker 1", append([]string{"worker"}, roles...)...),
		startProcess(t, "worker 2", append([]string{"worker"}, roles...)...))
	got := objectiveOf(t, coord.stdout.String())
	if math.Abs(got-want) > 0.01*want {
		t.Errorf("objective %.9g, the whole job's %.9g", got, want)
	}
	if obj, _ := recompute(t, out, data); math.Abs(obj-got) > 1e-9*got {
		t.Errorf("the model file's objective %.12g, printed %.12g", obj, got)
	}
}

// sameMetrics fails the test unless two metrics CSVs of a parameter-server
// mode are the same but for their times.
func sameMetrics(t *testing.T, got, want string) {
	t.Helper()
	g, w := readLines(t, got), readLines(t, want)
	strip := func(rows []string) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			_, rest, _ := strings.Cut(r, ",")
			out[i] = rest
		}
		return out
	}
	if !slices.Equal(strip(g), strip(w)) || len(w) < 3 {
		t.Errorf("metrics %s:\n%s\nwant, but for the times, %s:\n%s", got, strings.Join(g, "\n"), want, strings.Join(w, "\n"))
	}
}

// TestLogregPSResume runs a job of --mode bsp that takes checkpoints,
// then the same job with --resume: it starts again at the last checkpoint
// and ends with the same model file and metrics, bit for bit but for the
// times (one worker: its reads are exact). --resume with other tables or
// other settings is refused, and --checkpoint-every at a time, and
// --resume without it.
func TestLogregPSResume(t *testing.T) {
	data := genLogregData(t, 300, "--labels", "01", "--bias", "0.5")
	dir := t.TempDir()
	// 48 clocks of training, evaluations every 8: the checkpoints of
	// clocks 10, 20, 30 and 40 are each inside a pass and between two.
	args := []string{"logreg", "--mode", "bsp", "--workers", "1", "--data", data, "--lambda-ratio", "0.1", "--progress", "0", "--tol", "0",
		"--passes", "6", "--clocks-per-pass", "8", "--checkpoint-every", "10", "--store", filepath.Join(dir, "store")}
	first, again := filepath.Join(dir, "first"), filepath.Join(dir, "again")
	if code, _, stderr := runCLI(t, append(args, "--out", first+".csv", "--metrics", first+".m.csv")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, append(args, "--out", again+".csv", "--metrics", again+".m.csv", "--resume", "--verbose")...)
	if code != 0 || !strings.Contains(stderr, "ps: resumed from the checkpoint") || !strings.Contains(stdout, "clocks 50") {
		t.Fatalf("--resume: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	sameFiles(t, again+".csv", first+".csv")
	sameMetrics(t, again+".m.csv", first+".m.csv")
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--passes", "7"}, "other tables"},
		{[]string{"--seed", "2"}, "other settings or data (seed 1, this job seed 2)"},
		{[]string{"--lambda-ratio", "0.2"}, "other settings or data (λ "},
	} {
		code, _, stderr := runCLI(t, slices.Concat(args, []string{"--out", again + ".csv", "--resume"}, tc.extra)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("--resume %v: exit %d, %s; want %q", tc.extra, code, stderr, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--checkpoint-every", "5m"}, "--checkpoint-every 5m0s: --mode ssp takes a checkpoint every N clocks (16 a pass)"},
		{[]string{"--resume"}, "--resume in --mode ssp: give the job's --checkpoint-every N too"},
	} {
		code, _, stderr = runCLI(t, slices.Concat([]string{"logreg", "--mode", "ssp", "--data", data, "--store", filepath.Join(dir, "store")}, tc.args)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestLogregPSProcessesResume runs --mode bsp as a coordinator and a
// worker process that takes checkpoints, given to the coordinator alone,
// then again with --resume, given to the coordinator alone: the worker
// takes both from it, starts again at the last checkpoint, and the model
// file is the first run's, and the whole job's, bit for bit.
func TestLogregPSProcessesResume(t *testing.T) {
	data := genLogregData(t, 300, "--labels", "01", "--bias", "0.5")
	dir := t.TempDir()
	settings := []string{"--mode", "bsp", "--workers", "1", "--lambda-ratio", "0.1", "--progress", "0", "--tol", "0",
		"--passes", "6", "--clocks-per-pass", "8"}
	whole := filepath.Join(dir, "whole.csv")
	if code, _, stderr := runCLI(t, slices.Concat([]string{"logreg", "--data", data, "--out", whole}, settings)...); code != 0 {
		t.Fatalf("whole job: exit %d: %s", code, stderr)
	}
	srv := testhelper.StartServer(t, natsserver.Options{StoreDir: t.TempDir()})
	roles := []string{"--app", "logreg", "--nats", srv.ClientURL(), "--job", "lrpsresume", "--data", data}
	first, again := filepath.Join(dir, "first.csv"), filepath.Join(dir, "again.csv")
	resumeRoles(t, slices.Concat([]string{"--checkpoint-every", "10"}, settings), roles, first, again)
	sameFiles(t, again, first)
	sameFiles(t, first, whole)
}
