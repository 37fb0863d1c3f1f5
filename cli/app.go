package cli

import (
	"context"
	"flag"
	"io"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/schmp"
)

// An App is a model as a command: its name, its own flags, and how to
// make its job from them. The package gives it the runtime's flags and the
// all-in-one and role commands (see CommandLine).
type App struct {
	// Name names the command of an app among several ("strads lasso"),
	// the job's app in every role's manifest, and the default of --job.
	Name string
	// Summary describes the app in a few words, for the usage.
	Summary string
	// Synopsis is the usage line of a whole job, after the command's
	// name: its main flags, say "--data FILE [--lambda L] [flags]".
	// Empty means "[flags]".
	Synopsis string
	// Flags adds the app's own flags to fs, which already holds the
	// runtime's (it may change their defaults with SetDefault), and
	// returns the function that makes the job once fs is parsed. That
	// function may run twice in a worker or scheduler: again once the
	// role has taken the job's settings that it was not given (see
	// PerRole), with the flags set to them.
	Flags func(fs *flag.FlagSet) func(*Env) (*Job, error)
	// PerRole names the app's flags that belong to a role rather than to
	// the job: paths, which differ from machine to machine (the data,
	// outputs), and anything else two roles of one job may disagree on.
	// Every other flag of the app is a setting of the job (DESIGN "Roles, subjects and messages"): the
	// coordinator refuses a role that was given another value, and a role
	// not given one takes the coordinator's.
	PerRole []string
	// Outputs names the app's flags, among PerRole, that name files the
	// job writes (the runtime's --out and --metrics are outputs too); the
	// other PerRole flags name inputs. Before the job runs, an output that
	// is the same file as an input or another output is a usage error,
	// and no output is ever written over an input (atomicfile.Protect).
	Outputs []string
	// Parts names the app's input flags, among PerRole, whose data set
	// over NATS (nats:NAME) a worker process fetches in parts, as its
	// readers ask for them (inputfile.Remote, DESIGN "Outputs and inputs"): those whose
	// readers take a range of lines where they can (libsvm.ReadRange),
	// and open the file, which fetches the whole, only where they need it
	// whole. Other roles, and other flags, fetch the whole first.
	Parts []string
	// Commands are the app's own commands, which work on its outputs
	// rather than run a job: "prog APP NAME [args]" (strads mf recommend,
	// say).
	Commands []Command
}

// A Role is what one process of a job runs.
type Role string

// The roles a command runs.
const (
	// All is a whole job in one process, over an embedded NATS server
	// unless --nats says otherwise: "prog [flags]".
	All Role = "all"
	// Scheduler, Coordinator and Worker are one role of a job each:
	// "prog scheduler|coordinator|worker --nats URL --job NAME [flags]".
	Scheduler   Role = "scheduler"
	Coordinator Role = "coordinator"
	Worker      Role = "worker"
)

// Has reports whether a process running r runs role s: r is s, or All.
func (r Role) Has(s Role) bool { return r == s || r == All }

// Env is what the function that makes a job sees of its command.
type Env struct {
	// Role is the role this process runs.
	Role Role
	// Options are the coordinator's, from the runtime's flags (Workers,
	// Depth, Tol, Out, Progress, …): the app may read them, and change
	// them for its job (say ReportEvery, or RiseTol). Their Manifest is
	// the command's to fill.
	Options *coordinator.Options
	// Stdout and Stderr are the command's output streams: results, and
	// progress and warnings.
	Stdout, Stderr io.Writer
}

// A Job is a program as a command runs it: a whole job, or one role of
// it. NewJob makes one; an app sets the fields that it needs.
type Job struct {
	// Data is the path of the data file that this role reads, if any: its
	// fingerprint goes in the role's manifest, so that the coordinator
	// refuses a role that reads other data than the others (DESIGN "Roles, subjects and messages").
	// Empty means that the role reads none.
	Data string
	// Print prints the result of a successful job to w, the standard
	// output, on the coordinator and in a whole job. Nil means
	// PrintResult. What it prints of the model it reads from res.App,
	// the app's coordinator as its program's NewCoordinator made it.
	Print func(w io.Writer, res *coordinator.Result)
	// Done, if set, is called once the job has ended, or failed to start,
	// on the coordinator and in a whole job, after Print, with the job's
	// result and error (a nil result, and err not nil, on failure). It
	// returns the command's error: err, or its own. ctx is the command's,
	// which SIGINT or SIGTERM cancels. The model's files need no Done: the
	// runtime writes the files that the app's coordinator lists
	// (schmp.Outputter, given --out) with the metrics, all or none.
	Done func(ctx context.Context, res *coordinator.Result, err error) error

	prog runner
}

// NewJob returns the job that runs prog.
func NewJob[P, R, U, S any](prog schmp.Program[P, R, U, S]) *Job {
	return &Job{prog: program[P, R, U, S]{prog}}
}

// runner is a program with its types erased, so that apps of several
// programs (and a job whose program depends on its flags) share one
// command line.
type runner interface {
	// run runs the program as n says and returns the coordinator's
	// result, nil on a worker or a scheduler.
	run(ctx context.Context, n *node) (*coordinator.Result, error)
}

// program is the runner of a schmp.Program.
type program[P, R, U, S any] struct {
	prog schmp.Program[P, R, U, S]
}

// command returns the app's command named name, nil if there is none.
func (a *App) command(name string) *Command {
	for i := range a.Commands {
		if a.Commands[i].Name == name {
			return &a.Commands[i]
		}
	}
	return nil
}
