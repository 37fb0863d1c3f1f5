package atomicfile

import (
	"bytes"
	"os"
	"strconv"
)

// procStart returns the start time of process pid, in clock ticks since
// boot (field 22 of /proc/PID/stat), and whether it could be read.
func procStart(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parseStat(b)
}

// parseStat returns field 22 of a /proc/PID/stat line. The command name,
// field 2, is in parentheses and may hold spaces and parentheses itself,
// so the fields are counted from the last ')': field 3 is the first after
// it.
func parseStat(b []byte) (uint64, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 22-2 {
		return 0, false
	}
	start, err := strconv.ParseUint(string(f[22-3]), 10, 64)
	if err != nil || start == 0 {
		return 0, false
	}
	return start, true
}

// pidNamespace names this process's pid namespace, so that processes of
// two containers sharing a host name and a directory do not take each
// other's pids for their own.
func pidNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}
