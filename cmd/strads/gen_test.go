package main

import (
	"strings"
	"testing"
)

// TestGenUsage checks that strads gen lists its apps with --help (exit 0,
// on stdout) and without an app (exit 2, on stderr), and names them in one
// line for an unknown app.
func TestGenUsage(t *testing.T) {
	tests := []struct {
		name             string
		args             []string
		code             int
		stdout, stderr   string
		stderrLinesAtMax int
	}{
		{"help", []string{"--help"}, 0, "lasso   -o FILE", "", 0},
		{"-h", []string{"-h"}, 0, "mf      -o PREFIX", "", 0},
		{"no app", nil, 2, "", "no APP given: want one of lasso, lda, logreg, mf", 20},
		{"unknown app", []string{"nope"}, 2, "", "APP one of lasso, lda, logreg, mf", 1},
		{"an app's help", []string{"logreg", "--help"}, 0, "Usage: strads gen logreg", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"gen"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, stdout with %q, stderr with %q", code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
			}
			if n := strings.Count(stderr, "\n"); n > tt.stderrLinesAtMax {
				t.Errorf("%d lines on stderr, want at most %d: %q", n, tt.stderrLinesAtMax, stderr)
			}
			for _, app := range []string{"lasso", "lda", "logreg", "mf"} {
				if tt.code == 0 && tt.args[0] != "logreg" && !strings.Contains(stdout, "  "+app+" ") {
					t.Errorf("usage does not list %s: %q", app, stdout)
				}
			}
		})
	}
}
