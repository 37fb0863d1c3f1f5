//go:build unix

package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalStops checks what a signal does to a running job: it stops,
// writes no output, and the command exits with 128 + the signal's number,
// naming the signal.
func TestSignalStops(t *testing.T) {
	data := genData(t)
	for _, tc := range []struct {
		sig    syscall.Signal
		status int
		name   string
	}{
		{syscall.SIGINT, 130, "SIGINT"},
		{syscall.SIGTERM, 143, "SIGTERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "model.csv")
			// No stop but the signal (and a time limit, should it be lost).
			cmd := exec.Command(binary, "lasso", "--data", data, "--lambda-ratio", "0.01", "--tol", "0",
				"--time-limit", "60s", "--progress", "50ms", "--out", out)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The first progress line says the job runs.
			lines := bufio.NewScanner(stderr)
			var seen []string
			for lines.Scan() {
				seen = append(seen, lines.Text())
				if strings.HasPrefix(lines.Text(), "round ") {
					break
				}
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			for lines.Scan() {
				seen = append(seen, lines.Text())
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("no exit 30 s after %s; stderr:\n%s", tc.name, strings.Join(seen, "\n"))
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.status {
				t.Errorf("exit %v, want status %d; stderr:\n%s", err, tc.status, strings.Join(seen, "\n"))
			}
			if !strings.Contains(strings.Join(seen, "\n"), tc.name+" received") {
				t.Errorf("stderr does not say %q:\n%s", tc.name+" received", strings.Join(seen, "\n"))
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("--out after the signal: %v, want no file", err)
			}
		})
	}
}
