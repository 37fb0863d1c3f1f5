package cli_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
)

// toy is every role of a program for the tests: its workers describe
// themselves, push and report their scale, and the coordinator's model is
// its own scale and the workers', as they described them.
type toy[T int | float64] struct {
	scale  T
	shards []T // the coordinator's: the workers' scales
}

func (t *toy[T]) Schedule(round uint64, _ []schmp.Feedback) (int, schmp.PlanInfo, error) {
	return int(round), schmp.PlanInfo{Selected: 1}, nil
}
func (t *toy[T]) Describe() (T, error)                         { return t.scale, nil }
func (t *toy[T]) Apply(T) error                                { return nil }
func (t *toy[T]) Push(context.Context, uint64, int) (T, error) { return t.scale, nil }
func (t *toy[T]) Report() (T, error)                           { return t.scale, nil }
func (t *toy[T]) Start(shards []T) (T, error)                  { t.shards = shards; return 0, nil }
func (t *toy[T]) Pull(uint64, int, []T) (T, schmp.Feedback, error) {
	return 0, schmp.Feedback{}, nil
}
func (t *toy[T]) Objective([]T) (schmp.Progress, error) { return schmp.Progress{Objective: 1}, nil }
func (t *toy[T]) WriteModel(w io.Writer) error {
	_, err := fmt.Fprintf(w, "coordinator %v workers %v\n", t.scale, t.shards)
	return err
}

func toyProgram[T int | float64](scale T) schmp.Program[int, T, T, T] {
	return schmp.Program[int, T, T, T]{
		Name:           "toy",
		NewScheduler:   func(context.Context, int, int) (schmp.Scheduler[int], error) { return &toy[T]{scale: scale}, nil },
		NewWorker:      func(context.Context, int, int) (schmp.Worker[int, T, T, T], error) { return &toy[T]{scale: scale}, nil },
		NewCoordinator: func(context.Context) (schmp.Coordinator[int, T, T, T], error) { return &toy[T]{scale: scale}, nil },
	}
}

// toyApp is the toy's app, named name: --scale is a setting, --data a
// per-role path, and --kind chooses the program's types.
func toyApp(name string) cli.App {
	return cli.App{
		Name:    name,
		Summary: "a toy for the tests",
		PerRole: []string{"data"},
		Flags: func(fs *flag.FlagSet) func(*cli.Env) (*cli.Job, error) {
			scale := fs.Float64("scale", 1, "what every worker reports")
			kind := fs.String("kind", "float", "the program's types: float or int")
			data := fs.String("data", "", "a data `file`, fingerprinted")
			fail := fs.Bool("fail", false, "fail to make the job, with an error that is not a usage error")
			needData := fs.Bool("need-data", false, "workers need --data")
			return func(env *cli.Env) (*cli.Job, error) {
				if *needData && *data == "" && env.Role.Has(cli.Worker) {
					return nil, cli.Usagef("--need-data: a worker needs --data")
				}
				var j *cli.Job
				switch *kind {
				case "float":
					j = cli.NewJob(toyProgram(*scale))
				case "int":
					j = cli.NewJob(toyProgram(int(*scale)))
				default:
					return nil, cli.Usagef("--kind %q: want float or int", *kind)
				}
				if *fail {
					return nil, errors.New("toy: failed")
				}
				j.Data = *data
				return j, nil
			}
		},
	}
}

// echo is a command of a program's own, for the tests.
var echo = cli.Command{
	Name: "echo", Synopsis: "WORDS", Summary: "print the words",
	Run: func(_ context.Context, args []string, stdout, _ io.Writer) error {
		_, err := fmt.Fprintln(stdout, strings.Join(args, " "))
		return err
	},
}

var version = cli.Command{
	Name: "version", Summary: "print the version",
	Run: func(_ context.Context, _ []string, stdout, _ io.Writer) error {
		_, err := fmt.Fprintln(stdout, "prog 1.0")
		return err
	},
}

// runCmd runs the command line args of cl and returns its exit status and
// output.
func runCmd(t *testing.T, cl *cli.CommandLine, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code = cl.Run(ctx, args, &o, &e)
	return code, o.String(), e.String()
}

