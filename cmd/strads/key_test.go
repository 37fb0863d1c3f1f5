package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/internal/testhelper"
)

// TestKeyedProcesses runs a job whose roles, separate OS processes, share
// a key of strads key new: it ends with the all-in-one model; a worker
// without the key, and one with another, are refused, with exit status 1
// and an error that says why.
func TestKeyedProcesses(t *testing.T) {
	data := genData(t)
	dir := t.TempDir()
	key, other := filepath.Join(dir, "job.key"), filepath.Join(dir, "other.key")
	for _, k := range []string{key, other} {
		if code, _, stderr := runCLI(t, "key", "new", k); code != 0 {
			t.Fatalf("key new: exit %d: %s", code, stderr)
		}
	}
	common := []string{"--data", data, "--workers", "2", "--lambda-ratio", "0.05", "--seed", "7", "--max-rounds", "200",
		"--tol", "0", "--progress", "0", "--job", "keyed"}
	allInOne := filepath.Join(dir, "all-in-one.csv")
	if code, _, stderr := runCLI(t, append([]string{"lasso", "--out", allInOne}, common...)...); code != 0 {
		t.Fatalf("all-in-one: exit %d: %s", code, stderr)
	}
	url := testhelper.ServerURL(t)
	roles := append([]string{"--nats", url, "--key", key}, common...)
	out := filepath.Join(dir, "keyed.csv")
	procs := []*process{
		startProcess(t, "coordinator", append([]string{"coordinator", "--out", out}, roles...)...),
		startProcess(t, "worker 1", append([]string{"worker"}, roles...)...),
		startProcess(t, "worker 2", append([]string{"worker"}, roles...)...),
		startProcess(t, "scheduler", append([]string{"scheduler"}, roles...)...),
	}
	outsiders := []struct {
		p    *process
		want string
	}{
		{startProcess(t, "worker without the key", append([]string{"worker", "--nats", url, "--join-timeout", "3s"}, common...)...),
			"join refused: wrong key"},
		{startProcess(t, "worker with another key", append([]string{"worker", "--nats", url, "--key", other, "--join-timeout", "3s"}, common...)...),
			"the job's coordinator does not have this key"},
	}
	for _, o := range outsiders {
		if code := o.p.wait(t, time.Minute); code != 1 || !strings.Contains(o.p.stderr.String(), o.want) {
			t.Errorf("%s: exit %d, want 1 and %q: %s", o.p.name, code, o.want, o.p.stderr.String())
		}
	}
	waitAll(t, procs...)
	sameFiles(t, out, allInOne)
	k, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if strings.Contains(p.stderr.String(), strings.TrimSpace(string(k))) {
			t.Errorf("%s showed the key", p.name)
		}
	}
}

// TestWholeJobOwnKey: a whole job on an external server without --key
// uses a random key of its own: a worker started beside it cannot join.
func TestWholeJobOwnKey(t *testing.T) {
	data := genData(t)
	url := testhelper.ServerURL(t)
	common := []string{"--data", data, "--workers", "2", "--lambda-ratio", "0.05", "--tol", "0", "--progress", "0", "--job", "own", "--nats", url}
	whole := startProcess(t, "whole job", append([]string{"lasso", "--max-rounds", "1000000"}, common...)...)
	outsider := startProcess(t, "worker", append([]string{"worker", "--join-timeout", "20s"}, common...)...)
	if code := outsider.wait(t, time.Minute); code != 1 || !strings.Contains(outsider.stderr.String(), "join refused: wrong key") {
		t.Errorf("worker beside a whole job: exit %d, want 1 and a refusal for its key: %s", code, outsider.stderr.String())
	}
	whole.cmd.Process.Kill()
}
