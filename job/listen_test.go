package job_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
)

// listeners returns the TCP ports on which this process listens, from
// /proc: the listening sockets of /proc/net/tcp{,6} whose inodes are among
// the process's file descriptors.
func listeners(t *testing.T) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[3] == "0A" && inodes[fields[9]] {
				out = append(out, fields[1])
			}
		}
		f.Close()
	}
	return out
}

// TestEmbeddedServerListensNowhere checks that the embedded server of an
// all-in-one job takes no TCP port (its nodes connect in-process), so that
// no other process reaches the job, unless Listen asks for one: then it
// listens there, and says so through Listening.
func TestEmbeddedServerListensNowhere(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	tests := []struct {
		name   string
		listen string
		want   int // listening sockets while the job runs
	}{
		{"no TCP port", "", 0},
		{"asked for one", "127.0.0.1:0", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			before := len(listeners(t))
			var during int
			var url string
			opts := job.Options{Job: "listen", Timeout: 20 * time.Second, Listen: tt.listen,
				Listening: func(u string) { url = u },
				Coordinator: coordinator.Options{Workers: 2, MaxRounds: 20, ReportEvery: 10,
					Timeout: 20 * time.Second, JoinTimeout: 20 * time.Second,
					Claimed: func() { during = len(listeners(t)) }}}
			if _, err := job.Run(ctx, nnls.Program(nnls.Config{Rows: 50, Cols: 10, Seed: 5}), opts); err != nil {
				t.Fatal(err)
			}
			if got := during - before; got != tt.want {
				t.Fatalf("%d TCP listeners while the job ran, want %d", got, tt.want)
			}
			if (url != "") != (tt.want > 0) {
				t.Fatalf("Listening called with %q, want a URL: %v", url, tt.want > 0)
			}
			if url != "" {
				// The port is closed once the job has ended.
				host := strings.TrimPrefix(url, "nats://")
				if c, err := net.DialTimeout("tcp", host, time.Second); err == nil {
					c.Close()
					t.Errorf("%s still takes connections after the job", host)
				}
			}
		})
	}
}
