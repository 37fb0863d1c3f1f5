package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"unicode"

	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
)

// A CommandLine is a program's command line: a whole job and the roles of
// each of its apps, and commands of the program's own.
//
// With one app, "prog [flags]" runs a whole job in this process, over an
// embedded NATS server unless --nats names one, and
// "prog scheduler|coordinator|worker --nats URL --job NAME [flags]" runs
// one role of a job, for jobs spread over machines. With several apps,
// "prog APP [flags]" runs a whole job of APP, and the role commands take
// --app APP, which defaults to the first app.
//
// Every command has --help. The exit status is 0 on success, 2 on bad
// usage or bad input (see ExitStatus), and 1 on any other failure.
type CommandLine struct {
	// Name is the program's name, in the usage and in errors.
	Name string
	// Summary says what the program does, in the usage: a sentence whose
	// subject is Name ("runs …").
	Summary string
	// Apps are the program's apps; at least one.
	Apps []App
	// Commands are the program's other commands, "prog NAME ARGS".
	Commands []Command
}

// A Command is a command of a program besides its apps'.
type Command struct {
	// Name is the command's name, the program's first argument.
	Name string
	// Synopsis is the usage line's arguments after the name.
	Synopsis string
	// Summary describes the command in a few words, for the usage.
	Summary string
	// Run runs the command with the arguments after its name. Its error
	// decides the exit status as CommandLine says; flag.ErrHelp, once
	// the command has printed its help (see Parse), exits with 0.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// Main runs the command line of a program of the given apps, named after
// its executable, and exits with its status. A program of one app is
// usually
//
//	func main() { cli.Main(cli.App{Name: "mymodel", Flags: …}) }
func Main(apps ...App) {
	cl := &CommandLine{Name: filepath.Base(os.Args[0]), Apps: apps}
	cl.Main()
}

// Main runs the command line on the process's arguments, until done or
// interrupted, and exits with its status. SIGINT or SIGTERM cancels the
// job, which then ends cleanly, writing nothing, with the status 128 + the
// signal's number (130, 143), as a shell reports a process the signal
// killed; the first signal also gives the signals back their default
// action, so that a second one ends the process at once, even one stuck
// where no context reaches.
func (cl *CommandLine) Main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Pointer[os.Signal]
	go func() {
		s := <-sigs
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		got.Store(&s)
		name := map[os.Signal]string{os.Interrupt: "SIGINT", syscall.SIGTERM: "SIGTERM"}[s]
		cancel(fmt.Errorf("%s received", name))
	}()
	code := cl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if s := got.Load(); s != nil && code != 0 {
		code = signalStatus(*s)
	}
	os.Exit(code)
}

// signalStatus is the exit status of a command that a signal cut short:
// 128 + its number, or 1 where it has none.
func signalStatus(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}

// roleNames are the role commands.
var roleNames = map[string]Role{"scheduler": Scheduler, "coordinator": Coordinator, "worker": Worker}

// Run runs the command line args (without the program's name) and returns
// the exit status. Errors go to stderr, on one line that starts with the
// program's name and the command. It panics if cl has no apps, or an app
// lacks a Name or Flags: a programming error.
func (cl *CommandLine) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(cl.Apps) == 0 {
		panic("cli: a CommandLine without apps")
	}
	for _, a := range cl.Apps {
		if a.Name == "" || a.Flags == nil {
			panic(fmt.Sprintf("cli: app %q: an App needs a Name and Flags", a.Name))
		}
	}
	single := len(cl.Apps) == 1
	cmd := cl.Name
	var err error
	switch first := firstArg(args); {
	case first == "help" || (!single && (first == "-h" || first == "-help" || first == "--help")):
		if single {
			err = cl.runApp(ctx, cl.Apps[0], All, []string{"--help"}, stdout, stderr)
			break
		}
		fmt.Fprint(stdout, cl.usage())
		return 0
	case (first == "--version" || first == "-version") && cl.command("version") != nil:
		cmd += " version"
		err = cl.command("version").Run(ctx, args[1:], stdout, stderr)
	case roleNames[first] != "":
		cmd += " " + first
		err = cl.runRole(ctx, roleNames[first], args[1:], stdout, stderr)
	case cl.command(first) != nil:
		cmd += " " + first
		err = cl.command(first).Run(ctx, args[1:], stdout, stderr)
	case single && (first == "" || strings.HasPrefix(first, "-")):
		err = cl.runApp(ctx, cl.Apps[0], All, args, stdout, stderr)
	case !single && first == "":
		fmt.Fprint(stderr, cl.usage())
		return 2
	default:
		app := cl.app(first)
		if app == nil {
			if !single {
				fmt.Fprint(stderr, cl.usage())
				fmt.Fprintln(stderr)
			}
			fmt.Fprintf(stderr, "%s: unknown command %q\n", cl.Name, first)
			return 2
		}
		cmd += " " + first
		if c := app.command(firstArg(args[1:])); c != nil {
			cmd += " " + c.Name
			err = c.Run(ctx, args[2:], stdout, stderr)
			break
		}
		err = cl.runApp(ctx, *app, All, args[1:], stdout, stderr)
	}
	code := ExitStatus(err)
	if code != 0 {
		var pe *libsvm.ParseError
		if !isUsage(err) && errors.As(err, &pe) {
			err = pe // bad input, found by the role that read it: its file and line say all
		}
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
	}
	return code
}

