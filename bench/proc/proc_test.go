package proc

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRun checks a process's output and environment, a failing one's
// error, and one killed at its time limit.
func TestRun(t *testing.T) {
	ctx := context.Background()
	r, err := Run(ctx, 10*time.Second, []string{"PROC_TEST=7"}, "sh", "-c", "echo out $PROC_TEST; echo err >&2")
	if err != nil || r.Stdout != "out 7\n" || r.Stderr != "err\n" || r.TimedOut || r.Wall <= 0 {
		t.Errorf("got %+v, %v", r, err)
	}
	if _, err := Run(ctx, 10*time.Second, nil, "sh", "-c", "echo why; exit 3"); err == nil || !strings.Contains(err.Error(), "why") {
		t.Errorf("a failing process: error %v, want one with its output", err)
	}
	if r, err := Run(ctx, 100*time.Millisecond, nil, "sleep", "10"); err != nil || !r.TimedOut {
		t.Errorf("a process past its limit: %+v, %v; want TimedOut", r, err)
	}
}

func TestKeyValues(t *testing.T) {
	kv := KeyValues("import_s 0.5\n  fit_s  1.25 \n\nconverged 1\n")
	if kv["fit_s"] != "1.25" || kv["converged"] != "1" || kv["import_s"] != "0.5" || len(kv) != 3 {
		t.Errorf("got %v", kv)
	}
}
