package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/cli"
)

// generator writes a synthetic data set of an app: strads gen APP.
type generator struct {
	run     func(args []string, stdout, stderr io.Writer) error
	output  string // what -o names
	summary string
}

// generators are strads gen's apps.
var generators = map[string]generator{
	"lasso":  {genLasso, "FILE", "a sparse linear regression problem (LIBSVM) with a known sparse β"},
	"lda":    {genLDA, "PREFIX", "a corpus drawn from known topics (UCI bag of words, vocabulary, true topics)"},
	"logreg": {genLogreg, "FILE", "a sparse classification problem (LIBSVM), labels drawn from a logistic model"},
	"mf":     {genMF, "PREFIX", "a ratings set of low-rank users × items, split into train and test"},
}

// genUsage writes strads gen's usage, which lists its apps, to w.
func genUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: strads gen APP [flags] -o FILE|PREFIX\n\nwrites a reproducible synthetic data set for APP, one of:\n")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, name := range slices.Sorted(maps.Keys(generators)) {
		g := generators[name]
		fmt.Fprintf(tw, "  %s\t-o %s\t%s\n", name, g.output, g.summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nRun \"strads gen APP --help\" for the flags of an app.")
}

// runGen writes a synthetic data set for the app named by args[0]; with
// --help, or without an app, it writes the usage.
func runGen(_ context.Context, args []string, stdout, stderr io.Writer) error {
	names := strings.Join(slices.Sorted(maps.Keys(generators)), ", ")
	switch {
	case len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help"}, args[0]):
		genUsage(stdout)
		return flag.ErrHelp
	case len(args) == 0:
		genUsage(stderr)
		return cli.Usagef("no APP given: want one of %s", names)
	case generators[args[0]].run == nil:
		return cli.Usagef("want \"strads gen APP [flags] -o FILE\", APP one of %s", names)
	}
	return generators[args[0]].run(args[1:], stdout, stderr)
}

// defaultGenConfig returns the defaults of the flags of the Lasso
// generator's design, which the generators built on it share.
func defaultGenConfig() lasso.GenConfig {
	return lasso.GenConfig{Samples: 1000, Features: 10000, Density: 0.01, Corr: 0.8, TrueNNZ: 100, Noise: 0.1, Seed: 1}
}

// addGenFlags adds the flags of lasso.GenConfig to fs, with c's values as
// their defaults; noise explains --noise.
func addGenFlags(fs *flag.FlagSet, c *lasso.GenConfig, noise string) {
	fs.IntVar(&c.Samples, "samples", c.Samples, "number of samples (rows)")
	fs.IntVar(&c.Features, "features", c.Features, "number of features (columns)")
	fs.Float64Var(&c.Density, "density", c.Density, "fraction of non-zero entries")
	fs.IntVar(&c.CorrGroups, "corr-groups", c.CorrGroups, "number of groups of correlated features (0: independent features)")
	fs.Float64Var(&c.Corr, "corr", c.Corr, "correlation of the features within a group")
	fs.IntVar(&c.TrueNNZ, "true-nnz", c.TrueNNZ, "non-zeros of the true coefficient vector")
	fs.Float64Var(&c.Noise, "noise", c.Noise, noise)
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed: the same flags give the same file")
}
