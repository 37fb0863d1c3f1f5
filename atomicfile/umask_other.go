//go:build !unix

package atomicfile

import "io/fs"

// umask is the usual file mode creation mask, where the system has none.
const umask fs.FileMode = 0o022

// syncDir does nothing: the system cannot sync a directory.
func syncDir(string) error { return nil }
