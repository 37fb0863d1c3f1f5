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
