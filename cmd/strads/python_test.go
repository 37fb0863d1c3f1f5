package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPython runs the Python package's tests (python/tests: its estimators
// against scikit-learn's results on the same data) with the strads command
// built for these tests. They need a python3 with numpy, scipy and
// scikit-learn (Debian's python3-sklearn); without one the test is skipped,
// unless STRADS_REQUIRE_PYTHON is set, as .ci/run sets it.
func TestPython(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	python := ""
	for _, p := range []string{os.Getenv("STRADS_PYTHON"), "/usr/bin/python3", "python3"} {
		if p != "" && exec.Command(p, "-c", "import numpy, scipy, sklearn").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		if os.Getenv("STRADS_REQUIRE_PYTHON") != "" {
			t.Fatal("no python3 with numpy, scipy and scikit-learn (apt-get install python3-sklearn), and STRADS_REQUIRE_PYTHON is set")
		}
		t.Skip("no python3 with numpy, scipy and scikit-learn")
	}
	pkg, err := filepath.Abs(filepath.Join("..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "unittest", "discover", "-s", filepath.Join(pkg, "tests"), "-v")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "STRADS_BIN="+binary, "PYTHONPATH="+pkg, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -m unittest: %v\n%s", python, err, out)
	}
	t.Logf("%s", out)
}
