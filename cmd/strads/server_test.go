package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestServerUsage checks strads server's help and its refusals of bad
// flags and configuration files, none of which starts a server.
func TestServerUsage(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(badConfig, []byte("port: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		args         []string
		code         int
		stdout, errs string
	}{
		{"help", []string{"--help"}, 0, "--config file", ""},
		{"help names the way out of loopback", []string{"-h"}, 0, "0.0.0.0:4222", ""},
		{"no port", []string{"--addr", "localhost"}, 2, "", `--addr "localhost": want HOST:PORT`},
		{"bad port", []string{"--addr", "127.0.0.1:99999"}, 2, "", `port "99999"`},
		{"bad max payload", []string{"--max-payload", "0"}, 2, "", "--max-payload 0"},
		{"missing config", []string{"--config", filepath.Join(dir, "missing.conf")}, 2, "", "missing.conf"},
		{"bad config", []string{"--config", badConfig}, 2, "", "--config: natsserver: config " + badConfig},
		{"argument", []string{"extra"}, 2, "", `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"server"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.errs) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					code, stdout, stderr, tt.code, tt.stdout, tt.errs)
			}
		})
	}
}

// serverProcess is `strads server` running as its own OS process.
type serverProcess struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{} // closed once the process has exited and been reaped
	url    string        // the URL it printed
}

// firstLine is the stdout of a process: it keeps what the process writes
// and hands over its first line.
type firstLine struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	sent  bool
	first chan string
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if i := bytes.IndexByte(w.buf.Bytes(), '\n'); i >= 0 && !w.sent {
		w.sent = true
		w.first <- string(w.buf.Bytes()[:i])
	}
	return len(p), nil
}

// startServerProcess runs cmd, a strads server, and waits for the line
// that says where it listens.
func startServerProcess(t *testing.T, cmd *exec.Cmd) *serverProcess {
	t.Helper()
	s := &serverProcess{cmd: cmd, done: make(chan struct{})}
	out := &firstLine{first: make(chan string, 1)}
	s.cmd.Stdout, s.cmd.Stderr = out, &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
	})
	select {
	case line := <-out.first:
		url, ok := strings.CutPrefix(line, "nats-server listening on ")
		if !ok {
			t.Fatalf("server printed %q", line)
		}
		s.url = url
		return s
	case <-s.done:
		t.Fatalf("server exited with status %d before it listened: %s", s.cmd.ProcessState.ExitCode(), s.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not say where it listens within 30s")
	}
	return nil
}

// stop interrupts the server as a user would and returns what it wrote on
// stderr; it must exit with status 0.
func (s *serverProcess) stop(t *testing.T) string {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatal("server still runs 30s after SIGTERM")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("server: exit %d after SIGTERM: %s", code, s.stderr.String())
	}
	return s.stderr.String()
}

// port returns the port of a nats:// URL.
func port(t *testing.T, url string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimPrefix(url, "nats://"))
	if err != nil {
		t.Fatalf("server URL %q: %v", url, err)
	}
	return p
}

// TestServerConfig starts strads server from a nats-server configuration
// file that requires a user and password, as a user would, and checks that
// it refuses a client without them and takes one with them, that --addr
// overrides the file's address, and that it hints at --addr when it
// listens on loopback only.
func TestServerConfig(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "nats.conf")
	text := fmt.Sprintf("authorization { user: strads, password: s3cret }\nlisten: 127.0.0.1:-1\nlog_file: %q\n", filepath.Join(dir, "nats.log"))
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		loopback bool
	}{
		{"address from the file", []string{"--config", config}, true},
		{"--addr overrides the file", []string{"--config", config, "--addr", "0.0.0.0:0"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServerProcess(t, exec.Command(binary, append([]string{"server"}, tt.args...)...))
			url := "nats://127.0.0.1:" + port(t, srv.url)
			if tt.loopback != strings.HasPrefix(srv.url, "nats://127.0.0.1:") {
				t.Errorf("listening on %s, want loopback %v", srv.url, tt.loopback)
			}
			nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
			if !errors.Is(err, nats.ErrAuthorization) {
				t.Errorf("a client without credentials: %v, want %v", err, nats.ErrAuthorization)
			}
			if nc != nil {
				nc.Close()
			}
			for _, u := range []string{url, strings.Replace(url, "nats://", "nats://strads:s3cret@", 1)} {
				opts := []nats.Option{nats.Timeout(5 * time.Second)}
				if u == url {
					opts = append(opts, nats.UserInfo("strads", "s3cret"))
				}
				nc, err := nats.Connect(u, opts...)
				if err != nil {
					t.Fatalf("an authenticated client: %v", err)
				}
				if err := nc.Flush(); err != nil {
					t.Error(err)
				}
				nc.Close()
			}
			stderr := srv.stop(t)
			if hint := strings.Contains(stderr, "give --addr 0.0.0.0:"); hint != tt.loopback {
				t.Errorf("hint %v, want %v; stderr: %s", hint, tt.loopback, stderr)
			}
		})
	}
}

// machine is where a role of TestSeveralMachines runs: a network namespace
// of its own (pid: a process that holds it), or this test's (pid 0).
type machine struct {
	name string
	pid  int
	// server is the address of machine A, the server's, as this machine
	// reaches it.
	server string
}

// command returns the command that runs strads with args on m.
func (m machine) command(args ...string) *exec.Cmd {
	if m.pid == 0 {
		return exec.Command(binary, args...)
	}
	return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(m.pid), "-n", binary}, args...)...)
}

// start runs strads with args on m as a process named name.
func (m machine) start(t *testing.T, name string, args ...string) *process {
	t.Helper()
	p := &process{name: name + " on " + m.name, cmd: m.command(args...)}
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill() })
	return p
}

// namespaces makes three machines, A, B and C, of three network namespaces
// joined by two virtual Ethernet links, A–B (10.77.1.0/24) and A–C
// (10.77.2.0/24): no process in them reaches the others through loopback
// or this machine's own interfaces. It needs root (or CAP_SYS_ADMIN and
// CAP_NET_ADMIN), unshare(1), nsenter(1) and ip(8) with veth support, and
// returns an error saying what failed where one is missing.
func namespaces(t *testing.T) ([]machine, error) {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, err
		}
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return nil, err
	}
	ms := []machine{{name: "A"}, {name: "B", server: "10.77.1.1"}, {name: "C", server: "10.77.2.1"}}
	for i := range ms {
		// Without --fork, unshare becomes the sleep that holds the namespace.
		holder := exec.Command("unshare", "--net", "sleep", "600")
		var stderr bytes.Buffer
		holder.Stderr = &stderr
		if err := holder.Start(); err != nil {
			return nil, err
		}
		done := make(chan error, 1)
		go func() { done <- holder.Wait() }()
		t.Cleanup(func() {
			holder.Process.Kill()
			<-done
		})
		// Wait until it is in a namespace of its own.
		deadline := time.Now().Add(10 * time.Second)
		for {
			ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid))
			if err == nil && ns != self {
				break
			}
			select {
			case err := <-done:
				return nil, fmt.Errorf("unshare --net: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return nil, errors.New("unshare --net: no namespace of its own after 10s")
			}
		}
		ms[i].pid = holder.Process.Pid
	}
	a, b, c := strconv.Itoa(ms[0].pid), strconv.Itoa(ms[1].pid), strconv.Itoa(ms[2].pid)
	for _, cmd := range [][]string{
		{a, "link", "set", "lo", "up"}, {b, "link", "set", "lo", "up"}, {c, "link", "set", "lo", "up"},
		{a, "link", "add", "ab", "type", "veth", "peer", "name", "ba", "netns", b},
		{a, "link", "add", "ac", "type", "veth", "peer", "name", "ca", "netns", c},
		{a, "addr", "add", "10.77.1.1/24", "dev", "ab"}, {a, "link", "set", "ab", "up"},
		{a, "addr", "add", "10.77.2.1/24", "dev", "ac"}, {a, "link", "set", "ac", "up"},
		{b, "addr", "add", "10.77.1.2/24", "dev", "ba"}, {b, "link", "set", "ba", "up"},
		{c, "addr", "add", "10.77.2.2/24", "dev", "ca"}, {c, "link", "set", "ca", "up"},
	} {
		out, err := exec.Command("nsenter", append([]string{"-t", cmd[0], "-n", "ip"}, cmd[1:]...)...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(cmd[1:], " "), err, bytes.TrimSpace(out))
		}
	}
	ms[0].server = "10.77.1.1"
	return ms, nil
}

// hostAddress returns an IPv4 address of this machine other than
// loopback, "" if it has none.
func hostAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// TestSeveralMachines runs docs/several-machines.md's recipe: strads
// server --addr 0.0.0.0:4222 and the coordinator and the scheduler on
// machine A, a worker on each of machines B and C that reach A through a
// network, not through loopback, and checks that the job finds the β of
// the all-in-one command, bit for bit. It also checks the reason for
// --addr: a server started with the defaults is out of B's reach.
//
// The machines are network namespaces (see namespaces) where the test may
// make them, as root with unshare, nsenter and ip at hand. Elsewhere (a
// user without root: unshare --net then needs user namespaces, which
// containers often forbid) it runs the nearest thing: the roles as
// separate processes on this machine against a server on all interfaces,
// reached at this machine's non-loopback address; and it skips where the
// machine has none.
func TestSeveralMachines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a job as separate processes")
	}
	data := genData(t)
	dir := t.TempDir()
	settings := []string{"--workers", "2", "--lambda-ratio", "0.05", "--max-rounds", "2000", "--progress", "0"}
	allInOne := filepath.Join(dir, "all-in-one.csv")
	if code, _, stderr := runCLI(t, append([]string{"lasso", "--data", data, "--out", allInOne}, settings...)...); code != 0 {
		t.Fatalf("all-in-one: exit %d: %s", code, stderr)
	}

	ms, err := namespaces(t)
	addr := "0.0.0.0:4222"
	if err != nil {
		host := hostAddress()
		if host == "" {
			t.Skipf("no network namespaces (%v) and no address but loopback: nothing tells one machine from several here", err)
		}
		t.Logf("no network namespaces (%v): the roles run on this machine and reach the server at %s", err, host)
		ms = []machine{{name: "this machine", server: host}, {name: "this machine", server: host}, {name: "this machine", server: host}}
		addr = "0.0.0.0:0" // other tests' servers may hold 4222
	} else {
		t.Log("machines A, B and C are network namespaces joined by veth links")
		// The defaults listen on A's loopback only: B cannot reach them.
		srv := startServerProcess(t, ms[0].command("server"))
		w := ms[1].start(t, "worker", "worker", "--nats", "nats://"+ms[1].server+":4222", "--job", "unreachable", "--data", data, "--join-timeout", "5s")
		if code := w.wait(t, time.Minute); code == 0 || !strings.Contains(w.stderr.String(), "10.77.1.1:4222") {
			t.Errorf("a worker on B against a server on A's loopback: exit %d: %s", code, w.stderr.String())
		}
		if stderr := srv.stop(t); !strings.Contains(stderr, "give --addr 0.0.0.0:4222") {
			t.Errorf("server on loopback gave no hint: %q", stderr)
		}
	}

	srv := startServerProcess(t, ms[0].command("server", "--addr", addr))
	p := port(t, srv.url)
	distributed := filepath.Join(dir, "distributed.csv")
	job := func(m machine) []string {
		return []string{"--nats", "nats://" + net.JoinHostPort(m.server, p), "--job", "genome", "--data", data}
	}
	procs := []*process{
		ms[1].start(t, "worker", append([]string{"worker"}, job(ms[1])...)...),
		ms[2].start(t, "worker", append([]string{"worker"}, job(ms[2])...)...),
		ms[0].start(t, "coordinator", append(append([]string{"coordinator", "--out", distributed}, job(ms[0])...), settings...)...),
		ms[0].start(t, "scheduler", append([]string{"scheduler"}, job(ms[0])...)...),
	}
	waitAll(t, procs...)
	if stderr := srv.stop(t); stderr != "" {
		t.Errorf("server on all interfaces wrote %q", stderr)
	}
	sameFiles(t, distributed, allInOne)
}
