//go:build unix

package atomicfile

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deadPid returns the pid of a process that has ended and been waited for:
// a run of this test binary that runs no test.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestRemoveStale checks which temporaries beside a target Create removes:
// those of its target whose owner is dead, on this machine, and no other.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	host, me, dead := hostTag(), os.Getpid(), deadPid(t)
	myStart, _ := procStart(me)
	otherHost := "00000000"
	if host == otherHost {
		otherHost = "ffffffff"
	}
	tmp := func(target, host string, pid int, start uint64) string {
		return fmt.Sprintf(".%s.tmp-%s-%d-%d-123456", target, host, pid, start)
	}
	linux := runtime.GOOS == "linux"
	cases := []struct {
		name, file string
		dir        bool // a directory of that name, not a file
		removed    bool
	}{
		{"dead pid", tmp("out.csv", host, dead, 4242), false, true},
		{"dead pid, start unknown", tmp("out.csv", host, dead, 0), false, true},
		{"live test process", tmp("out.csv", host, me, myStart), false, false},
		{"live test process, start unknown", tmp("out.csv", host, me, 0), false, false},
		{"reused pid (other start time)", tmp("out.csv", host, me, myStart+1), false, linux},
		{"another target", tmp("other.csv", host, dead, 4242), false, false},
		{"another target, our name a prefix of it", tmp("out.csv.tmp-x", host, dead, 4242), false, false},
		{"another machine", tmp("out.csv", otherHost, dead, 4242), false, false},
		{"a directory", tmp("out.csv", host, dead, 4242), true, false},
		{"malformed: the old name", ".out.csv.tmp-1234567", false, false},
		{"malformed: trailing text", tmp("out.csv", host, dead, 4242) + "x", false, false},
		{"malformed: no leading dot", tmp("out.csv", host, dead, 4242)[1:], false, false},
		{"malformed: pid 0", tmp("out.csv", host, 0, 4242), false, false},
		{"malformed: pid with a sign", fmt.Sprintf(".out.csv.tmp-%s-+%d-4242-1", host, dead), false, false},
		{"malformed: pid over 32 bits", tmp("out.csv", host, 1<<32+dead, 4242), false, false},
		{"malformed: no random part", fmt.Sprintf(".out.csv.tmp-%s-%d-4242", host, dead), false, false},
	}
	for i, c := range cases {
		// Each case its own directory, so that two cases with the same
		// name (a file, a directory) do not meet.
		sub := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(sub, c.file)
		var err error
		if c.dir {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte("stale"), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := Create(filepath.Join(sub, "out.csv"))
		if err != nil {
			t.Fatal(err)
		}
		f.Abort()
		_, err = os.Lstat(p)
		if gone := os.IsNotExist(err); gone != c.removed {
			t.Errorf("%s: %s removed %v, want %v (%v)", c.name, c.file, gone, c.removed, err)
		}
	}
}

// TestTemporaryName checks that a temporary's name tells its target and
// this process, as removeStale reads it.
func TestTemporaryName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.csv")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	rest, ok := strings.CutPrefix(filepath.Base(f.f.Name()), ".out.csv.tmp-")
	m := tmpRest.FindStringSubmatch(rest)
	if !ok || m == nil {
		t.Fatalf("temporary %s is not named .out.csv.tmp-HOST-PID-START-RANDOM", f.f.Name())
	}
	if got := strings.Join(m[1:4], "-"); got != self() {
		t.Errorf("temporary %s names owner %s, want %s", f.f.Name(), got, self())
	}
	if m[2] != fmt.Sprint(os.Getpid()) {
		t.Errorf("temporary %s names pid %s, want %d", f.f.Name(), m[2], os.Getpid())
	}
	if start, ok := procStart(os.Getpid()); runtime.GOOS == "linux" && (!ok || m[3] != fmt.Sprint(start)) {
		t.Errorf("temporary %s names start %s, want %d (%v)", f.f.Name(), m[3], start, ok)
	}
}

// helperEnv, set, makes TestHelperHoldsTemporary a child process that
// creates the output it names, writes to it, prints its temporary's
// path and waits to be killed.
const helperEnv = "ATOMICFILE_TEST_HOLD"

func TestHelperHoldsTemporary(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("a child process of TestKilledWriter")
	}
	f, err := Create(path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	f.WriteString("half\n")
	f.Flush()
	fmt.Println(f.f.Name())
	time.Sleep(time.Minute)
	os.Exit(1)
}

// TestKilledWriter checks, end to end, that a temporary a process killed
// with SIGKILL left is removed by the next Create of its target, and that
// one a live process holds is not.
func TestKilledWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.csv")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldsTemporary$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, dir) {
		t.Fatalf("child said %q (%v), want its temporary's path", line, err)
	}
	stale := strings.TrimSpace(line)

	// The child lives: its temporary stays.
	if err := Write(path, func(w *bufio.Writer) error { _, err := w.WriteString("first\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("a live process's temporary removed: %v", err)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("the killed process left no temporary: %v", err)
	}
	if err := Write(path, func(w *bufio.Writer) error { _, err := w.WriteString("second\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed process's temporary %s is still there (%v)", stale, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "model.csv" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only model.csv", names)
	}
	if b, _ := os.ReadFile(path); string(b) != "second\n" {
		t.Errorf("model.csv holds %q, want the second write", b)
	}
}
