// Package proc runs the processes of the bench programs that time whole
// jobs: strads built from a given revision, and its peers.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Result is a finished process: its output, its wall-clock and CPU (user
// and system) seconds, and whether it was killed at its time limit.
type Result struct {
	Stdout, Stderr string
	Wall, CPU      float64
	TimedOut       bool
}

// SingleThread is the environment that keeps NumPy, R and their BLAS and
// OpenMP libraries on one thread.
var SingleThread = []string{"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1", "BLIS_NUM_THREADS=1", "VECLIB_MAXIMUM_THREADS=1"}

// Run runs name with args and the environment plus env, killing it after
// limit (a Result with TimedOut, no error). A non-zero exit is an error
// that ends with the last lines of the process's output.
func Run(ctx context.Context, limit time.Duration, env []string, name string, args ...string) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	t0 := time.Now()
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String(), Wall: time.Since(t0).Seconds()}
	if st := cmd.ProcessState; st != nil {
		r.CPU = (st.UserTime() + st.SystemTime()).Seconds()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		r.TimedOut = true
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, Tail(r.Stdout), Tail(r.Stderr))
	}
	return r, nil
}

// Tail returns the last 15 lines of s.
func Tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// KeyValues parses the "key value" lines that a peer's script prints.
func KeyValues(s string) map[string]string {
	kv := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			kv[k] = strings.TrimSpace(v)
		}
	}
	return kv
}

// BuildStrads builds cmd/strads into bin, from the working tree (run from
// the repository root) or, with rev, from that git revision extracted into
// tmp, and says which.
func BuildStrads(ctx context.Context, rev, bin, tmp string) (string, error) {
	git := func(args ...string) string {
		out, err := exec.CommandContext(ctx, "git", args...).Output()
		if err != nil {
			return "?"
		}
		return strings.TrimSpace(string(out))
	}
	dir, what := "", ""
	if rev == "" {
		state := "clean"
		if git("status", "--porcelain", "--untracked-files=no") != "" {
			state = "with uncommitted changes"
		}
		what = fmt.Sprintf("the working tree at %s (%s)", git("rev-parse", "--short", "HEAD"), state)
	} else {
		commit := git("rev-parse", "--verify", rev+"^{commit}")
		if commit == "?" {
			return "", fmt.Errorf("--rev %s: not a commit", rev)
		}
		dir = filepath.Join(tmp, "src")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if out, err := exec.CommandContext(ctx, "sh", "-c", "git archive "+commit+" | tar -x -C "+dir).CombinedOutput(); err != nil {
			return "", fmt.Errorf("git archive %s: %w\n%s", rev, err, out)
		}
		defer os.RemoveAll(dir)
		what = "commit " + commit[:12] + " (" + git("log", "-1", "--format=%cs %s", commit) + ")"
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/strads")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/strads: %w\n%s", err, out)
	}
	return what, nil
}
