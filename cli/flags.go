package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/monitor"
)

// runFlags are the runtime's flags, which every app's commands have.
type runFlags struct {
	fs          *flag.FlagSet
	workers     int
	schedulers  int
	depth       int
	maxRounds   uint64
	tol         float64
	target      optionalFloat
	timeLimit   time.Duration
	reportEvery int
	metrics     string
	out         string
	progress    time.Duration
	timeout     time.Duration
	joinTimeout time.Duration
	nats        string
	job         string
	verbose     bool
	http        string
	ckptEvery   every
	ckptKeep    int
	resume      bool
	spares      int
	secFlags
}

// perRole names the runtime's flags that are a role's own: its server,
// its outputs, its deadlines, its logs; and --app, which picks the app of a
// role command. The runtime's other flags (--workers, --schedulers,
// --depth, --max-rounds, --tol, --target, --time-limit, --report-every)
// are settings of the job (DESIGN "Roles, subjects and messages"), like an app's flags: the
// coordinator's by nature, and read by the roles of several apps (a
// worker's shard count, a layout that --depth chooses).
var perRole = map[string]bool{
	"out": true, "metrics": true, "progress": true, "timeout": true, "join-timeout": true,
	"nats": true, "job": true, "verbose": true, "http": true, "app": true,
	"checkpoint-every": true, "checkpoint-keep": true, "resume": true, "spares": true,
}

func init() {
	for _, name := range securityPerRole {
		perRole[name] = true
	}
}

// addRunFlags adds the runtime's flags to fs; job is the default of --job.
func addRunFlags(fs *flag.FlagSet, job string) *runFlags {
	f := &runFlags{fs: fs}
	fs.IntVar(&f.workers, "workers", 2, "number of workers")
	fs.IntVar(&f.schedulers, "schedulers", 1, "number of scheduler nodes; each plans a contiguous range of the variables, and they take rounds in turn")
	fs.IntVar(&f.depth, "depth", 1, "most rounds in flight at once: the scheduler plans ahead from feedback up to depth-1 rounds old (1: strict rounds)")
	fs.Uint64Var(&f.maxRounds, "max-rounds", 0, "stop after `n` rounds (0: no limit)")
	fs.Float64Var(&f.tol, "tol", 1e-4, "stop when the objective is certified within tol of the optimum, relatively (gap ≤ tol·objective), or, for an app that certifies no gap, when it changes by less than tol between two reports; 0: off")
	fs.Var(&f.target, "target", "stop once the objective is at most `F` (for benchmarks against a peer's objective); unset: off")
	fs.DurationVar(&f.timeLimit, "time-limit", 0, "stop after this much time (0: no limit)")
	fs.IntVar(&f.reportEvery, "report-every", 10, "compute the objective every `n` rounds")
	fs.StringVar(&f.metrics, "metrics", "", "write a metrics CSV to `file`: time_s,round,objective,nnz,updates,gap, then per-round means since the previous row: plan_ms,dispatch_ms,push_ms,wait_ms,pull_ms,latency_ms,msgs,bytes,selected,rejected,deferred (the plans: variables updated, candidates the dependency check rejected, candidates put off as in flight), written (1 on the row of the model written, else 0), then the app's metrics")
	fs.StringVar(&f.out, "out", "", "write the model to `file`")
	fs.DurationVar(&f.progress, "progress", 2*time.Second, "print a progress line this often (0: never)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "longest wait for any other role once the job runs")
	fs.DurationVar(&f.joinTimeout, "join-timeout", time.Minute, "longest wait for all roles to join")
	fs.StringVar(&f.nats, "nats", "", "`URL` of the NATS server (empty: start an embedded one)")
	fs.StringVar(&f.job, "job", job, "job `name`: every subject of the job is under strads.<name>.")
	fs.BoolVar(&f.verbose, "verbose", false, "log what every role does")
	fs.StringVar(&f.http, "http", "", "serve the live page (/), Prometheus metrics (/metrics) and, with --pprof, profiles on `addr`: :9090 is 127.0.0.1:9090, this machine only; other machines need a host, e.g. 0.0.0.0:9090")
	fs.Var(&f.ckptEvery, "checkpoint-every", "take a checkpoint every `n` rounds (50), or this often (10m), in the NATS server's JetStream (a whole job's embedded server: in --store, by default $XDG_STATE_HOME/strads/store or ~/.local/state/strads/store); the rounds do not wait for it and the model is the same (0: none)")
	fs.IntVar(&f.ckptKeep, "checkpoint-keep", coordinator.DefaultCheckpointKeep, "keep the last `k` checkpoints")
	fs.IntVar(&f.spares, "spares", 0, "coordinator: admit up to `n` spare workers and n spare schedulers (roles started when every place is taken); when a node is lost (no heartbeat for 5s) a spare takes its place and the job goes back to its last checkpoint (--checkpoint-every), or to its start if it has none, and on, to the same model")
	fs.BoolVar(&f.resume, "resume", false, "resume the job from its last checkpoint (the same --job, settings and data), and end with the model it would have ended with")
	f.addSecurityFlags(fs)
	return f
}

// options returns the coordinator's options; progress lines go to w.
func (f *runFlags) options(w io.Writer) (coordinator.Options, error) {
	o := coordinator.Options{
		Workers:     f.workers,
		Schedulers:  f.schedulers,
		Depth:       f.depth,
		MaxRounds:   f.maxRounds,
		TimeLimit:   f.timeLimit,
		Tol:         f.tol,
		Target:      f.target.v,
		HasTarget:   f.target.set,
		ReportEvery: f.reportEvery,
		JoinTimeout: f.joinTimeout,
		Timeout:     f.timeout,
		Metrics:     f.metrics,
		Out:         f.out,

		CheckpointEvery:    f.ckptEvery.rounds,
		CheckpointInterval: f.ckptEvery.interval,
		CheckpointKeep:     f.ckptKeep,
		Resume:             f.resume,
		Spares:             f.spares,
	}
	if f.progress > 0 {
		o.Progress, o.ProgressEvery = w, f.progress
	}
	if err := o.Validate(); err != nil {
		return o, FlagError(f.fs, nil, err)
	}
	if f.timeout <= 0 || f.joinTimeout <= 0 {
		return o, Usagef("--timeout and --join-timeout must be > 0")
	}
	for _, p := range []struct{ flag, path string }{{"--out", f.out}, {"--metrics", f.metrics}} {
		if p.path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(p.path)); err != nil || !st.IsDir() {
			return o, Usagef("%s %s: directory %s does not exist", p.flag, p.path, filepath.Dir(p.path))
		}
	}
	return o, nil
}

