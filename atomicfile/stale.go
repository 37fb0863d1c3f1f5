package atomicfile

import (
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// A temporary file is named ".NAME.tmp-HOST-PID-START-RANDOM", beside its
// target NAME: HOST is 8 hex digits that tell this machine and its pid
// namespace (a hash of the host name and, on Linux, of /proc/self/ns/pid),
// PID the process that writes it, START the process's start time (on
// Linux, field 22 of /proc/PID/stat, in clock ticks since boot; 0 where it
// cannot be read, and on other systems), and RANDOM the digits
// os.CreateTemp puts in place of its "*".

// tmpRest is what follows ".NAME.tmp-" in a temporary's name.
var tmpRest = regexp.MustCompile(`^([0-9a-f]{8})-([1-9][0-9]{0,9})-([0-9]{1,20})-([0-9]{1,20})$`)

// self is this process's part of its temporaries' names: HOST-PID-START.
var self = sync.OnceValue(func() string {
	pid := os.Getpid()
	start, _ := procStart(pid)
	return fmt.Sprintf("%s-%d-%d", hostTag(), pid, start)
})

// hostTag returns HOST: 8 hex digits, a hash of the host name and the pid
// namespace, so that a temporary written on another machine sharing the
// directory (NFS, say), whose pid means nothing here, is never taken for a
// dead process's.
func hostTag() string {
	host, _ := os.Hostname()
	h := fnv.New32a()
	h.Write([]byte(host))
	h.Write([]byte{0})
	h.Write([]byte(pidNamespace()))
	return fmt.Sprintf("%08x", h.Sum32())
}

// tmpPattern is the os.CreateTemp pattern of target's temporaries.
func tmpPattern(target string) string {
	return "." + filepath.Base(target) + ".tmp-" + self() + "-*"
}

// removeStale removes, best effort, the temporaries of target that a dead
// process left: files in target's directory named exactly as this
// package names target's temporaries, written on this machine (HOST), by
// a process that no longer runs (no process PID, or one that started at
// another time than START, whose pid was reused). A live process's
// temporary, another target's, one of another machine, one whose owner
// cannot be told, and any file not named so are kept. Errors are ignored.
func removeStale(target string) {
	dir, base := filepath.Dir(target), filepath.Base(target)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := "." + base + ".tmp-"
	host := hostTag()
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.Type()&fs.ModeType != 0 {
			continue
		}
		m := tmpRest.FindStringSubmatch(rest)
		if m == nil || m[1] != host {
			continue
		}
		pid, err := strconv.Atoi(m[2])
		if err != nil || pid <= 0 || pid > math.MaxInt32 {
			continue
		}
		start, err := strconv.ParseUint(m[3], 10, 64)
		if err != nil {
			continue
		}
		if !alive(pid, start) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