// TestCommandLine checks the commands of a program of one app and of one
// of several, their help, and their exit statuses.
func TestCommandLine(t *testing.T) {
	single := &cli.CommandLine{Name: "toy", Apps: []cli.App{toyApp("toy")}}
	multi := &cli.CommandLine{Name: "prog", Summary: "runs toys.", Apps: []cli.App{toyApp("toy"), toyApp("other")}, Commands: []cli.Command{echo, version}}
	job := []string{"--workers", "1", "--max-rounds", "2", "--progress", "0"}
	cases := []struct {
		name   string
		cl     *cli.CommandLine
		args   []string
		code   int
		stdout string // in stdout
		stderr string // in stderr
	}{
		{"whole job", single, job, 0, "rounds 2", ""},
		{"help", single, []string{"--help"}, 0, "Usage: toy [flags]\n       toy scheduler|coordinator|worker --nats URL --job NAME [flags]", ""},
		{"help command", single, []string{"help"}, 0, "-scale", ""},
		{"role help", single, []string{"worker", "--help"}, 0, "Usage: toy worker --nats URL --job NAME [flags]", ""},
		{"bad app flag", single, []string{"--kind", "x"}, 2, "", "toy: --kind \"x\": want float or int\n"},
		{"job not made", single, []string{"--fail"}, 1, "", "toy: toy: failed\n"},
		{"unknown flag", single, []string{"--bogus"}, 2, "", "toy: flag provided but not defined: -bogus\n"},
		{"misspelt flag", single, []string{"--scal", "2"}, 2, "", "toy: flag provided but not defined: -scal (did you mean --scale?)\n"},
		{"single --version", single, []string{"--version"}, 2, "", "flag provided but not defined: -version"},
		{"argument", single, []string{"--scale", "2", "extra"}, 2, "", "toy: unexpected argument \"extra\"\n"},
		{"unknown command", single, []string{"frob"}, 2, "", "toy: unknown command \"frob\"\n"},
		{"role without nats", single, []string{"worker"}, 2, "", "toy worker: --nats URL is required"},
		{"bad job name", single, []string{"--job", "a.b"}, 2, "", "--job: job name \"a.b\""},
		{"bad metrics address", single, []string{"--http", "256.0.0.1:x"}, 2, "", "--http: serve metrics on 256.0.0.1:x"},
		{"bad runtime flag", single, []string{"--workers", "0"}, 2, "", "toy: --workers must be at least 1, got 0\n"},

		{"usage", multi, nil, 2, "", "prog runs toys.\n\nUsage:\n  prog toy "},
		{"help", multi, []string{"help"}, 0, "  prog echo WORDS", ""},
		{"app", multi, append([]string{"other"}, job...), 0, "rounds 2", ""},
		{"app help", multi, []string{"toy", "--help"}, 0, "Usage: prog toy [flags]\n", ""},
		{"role help", multi, []string{"worker", "--help"}, 0, "Usage: prog worker --app toy --nats URL", ""},
		{"role of an app", multi, []string{"worker", "--app=other", "--help"}, 0, "Usage: prog worker --app other --nats URL", ""},
		{"unknown app", multi, []string{"worker", "--app", "nope", "--nats", "x"}, 2, "", "prog worker: --app \"nope\": want one of toy, other\n"},
		{"command", multi, []string{"echo", "a", "b"}, 0, "a b\n", ""},
		{"unknown command", multi, []string{"frob"}, 2, "", "prog: unknown command \"frob\"\n"},
		{"--version", multi, []string{"--version"}, 0, "prog 1.0\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.cl.Name+"/"+tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tc.cl, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 && tc.cl == single {
				t.Errorf("stderr %q: want one line", stderr)
			}
		})
	}
}

