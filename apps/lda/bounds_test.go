package lda

import (
	"errors"
	"strings"
	"testing"
)

// TestHeaderBounds checks that the numbers of a docword header that size
// allocations before any entry is read are bounded: D and W by maxDocs
// and maxWords, NNZ by the entries that the file's size can hold; and
// that ReadDocword holds at most maxInferTokens tokens, however small
// the file. Each is a *ParseError naming the file and the line.
func TestHeaderBounds(t *testing.T) {
	for _, tc := range []struct {
		name, docword string
		line          int
		want          string
	}{
		{"D", "2147483647\n3\n1\n1 1 1\n", 1, "D (the number of documents) = 2147483647 exceeds the limit of 16777216"},
		{"W", "2\n2147483647\n1\n1 1 1\n", 2, "W (the size of the vocabulary) = 2147483647 exceeds the limit of 16777216"},
		{"NNZ", "2\n3\n2147483647\n1 1 1\n", 3, "NNZ = 2147483647 entries, but the file's 21 bytes hold at most 3"},
		{"NNZ by one", "2\n3\n4\n1 1 1\n2 2 1\n", 3, "NNZ = 4 entries, but the file's 18 bytes hold at most 3"},
		{"tokens", "1\n3\n2\n1 1 100000000\n1 2 100000000\n", 5, "more than 134217728 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "docword.txt", tc.docword)
			_, err := ReadDocword(path, 3)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != path || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.want) {
				t.Errorf("error %v, want %s:%d: …%s…", err, path, tc.line, tc.want)
			}
		})
	}
	// At the limits, and for training (no bound on the tokens but the
	// counts'), the same file is good.
	path := writeFile(t, t.TempDir(), "docword.txt", "16777216\n3\n3\n1 1 1\n1 2 100000000\n16777216 3 100000000\n")
	c, err := openDocword(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.scan(); err != nil || st.Tokens != 200000001 || st.Docs != 1<<24 {
		t.Errorf("scan: %+v, %v", st, err)
	}
}

// TestModelBounds checks that a model file whose topics and words would
// make φ larger than maxPhi values, or whose words exceed maxWords, is
// refused with an error naming the file, before φ is built.
func TestModelBounds(t *testing.T) {
	for _, tc := range []struct{ topics, words, want string }{
		{"2", "2147483647", "Model.Words = 2147483647, want [1, 16777216]"},
		{"1048576", "16777216", "1048576 topics × 16777216 words"},
	} {
		text := `{"format":"strads-lda","version":1,"topics":` + tc.topics + `,"words":` + tc.words +
			`,"alpha":[1],"beta":0.1,"topic_totals":[0],"word_topic":{"word":[],"topic":[],"count":[]}}`
		path := writeFile(t, t.TempDir(), "model.json", text)
		_, err := LoadModel(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %s: …%s…", err, path, tc.want)
		}
	}
}
