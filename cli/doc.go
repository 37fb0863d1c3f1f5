// Package cli turns models into command-line programs: a schmp.Program
// and the flags that configure it become the commands that strads has,
//
//	prog [flags]                                         a whole job on this machine
//	prog scheduler|coordinator|worker --nats URL --job NAME [flags]
//	                                                     one role of a job spread over machines
//
// with the runtime's flags (--workers, --depth, --tol, --max-rounds,
// --out, --metrics, --progress, --nats, --job, --http, --verbose, …),
// --help on every command, and the exit statuses 0 (success), 2 (bad usage
// or input) and 1 (any other failure).
//
// # Security and outputs
//
// A role reaches a protected NATS server with credentials in the URL of
// --nats, --creds, and TLS (--tls-ca, --tls-cert, --tls-key); the password
// or token of --nats never shows in what the command writes to stderr, in
// its errors, on the live page or at /debug/pprof/cmdline (which only
// --pprof serves). A whole job's embedded server takes no TCP port unless
// --nats-listen asks, and --http with a port alone binds 127.0.0.1. An
// output (--out, --metrics, App.Outputs) that is the same file as an input
// or another output, or that is not a regular file, is a usage error
// before the job runs, and the job's inputs are protected
// (atomicfile.Protect) from the files its coordinator writes.
//
// An App describes a model: its name, its own flags, and a function that
// makes its Job from them once they are parsed. Main runs a program of one
// or more apps:
//
//	func main() {
//		cli.Main(cli.App{
//			Name:    "nnls",
//			Summary: "non-negative least squares",
//			Flags: func(fs *flag.FlagSet) func(*cli.Env) (*cli.Job, error) {
//				var cfg nnls.Config
//				fs.IntVar(&cfg.Rows, "rows", 1000, "rows of the generated X")
//				// …
//				return func(*cli.Env) (*cli.Job, error) {
//					return cli.NewJob(nnls.Program(cfg)), nil
//				}
//			},
//		})
//	}
//
// # Roles and settings
//
// Every role of a job joins the coordinator with a manifest (DESIGN "Roles, subjects and messages"):
// the app's name, the protocol's version, the job's settings as the role
// was given them, and a fingerprint of the data it reads (Job.Data). The
// settings are the app's flags, but for those it declares per role
// (App.PerRole: paths, mostly), and the runtime's flags that are the job's
// (--workers, --schedulers, --depth, --max-rounds, --tol, --target,
// --time-limit, --report-every). The coordinator sends every role the
// job's settings: a worker or a scheduler takes those it was not given and
// makes its job again before it builds its part, so that a role needs
// little more than its paths, --nats and --job.
//
// Command strads is this package's largest user (cmd/strads); apps/nnls's
// walkthrough in docs/writing-a-model.md is its smallest.
package cli
