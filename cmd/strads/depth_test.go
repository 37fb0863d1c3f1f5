package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// TestDepthStopDeterministic checks that a --tol stop at depth 4 is
// deterministic: three all-in-one runs and a run as separate processes
// stop after the same round and write the same model file, the same reports
// (round, objective, nnz, updates and gap of every metrics row), and the
// last report shows the state written, after the job's last round.
func TestDepthStopDeterministic(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data.svm")
	if code, _, stderr := runCLI(t, "gen", "lasso", "--samples", "200", "--features", "100", "--density", "0.2",
		"--corr-groups", "0", "--true-nnz", "15", "--seed", "3", "-o", data); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	common := []string{"--data", data, "--workers", "2", "--layout", "rows", "--depth", "4", "--tol", "1e-6",
		"--lambda-ratio", "0.3", "--report-every", "3", "--progress", "0", "--job", "depth-stop"}
	// reports returns the deterministic columns of a metrics CSV, and the
	// round of its last row.
	reports := func(path string) (string, string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
			cells := strings.Split(line, ",")
			rows = append(rows, strings.Join(cells[1:6], ","))
		}
		return strings.Join(rows, "\n"), strings.Split(rows[len(rows)-1], ",")[0]
	}
	roundsRe := regexp.MustCompile(`rounds (\d+) .*\(converged\)`)
	var model []byte
	var metrics string
	for run := range 3 {
		dir := t.TempDir()
		out, csv := filepath.Join(dir, "model.csv"), filepath.Join(dir, "metrics.csv")
		code, stdout, stderr := runCLI(t, append([]string{"lasso", "--out", out, "--metrics", csv}, common...)...)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, stderr)
		}
		m := roundsRe.FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("run %d: no converged stop in %q", run, stdout)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		rep, last := reports(csv)
		if last != m[1] {
			t.Errorf("run %d: the last report shows the state after round %s, the job ran %s", run, last, m[1])
		}
		if run == 0 {
			model, metrics = got, rep
			t.Logf("converged after %s rounds", m[1])
			continue
		}
		if !bytes.Equal(got, model) || rep != metrics {
			t.Fatalf("run %d differs from run 0 (model equal: %v; reports equal: %v)", run, bytes.Equal(got, model), rep == metrics)
		}
	}

	url := testhelper.ServerURL(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "distributed.csv")
	roles := append([]string{"--nats", url}, common...)
	procs := []*process{
		startProcess(t, "worker 1", append([]string{"worker"}, roles...)...),
		startProcess(t, "worker 2", append([]string{"worker"}, roles...)...),
		startProcess(t, "coordinator", append([]string{"coordinator", "--out", out}, roles...)...),
		startProcess(t, "scheduler", append([]string{"scheduler"}, roles...)...),
	}
	waitAll(t, procs...)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, model) {
		t.Errorf("separate processes found\n%s\nall-in-one found\n%s", got, model)
	}
}
