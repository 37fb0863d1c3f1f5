package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersion checks that the built command names the revision it was
// built from. go test stamps no VCS information, and a machine may switch
// stamping off (GOFLAGS=-buildvcs=false), so the test builds its own
// binary with stamping on.
func TestVersion(t *testing.T) {
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !st.IsDir() {
		// The go command stamps only a checkout with a .git directory,
		// not a linked worktree.
		t.Skip("not a checkout with a .git directory")
	}
	bin := filepath.Join(t.TempDir(), "strads")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("strads version: %v\n%s", err, out)
	}
	if want := strings.TrimSpace(string(rev))[:12]; !strings.HasPrefix(string(out), "strads ") || !strings.Contains(string(out), want) {
		t.Errorf("strads version printed %q, want the revision %s", out, want)
	}
}
