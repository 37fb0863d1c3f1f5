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
