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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/member"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/protocol"
	schednode "github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

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
func (cl *CommandLine) runApp(ctx context.Context, app App, role Role, args []string, stdout, stderr io.Writer) (err error) {
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
	// No output shows the credentials of --nats (cli/security.go).
	defer func() { err = wire.Redact(err, s.rf.nats) }()
	s.stderr = s.rf.scrub(stderr)
	if err := s.rf.checkSecurity(role); err != nil {
		return err
	}
	if role != All && s.rf.nats == "" {
		return Usagef("--nats URL is required: a role joins a job through a NATS server")
	}
	if err := wire.CheckJob(s.rf.job); err != nil {
		return UsageError(fmt.Errorf("--job: %w", err))
	}
	if err := s.rf.checkCheckpoints(role, s.stderr); err != nil {
		return err
	}
	s.log = s.rf.logger(s.stderr)
	got, removeCopies, err := s.fetchData(ctx)
	if err != nil {
		return err
	}
	defer removeCopies()
	defer func() { err = renameCopies(err, got) }()
	if len(got) > 0 {
		// What the job prints names the data sets, not the copies.
		s.stdout, s.stderr = renameWriter{s.stdout, got}, renameWriter{s.stderr, got}
		s.log = s.rf.logger(s.stderr)
	}
	j, opts, err := s.makeJob()
	if err != nil {
		return err
	}
	release, err := s.checkPaths(j)
	if err != nil {
		return err
	}
	defer release()
	res, err := s.execute(ctx, j, opts)
	if !role.Has(Coordinator) {
		return err
	}
	if err == nil {
		if j.Print != nil {
			j.Print(s.stdout, res)
		} else {
			PrintResult(s.stdout, res)
		}
	}
	if j.Done != nil {
		err = j.Done(ctx, res, err)
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

// execute runs the job j with the coordinator's options opts: a whole job, or
// the role's node against the NATS server of --nats.
func (s *session) execute(ctx context.Context, j *Job, opts *coordinator.Options) (*coordinator.Result, error) {
	m, err := s.manifest(j)
	if err != nil {
		return nil, err
	}
	opts.Manifest = m
	n := &node{session: s, opts: *opts}
	if s.role != All {
		nc, err := wire.Connect(s.rf.nats, "strads-"+string(s.role), 10*time.Second, s.rf.natsOptions()...)
		if err != nil {
			return nil, s.rf.connectError(err)
		}
		defer nc.Close()
		if n.c, err = wire.NewConn(nc, s.rf.job); err != nil {
			return nil, UsageError(err)
		}
		if err := n.c.SetKey(s.rf.jobKey); err != nil {
			return nil, err
		}
		n.nc = nc
	}
	var stop func()
	if n.mon, stop, err = s.rf.serve(s.stderr, s.log, s.rf.info(s.role, m)); err != nil {
		return nil, err
	}
	defer stop()
	if n.mon != nil && n.nc != nil {
		if err := n.mon.AddConn(string(s.role), n.nc); err != nil {
			return nil, err
		}
	}
	if s.role == Worker || s.role == Scheduler {
		if j, err = s.join(ctx, j, n); err != nil {
			return nil, err
		}
	}
	return j.prog.run(ctx, n)
}

// join joins the job ahead of the role's node, which then takes the place
// it was given (a node that asks again with its ID gets its place back:
// DESIGN "Roles, subjects and messages"), to take the job's settings that the role was not given
// (settle). They may make another program than the role's own flags do (a
// layout, an algorithm), and the node's messages are typed, so the program
// must be known before the node starts: join returns it. A refusal is
// join's error, as it would be the node's; a setting that the role cannot
// take becomes the node's to report, as its Configure's error, so that the
// coordinator learns of it and fails the job (DESIGN "How a job fails").
func (s *session) join(ctx context.Context, j *Job, n *node) (*Job, error) {
	n.id = nuid.Next()
	host, pid := member.Self()
	role := protocol.RoleWorker
	if s.role == Scheduler {
		role = protocol.RoleScheduler
	}
	req := protocol.JoinRequest{ID: n.id, Role: role, Manifest: n.opts.Manifest, Host: host, PID: pid}
	drop := func(reason string) { n.mon.Drop(role, reason) }
	entry, err := member.Admit(ctx, n.c, req, s.rf.joinTimeout, s.rf.timeout, drop, s.log.With("role", role, "id", n.id))
	if err != nil && j.Data != "" && errors.Is(err, protocol.ErrManifest) && strings.Contains(err.Error(), "data fingerprint") {
		// The coordinator knows the fingerprints, the role its file.
		err = fmt.Errorf("%w (this role read %s)", err, j.Data)
	}
	if err != nil {
		return nil, err
	}
	n.entry = entry
	next, err := s.settle(entry.Reply.Settings)
	switch {
	case err != nil:
		n.configure = func(map[string]string) error { return err }
	case next != nil:
		j = next
	}
	return j, nil
}

// isSetting reports whether the flag name is a setting of the job: any
// flag of the command but the runtime's per-role ones and those the app
// declares PerRole.
func (s *session) isSetting(name string) bool {
	return s.fs.Lookup(name) != nil && !perRole[name] && !slices.Contains(s.app.PerRole, name)
}

// manifest returns what this role believes about the job (DESIGN "Roles, subjects and messages"): its
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
// The settings came from the network, applied exact: where printed, they
// are protocol.Printable.
func (s *session) settle(settings map[string]string) (*Job, error) {
	var took []string
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		value := settings[name]
		if s.given[name] {
			continue // the coordinator checked that the role's is the job's
		}
		f := s.fs.Lookup(name)
		if f == nil || !s.isSetting(name) {
			return nil, Usagef("the job's setting --%s is not one of %s's: is the coordinator another version of the app?", protocol.Printable(name), s.app.Name)
		}
		if f.Value.String() == value {
			continue
		}
		if err := s.fs.Set(name, value); err != nil {
			return nil, Usagef("the job's setting --%s=%s: %s", name, protocol.Printable(value), protocol.Printable(err.Error()))
		}
		took = append(took, fmt.Sprintf("--%s=%s", name, protocol.Printable(value)))
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

// node is a job about to run: the session that made it, the
// coordinator's options with the role's manifest, and, but for a whole
// job, the role's connection.
type node struct {
	*session
	opts coordinator.Options
	mon  *monitor.Metrics // nil without --http
	nc   *nats.Conn
	c    *wire.Conn
	// id is a worker's or a scheduler's, which it joined with ahead of its
	// node, and entry its place, which the node serves; configure, if set,
	// is its node's Configure.
	id        string
	entry     *member.Entry
	configure func(map[string]string) error
}

// run implements runner: a whole job (job.Run), or the role's node.
func (p program[P, R, U, S]) run(ctx context.Context, n *node) (*coordinator.Result, error) {
	rf := n.rf
	switch n.role {
	case All:
		key := rf.jobKey
		if key.IsZero() && rf.nats != "" {
			// On a server that others use, the job's own roles share a
			// key that nobody else has: no one joins or forges.
			key = wire.NewKey()
			n.log.Info("no --key: the job's roles use a random key of their own; no other process can join the job")
		}
		res, err := job.Run(ctx, p.prog, job.Options{
			Key:         key,
			Job:         rf.job,
			NATS:        rf.nats,
			NATSOptions: rf.natsOptions(),
			Listen:      rf.natsListen,
			Store:       rf.store,
			Listening: func(url string) {
				fmt.Fprintf(n.stderr, "embedded nats-server listening on %s\n", url)
			},
			Coordinator: n.opts,
			Timeout:     rf.timeout,
			Logger:      n.log,
			Monitor:     n.mon,
		})
		if err != nil {
			err = rf.connectError(err)
		}
		return res, err
	case Scheduler:
		return nil, schednode.Run(ctx, n.c, p.prog.NewScheduler, schednode.Options{
			ID: n.id, JoinTimeout: rf.joinTimeout, Timeout: rf.timeout, Logger: n.log, Monitor: n.mon,
			Manifest: n.opts.Manifest, Configure: n.configure, Entry: n.entry,
		})
	case Worker:
		return nil, worker.Run(ctx, n.c, p.prog.NewWorker, worker.Options{
			ID: n.id, JoinTimeout: rf.joinTimeout, Timeout: rf.timeout, Logger: n.log, Monitor: n.mon,
			Manifest: n.opts.Manifest, Configure: n.configure, Entry: n.entry,
		})
	case Coordinator:
		opts := n.opts
		opts.Logger, opts.Monitor = n.log, n.mon
		return coordinator.Run(ctx, n.c, p.prog.NewCoordinator, opts)
	}
	return nil, fmt.Errorf("cli: no role %q", n.role)
}

// PrintResult prints the end of a successful job to w: the final objective
// line, then where the time went (coordinator.Result.WriteSummary).
func PrintResult(w io.Writer, res *coordinator.Result) {
	fmt.Fprintf(w, "objective %.12g  gap %.3g  nnz %d  rounds %d  updates %d  time %.3fs  (%s)\n",
		res.Final.Objective, res.Final.Gap, res.Final.NNZ, res.Rounds, res.Updates, res.Elapsed.Seconds(), res.Why())
	res.WriteSummary(w)
}
