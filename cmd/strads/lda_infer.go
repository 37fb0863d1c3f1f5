package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/strads-go/strads/apps/lda"
	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
)

// ldaInferSynopsis is the usage line of strads lda infer.
const ldaInferSynopsis = "strads lda infer --model FILE --docword FILE | --text FILE  [--out FILE] [--sweeps N] [--seed S] [--threads N]"

// runLDAInfer folds new documents into a trained LDA model (the JSON of
// strads lda --model) with its topics φ fixed, and writes their topic
// proportions, a line per document (lda.WriteProportions), to --out or
// stdout. The documents are a docword file on the model's vocabulary
// (its W) or raw text split as strads lda --text does, of which the words
// outside the model's vocabulary are dropped.
func runLDAInfer(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("lda infer", flag.ContinueOnError)
	model := fs.String("model", "", "trained model `file`: the JSON of strads lda --model")
	docword := fs.String("docword", "", "UCI docword `file` of the new documents, on the model's vocabulary: its W must be the model's, word ids as in the training docword file")
	text := fs.String("text", "", "instead of --docword: raw text `file`, one document a line, lower-cased and split on non-letters as strads lda --text does; words not in the model's vocabulary are dropped")
	out := fs.String("out", "", "write the proportions to `file` (default: stdout): CSV, the header doc_id,theta_0,…,theta_{K-1}, then a line per document: its id (1-based: the docword file's, or the line of --text) and θ_d0 … θ_d(K-1), which add up to 1")
	sweeps := fs.Int("sweeps", 40, "Gibbs sweeps over every document's tokens, φ fixed; θ is averaged over the last half")
	seed := fs.Uint64("seed", 1, "seed of the sampler (document i has its own stream): the same flags give the same proportions")
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "documents folded in at once; the proportions do not depend on it")
	if err := cli.Parse(fs, args, stdout, ldaInferSynopsis); err != nil {
		return err
	}
	switch {
	case *model == "":
		return cli.Usagef("--model FILE is required")
	case *docword == "" && *text == "":
		return cli.Usagef("--docword FILE or --text FILE is required")
	case *docword != "" && *text != "":
		return cli.Usagef("--docword and --text exclude each other")
	case *sweeps < 1:
		return cli.Usagef("--sweeps must be >= 1, got %d", *sweeps)
	case *threads < 1:
		return cli.Usagef("--threads must be >= 1, got %d", *threads)
	case *out != "" && (*out == *model || *out == *docword || *out == *text):
		return cli.Usagef("--out %s would overwrite an input", *out)
	}
	m, err := lda.LoadModel(*model)
	if err != nil {
		return cli.UsageError(err)
	}
	var docs [][]int32
	input := *docword
	if *docword != "" {
		docs, err = lda.ReadDocword(*docword, m.Words)
	} else {
		input = *text
		if m.Vocab == nil {
			return cli.Usagef("--text %s: the model %s has no vocabulary (it was trained on --docword without --vocab): give --docword", *text, *model)
		}
		docs, err = lda.ReadText(*text, m.Vocab)
	}
	if err != nil {
		return ldaInputError(err)
	}
	t0 := time.Now()
	theta, err := m.Infer(docs, lda.InferOptions{Sweeps: *sweeps, Seed: *seed, Threads: *threads})
	if err != nil {
		return cli.UsageError(fmt.Errorf("%s: %w", input, err))
	}
	elapsed := time.Since(t0)
	write := func(w *bufio.Writer) error { return lda.WriteProportions(w, theta) }
	if *out == "" {
		bw := bufio.NewWriter(stdout)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := atomicfile.Write(*out, write); err != nil {
		return err
	}
	var tokens int64
	empty := 0
	for _, d := range docs {
		tokens += int64(len(d))
		if len(d) == 0 {
			empty++
		}
	}
	fmt.Fprintf(stdout, "wrote %s: topic proportions of %d documents (%d tokens of the model's vocabulary, %d documents without any: the prior mean) over %d topics  time %.3fs  docs/s %.4g  tokens/s %.4g (%d sweeps, %d threads)\n",
		*out, len(docs), tokens, empty, m.Topics, elapsed.Seconds(), float64(len(docs))/elapsed.Seconds(), float64(tokens)/elapsed.Seconds(), *sweeps, *threads)
	return nil
}
