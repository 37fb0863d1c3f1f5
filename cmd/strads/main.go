// Command strads runs scheduled model-parallel machine learning jobs.
//
//	strads lasso --data FILE --workers N [flags]     a whole job, on one machine
//	strads scheduler|coordinator|worker --nats URL --job NAME [flags]
//	                                                  one role of a job, for many machines
//	strads gen lasso --samples N --features M ... -o FILE
//	strads server [--port 4222]                       a NATS server for the roles
//
// Run any of them with --help for their flags. The exit status is 0 on
// success, 2 on bad usage or input, 1 on failure.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `strads runs scheduled model-parallel (SchMP) machine learning jobs.

Usage:
  strads lasso --data FILE --workers N [flags]   run a Lasso job on this machine
  strads scheduler   --nats URL --job NAME [flags]   run the scheduler role
  strads coordinator --nats URL --job NAME [flags]   run the coordinator role
  strads worker      --nats URL --job NAME [flags]   run a worker role
  strads gen lasso [flags] -o FILE                  write a synthetic Lasso data set
  strads server [--port 4222]                       run a NATS server for the roles

Run "strads COMMAND --help" for the flags of a command.
`

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
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "lasso":
		err = runLasso(ctx, rest, stdout, stderr)
	case "scheduler", "coordinator", "worker":
		err = runRole(ctx, cmd, rest, stdout, stderr)
	case "gen":
		err = runGen(rest, stdout, stderr)
	case "server":
		err = runServer(ctx, rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprint(stderr, usage)
		fmt.Fprintf(stderr, "\nstrads: unknown command %q\n", cmd)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "strads %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "strads %s: %v\n", args[0], err)
		return 1
	}
}
