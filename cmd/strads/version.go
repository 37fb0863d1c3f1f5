package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/version"
)

// runVersion prints the strads version and the revision it was built from.
func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := cli.Parse(fs, args, stdout, "strads version"); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "strads %s\n", version.String())
	return nil
}
