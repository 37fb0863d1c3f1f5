//go:build !unix

package atomicfile

import "io/fs"

// umask is the usual file mode creation mask, where the system has none.
const umask fs.FileMode = 0o022
