// Command strads runs scheduled model-parallel machine learning jobs.
//
//	strads APP [flags]                                a whole job, on one machine (APP: lasso, …)
//	strads scheduler|coordinator|worker --app APP --nats URL --job NAME [flags]
//	                                                  one role of a job, for many machines
//	strads gen APP [flags] -o FILE                    a synthetic data set
//	strads server [--port 4222]                       a NATS server for the roles
//
// Run any of them with --help for their flags. The exit status is 0 on
// success, 2 on bad usage or input, 1 on failure (a model that diverged
// included: see coordinator.ErrDiverged).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/strads-go/strads/libsvm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usage returns the command's usage, listing the apps.
func usage() string {
	var b strings.Builder
	b.WriteString("strads runs scheduled model-parallel (SchMP) machine learning jobs.\n\nUsage:\n")
	for _, name := range appNames() {
		fmt.Fprintf(&b, "  strads %-12s [flags]                         run a job on this machine: %s\n", name, apps[name].summary)
	}
	b.WriteString(`  strads scheduler   --app APP --nats URL --job NAME [flags]   run a scheduler role
  strads coordinator --app APP --nats URL --job NAME [flags]   run the coordinator role
  strads worker      --app APP --nats URL --job NAME [flags]   run a worker role
  strads gen APP [flags] -o FILE                     write a synthetic data set
  strads server [--port 4222]                        run a NATS server for the roles

Run "strads COMMAND --help" for the flags of a command.
`)
	return b.String()
}

// usageError marks errors in the command line or its input: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "scheduler", "coordinator", "worker":
		app, ok := apps[appFlag(rest)]
		if !ok {
			err = usagef("--app %q: want one of %s", appFlag(rest), strings.Join(appNames(), ", "))
			break
		}
		err = app.role(ctx, cmd, rest, stdout, stderr)
	case "gen":
		err = runGen(rest, stdout, stderr)
	case "server":
		err = runServer(ctx, rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return 0
	default:
		app, ok := apps[cmd]
		if !ok {
			fmt.Fprint(stderr, usage())
			fmt.Fprintf(stderr, "\nstrads: unknown command %q\n", cmd)
			return 2
		}
		err = app.job(ctx, rest, stdout, stderr)
	}
	var ue usageError
	var pe *libsvm.ParseError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "strads %s: %v\n", args[0], err)
		return 2
	case errors.As(err, &pe):
		// Bad input, found by the role that loaded it: the file and line
		// say all.
		fmt.Fprintf(stderr, "strads %s: %v\n", args[0], pe)
		return 2
	default:
		fmt.Fprintf(stderr, "strads %s: %v\n", args[0], err)
		return 1
	}
}
