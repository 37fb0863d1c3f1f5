//go:build unix

package cli_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/strads-go/strads/cli"
)

// TestOutputEdges checks the outputs of a command at the edges: one that is
// an input or another output, through a link or not, is a usage error
// before the job runs and leaves every file as it was; one that is a
// device or a named pipe is refused; one that is a link is written
// through to its target, and the link stays.
func TestOutputEdges(t *testing.T) {
	dir := t.TempDir()
	in := func(name string) string { return filepath.Join(dir, name) }
	write := func(name, text string) {
		if err := os.WriteFile(in(name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("data.txt", "data\n")
	write("model.csv", "old\n")
	for link, target := range map[string]string{"data-link": "data.txt", "model-link": "model.csv", "null-link": os.DevNull} {
		if err := os.Symlink(target, in(link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(in("data.txt"), in("data-hard")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(in("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	app := toyApp("toy")
	flags := app.Flags
	app.Flags = func(fs *flag.FlagSet) func(*cli.Env) (*cli.Job, error) {
		fs.String("report", "", "write a report to `file` (an output of the app's)")
		return flags(fs)
	}
	app.PerRole = append(app.PerRole, "report")
	app.Outputs = []string{"report"}
	cl := &cli.CommandLine{Name: "toy", Apps: []cli.App{app}}
	job := []string{"--workers", "1", "--max-rounds", "2", "--progress", "0", "--data", in("data.txt")}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"out is the data", []string{"--out", in("data.txt")}, 2, "the same file as --data"},
		{"out links to the data", []string{"--out", in("data-link")}, 2, "the same file as --data"},
		{"out is a hard link of the data", []string{"--out", in("data-hard")}, 2, "the same file as --data"},
		{"metrics is the data", []string{"--metrics", in("./data.txt")}, 2, "--metrics " + in("./data.txt") + ": the same file as --data"},
		{"an app's output is the data", []string{"--report", in("data-link")}, 2, "--report " + in("data-link") + ": the same file as --data"},
		{"out is the metrics", []string{"--out", in("m.csv"), "--metrics", in("m.csv")}, 2, "another output"},
		{"out is a device", []string{"--out", os.DevNull}, 2, "not a regular file but a device"},
		{"out links to a device", []string{"--out", in("null-link")}, 2, "not a regular file but a device"},
		{"metrics is a named pipe", []string{"--metrics", in("fifo")}, 2, "not a regular file but a named pipe"},
		{"out in a missing directory", []string{"--out", in("missing/model.csv")}, 2, "does not exist"},
		{"out in a file", []string{"--out", in("data.txt/model.csv")}, 2, "does not exist"},
		{"out is a link", []string{"--out", in("model-link"), "--metrics", in("metrics.csv")}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, cl, append(append([]string{}, job...), tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("%q: exit %d, stderr %q; want exit %d, stderr with %q", tt.args, code, stderr, tt.code, tt.stderr)
			}
			if b, err := os.ReadFile(in("data.txt")); err != nil || string(b) != "data\n" {
				t.Fatalf("the data hold %q (%v)", b, err)
			}
			if code != 0 {
				return
			}
			if l, err := os.Readlink(in("model-link")); err != nil || l != "model.csv" {
				t.Errorf("model-link links to %q (%v), want model.csv", l, err)
			}
			if b, err := os.ReadFile(in("model.csv")); err != nil || string(b) == "old\n" {
				t.Errorf("model.csv holds %q (%v), want the new model", b, err)
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
}
