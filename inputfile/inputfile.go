// Package inputfile opens the files a job reads: its data, models and
// vocabularies. It refuses, before opening it, what is not a regular file
// (a named pipe, a device, a directory): the readers read a file more than
// once (to count, then to parse; every role its own copy), which a pipe
// cannot give; opening a named pipe waits for a writer without end, out of
// reach of every timeout; and a device such as /dev/zero never ends
// (DESIGN §6). Outputs have package atomicfile.
package inputfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is in the chain of Check's and Open's error for a path
// that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Check returns nil if path names a regular file (through links), an error
// matching ErrNotRegular that names path and what it is if it names
// something else, and os.Stat's error otherwise (errors.Is(err,
// fs.ErrNotExist) for a missing file). It opens nothing.
func Check(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: %w but %s: an input must be a file that can be read more than once", path, ErrNotRegular, Kind(st.Mode()))
	}
	return nil
}

// Open opens path for reading once Check accepts it.
func Open(path string) (*os.File, error) {
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
