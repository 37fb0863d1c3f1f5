// Package inputfile opens the files a job reads: its data, models and
// vocabularies. It refuses, before opening it, what is not a regular file
// (a named pipe, a device, a directory): the readers read a file more than
// once (to count, then to parse; every role its own copy), which a pipe
// cannot give; opening a named pipe waits for a writer without end, out of
// reach of every timeout; and a device such as /dev/zero never ends
// (DESIGN "Outputs and inputs"). Outputs have package atomicfile.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// ErrNotRegular is in the chain of Check's and Open's error for a path
// that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Check returns nil if path names a regular file (through links), an error
// matching ErrNotRegular that names path and what it is if it names
// something else, and os.Stat's error otherwise (errors.Is(err,
// fs.ErrNotExist) for a missing file). It opens nothing. A Remote's path
// is accepted as it is, unfetched.
func Check(path string) error {
	if _, ok := RemoteOf(path); ok {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: %w but %s: an input must be a file that can be read more than once", path, ErrNotRegular, Kind(st.Mode()))
	}
	return nil
}

// Open opens path for reading once Check accepts it. A Remote's path is
// fetched whole first.
func Open(path string) (*os.File, error) {
	if r, ok := RemoteOf(path); ok {
		if err := r.Fetch(); err != nil {
			return nil, err
		}
		return os.Open(path)
	}
	if err := Check(path); err != nil {
		return nil, err
	}
	return os.Open(path)
}

// Kind says what a file of mode m that is not regular is: "a directory",
// "a named pipe", "a device", "a socket".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0, m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a " + m.Type().String() + " file"
}

// A Remote is an input that a role has not fetched whole: a data set over
// NATS (DESIGN "Data over NATS"), registered under the path of its
// local copy. A reader that takes a range of lines asks Lines for them, and
// fetches only about its part; one that needs every byte opens the path,
// and Open fetches the whole first. Package cli registers them; nothing
// here knows of NATS.
type Remote interface {
	// Summary describes the whole content, from the data set's index.
	Summary() Summary
	// Fetch makes the whole content the file at the registered path,
	// once: a second call returns the first one's error.
	Fetch() error
	// Lines returns a reader of whole lines of the content that starts at
	// line first (0-based) or before it and holds at least the lines
	// before end (fewer where the content has fewer), and the 0-based
	// number of its first line.
	Lines(first, end int) (io.ReadCloser, int, error)
	// Blocks describes the blocks, in order, that Lines fetches whole:
	// a reader of lines sorted by a key finds those of its keys from
	// their heads.
	Blocks() []Block
}

// Block is a block of whole lines of a Remote.
type Block struct {
	// Line is the 0-based number of its first line.
	Line int
	// Head is the start of its first line (without the '\n'), some tens
	// of bytes.
	Head string
}

// Summary is what a role knows of the whole content of a Remote without
// holding it.
type Summary struct {
	// Name is what the user gave (nats:NAME), for messages.
	Name string
	// Size is the whole content's size in bytes.
	Size int64
	// Lines is the number of lines: the '\n's, and one more if the last
	// byte is not '\n'.
	Lines int
	// CRC32C is the CRC-32C (Castagnoli) of the whole content.
	CRC32C uint32
	// Fingerprint is the whole content's protocol.Fingerprint.
	Fingerprint string
}

var (
	remotesMu sync.Mutex
	remotes   = map[string]Remote{}
)

// Register registers r as the content of path, until the returned function
// is called.
func Register(path string, r Remote) (unregister func()) {
	remotesMu.Lock()
	defer remotesMu.Unlock()
	remotes[path] = r
	return func() {
		remotesMu.Lock()
		defer remotesMu.Unlock()
		if remotes[path] == r {
			delete(remotes, path)
		}
	}
}

// RemoteOf returns the Remote registered for path, if any.
func RemoteOf(path string) (Remote, bool) {
	remotesMu.Lock()
	defer remotesMu.Unlock()
	r, ok := remotes[path]
	return r, ok
}
