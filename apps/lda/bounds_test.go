package lda

import (
	"errors"
	"fmt"
	"runtime"
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
		{"tokens", "1\n3\n2\n1 1 100000000\n1 2 100000000\n", 4, "count 100000000: the corpus has more than 16777216 tokens, the most its NNZ = 2 entries justify"},
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
	// At the limits (2^24 documents, 2^24 tokens of 3 entries), the same
	// file is good.
	path := writeFile(t, t.TempDir(), "docword.txt", "16777216\n3\n3\n1 1 1\n1 2 8388607\n16777216 3 8388608\n")
	c, err := openDocword(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.scan(); err != nil || st.Tokens != 1<<24 || st.Docs != 1<<24 {
		t.Errorf("scan: %+v, %v", st, err)
	}
}

// TestTokenBound checks that the tokens of a docword corpus are bounded by
// its entries, max(2^24, 256 × NNZ), for training as for inference: a
// count beyond is a *ParseError naming the file and the line where the
// tokens pass the bound, before anything is sized by them, and the
// counts within are good.
func TestTokenBound(t *testing.T) {
	many := func(n int, last string) string { // NNZ = n+1: n entries of 1 token, then last
		var b strings.Builder
		fmt.Fprintf(&b, "1\n%d\n%d\n", n+1, n+1)
		for w := range n {
			fmt.Fprintf(&b, "1 %d 1\n", w+1)
		}
		fmt.Fprintf(&b, "1 %d %s\n", n+1, last)
		return b.String()
	}
	for _, tc := range []struct {
		name, docword string
		line          int // 0: good
		want          string
	}{
		{"two billion", "2\n3\n3\n1 1 1\n1 2 1\n2 3 2000000000\n", 6, "count 2000000000: the corpus has more than 16777216 tokens, the most its NNZ = 3 entries justify"},
		{"floor", "2\n3\n3\n1 1 1\n1 2 1\n2 3 16777214\n", 0, ""},
		{"floor by one", "2\n3\n3\n1 1 1\n1 2 1\n2 3 16777215\n", 6, "more than 16777216 tokens"},
		// 2^17 entries justify 2^25 tokens.
		{"per entry", many(1<<17-1, "33423361"), 0, ""},
		{"per entry by one", many(1<<17-1, "33423362"), 1<<17 + 3, "more than 33554432 tokens, the most its NNZ = 131072 entries justify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "docword.txt", tc.docword)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c, err := openDocword(path)
			if err == nil {
				_, err = c.scan()
			}
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("scan allocated %d MB", grew>>20)
			}
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != path || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.want) {
				t.Errorf("error %v, want %s:%d: …%s…", err, path, tc.line, tc.want)
			}
			if strings.HasPrefix(tc.docword, "2\n3\n") {
				// Inference reads the same way (a model of 3 words).
				if _, err := ReadDocword(path, 3); !errors.As(err, &pe) || pe.Line != tc.line {
					t.Errorf("ReadDocword: error %v, want one at line %d", err, tc.line)
				}
			}
		})
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
