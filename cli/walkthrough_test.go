package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/apps/nnls"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
)

// walkthrough returns the command of docs/writing-a-model.md, "Writing a
// model of your own": the Go block of that page that is a main package.
func walkthrough(t *testing.T) []byte {
	t.Helper()
	const page = "docs/writing-a-model.md"
	text, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut("\n"+string(text), "\n# Writing a model of your own\n")
	if !ok {
		t.Fatalf(`%s has no heading "# Writing a model of your own"`, page)
	}
	section, _, _ = strings.Cut(section, "\n# ")
	for _, block := range strings.Split(section, "```go\n")[1:] {
		code, _, ok := strings.Cut(block, "```")
		if ok && strings.Contains(code, "\npackage main\n") {
			return []byte(code)
		}
	}
	t.Fatalf(`%s, "Writing a model of your own", has no Go block of a main package`, page)
	return nil
}

// buildWalkthrough builds the walkthrough's command in a fresh module whose
// go.mod replaces strads with this repository, and returns its path. It
// needs no network: the module's requirements are this repository's, in
// the module cache the test runs with.
func buildWalkthrough(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	goMod := fmt.Sprintf("module example.com/mymodel\n\ngo 1.26\n\nrequire github.com/strads-go/strads v0.0.0\n\nreplace github.com/strads-go/strads => %s\n", root)
	goSum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": goSum, "main.go": walkthrough(t)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "nnls")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOTOOLCHAIN=local", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the walkthrough's command: %v\n%s", err, out)
	}
	return bin
}

// proc is the walkthrough's command running as its own process.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  bytes.Buffer // stdout and stderr
	done chan struct{}
}

func start(t *testing.T, bin, name string, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	p := &proc{name: name, cmd: exec.CommandContext(ctx, bin, args...), done: make(chan struct{})}
	p.cmd.Stdout = &p.out
	p.cmd.Stderr = &p.out
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		cancel()
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-p.done
	})
	return p
}

// wait waits for the process to exit and returns its exit status.
func (p *proc) wait() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// TestWalkthrough follows docs/writing-a-model.md, "Writing a model of
// your own", in a fresh module outside the repository: its command, built
// with a replace directive, runs a whole job and the same job as four
// processes (a scheduler, a coordinator, two workers, the last three given
// nothing but the server and the job's name) over a NATS server; both
// write the same model, bit for bit, and it satisfies the KKT conditions
// of NNLS. A bad flag is a usage error (exit status 2).
func TestWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program in a fresh module")
	}
	bin := buildWalkthrough(t)
	dir := t.TempDir()
	cfg := nnls.Config{Rows: 300, Cols: 20, Seed: 7, Block: 1}
	app := []string{"--rows", strconv.Itoa(cfg.Rows), "--cols", strconv.Itoa(cfg.Cols), "--seed", strconv.FormatUint(cfg.Seed, 10)}
	run := append([]string{"--workers", "2", "--tol", "1e-14", "--max-rounds", "20000", "--report-every", "20", "--progress", "0"}, app...)

	whole := filepath.Join(dir, "whole.csv")
	p := start(t, bin, "whole job", append([]string{"--out", whole}, run...)...)
	if code := p.wait(); code != 0 {
		t.Fatalf("%s: exit %d: %s", p.name, code, p.out.String())
	}
	if !strings.Contains(p.out.String(), "(converged)") {
		t.Errorf("%s: output %q: want a converged job", p.name, p.out.String())
	}

	srv := testhelper.StartServer(t, natsserver.Options{})
	roles := []string{"--nats", srv.ClientURL(), "--job", "walkthrough"}
	split := filepath.Join(dir, "split.csv")
	// The scheduler and the workers take the job's settings, --rows and
	// the others, from the coordinator.
	procs := []*proc{
		start(t, bin, "worker 1", append([]string{"worker"}, roles...)...),
		start(t, bin, "worker 2", append([]string{"worker"}, roles...)...),
		start(t, bin, "scheduler", append([]string{"scheduler"}, roles...)...),
		start(t, bin, "coordinator", append(append([]string{"coordinator", "--out", split}, roles...), run...)...),
	}
	for _, p := range procs {
		if code := p.wait(); code != 0 {
			t.Errorf("%s: exit %d: %s", p.name, code, p.out.String())
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	want, got := readFile(t, whole), readFile(t, split)
	if !bytes.Equal(got, want) {
		t.Errorf("four processes wrote\n%s\nthe whole job wrote\n%s", got, want)
	}
	checkKKT(t, cfg, readModel(t, want, cfg.Cols))

	p = start(t, bin, "bad flag", "--rows", "0")
	if code := p.wait(); code != 2 || !strings.Contains(p.out.String(), "Rows") {
		t.Errorf("--rows 0: exit %d, %q; want 2 and an error naming Rows", code, p.out.String())
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readModel reads an NNLS model, "index,value" lines of the positive β_j
// (1-based), into a dense β.
func readModel(t *testing.T, model []byte, cols int) []float64 {
	t.Helper()
	beta := make([]float64, cols)
	sc := bufio.NewScanner(bytes.NewReader(model))
	if !sc.Scan() || sc.Text() != "index,value" {
		t.Fatalf("model header %q", sc.Text())
	}
	for sc.Scan() {
		idx, val, ok := strings.Cut(sc.Text(), ",")
		j, err1 := strconv.Atoi(idx)
		v, err2 := strconv.ParseFloat(val, 64)
		if !ok || err1 != nil || err2 != nil || j < 1 || j > cols || v <= 0 {
			t.Fatalf("model line %q", sc.Text())
		}
		beta[j-1] = v
	}
	return beta
}

// checkKKT checks that β solves the NNLS problem of cfg: the gradient
// g = Xᵀ(y − Xβ)/n is 0 where β_j > 0 and at most 0 where β_j = 0, and
// some constraint is active.
func checkKKT(t *testing.T, cfg nnls.Config, beta []float64) {
	t.Helper()
	g := make([]float64, cfg.Cols)
	x := make([]float64, cfg.Cols)
	for i := range cfg.Rows {
		r := cfg.Row(i, x)
		for j, v := range x {
			r -= v * beta[j]
		}
		for j, v := range x {
			g[j] += v * r / float64(cfg.Rows)
		}
	}
	active := 0
	for j := range g {
		switch {
		case beta[j] > 0 && math.Abs(g[j]) > 1e-6:
			t.Errorf("β_%d = %g > 0 but g_%d = %g", j, beta[j], j, g[j])
		case beta[j] == 0 && g[j] > 1e-6:
			t.Errorf("β_%d = 0 but g_%d = %g > 0", j, j, g[j])
		case beta[j] == 0:
			active++
		}
	}
	if active == 0 {
		t.Error("no constraint is active: the problem is too easy to tell")
	}
}
