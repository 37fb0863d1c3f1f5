package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/internal/testhelper"
)

// TestRolesTakeSettings runs Lasso jobs as separate processes whose
// scheduler and workers are given only the server, the job and their data:
// they take every other setting from the coordinator, the layout that
// --depth and --schedulers choose included (the row layout, another
// program than their own flags make), and the job finds the β of the
// all-in-one command, bit for bit.
func TestRolesTakeSettings(t *testing.T) {
	data := genData(t)
	dir := t.TempDir()
	common := []string{"--workers", "2", "--lambda-ratio", "0.05", "--seed", "7", "--max-rounds", "300", "--tol", "0",
		"--depth", "3", "--schedulers", "2", "--progress", "0"}
	allInOne := filepath.Join(dir, "all-in-one.csv")
	if code, _, stderr := runCLI(t, append([]string{"lasso", "--data", data, "--out", allInOne}, common...)...); code != 0 {
		t.Fatalf("all-in-one: exit %d: %s", code, stderr)
	}
	url := testhelper.ServerURL(t)
	distributed := filepath.Join(dir, "distributed.csv")
	role := []string{"--app", "lasso", "--nats", url, "--job", "settings", "--data", data}
	procs := []*process{
		startProcess(t, "worker 1", append([]string{"worker"}, role...)...),
		startProcess(t, "worker 2", append([]string{"worker"}, role...)...),
		startProcess(t, "scheduler 1", append([]string{"scheduler"}, role...)...),
		startProcess(t, "scheduler 2", append([]string{"scheduler"}, role...)...),
		startProcess(t, "coordinator", append(append([]string{"coordinator", "--out", distributed}, role...), common...)...),
	}
	waitAll(t, procs...)
	sameFiles(t, distributed, allInOne)
}

// TestRoleRefused checks that a worker given another value of a setting
// than the coordinator's is refused, and the job fails at once: exit
// status 2 on both, with an error naming the setting, and no output.
func TestRoleRefused(t *testing.T) {
	data := genData(t)
	dir := t.TempDir()
	url := testhelper.ServerURL(t)
	role := []string{"--app", "lasso", "--nats", url, "--job", "refused", "--data", data, "--progress", "0"}
	w := startProcess(t, "worker", append([]string{"worker", "--lambda-ratio", "0.2"}, role...)...)
	coord := startProcess(t, "coordinator", append([]string{"coordinator", "--workers", "1", "--lambda-ratio", "0.1",
		"--out", filepath.Join(dir, "model.csv")}, role...)...)
	for _, p := range []*process{coord, w} {
		if code := p.wait(t, 30*time.Second); code != 2 {
			t.Errorf("%s: exit %d, want 2: %s", p.name, code, p.stderr.String())
		}
		if msg := p.stderr.String(); !strings.Contains(msg, `setting "lambda-ratio" is 0.2, the job's is 0.1`) {
			t.Errorf("%s: error %q does not name the setting", p.name, msg)
		}
	}
	assertNoOutput(t, dir)
}
