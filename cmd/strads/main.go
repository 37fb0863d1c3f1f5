// Command strads runs scheduled model-parallel machine learning jobs.
//
//	strads APP [flags]                                a whole job, on one machine (APP: lasso, …)
//	strads scheduler|coordinator|worker --app APP --nats URL --job NAME [flags]
//	                                                  one role of a job, for many machines
//	strads lda infer --model FILE --docword FILE      topic proportions of new documents
//	strads gen APP [flags] -o FILE                    a synthetic data set
//	strads predict --model FILE --data FILE           predictions of a Lasso or logreg model
//	strads server [--addr HOST:PORT] [--config FILE]  a NATS server for the roles
//	strads version                                    the version and source revision
//
// Run any of them with --help for their flags. The exit status is 0 on
// success, 2 on bad usage or input, 1 on failure (a model that diverged
// included: see coordinator.ErrDiverged).
//
// The apps' commands are package cli's, which any model outside this
// repository can use as well; this command adds its apps' extras (the
// regularization path, their own outputs) and the gen and server commands.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/strads-go/strads/cli"
)

// commandLine is strads' command line; --app defaults to its first app.
var commandLine = &cli.CommandLine{
	Name:    "strads",
	Summary: "runs scheduled model-parallel (SchMP) machine learning jobs.",
	Apps:    []cli.App{lassoApp(), ldaApp(), logregApp(), mfApp()},
	Commands: []cli.Command{
		{Name: "gen", Synopsis: "APP [flags] -o FILE", Summary: "write a synthetic data set", Run: runGen},
		{Name: "predict", Synopsis: "--model FILE --data FILE [--out FILE]", Summary: "apply a Lasso or logreg model to data", Run: runPredict},
		{Name: "server", Synopsis: "[--addr HOST:PORT] [--config FILE]", Summary: "run a NATS server for the roles", Run: runServer},
		{Name: "version", Summary: "print the strads version and the revision it was built from", Run: runVersion},
	},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal cancels the job, which then ends cleanly; it also
	// gives the signals back their default action, so that a second one
	// ends the process at once, even one stuck where no context reaches.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args and returns the exit status: "lda NAME"
// of a command under lda (ldaCommands, "strads lda infer"), else
// commandLine's.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if isLDACommand(args) {
		return ldaCommands.Run(ctx, args[1:], stdout, stderr)
	}
	return commandLine.Run(ctx, args, stdout, stderr)
}