// firstArg returns args[0], or "" if there is none.
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// ExitStatus returns the exit status of a command that ended with err: 0
// for nil and flag.ErrHelp; 2 for bad usage or input: an error marked with
// UsageError, a *libsvm.ParseError (a file and line), or a role refused
// because its manifest differs from the job's (protocol.ErrManifest: it was
// given other settings or data than the job's, on the role and on the
// coordinator alike), or a job name another running job holds
// (protocol.ErrNameTaken), or an output that is an input
// (atomicfile.ErrInput), or an input that is not a regular file
// (inputfile.ErrNotRegular); 1 otherwise.
func ExitStatus(err error) int {
	var pe *libsvm.ParseError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case isUsage(err), errors.As(err, &pe), errors.Is(err, protocol.ErrManifest), errors.Is(err, protocol.ErrNameTaken), errors.Is(err, atomicfile.ErrInput), errors.Is(err, inputfile.ErrNotRegular):
		return 2
	}
	return 1
}

// app returns the app named name, nil if there is none.
func (cl *CommandLine) app(name string) *App {
	for i := range cl.Apps {
		if cl.Apps[i].Name == name {
			return &cl.Apps[i]
		}
	}
	return nil
}

// command returns the command named name, nil if there is none.
func (cl *CommandLine) command(name string) *Command {
	for i := range cl.Commands {
		if cl.Commands[i].Name == name {
			return &cl.Commands[i]
		}
	}
	return nil
}

// appNames returns the names of the apps, in order.
func (cl *CommandLine) appNames() []string {
	names := make([]string, len(cl.Apps))
	for i, a := range cl.Apps {
		names[i] = a.Name
	}
	return names
}

// runRole runs role of the app that --app names in args (the only app, if
// there is one).
func (cl *CommandLine) runRole(ctx context.Context, role Role, args []string, stdout, stderr io.Writer) error {
	app := &cl.Apps[0]
	if len(cl.Apps) > 1 {
		name := appFlag(args, app.Name)
		if app = cl.app(name); app == nil {
			return Usagef("--app %q: want one of %s", name, strings.Join(cl.appNames(), ", "))
		}
	}
	return cl.runApp(ctx, *app, role, args, stdout, stderr)
}

