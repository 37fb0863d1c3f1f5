package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/strads-go/strads/apps/mf"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
)

// mfCommands are mf's commands on a saved model: strads mf recommend and
// strads mf predict.
func mfCommands() []cli.Command {
	return []cli.Command{
		{Name: "recommend", Synopsis: "--model PREFIX --user U [--top N] [--train FILE] [--out FILE]", Summary: "the top N items for a user by predicted rating, from a saved model", Run: runMFRecommend},
		{Name: "predict", Synopsis: "--model PREFIX --pairs FILE [--out FILE]", Summary: "predicted ratings of (user, item) pairs, from a saved model", Run: runMFPredict},
	}
}

// modelFlag is --model of mf's commands.
const modelFlag = "model `PREFIX` that strads mf --out wrote: PREFIX.W.txt, PREFIX.H.txt and (unless --no-bias) PREFIX.bias.txt"

// loadMF reads the saved model of prefix; bad or missing files are usage
// errors naming the file (and line).
func loadMF(prefix string) (*mf.Saved, error) {
	m, err := mf.LoadSaved(prefix)
	if err != nil {
		return nil, mfInputError(err)
	}
	return m, nil
}

// writeOut writes by write to the file out (temp file and rename) or, if
// out is empty, to stdout.
func writeOut(out string, stdout io.Writer, write func(w io.Writer) error) error {
	if out == "" {
		bw := bufio.NewWriter(stdout)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	return atomicfile.Write(out, func(w *bufio.Writer) error { return write(w) })
}

// runMFRecommend prints the top items of a user: lines "item prediction",
// best first.
func runMFRecommend(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mf recommend", flag.ContinueOnError)
	prefix := fs.String("model", "", modelFlag)
	user := fs.String("user", "", "the user `id`")
	top := fs.Int("top", 10, "recommend `n` items")
	train := fs.String("train", "", "ratings `file` (the training file, say) whose items the user rated are left out: the model itself does not know which items a user has seen, so without it every item is a candidate")
	out := fs.String("out", "", "write lines \"item prediction\" to `file` (default: stdout)")
	if err := cli.Parse(fs, args, stdout, "strads mf recommend "+mfCommands()[0].Synopsis); err != nil {
		return err
	}
	switch {
	case *prefix == "":
		return cli.Usagef("--model PREFIX is required")
	case *user == "":
		return cli.Usagef("--user U is required")
	case *top < 1:
		return cli.Usagef("--top must be at least 1, got %d", *top)
	}
	u, err := strconv.ParseInt(*user, 10, 64)
	if err != nil {
		return cli.Usagef("--user %q: want an integer id", *user)
	}
	m, err := loadMF(*prefix)
	if err != nil {
		return err
	}
	var seen map[int64]bool
	if *train != "" {
		if seen, err = mf.RatedBy(*train, u); err != nil {
			return mfInputError(err)
		}
	}
	recs, err := m.Recommend(u, *top, seen)
	if errors.Is(err, mf.ErrUnknownUser) {
		return cli.Usagef("--user %d is not in %s.W.txt", u, *prefix)
	}
	if err != nil {
		return err
	}
	if len(recs) < *top {
		fmt.Fprintf(stderr, "mf recommend: only %d items the user has not rated\n", len(recs))
	}
	err = writeOut(*out, stdout, func(w io.Writer) error {
		for _, r := range recs {
			if _, err := fmt.Fprintf(w, "%d %s\n", r.Item, strconv.FormatFloat(r.Score, 'g', -1, 64)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && *out != "" {
		fmt.Fprintf(stdout, "wrote %s: the top %d items for user %d\n", *out, len(recs), u)
	}
	return err
}

// runMFPredict writes the predictions of a file of pairs: lines "user item
// prediction", as strads mf --predict does during training.
func runMFPredict(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mf predict", flag.ContinueOnError)
	prefix := fs.String("model", "", modelFlag)
	pairs := fs.String("pairs", "", "`file` of lines \"user item\" (a ratings file is read as pairs)")
	out := fs.String("out", "", "write lines \"user item prediction\" to `file` (default: stdout)")
	if err := cli.Parse(fs, args, stdout, "strads mf predict "+mfCommands()[1].Synopsis); err != nil {
		return err
	}
	switch {
	case *prefix == "":
		return cli.Usagef("--model PREFIX is required")
	case *pairs == "":
		return cli.Usagef("--pairs FILE is required")
	case *out != "" && *out == *pairs:
		return cli.Usagef("--out %s would overwrite --pairs", *out)
	}
	m, err := loadMF(*prefix)
	if err != nil {
		return err
	}
	var unseen int
	err = writeOut(*out, stdout, func(w io.Writer) error {
		var err error
		unseen, err = m.Predict(*pairs, w)
		return err
	})
	if err != nil {
		return mfInputError(err)
	}
	if unseen > 0 {
		fmt.Fprintf(stderr, "mf predict: %d pairs of %s have a user or item not in the model: predicted by μ = %.6g plus the bias of the id that is known\n", unseen, *pairs, m.Mean)
	}
	if *out != "" {
		fmt.Fprintf(stdout, "wrote %s: predictions of the rank-%d model %s\n", *out, m.Rank, *prefix)
	}
	return nil
}
