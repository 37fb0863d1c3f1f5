package atomicfile

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	if err := Write(path, func(w *bufio.Writer) error {
		_, err := w.WriteString("a,b\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "a,b\n" {
		t.Fatalf("got %q, %v", got, err)
	}

	failed := filepath.Join(dir, "failed.csv")
	boom := errors.New("boom")
	if err := Write(failed, func(w *bufio.Writer) error {
		w.WriteString("half")
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("error %v, want boom", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries after a failed write, want 1 (no temporary left)", len(entries))
	}
}

// TestMode checks that a committed file has the mode os.Create would give
// it under the process's umask, not the temporary file's 0600.
func TestMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.csv")
	if err := Write(path, func(w *bufio.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Mode().Perm(), Mode&^umask; got != want {
		t.Errorf("mode %v, want %v (umask %v)", got, want, umask)
	}
	if umask&0o044 == 0 && st.Mode().Perm()&0o044 == 0 {
		t.Errorf("mode %v: others cannot read the file although the umask %v lets them", st.Mode().Perm(), umask)
	}
}

// TestMarkRewindPatch drives the edits a metrics CSV takes: a rewind to a
// mark, and a byte overwritten in place, buffered or flushed.
func TestMarkRewindPatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.csv")
	a, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Abort()
	a.WriteString("h\n")
	mark, err := a.Mark()
	if err != nil || mark != 2 {
		t.Fatalf("mark %d, %v; want 2", mark, err)
	}
	a.WriteString("r1,0\nr2,0\n")
	if err := a.Rewind(mark); err != nil {
		t.Fatal(err)
	}
	a.WriteString("r3,0\n")
	off, err := a.Offset()
	if err != nil || off != 7 {
		t.Fatalf("offset %d, %v; want 7", off, err)
	}
	a.WriteString("r4,0\n") // buffered
	if err := a.Patch(off-2, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := a.Patch(off+3, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := a.Patch(off+4, []byte("12")); err == nil {
		t.Error("a patch past the end was taken")
	}
	a.WriteString("r5\n")
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "h\nr3,1\nr4,1\nr5\n" {
		t.Errorf("got %q, %v", got, err)
	}
}
