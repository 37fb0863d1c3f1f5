package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/internal/testhelper"
)

// TestSIGTERMOnWorker sends SIGTERM to a worker process in the middle of
// a job whose roles are OS processes: the worker tells the coordinator
// before it exits (status 143), and the job fails at once, every other
// role with status 1, the coordinator naming the worker, far within the 60 s timeout (DESIGN
// "Failures and durability").
func TestSIGTERMOnWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	data := genData(t)
	url := testhelper.ServerURL(t)
	job := "sigterm"
	// Watch the job's partials: the first one says that the job runs.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("strads." + job + ".partial")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	roles := []string{"--nats", url, "--data", data, "--workers", "2", "--lambda-ratio", "0.05", "--max-rounds", "100000000",
		"--tol", "0", "--progress", "0", "--job", job, "--timeout", "60s", "--join-timeout", "60s"}
	victim := startProcess(t, "worker 1", append([]string{"worker", "--verbose"}, roles...)...)
	procs := []*process{
		startProcess(t, "worker 2", append([]string{"worker"}, roles...)...),
		startProcess(t, "scheduler", append([]string{"scheduler"}, roles...)...),
	}
	coord := startProcess(t, "coordinator", append([]string{"coordinator", "--out", filepath.Join(t.TempDir(), "m.csv")}, roles...)...)
	if _, err := sub.NextMsg(time.Minute); err != nil {
		t.Fatalf("the job did not start: %v", err)
	}
	start := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := coord.wait(t, 30*time.Second); code != 1 {
		t.Errorf("coordinator: exit %d, want 1", code)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the job failed %s after the signal, the timeout is 60s", took)
	}
	if code := victim.wait(t, 30*time.Second); code != 143 {
		t.Errorf("%s: exit %d, want 143 (SIGTERM): %s", victim.name, code, victim.stderr.String())
	}
	if msg := coord.stderr.String(); !strings.Contains(msg, "interrupted: SIGTERM received") || !strings.Contains(msg, "worker shard") {
		t.Errorf("coordinator said %q, want the interrupted worker named; the interrupted worker said %q", msg, victim.stderr.String())
	}
	t.Log(strings.TrimSpace(coord.stderr.String()))
	for _, p := range procs {
		if code := p.wait(t, 30*time.Second); code != 1 {
			t.Errorf("%s: exit %d, want 1: %s", p.name, code, p.stderr.String())
		}
	}
}
