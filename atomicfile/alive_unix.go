//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// alive reports whether the process pid that started at start (clock
// ticks since boot, 0 if unknown) may still run: false only where it
// surely does not, kill(pid, 0) finding no process pid, or a process pid
// that started at another time (the pid was reused; Linux only, and only
// where start is known).
func alive(pid int, start uint64) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false
	}
	if start == 0 {
		return true
	}
	now, ok := procStart(pid)
	return !ok || now == start
}
