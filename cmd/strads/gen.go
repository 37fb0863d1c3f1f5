package main

import (
	"context"
	"flag"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/cli"
)

// generators write a synthetic data set of each app: strads gen APP.
var generators = map[string]func(args []string, stdout, stderr io.Writer) error{
	"lasso":  genLasso,
	"lda":    genLDA,
	"logreg": genLogreg,
	"mf":     genMF,
}

// runGen writes a synthetic data set for the app named by args[0].
func runGen(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || generators[args[0]] == nil {
		names := slices.Sorted(maps.Keys(generators))
		return cli.Usagef("want \"strads gen APP [flags] -o FILE\", APP one of %s", strings.Join(names, ", "))
	}
	return generators[args[0]](args[1:], stdout, stderr)
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
