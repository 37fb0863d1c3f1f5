package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

// perRole names the runtime's flags that are a role's own, never settings
// of the job (DESIGN §2), and --app, which picks the app of a role command.
var perRole = map[string]bool{
	"out": true, "metrics": true, "progress": true, "timeout": true, "join-timeout": true,
	"nats": true, "job": true, "verbose": true, "http": true, "app": true,
}

// session is one command of an app: its flags, parsed, and how they make
// the job.
type session struct {
	app    *App
	role   Role
	fs     *flag.FlagSet
	rf     *runFlags
	build  func(*Env) (*Job, error)
	given  map[string]bool // the flags given on the command line
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
}

// runApp runs role of app (All: a whole job) with the command-line args.
func (cl *CommandLine) runApp(ctx context.Context, app App, role Role, args []string, stdout, stderr io.Writer) error {
	s := &session{app: &app, role: role, stdout: stdout, stderr: stderr, given: map[string]bool{}}
	s.fs = flag.NewFlagSet(app.Name, flag.ContinueOnError)
	s.rf = addRunFlags(s.fs, app.Name)
	if role != All && len(cl.Apps) > 1 {
		s.fs.String("app", cl.Apps[0].Name, "the app whose role to run")
	}
	s.build = app.Flags(s.fs)
	if err := Parse(s.fs, args, stdout, cl.synopsis(&app, role)); err != nil {
		return err
	}
	s.fs.Visit(func(f *flag.Flag) { s.given[f.Name] = true })
	if role != All && s.rf.nats == "" {
		return Usagef("--nats URL is required: a role joins a job through a NATS server")
	}
	if err := wire.CheckJob(s.rf.job); err != nil {
		return UsageError(err)
	}
	s.log = s.rf.logger(stderr)
	j, opts, err := s.makeJob()
	if err != nil {
		return err
	}
	res, err := s.run(ctx, j, opts)
	if !role.Has(Coordinator) {
		return err
	}
	if err == nil {
		if j.Print != nil {
			j.Print(stdout, res)
		} else {
			PrintResult(stdout, res)
		}
	}
	if j.Done != nil {
		err = j.Done(err)
	}
	return err
}

// makeJob makes the job of the flags as they are now, and the
// coordinator's options for it.
func (s *session) makeJob() (*Job, *coordinator.Options, error) {
	opts, err := s.rf.options(s.stderr)
	if err != nil {
		return nil, nil, err
	}
	j, err := s.build(&Env{Role: s.role, Options: &opts, Stdout: s.stdout, Stderr: s.stderr})
	if err != nil {
		return nil, nil, err
	}
	if j == nil || j.prog == nil {
		return nil, nil, fmt.Errorf("app %s made no job: its Flags must return NewJob's", s.app.Name)
	}
	return j, &opts, nil
}

// run runs the job j with the coordinator's options opts.
func (s *session) run(ctx context.Context, j *Job, opts *coordinator.Options) (*coordinator.Result, error) {
	m, err := s.manifest(j)
	if err != nil {
		return nil, err
	}
	opts.Manifest = m
	return j.prog.run(ctx, &node{session: s, opts: *opts})
}

// isSetting reports whether the flag name is a setting of the job: a flag
// of the app not declared PerRole, or one of the runtime's job-wide flags.
func (s *session) isSetting(name string) bool {
	if perRole[name] || slices.Contains(s.app.PerRole, name) {
		return false
	}
	return jobWide[name] || s.fs.Lookup(name) != nil
}

// manifest returns what this role believes about the job (DESIGN §2): its
// app, the protocol's version, the settings (all of them on the
// coordinator, which holds the job's; on a worker or a scheduler those it
// was given), and the fingerprint of its data.
func (s *session) manifest(j *Job) (protocol.Manifest, error) {
	m := protocol.Manifest{App: s.app.Name, Version: protocol.Version, Settings: map[string]string{}}
	all := s.role.Has(Coordinator)
	s.fs.VisitAll(func(f *flag.Flag) {
		if s.isSetting(f.Name) && (all || s.given[f.Name]) {
			m.Settings[f.Name] = f.Value.String()
		}
	})
	if j.Data != "" {
		fp, err := protocol.Fingerprint(j.Data)
		if err != nil {
			return m, UsageError(err)
		}
		m.Data = fp
	}
	return m, nil
}

