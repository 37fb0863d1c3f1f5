package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/dataset"
	"github.com/strads-go/strads/inputfile"
)

// dataSynopsis is the usage line of strads data.
const dataSynopsis = "put FILE [--name N] [--block-size BYTES] | ls | get N -o FILE | rm N  (--nats URL | --store DIR)"

// runData runs strads data: the data sets in the JetStream object store of
// a NATS server, which the input flags of the apps read as nats:NAME
// (DESIGN "How a job fails").
func runData(ctx context.Context, args []string, stdout, _ io.Writer) error {
	sub := firstArgOf(args)
	var rest []string
	if len(args) > 0 {
		rest = args[1:]
	}
	switch sub {
	case "put":
		return dataPut(ctx, rest, stdout)
	case "ls":
		return dataList(ctx, rest, stdout)
	case "get":
		return dataGet(ctx, rest, stdout)
	case "rm":
		return dataRemove(ctx, rest, stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(stdout, "Usage: strads data %s\n\nRun \"strads data put --help\" (ls, get, rm) for the flags.\n", dataSynopsis)
		return flag.ErrHelp
	}
	return cli.Usagef("want put, ls, get or rm after strads data, got %q: strads data %s", sub, dataSynopsis)
}

func firstArgOf(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// dataFlags parses args of strads data SUB, whose operands (positional
// arguments, before or after the flags) are want in number, and returns
// them with the server's flags.
func dataFlags(sub, synopsis string, args []string, want int, stdout io.Writer, more func(fs *flag.FlagSet)) ([]string, *cli.NATSFlags, error) {
	fs := flag.NewFlagSet("data "+sub, flag.ContinueOnError)
	nf := cli.AddNATSFlags(fs)
	if more != nil {
		more(fs)
	}
	// Operands and flags may come in any order: strads data put FILE
	// --store DIR.
	var operands []string
	fs.SetOutput(io.Discard)
	for {
		if err := fs.Parse(args); err != nil {
			// Again, for the usage (--help) or the error of one line.
			return nil, nil, cli.Parse(fs, args, stdout, "strads data "+sub+" "+synopsis)
		}
		if fs.NArg() == 0 {
			break
		}
		operands, args = append(operands, fs.Arg(0)), fs.Args()[1:]
	}
	if len(operands) != want {
		return nil, nil, cli.Usagef("strads data %s takes %d operand(s), got %d: strads data %s %s", sub, want, len(operands), sub, synopsis)
	}
	if err := nf.Check(); err != nil {
		return nil, nil, err
	}
	return operands, nf, nil
}

// dataPut stores a file as a data set.
func dataPut(ctx context.Context, args []string, stdout io.Writer) error {
	var name string
	var block int
	ops, nf, err := dataFlags("put", "FILE [--name N] [--block-size BYTES] (--nats URL | --store DIR)", args, 1, stdout, func(fs *flag.FlagSet) {
		fs.StringVar(&name, "name", "", "the data set's `name` N, which the input flags read as nats:N (default: the file's base name)")
		fs.IntVar(&block, "block-size", dataset.DefaultBlock, "the size of a block of whole lines, in `bytes`: a worker fetches the blocks that hold its rows")
	})
	if err != nil {
		return err
	}
	if block < 1 || block > dataset.MaxBlock {
		return cli.Usagef("--block-size must be in [1, %d], got %d", dataset.MaxBlock, block)
	}
	path := ops[0]
	if name == "" {
		name = filepath.Base(path)
	}
	if err := dataset.CheckName(name); err != nil {
		return cli.Usagef("--name: %v", err)
	}
	f, err := inputfile.Open(path)
	if err != nil {
		return cli.UsageError(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, done, err := nf.Datasets(ctx, true)
	if err != nil {
		return err
	}
	defer done()
	st.SetBlock(block)
	start := time.Now()
	in, err := st.Put(ctx, name, f, uint64(fi.Size()))
	if err != nil {
		return nf.Redact(err)
	}
	fmt.Fprintf(stdout, "stored %s as %s%s: %d bytes, %s, in %.2fs\n", path, dataset.Scheme, in.Name, in.Size, in.Digest, time.Since(start).Seconds())
	return nil
}

// dataList lists the data sets.
func dataList(ctx context.Context, args []string, stdout io.Writer) error {
	_, nf, err := dataFlags("ls", "(--nats URL | --store DIR)", args, 0, stdout, nil)
	if err != nil {
		return err
	}
	st, done, err := nf.Datasets(ctx, false)
	if err != nil {
		return err
	}
	defer done()
	ins, err := st.List(ctx)
	if err != nil {
		return nf.Redact(err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tBYTES\tMODIFIED\tDIGEST")
	for _, in := range ins {
		fmt.Fprintf(tw, "%s%s\t%d\t%s\t%s\n", dataset.Scheme, in.Name, in.Size, in.Modified.UTC().Format(time.RFC3339), in.Digest)
	}
	return tw.Flush()
}

// dataGet writes a data set to a file.
func dataGet(ctx context.Context, args []string, stdout io.Writer) error {
	var out string
	ops, nf, err := dataFlags("get", "N -o FILE (--nats URL | --store DIR)", args, 1, stdout, func(fs *flag.FlagSet) {
		fs.StringVar(&out, "o", "", "write the data set to `file`")
	})
	if err != nil {
		return err
	}
	if out == "" {
		return cli.Usagef("-o FILE is required")
	}
	name, _ := dataset.Ref(ops[0]) // N or nats:N
	if err := dataset.CheckName(name); err != nil {
		return cli.UsageError(err)
	}
	st, done, err := nf.Datasets(ctx, false)
	if err != nil {
		return err
	}
	defer done()
	var in dataset.Info
	if err := atomicfile.Write(out, func(w *bufio.Writer) error {
		var err error
		in, err = st.Get(ctx, name, w)
		return err
	}); err != nil {
		return nf.Redact(err)
	}
	fmt.Fprintf(stdout, "wrote %s%s to %s: %d bytes, %s\n", dataset.Scheme, name, out, in.Size, in.Digest)
	return nil
}

// dataRemove removes a data set.
func dataRemove(ctx context.Context, args []string, stdout io.Writer) error {
	ops, nf, err := dataFlags("rm", "N (--nats URL | --store DIR)", args, 1, stdout, nil)
	if err != nil {
		return err
	}
	name, _ := dataset.Ref(ops[0])
	if err := dataset.CheckName(name); err != nil {
		return cli.UsageError(err)
	}
	st, done, err := nf.Datasets(ctx, false)
	if err != nil {
		return err
	}
	defer done()
	if err := st.Delete(ctx, name); err != nil {
		return nf.Redact(err)
	}
	fmt.Fprintf(stdout, "removed %s%s\n", dataset.Scheme, name)
	return nil
}