// serve starts the --http server, if asked for, with the job's info
// (monitor's SetInfo), and says where on w. It returns the metrics for the
// nodes (nil without --http) and a function that stops the server.
func (f *runFlags) serve(w io.Writer, log *slog.Logger, info map[string]string) (*monitor.Metrics, func(), error) {
	if f.http == "" {
		return nil, func() {}, nil
	}
	addr, err := httpAddr(f.http)
	if err != nil {
		return nil, nil, UsageError(fmt.Errorf("--http %w", err))
	}
	m := monitor.New()
	for k, v := range info {
		m.SetInfo(k, v)
	}
	srv, err := monitor.ServeWith(addr, m, log, monitor.HandlerOptions{Pprof: f.pprof, Cmdline: f.cmdline()})
	if err != nil {
		return nil, nil, UsageError(fmt.Errorf("--http: %w", err))
	}
	line := fmt.Sprintf("serving the live page on http://%s/ and metrics on http://%s/metrics", srv.Addr(), srv.Addr())
	if f.pprof {
		line += fmt.Sprintf(", profiles on http://%s/debug/pprof/", srv.Addr())
	}
	fmt.Fprintln(w, line)
	return m, func() { srv.Close() }, nil
}

// logger returns the roles' logger, writing to w: warnings, and with
// --verbose what every role does.
func (f *runFlags) logger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// every is a flag of a number of rounds (50) or a duration (10m).
type every struct {
	rounds   uint64
	interval time.Duration
}

func (e *every) String() string {
	if e.interval > 0 {
		return e.interval.String()
	}
	return strconv.FormatUint(e.rounds, 10)
}

func (e *every) Set(s string) error {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		*e = every{rounds: n}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a number of rounds (50) or a duration (10m), got %q", s)
	}
	*e = every{interval: d}
	return nil
}

// optionalFloat is a float flag that knows whether it was given.
type optionalFloat struct {
	v   float64
	set bool
}

// String implements flag.Value: "" when unset, so that no default shows.
func (f *optionalFloat) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatFloat(f.v, 'g', -1, 64)
}

// Set implements flag.Value, with the errors of the flag package's floats.
func (f *optionalFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return errors.New("value out of range")
	case err != nil:
		return errors.New("parse error")
	}
	f.v, f.set = v, true
	return nil
}

// SetDefault changes the default of the flag name of fs to value (which it
// also sets), and its usage to usage unless that is empty. An app's Flags
// calls it to fit a runtime flag to the app, say --workers 1 or a --out
// that names the app's model file. It panics if fs has no such flag or
// value is not one of its values: a programming error.
func SetDefault(fs *flag.FlagSet, name, value, usage string) {
	f := fs.Lookup(name)
	if f == nil {
		panic("cli: SetDefault: no flag --" + name)
	}
	if err := f.Value.Set(value); err != nil {
		panic(fmt.Sprintf("cli: SetDefault --%s %q: %v", name, value, err))
	}
	f.DefValue = value
	if usage != "" {
		f.Usage = usage
	}
}

// defaultStore returns the embedded server's JetStream store of a whole
// job that takes checkpoints or resumes without --store: the user's state
// directory of the XDG base directories ($XDG_STATE_HOME, by default
// ~/.local/state), not the working directory, which may be a checkout.
func defaultStore() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) { // a relative one is to be ignored
		return filepath.Join(d, "strads", "store"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", Usagef("--checkpoint-every and --resume: no --store, and no home directory for the default (%v)", err)
	}
	return filepath.Join(home, ".local", "state", "strads", "store"), nil
}

// checkCheckpoints checks the checkpoint flags against the role and the
// others, and gives a whole job that needs JetStream in its embedded
// server the default store, saying so on w.
func (f *runFlags) checkCheckpoints(role Role, w io.Writer) error {
	if f.ckptEvery == (every{}) && !f.resume {
		return nil
	}
	switch {
	case !role.Has(Coordinator):
		return Usagef("--checkpoint-every and --resume: for the coordinator (or a whole job); the other roles learn of them when they join")
	case f.ckptKeep < 1:
		return Usagef("--checkpoint-keep %d: want at least 1", f.ckptKeep)
	case role == All && f.nats != "" && f.jobKey.IsZero():
		// Its checkpoints would carry MACs under a random key that
		// dies with the process: no later run could resume them.
		return Usagef("--checkpoint-every and --resume with --nats: a whole job needs --key FILE (make one with strads key new FILE, and give the same to every run of the job); without one its roles use a random key of their own, and no later run could verify its checkpoints")
	}
	if role == All && f.nats == "" && f.store == "" {
		store, err := defaultStore()
		if err != nil {
			return err
		}
		f.store = store
		fmt.Fprintf(w, "checkpoints in %s (the embedded NATS server's JetStream store; --store DIR to choose)\n", store)
	}
	return nil
}