// appFlag returns the value of --app in args (def if absent), before the
// flags are parsed: the app decides which other flags there are.
func appFlag(args []string, def string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "app" {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return def
}

// synopsis returns the usage line of app's command for role.
func (cl *CommandLine) synopsis(app *App, role Role) string {
	flags := app.Synopsis
	if flags == "" {
		flags = "[flags]"
	}
	if len(cl.Apps) == 1 {
		if role == All {
			return fmt.Sprintf("%s %s\n       %s scheduler|coordinator|worker --nats URL --job NAME [flags]", cl.Name, flags, cl.Name)
		}
		return fmt.Sprintf("%s %s --nats URL --job NAME [flags]", cl.Name, role)
	}
	if role == All {
		return fmt.Sprintf("%s %s %s", cl.Name, app.Name, flags)
	}
	return fmt.Sprintf("%s %s --app %s --nats URL --job NAME [flags]", cl.Name, role, app.Name)
}

// usage returns the usage of a command line of several apps.
func (cl *CommandLine) usage() string {
	var b strings.Builder
	if cl.Summary != "" {
		fmt.Fprintf(&b, "%s %s\n\n", cl.Name, cl.Summary)
	}
	b.WriteString("Usage:\n")
	tw := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	for _, a := range cl.Apps {
		fmt.Fprintf(tw, "  %s %-11s [flags]\trun a job on this machine: %s\n", cl.Name, a.Name, a.Summary)
	}
	for _, r := range []struct{ name, what string }{
		{"scheduler", "a scheduler role"}, {"coordinator", "the coordinator role"}, {"worker", "a worker role"},
	} {
		fmt.Fprintf(tw, "  %s %-11s --app APP --nats URL --job NAME [flags]\trun %s\n", cl.Name, r.name, r.what)
	}
	for _, c := range cl.Commands {
		fmt.Fprintf(tw, "  %s %s %s\t%s\n", cl.Name, c.Name, c.Synopsis, c.Summary)
	}
	for _, a := range cl.Apps {
		for _, c := range a.Commands {
			fmt.Fprintf(tw, "  %s %s %s %s\t%s\n", cl.Name, a.Name, c.Name, c.Synopsis, c.Summary)
		}
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nRun \"%s COMMAND --help\" for the flags of a command.\n", cl.Name)
	return b.String()
}

// Parse parses args into fs for a command whose usage line is synopsis:
// --help prints the usage line and the flags to stdout and returns
// flag.ErrHelp; a bad flag, or an argument after the flags, is a usage
// error of one line.
func Parse(fs *flag.FlagSet, args []string, stdout io.Writer, synopsis string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "Usage: %s\n\nFlags:\n", synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return flag.ErrHelp
	}
	if err != nil {
		return UsageError(suggest(fs, err))
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// suggest adds to the flag package's error for an unknown flag the
// nearest of fs's flags, when one is within two edits of it.
func suggest(fs *flag.FlagSet, err error) error {
	const prefix = "flag provided but not defined: -"
	name, ok := strings.CutPrefix(err.Error(), prefix)
	if !ok {
		return err
	}
	best, dist := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < dist {
			best, dist = f.Name, d
		}
	})
	if best == "" {
		return err
	}
	return fmt.Errorf("%w (did you mean --%s?)", err, best)
}

// editDistance returns the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// usageError marks errors in the command line or its input.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// UsageError marks err as an error of the command line or of its input,
// of which the command exits with status 2. It returns nil for nil.
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// Usagef is UsageError of fmt.Errorf(format, args...).
func Usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// isUsage reports whether err, or an error in its chain, is marked with
// UsageError.
func isUsage(err error) bool {
	var ue usageError
	return errors.As(err, &ue)
}

// FlagError returns err as a usage error in which a *schmp.FieldError (a
// library's complaint about a field of its configuration, anywhere in
// err's chain) names the flags of fs that set the fields instead of the Go
// fields: the flag of a field is names[path] or names[name] if given (path
// "Schedule.Policy", name "Policy"), else the flag spelled as the name or
// as it in kebab case ("LambdaRatio": --lambda-ratio). A field without a
// flag keeps its Go name.
func FlagError(fs *flag.FlagSet, names map[string]string, err error) error {
	var fe *schmp.FieldError
	if !errors.As(err, &fe) {
		return UsageError(err)
	}
	msg := fe.Render(func(path string) string {
		name := path[strings.LastIndexByte(path, '.')+1:]
		for _, f := range []string{names[path], names[name], name, kebab(name)} {
			if f != "" && fs.Lookup(f) != nil {
				return "--" + f
			}
		}
		return path
	})
	// Keep what the chain says around the field error.
	if outer := err.Error(); outer != fe.Error() {
		msg = strings.Replace(outer, fe.Error(), msg, 1)
	}
	return UsageError(errors.New(msg))
}

// kebab returns a Go name in kebab case: "LambdaRatio" → "lambda-ratio",
// "TrueNNZ" → "true-nnz", "NNZCount" → "nnz-count".
func kebab(name string) string {
	var b strings.Builder
	rs := []rune(name)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prevLower := unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLower || (unicode.IsUpper(rs[i-1]) && nextLower) {
				b.WriteByte('-')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