// settle takes the job's settings that the role was not given: it sets
// their flags and makes the job again. It returns nil if no flag changed.
func (s *session) settle(settings map[string]string) (*Job, error) {
	var took []string
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		value := settings[name]
		if s.given[name] {
			continue // the coordinator checked that the role's is the job's
		}
		f := s.fs.Lookup(name)
		if f == nil || !s.isSetting(name) {
			return nil, Usagef("the job's setting --%s is not one of %s's: is the coordinator another version of the app?", name, s.app.Name)
		}
		if f.Value.String() == value {
			continue
		}
		if err := s.fs.Set(name, value); err != nil {
			return nil, Usagef("the job's setting --%s=%s: %v", name, value, err)
		}
		took = append(took, fmt.Sprintf("--%s=%s", name, value))
	}
	if len(took) == 0 {
		return nil, nil
	}
	s.log.Info("took the job's settings", "role", s.role, "settings", strings.Join(took, " "))
	j, _, err := s.makeJob()
	if err != nil {
		return nil, fmt.Errorf("with the job's settings %s: %w", strings.Join(took, " "), err)
	}
	return j, nil
}

// node is a job about to run: the session that made it, and the
// coordinator's options, with the role's manifest.
type node struct {
	*session
	opts coordinator.Options
}

// run implements runner: a whole job (job.Run) or one role of it against
// the NATS server of --nats.
func (p program[P, R, U, S]) run(ctx context.Context, n *node) (*coordinator.Result, error) {
	rf := n.rf
	if n.role == All {
		mon, stop, err := rf.serve(n.stderr, n.log)
		if err != nil {
			return nil, err
		}
		defer stop()
		return job.Run(ctx, p.prog, job.Options{
			Job:         rf.job,
			NATS:        rf.nats,
			Coordinator: n.opts,
			Timeout:     rf.timeout,
			Logger:      n.log,
			Monitor:     mon,
		})
	}

	nc, err := wire.Connect(rf.nats, "strads-"+string(n.role), 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	c, err := wire.NewConn(nc, rf.job)
	if err != nil {
		return nil, UsageError(err)
	}
	mon, stop, err := rf.serve(n.stderr, n.log)
	if err != nil {
		return nil, err
	}
	defer stop()
	if mon != nil {
		if err := mon.AddConn(string(n.role), nc); err != nil {
			return nil, err
		}
	}
	// A worker or a scheduler builds its part of the program once it has
	// joined and taken the job's settings (configure), from the program
	// those make.
	prog := p.prog
	switch n.role {
	case Scheduler:
		return nil, scheduler.Run(ctx, c, func(ctx context.Context, part, parts int) (schmp.Scheduler[P], error) {
			return prog.NewScheduler(ctx, part, parts)
		}, scheduler.NodeOptions{
			JoinTimeout: rf.joinTimeout, Timeout: rf.timeout, Logger: n.log, Monitor: mon,
			Manifest: n.opts.Manifest, Configure: p.configure(n, &prog),
		})
	case Worker:
		return nil, worker.Run(ctx, c, func(ctx context.Context, shard, shards int) (schmp.Worker[P, R, U, S], error) {
			return prog.NewWorker(ctx, shard, shards)
		}, worker.Options{
			JoinTimeout: rf.joinTimeout, Timeout: rf.timeout, Logger: n.log, Monitor: mon,
			Manifest: n.opts.Manifest, Configure: p.configure(n, &prog),
		})
	case Coordinator:
		opts := n.opts
		opts.Logger, opts.Monitor = n.log, mon
		return coordinator.Run(ctx, c, p.prog.NewCoordinator, opts)
	}
	return nil, fmt.Errorf("cli: no role %q", n.role)
}

// configure returns the Configure of a worker's or a scheduler's options:
// it takes the job's settings that the role was not given and, if that
// changes a flag, sets *prog to the program the flags now make. That must
// be a program of the same types: the role's messages are typed already.
func (p program[P, R, U, S]) configure(n *node, prog *schmp.Program[P, R, U, S]) func(map[string]string) error {
	return func(settings map[string]string) error {
		j, err := n.settle(settings)
		if err != nil || j == nil {
			return err
		}
		q, ok := j.prog.(program[P, R, U, S])
		if !ok {
			return UsageError(errors.New("the job's settings make another program of this role than its own flags do: give it the flags that choose the program (a layout, an algorithm, a schedule) as the coordinator has them"))
		}
		*prog = q.prog
		return nil
	}
}

// PrintResult prints the end of a successful job to w: the final objective
// line, then where the time went (coordinator.Result.WriteSummary).
func PrintResult(w io.Writer, res *coordinator.Result) {
	fmt.Fprintf(w, "objective %.12g  gap %.3g  nnz %d  rounds %d  updates %d  time %.3fs  (%s)\n",
		res.Final.Objective, res.Final.Gap, res.Final.NNZ, res.Rounds, res.Updates, res.Elapsed.Seconds(), res.Reason)
	res.WriteSummary(w)
}
