package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/strads-go/strads/apps/linear"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
)

// runPredict applies a Lasso or logistic regression model file (--out of
// strads lasso or logreg) to a LIBSVM data file: one prediction per sample,
// in order, to --out or stdout.
func runPredict(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	model := fs.String("model", "", "model `file` written by strads lasso or logreg --out")
	data := fs.String("data", "", "LIBSVM `file` of the samples to predict (labels are read but not used)")
	out := fs.String("out", "", "write the predictions to `file` (default: stdout): a CSV \"prediction\" (Lasso) or \"label,probability\" (logreg: the predicted label as the training data wrote its classes, and P(y = +1 | x))")
	if err := cli.Parse(fs, args, stdout, "strads predict --model FILE --data FILE [--out FILE]"); err != nil {
		return err
	}
	switch {
	case *model == "":
		return cli.Usagef("--model FILE is required")
	case *data == "":
		return cli.Usagef("--data FILE is required")
	case *out != "" && (*out == *model || *out == *data):
		return cli.Usagef("--out %s would overwrite an input", *out)
	}
	m, err := linear.ReadFile(*model)
	if err != nil {
		return cli.UsageError(err)
	}
	if *out == "" {
		bw := bufio.NewWriter(stdout)
		if err := m.WritePredictions(bw, *data); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := atomicfile.Write(*out, func(w *bufio.Writer) error { return m.WritePredictions(w, *data) }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: predictions of the %s model (%d features, %d non-zero)\n", *out, m.App, m.Features, m.NNZ())
	return nil
}
