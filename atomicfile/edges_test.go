//go:build unix

package atomicfile

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestEdges checks the outputs at the edges: a symbolic link is written
// through to its target and stays a link, a device or a named pipe is
// refused and left as it was, and a directory that cannot take the file
// fails at Create, before anything is written.
func TestEdges(t *testing.T) {
	tests := []struct {
		name string
		// setup makes the test's files in dir and returns the output path.
		setup func(t *testing.T, dir string) string
		err   string // in Create's error; "" if it succeeds
		// check checks dir afterwards, for a successful write of "new\n".
		check func(t *testing.T, dir string)
	}{
		{"symbolic link", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "model.csv"), "old\n")
			symlink(t, "model.csv", filepath.Join(dir, "link.csv"))
			return filepath.Join(dir, "link.csv")
		}, "", func(t *testing.T, dir string) {
			isLink(t, filepath.Join(dir, "link.csv"), "model.csv")
			holds(t, filepath.Join(dir, "model.csv"), "new\n")
		}},
		{"chain of links to another directory", func(t *testing.T, dir string) string {
			mkdir(t, filepath.Join(dir, "sub"))
			symlink(t, filepath.Join(dir, "sub", "model.csv"), filepath.Join(dir, "b"))
			symlink(t, "b", filepath.Join(dir, "a"))
			return filepath.Join(dir, "a")
		}, "", func(t *testing.T, dir string) {
			isLink(t, filepath.Join(dir, "a"), "b")
			holds(t, filepath.Join(dir, "sub", "model.csv"), "new\n")
			only(t, filepath.Join(dir, "sub"), "model.csv")
		}},
		{"dangling link", func(t *testing.T, dir string) string {
			symlink(t, "absent.csv", filepath.Join(dir, "link.csv"))
			return filepath.Join(dir, "link.csv")
		}, "", func(t *testing.T, dir string) {
			isLink(t, filepath.Join(dir, "link.csv"), "absent.csv")
			holds(t, filepath.Join(dir, "absent.csv"), "new\n")
		}},
		{"link loop", func(t *testing.T, dir string) string {
			symlink(t, "b", filepath.Join(dir, "a"))
			symlink(t, "a", filepath.Join(dir, "b"))
			return filepath.Join(dir, "a")
		}, "symbolic links", nil},
		{"named pipe", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			return path
		}, "not a regular file but a named pipe", nil},
		{"device", func(t *testing.T, dir string) string { return os.DevNull }, "not a regular file but a device", nil},
		{"link to a device", func(t *testing.T, dir string) string {
			symlink(t, os.DevNull, filepath.Join(dir, "null"))
			return filepath.Join(dir, "null")
		}, "not a regular file but a device", nil},
		{"directory", func(t *testing.T, dir string) string { return dir }, "not a regular file but a directory", nil},
		{"standard output", func(t *testing.T, dir string) string {
			if st, err := os.Stat("/dev/stdout"); err != nil || st.Mode().IsRegular() {
				t.Skip("the standard output is a regular file, or none")
			}
			return "/dev/stdout"
		}, "not a regular file", nil},
		{"no such directory", func(t *testing.T, dir string) string { return filepath.Join(dir, "missing", "x.csv") }, "no such file", nil},
		{"directory that is a file", func(t *testing.T, dir string) string {
			write(t, filepath.Join(dir, "file"), "")
			return filepath.Join(dir, "file", "x.csv")
		}, "not a directory", nil},
		{"directory not writable", func(t *testing.T, dir string) string {
			if os.Geteuid() == 0 {
				t.Skip("root writes anywhere")
			}
			ro := filepath.Join(dir, "ro")
			mkdir(t, ro)
			if err := os.Chmod(ro, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(ro, 0o755) })
			return filepath.Join(ro, "x.csv")
		}, "permission denied", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tt.setup(t, dir)
			before := entries(t, dir)
			err := Write(path, func(w *bufio.Writer) error {
				_, err := w.WriteString("new\n")
				return err
			})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Write(%s): error %v, want one with %q", path, err, tt.err)
				}
				if after := entries(t, dir); after != before {
					t.Errorf("directory holds %s after a refused write, held %s", after, before)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, dir)
			if _, err := CreateGroup(path, path); err == nil || !strings.Contains(err.Error(), "the same file") {
				t.Errorf("CreateGroup of the path twice: error %v", err)
			}
		})
	}
}

// TestSame checks Same on links, hard links and paths that do not exist.
func TestSame(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	write(t, a, "a")
	symlink(t, "a", filepath.Join(dir, "sym"))
	if err := os.Link(a, filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "b"), "b")
	tests := []struct {
		x, y string
		want bool
	}{
		{"a", "a", true}, {"a", "./a", true}, {"a", "sym", true}, {"a", "hard", true}, {"sym", "hard", true},
		{"a", "b", false}, {"new", "new", true}, {"new", "other", false}, {"a", "new", false},
	}
	for _, tt := range tests {
		if got := Same(filepath.Join(dir, tt.x), filepath.Join(dir, tt.y)); got != tt.want {
			t.Errorf("Same(%s, %s) = %v, want %v", tt.x, tt.y, got, tt.want)
		}
	}
	if _, err := Target(os.DevNull); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Target(%s): error %v, want ErrNotRegular", os.DevNull, err)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// isLink checks that path is still a symbolic link to target.
func isLink(t *testing.T, path, target string) {
	t.Helper()
	got, err := os.Readlink(path)
	if err != nil || got != target {
		t.Errorf("%s links to %q (%v), want %q", path, got, err, target)
	}
}

// holds checks the content of the file at path.
func holds(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s holds %q (%v), want %q", path, b, err, want)
	}
}

// only checks that dir holds only the entry name: no temporary file.
func only(t *testing.T, dir, name string) {
	t.Helper()
	if got := entries(t, dir); got != name {
		t.Errorf("%s holds %s, want only %s", dir, got, name)
	}
}

// entries returns the names in dir, space-separated.
func entries(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// TestProtect checks that an output is refused where it is an input that
// Protect protects, through a link too, and taken again once released.
func TestProtect(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.svm")
	write(t, data, "1 1:1\n")
	symlink(t, "data.svm", filepath.Join(dir, "link"))
	release := Protect(data, "")
	for _, out := range []string{data, filepath.Join(dir, "link"), filepath.Join(dir, ".", "data.svm")} {
		_, err := CreateGroup(filepath.Join(dir, "model.csv"), out)
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), out) {
			t.Errorf("output %s: error %v, want ErrInput naming it", out, err)
		}
	}
	holds(t, data, "1 1:1\n")
	only(t, dir, "data.svm link")
	release()
	release() // does nothing more
	if err := Write(data, func(w *bufio.Writer) error { return nil }); err != nil {
		t.Errorf("after release: %v", err)
	}
}
