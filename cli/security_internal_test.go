package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/strads-go/strads/protocol"
)

// TestScrub checks that the command line /debug/pprof/cmdline shows, and
// what the process writes to stderr, never show the password of --nats.
func TestScrub(t *testing.T) {
	const url = "nats://alice:p%40ss-1@h:4222"
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := addRunFlags(fs, "t")
	if err := fs.Parse([]string{"--nats", url}); err != nil {
		t.Fatal(err)
	}
	saved := os.Args
	defer func() { os.Args = saved }()
	os.Args = []string{"strads", "worker", "--nats", url, "--nats=" + url}
	got := strings.Join(f.cmdline(), " ")
	if want := "strads worker --nats nats://alice:xxxxx@h:4222 --nats=nats://alice:xxxxx@h:4222"; got != want {
		t.Errorf("cmdline %q, want %q", got, want)
	}
	var b bytes.Buffer
	w := f.scrub(&b)
	fmt.Fprintf(w, "connect to %s: the password p@ss-1 or p%%40ss-1\n", url)
	if strings.Contains(b.String(), "ss-1") {
		t.Errorf("scrubbed %q", b.String())
	}
	if info := fmt.Sprint(f.info(Worker, manifestOf("toy"))); strings.Contains(info, "ss-1") {
		t.Errorf("info %s shows the password", info)
	}
}

// manifestOf returns a manifest of app with one setting.
func manifestOf(app string) protocol.Manifest {
	return protocol.Manifest{App: app, Settings: map[string]string{"scale": "2"}}
}