// TestExitStatus checks which errors are bad usage or input.
func TestExitStatus(t *testing.T) {
	bad := errors.New("bad")
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{fmt.Errorf("help: %w", flag.ErrHelp), 0},
		{bad, 1},
		{cli.UsageError(bad), 2},
		{fmt.Errorf("wrapped: %w", cli.UsageError(bad)), 2},
		{cli.Usagef("--x %d", 1), 2},
		{fmt.Errorf("load: %w", &libsvm.ParseError{File: "f", Line: 3, Msg: "bad"}), 2},
		{protocol.Mismatch(bad), 2},
		{&protocol.NodeError{Node: protocol.Node{Role: "worker", Place: 1}, Err: protocol.Mismatch(bad)}, 2},
		{protocol.Timeout(bad), 1},
		{fmt.Errorf("coordinator: job \"x\": %w", protocol.ErrNameTaken), 2},
	}
	for _, tc := range cases {
		if got := cli.ExitStatus(tc.err); got != tc.want {
			t.Errorf("ExitStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if cli.UsageError(nil) != nil {
		t.Error("UsageError(nil) is not nil")
	}
}

// result is how one process of a job ended.
type result struct {
	code           int
	stdout, stderr string
}

// TestSettings runs a coordinator, a scheduler and workers of the toy over
// a NATS server, each in its own goroutine as it would in its own
// process: a role takes the job's settings that it was not given, even
// those that choose another program, and fails the job if it cannot; one
// given another value of a setting, or other data, is refused (exit status
// 2, on the role and the coordinator); the runtime's per-role flags are
// not settings.
func TestSettings(t *testing.T) {
	srv := testhelper.StartServer(t, natsserver.Options{})
	dir := t.TempDir()
	dataA, dataB := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	// Big files of one size that differ in one byte, in the middle: where
	// the sampled fingerprint of protocol version 7 did not look, so that a
	// role reading the other was admitted (issue 28).
	bigA, bigB := filepath.Join(dir, "big-a.txt"), filepath.Join(dir, "big-b.txt")
	big := bytes.Repeat([]byte("0123456789abcde\n"), 3<<16)
	changed := bytes.Clone(big)
	changed[len(big)/2+100] = 'x'
	for path, text := range map[string][]byte{dataA: []byte("a\n"), dataB: []byte("b\n"), bigA: big, bigB: changed} {
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cl := &cli.CommandLine{Name: "toy", Apps: []cli.App{toyApp("toy")}}
	cases := []struct {
		name        string
		coordinator []string // flags of the coordinator, besides the runtime's
		workers     [][]string
		scheduler   []string
		codes       []int  // coordinator, scheduler, workers; -1: any, ended with the coordinator
		model       string // the coordinator's, if it succeeds
		stderr      string // in the coordinator's, if it fails
	}{
		{"defaults", nil, [][]string{nil, nil}, nil, []int{0, 0, 0, 0}, "coordinator 1 workers [1 1]\n", ""},
		{"the job's settings", []string{"--scale", "2"}, [][]string{nil, nil}, nil, []int{0, 0, 0, 0}, "coordinator 2 workers [2 2]\n", ""},
		{"the same settings", []string{"--scale", "2"}, [][]string{{"--scale", "2"}, nil}, []string{"--scale", "2"}, []int{0, 0, 0, 0}, "coordinator 2 workers [2 2]\n", ""},
		{"another setting", []string{"--scale", "2"}, [][]string{{"--scale=3"}}, nil, []int{2, -1, 2}, "", `setting "scale" is 3, the job's is 2`},
		{"a runtime setting", nil, [][]string{{"--depth", "2"}}, nil, []int{2, -1, 2}, "", `setting "depth" is 2, the job's is 1`},
		{"per-role flags", nil, [][]string{{"--timeout", "20s", "--http", "", "--verbose=false", "--data", dataA}}, []string{"--progress", "0"}, []int{0, 0, 0}, "coordinator 1 workers [1]\n", ""},
		{"the same data", nil, [][]string{{"--data", dataA}, {"--data", dataA}}, nil, []int{0, 0, 0, 0}, "coordinator 1 workers [1 1]\n", ""},
		{"other data", nil, [][]string{{"--data", dataA}, {"--data", dataB}}, nil, []int{2, -1, -1, -1}, "", "data"},
		{"data changed in one byte", nil, [][]string{{"--data", bigA}, {"--data", bigB}}, nil, []int{2, -1, -1, -1}, "", "data fingerprint"},
		{"another program", []string{"--kind", "int", "--scale", "3"}, [][]string{nil, nil}, nil, []int{0, 0, 0, 0}, "coordinator 3 workers [3 3]\n", ""},
		{"a setting not taken", []string{"--need-data"}, [][]string{nil}, nil, []int{1, -1, 2}, "", "the job's settings --max-rounds=3 --need-data=true --workers=1: --need-data: a worker needs --data"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := filepath.Join(t.TempDir(), "model.txt")
			runtime := []string{"--nats", srv.ClientURL(), "--job", fmt.Sprintf("settings-%d", i), "--join-timeout", "10s", "--timeout", "10s"}
			args := [][]string{
				append(append([]string{"coordinator", "--workers", fmt.Sprint(len(tc.workers)), "--max-rounds", "3", "--progress", "0", "--out", model}, runtime...), tc.coordinator...),
				append(append([]string{"scheduler"}, runtime...), tc.scheduler...),
			}
			for _, w := range tc.workers {
				args = append(args, append(append([]string{"worker"}, runtime...), w...))
			}
			// The roles whose end the case leaves open end with the
			// coordinator: one that would join after it failed would wait in
			// vain, as a process would.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			open, cancelOpen := context.WithCancel(ctx)
			defer cancelOpen()
			results := make([]result, len(args))
			var wg sync.WaitGroup
			for k, a := range args {
				wg.Go(func() {
					ctx := ctx
					switch {
					case k == 0:
						defer cancelOpen()
					case tc.codes[k] < 0:
						ctx = open
					}
					var o, e bytes.Buffer
					results[k] = result{cl.Run(ctx, a, &o, &e), o.String(), e.String()}
				})
			}
			wg.Wait()
			for k, r := range results {
				if want := tc.codes[k]; want >= 0 && r.code != want {
					t.Errorf("%q: exit %d, want %d; stderr %q", args[k][0:1], r.code, want, r.stderr)
				}
			}
			if coord := results[0]; coord.code == 0 {
				if got, err := os.ReadFile(model); err != nil || string(got) != tc.model {
					t.Errorf("model %q (%v), want %q", got, err, tc.model)
				}
			} else if !strings.Contains(coord.stderr, tc.stderr) {
				t.Errorf("coordinator's error %q: want %q in it", coord.stderr, tc.stderr)
			}
			for k, r := range results[1:] {
				if r.code == 2 && !strings.Contains(r.stderr, tc.stderr) {
					t.Errorf("%q: error %q: want %q in it", args[k+1][0:1], r.stderr, tc.stderr)
				}
				// A role refused for its data names its file.
				if r.code == 2 && strings.Contains(r.stderr, "data fingerprint") && !strings.Contains(r.stderr, "(this role read ") {
					t.Errorf("%q: error %q does not name the role's data", args[k+1][0:1], r.stderr)
				}
			}
		})
	}
}
