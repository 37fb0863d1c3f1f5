// Package atomicfile writes output files so that a reader never sees a
// half-written one: data goes to a temporary file beside the target, which
// is renamed into place only once it is complete.
//
// An output path that is a symbolic link is written through: the file it
// points to (through every link; it need not exist yet) is the target, the
// temporary file goes beside it and is renamed over it, and the link stays
// a link. An output path that is not a regular file (a device such as
// /dev/null, a named pipe, a directory, a socket) is refused at Create:
// such a file can be neither replaced by a rename (that would replace the
// node itself) nor written all or nothing (a pipe blocks until someone
// reads it, whatever the job's timeouts, and a reader sees a half-written
// model), so a job that writes there cannot keep this package's promise.
//
// A temporary file is named after its target and its owner,
// ".NAME.tmp-HOST-PID-START-RANDOM" (the process's id and, on Linux, its
// start time), so that one a killed process left can be told from one a
// live process writes: Create (and so Write and CreateGroup) removes the
// temporaries of its target whose owner, on this machine, is dead (no
// process PID, or one that started at another time, its pid reused),
// best effort, silently. It keeps a live process's, another target's,
// another machine's, one whose owner cannot be told (on systems other
// than Linux a reused pid counts as alive; without kill(pid, 0) every
// owner does), and any file not named exactly so.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/strads-go/strads/inputfile"
)

// File is an output file being written. Write to it, then Commit or Abort.
type File struct {
	*bufio.Writer
	f      *os.File
	path   string // as given, for messages
	target string // what the file replaces: path, through its symbolic links
	done   bool
}

// Mode is the permission of a committed file before the process's umask
// is applied, as os.Create gives it: with the usual umask 022, rw-r--r--.
const Mode fs.FileMode = 0o666

// Create starts writing the file at path. Its mode is Mode less the umask
// (a temporary file would be private to its owner). A path that is a
// symbolic link is written through to the file it points to; one that is
// not a regular file, or an input (Protect), is refused (see the package's
// documentation).
func Create(path string) (*File, error) {
	target, err := Target(path)
	if err == nil {
		err = checkInput(target)
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	removeStale(target)
	f, err := os.CreateTemp(filepath.Dir(target), tmpPattern(target))
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Chmod(Mode &^ umask); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &File{Writer: bufio.NewWriterSize(f, 1<<16), f: f, path: path, target: target}, nil
}

// maxLinks bounds the symbolic links Target follows, as the system does.
const maxLinks = 40

// ErrNotRegular is the error, in Target's and Create's chains, of an
// output path that exists and is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Target returns the file that writing path replaces: path itself, or, if
// path is a symbolic link, the file it points to, followed through every
// link, which need not exist. It fails if that file exists and is not a
// regular file (ErrNotRegular, naming what it is), or if path cannot be
// looked at (a directory on the way that is a file, or unreadable).
func Target(path string) (string, error) {
	// What the path opens, through every link: a link into /proc (say
	// /dev/stdout) ends at a name that is no file of the directory it
	// seems to be in.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return "", notRegular(st.Mode())
	}
	for range maxLinks {
		st, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			if !st.Mode().IsRegular() {
				return "", notRegular(st.Mode())
			}
			return path, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", fmt.Errorf("more than %d symbolic links", maxLinks)
}

// notRegular is the error of an output that is a file of mode m, not a
// regular one.
func notRegular(m fs.FileMode) error {
	return fmt.Errorf("%w but %s: outputs are written whole or not at all, which this cannot be (leave the output out to write nothing)", ErrNotRegular, inputfile.Kind(m))
}

// Same reports whether the paths a and b name the same file once written:
// their targets (Target) are the same existing file (os.SameFile: a hard
// link too), or the same path. A path Target refuses is compared as it is.
func Same(a, b string) bool {
	ta, err := Target(a)
	if err != nil {
		ta = a
	}
	tb, err := Target(b)
	if err != nil {
		tb = b
	}
	sa, erra := os.Stat(ta)
	sb, errb := os.Stat(tb)
	if erra == nil && errb == nil {
		return os.SameFile(sa, sb)
	}
	return absPath(ta) == absPath(tb)
}

// absPath returns path made absolute and clean, or clean if that fails.
func absPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	return abs
}

// Path returns the path the file will have once committed.
func (a *File) Path() string { return a.path }

// Commit flushes, syncs and renames the file into place.
func (a *File) Commit() error {
	if err := a.finish(); err != nil {
		return err
	}
	if err := os.Rename(a.f.Name(), a.target); err != nil {
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

// Mark returns how much has been written, flushed, so that Rewind can
// discard what is written after it (a job rolled back to a checkpoint
// rewinds its metrics).
func (a *File) Mark() (int64, error) {
	if err := a.Flush(); err != nil {
		return 0, fmt.Errorf("write %s: %w", a.path, err)
	}
	off, err := a.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", a.path, err)
	}
	return off, nil
}

// Rewind discards what was written after mark, a Mark of the file.
func (a *File) Rewind(mark int64) error {
	if err := a.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if err := a.f.Truncate(mark); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if _, err := a.f.Seek(mark, io.SeekStart); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// Offset returns how much has been written, buffered bytes included: the
// offset in the file of the next byte written.
func (a *File) Offset() (int64, error) {
	off, err := a.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", a.path, err)
	}
	return off + int64(a.Buffered()), nil
}

// Patch overwrites bytes already written, at offset off (an Offset of the
// file), with b; what follows them stays as it is.
func (a *File) Patch(off int64, b []byte) error {
	if end, err := a.Offset(); err != nil {
		return err
	} else if off < 0 || off+int64(len(b)) > end {
		return fmt.Errorf("write %s: patch [%d, %d) past the %d bytes written", a.path, off, off+int64(len(b)), end)
	}
	if err := a.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if _, err := a.f.WriteAt(b, off); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}
