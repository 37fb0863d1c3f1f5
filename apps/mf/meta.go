package mf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/version"
)

// metaFormat is Meta.Format: what says a JSON file is an mf model's.
const metaFormat = "strads mf model"

// Meta describes a model that --out PREFIX wrote, in PREFIX.json beside
// its factor files, so that a tool (strads mf recommend and predict, or
// the user's own) can tell what the files hold and that they belong
// together: LoadSaved checks the factor files against it.
type Meta struct {
	// Format is "strads mf model"; Version the strads that wrote it.
	Format  string `json:"format"`
	Version string `json:"version"`
	// Rank is K, Biased whether PREFIX.bias.txt holds μ and the biases.
	Rank   int  `json:"rank"`
	Biased bool `json:"biased"`
	// Users and Items count the rows of PREFIX.W.txt and PREFIX.H.txt.
	Users int `json:"users"`
	Items int `json:"items"`
	// Ratings counts the ratings the model was fitted to, Mean is their
	// mean (μ).
	Ratings int     `json:"ratings"`
	Mean    float64 `json:"mean"`
	// Lambda, BiasLambda and Weighted are the regularization (Config);
	// Algo the algorithm.
	Lambda     float64 `json:"lambda"`
	BiasLambda float64 `json:"bias_lambda"`
	Weighted   bool    `json:"weighted"`
	Algo       string  `json:"algo"`
}

// MetaFile returns the name of the side file of the output prefix.
func MetaFile(prefix string) string { return prefix + ".json" }

// meta returns the Meta of the model m, fitted with cfg.
func (m *Model) meta(cfg Config) Meta {
	users := 0
	for _, ids := range m.Users {
		users += len(ids)
	}
	return Meta{
		Format: metaFormat, Version: version.String(),
		Rank: m.Rank, Biased: m.Biased, Users: users, Items: len(m.ItemIDs),
		Ratings: m.Train, Mean: m.Mean,
		Lambda: cfg.Lambda, BiasLambda: cfg.BiasLambda, Weighted: !cfg.Unweighted, Algo: cfg.Algo,
	}
}

// writeMeta writes the Meta of m as indented JSON.
func (m *Model) writeMeta(w io.Writer, cfg Config) error {
	b, err := json.MarshalIndent(m.meta(cfg), "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readMeta reads the side file of prefix; a missing one (a model written
// before it existed) is (nil, nil).
func readMeta(prefix string) (*Meta, error) {
	path := MetaFile(prefix)
	f, err := inputfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var meta Meta
	if err := json.NewDecoder(f).Decode(&meta); err != nil {
		return nil, &ParseError{File: path, Msg: fmt.Sprintf("not an mf model's JSON: %v", err)}
	}
	if meta.Format != metaFormat {
		return nil, &ParseError{File: path, Msg: fmt.Sprintf("format %q, want %q", meta.Format, metaFormat)}
	}
	return &meta, nil
}

// check reports the first way s differs from meta, as a *ParseError
// naming the side file: factor files of another model, or of another
// run, put beside it.
func (s *Saved) check(prefix string, meta *Meta) error {
	fail := func(format string, args ...any) error {
		return &ParseError{File: MetaFile(prefix), Msg: fmt.Sprintf(format, args...) + ": the files of the prefix are not one model's"}
	}
	switch {
	case meta.Rank != s.Rank:
		return fail("rank %d, but the factor files have %d values a row", meta.Rank, s.Rank)
	case meta.Users != len(s.Users):
		return fail("%d users, but %s has %d", meta.Users, prefix+".W.txt", len(s.Users))
	case meta.Items != len(s.Items):
		return fail("%d items, but %s has %d", meta.Items, prefix+".H.txt", len(s.Items))
	case meta.Biased != s.Biased:
		return fail("biased %t, but %s is %s", meta.Biased, prefix+".bias.txt", map[bool]string{true: "there", false: "missing"}[s.Biased])
	case meta.Biased && meta.Mean != s.Mean:
		return fail("mean %v, but %s has %v", meta.Mean, prefix+".bias.txt", s.Mean)
	}
	return nil
}
