package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/atomicfile"
)

// runGen writes a synthetic data set.
func runGen(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "lasso" {
		return usagef("want \"strads gen lasso [flags] -o FILE\"")
	}
	fs := flag.NewFlagSet("gen lasso", flag.ContinueOnError)
	var c lasso.GenConfig
	fs.IntVar(&c.Samples, "samples", 1000, "number of samples (rows)")
	fs.IntVar(&c.Features, "features", 10000, "number of features (columns)")
	fs.Float64Var(&c.Density, "density", 0.01, "fraction of non-zero entries")
	fs.IntVar(&c.CorrGroups, "corr-groups", 0, "number of groups of correlated features (0: independent features)")
	fs.Float64Var(&c.Corr, "corr", 0.8, "correlation of the features within a group")
	fs.IntVar(&c.TrueNNZ, "true-nnz", 100, "non-zeros of the true coefficient vector")
	fs.Float64Var(&c.Noise, "noise", 0.1, "standard deviation of the noise added to y")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed: the same flags give the same file")
	out := fs.String("o", "", "output `file` (LIBSVM format)")
	if err := parse(fs, args[1:], stdout, "strads gen lasso [flags] -o FILE"); err != nil {
		return err
	}
	if *out == "" {
		return usagef("-o FILE is required")
	}
	if err := c.Validate(); err != nil {
		return usageError{err}
	}
	if err := atomicfile.Write(*out, func(w *bufio.Writer) error {
		_, err := lasso.Generate(w, c)
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d samples, %d features\n", *out, c.Samples, c.Features)
	return nil
}
