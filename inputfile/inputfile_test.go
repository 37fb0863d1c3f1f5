package inputfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestOpen(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no named pipes or /dev/zero")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, []byte("1 1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	tests := []struct {
		path string
		ok   bool
		kind string // in the error of a path that is no regular file
		gone bool   // the error is fs.ErrNotExist
	}{
		{path: file, ok: true},
		{path: link, ok: true},
		{path: fifo, kind: "a named pipe"},
		{path: "/dev/zero", kind: "a device"},
		{path: dir, kind: "a directory"},
		{path: filepath.Join(dir, "missing"), gone: true},
	}
	for _, tt := range tests {
		f, err := Open(tt.path) // a named pipe would block here if it were opened
		switch {
		case tt.ok:
			if err != nil {
				t.Errorf("Open(%s): %v", tt.path, err)
				continue
			}
			f.Close()
		case tt.gone:
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Open(%s): got %v, want fs.ErrNotExist", tt.path, err)
			}
		default:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tt.path+": ") || !strings.Contains(err.Error(), tt.kind) {
				t.Errorf("Open(%s): got %v, want ErrNotRegular naming the path and %q", tt.path, err, tt.kind)
			}
			if f != nil {
				f.Close()
			}
		}
	}
}
