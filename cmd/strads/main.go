// Command strads runs scheduled model-parallel machine learning jobs.
//
//	strads APP [flags]                                a whole job, on one machine (APP: lasso, …)
//	strads scheduler|coordinator|worker --app APP --nats URL --job NAME [flags]
//	                                                  one role of a job, for many machines
//	strads lda infer --model FILE --docword FILE      topic proportions of new documents
//	strads gen APP [flags] -o FILE                    a synthetic data set
//	strads predict --model FILE --data FILE           predictions of a Lasso or logreg model
//	strads plot --metrics FILE[,FILE…] -o OUT.png     a chart of metrics CSVs, a line per file
//	strads server [--addr HOST:PORT] [--config FILE]  a NATS server for the roles
//	strads data put FILE [--name N] (--nats URL | --store DIR)
//	                                                  a data set in the server's object store (--data nats:N)
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
	"github.com/strads-go/strads/cli"
)

// commandLine is strads' command line; --app defaults to its first app.
var commandLine = &cli.CommandLine{
	Name:    "strads",
	Summary: "runs scheduled model-parallel (SchMP) machine learning jobs.",
	Apps:    []cli.App{lassoApp(), ldaApp(), logregApp(), mfApp()},
	Commands: []cli.Command{
		{Name: "data", Synopsis: dataSynopsis, Summary: "store data sets in a NATS server's object store, which input flags read as nats:NAME", Run: runData},
		cli.KeyCommand,
		{Name: "gen", Synopsis: "APP [flags] -o FILE", Summary: "write a synthetic data set", Run: runGen},
		{Name: "plot", Synopsis: "--metrics FILE[,FILE…] -o OUT.png|.svg [flags]", Summary: "chart metrics CSVs (objective, gap, …), a line per file", Run: runPlot},
		{Name: "predict", Synopsis: "--model FILE --data FILE [--out FILE]", Summary: "apply a Lasso or logreg model to data", Run: runPredict},
		{Name: "server", Synopsis: "[--addr HOST:PORT] [--config FILE]", Summary: "run a NATS server for the roles", Run: runServer},
		{Name: "version", Summary: "print the strads version and the revision it was built from", Run: runVersion},
	},
}

func main() { commandLine.Main() }
