//go:build unix

package atomicfile

import (
	"io/fs"
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
