// Package testhelper holds what the tests of many packages do alike:
// start an embedded nats-server and connect to it, write a file to read,
// run a job on the runtime or through the local driver, interrupt it and
// resume it, and describe how it ended, every number bit for bit. It is
// for tests only: it links nats-server (DESIGN "Package layout"), and the
// internal tests of the packages it imports (natsserver, wire, job,
// coordinator, local and below) cannot use it. The checks of sealed
// snapshots are package sealtest's.
package testhelper

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes data to a file named name in a fresh temporary
// directory of tb and returns its path.
func WriteFile(tb testing.TB, name, data string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}
