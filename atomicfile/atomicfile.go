// Package atomicfile writes output files so that a reader never sees a
// half-written one: data goes to a temporary file beside the target, which
// is renamed into place only once it is complete.
package atomicfile

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File is an output file being written. Write to it, then Commit or Abort.
type File struct {
	*bufio.Writer
	f    *os.File
	path string
	done bool
}

// Mode is the permission of a committed file before the process's umask
// is applied, as os.Create gives it: with the usual umask 022, rw-r--r--.
const Mode fs.FileMode = 0o666

// Create starts writing the file at path. Its mode is Mode less the umask
// (a temporary file would be private to its owner).
func Create(path string) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Chmod(Mode &^ umask); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &File{Writer: bufio.NewWriterSize(f, 1<<16), f: f, path: path}, nil
}

// Path returns the path the file will have once committed.
func (a *File) Path() string { return a.path }

// Commit flushes, syncs and renames the file into place.
func (a *File) Commit() error {
	if err := a.finish(); err != nil {
		return err
	}
	if err := os.Rename(a.f.Name(), a.path); err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// finish flushes, syncs and closes the temporary file, which is removed if
// that fails: it is then ready to be renamed into place.
func (a *File) finish() error {
	if a.done {
		return fmt.Errorf("write %s: already finished", a.path)
	}
	a.done = true
	err := a.Flush()
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// Abort discards the file. It is safe to call after Commit, where it does
// nothing, so that it can be deferred.
func (a *File) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.f.Close()
	os.Remove(a.f.Name())
}

// Write writes the file at path with fn, atomically: if fn fails, nothing
// is left at path.
func Write(path string, fn func(w *bufio.Writer) error) error {
	a, err := Create(path)
	if err != nil {
		return err
	}
	defer a.Abort()
	if err := fn(a.Writer); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return a.Commit()
}
