//go:build unix

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// umask is the process's file mode creation mask, read once at start: a
// process cannot read it without setting it, so reading it again later
// would race with files created meanwhile.
var umask = func() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}()

// syncDir syncs a directory, so that the renames in it last a crash. A
// file system that cannot sync a directory (EINVAL) is not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
