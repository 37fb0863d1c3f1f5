package lda

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// FuzzReadText checks the text reader on any bytes: no panic, a document
// per line, and every word id one of the vocabulary's.
func FuzzReadText(f *testing.F) {
	vocab := []string{"the", "cat", "sat", "straße", "naïve"}
	for _, seed := range []string{
		"The cat sat.\nthe  CAT\n",
		"Straße NAÏVE naïve\r\n",
		"\xff\xfe cat \x00 sat\n",
		"\n\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := testhelper.WriteFile(t, "t.txt", string(data))
		docs, err := ReadText(path, vocab)
		if err != nil {
			return
		}
		for d, doc := range docs {
			for _, w := range doc {
				if w < 0 || int(w) >= len(vocab) {
					t.Fatalf("document %d: word id %d, vocabulary of %d", d, w, len(vocab))
				}
			}
		}
	})
}

// FuzzReadDocword checks the docword reader on any bytes: no panic, no
// allocation that the header announces beyond what the file holds
// (maxDocs, maxWords, NNZ within the file's size), D documents of word
// ids under W, each word as often as its count says.
func FuzzReadDocword(f *testing.F) {
	for _, seed := range []string{
		"3\n4\n4\n1 1 2\n1 3 1\n3 2 1\n3 4 5\n",
		"1\n1\n1\n1 1 1\n",
		"2\n2\n1\n2 2 3\n",
		"2147483647\n2147483647\n2147483647\n1 1 1\n",
		"16777216\n16777216\n1\n16777216 16777216 1\n",
		"1\n1\n2\n1 1 1\n1 1 1\n",
		"3\n4\n2\n3 1 1\n1 1 1\n",
		"1\n1\n1\n1 1 2147483647\n",
		"1\r\n1\n1\n1 1 1\n",
		"",
	} {
		f.Add([]byte(seed), 4)
	}
	f.Fuzz(func(t *testing.T, data []byte, words int) {
		path := testhelper.WriteFile(t, "docword.txt", string(data))
		c, err := openDocword(path)
		if err != nil {
			return
		}
		if c.docs > maxDocs || c.words > maxWords || int64(c.nnz) > int64(len(data))/minEntry {
			t.Fatalf("header D = %d, W = %d, NNZ = %d accepted in a file of %d bytes", c.docs, c.words, c.nnz, len(data))
		}
		if words != c.words {
			words = c.words // otherwise ReadDocword refuses it at once
		}
		docs, err := ReadDocword(path, words)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != path || pe.Line < 1 {
				t.Fatalf("error %v is not a *ParseError at a line of %s", err, path)
			}
			return
		}
		if len(docs) != c.docs {
			t.Fatalf("%d documents, the header says %d", len(docs), c.docs)
		}
		tokens := 0
		for d, doc := range docs {
			for _, w := range doc {
				if w < 0 || int(w) >= words {
					t.Fatalf("document %d: word id %d, W = %d", d, w, words)
				}
			}
			tokens += len(doc)
		}
		if tokens == 0 && c.nnz > 0 {
			t.Fatalf("NNZ = %d entries, no token", c.nnz)
		}
	})
}

// FuzzLoadModel checks the model reader on any bytes: no panic, and a
// model it accepts is consistent (the checks of Model.check), with φ of
// at most maxPhi values; φ is built and sums to 1 by topic when small.
func FuzzLoadModel(f *testing.F) {
	good := &Model{Topics: 2, Words: 3, Alpha: []float64{0.1, 0.2}, Beta: 0.01, TopicTotals: []int64{3, 1},
		WordTopic: []WordTopicCount{{0, 0, 2}, {1, 0, 1}, {2, 1, 1}}, Vocab: []string{"a", "b", "c"}}
	var b bytes.Buffer
	if err := good.Write(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	for _, seed := range []string{
		strings.Replace(b.String(), `"words":3`, `"words":2147483647`, 1),
		strings.Replace(strings.Replace(b.String(), `"words":3`, `"words":16777216`, 1), `,"vocab":["a","b","c"]`, "", 1),
		strings.Replace(b.String(), `"topics":2`, `"topics":1048576`, 1),
		strings.Replace(b.String(), `"count":[2,1,1]`, `"count":[2,1,-1]`, 1),
		`{"format":"strads-lda","version":1,"topics":1,"words":1,"alpha":[1],"beta":1,"topic_totals":[0],"word_topic":{}}`,
		`{"format":"strads-lda","version":1,"topics":1,"words":1,"alpha":[1e999]}`,
		`{"format":"strads-lda"`,
		`[]`,
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := testhelper.WriteFile(t, "model.json", string(data))
		m, err := LoadModel(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v does not name %s", err, path)
			}
			return
		}
		if m.Topics < 1 || m.Topics > maxTopics || m.Words < 1 || m.Words > maxWords || m.Topics*m.Words > maxPhi {
			t.Fatalf("a model of %d topics and %d words accepted", m.Topics, m.Words)
		}
		if m.Topics*m.Words > 1<<16 {
			return
		}
		for k := range m.Topics {
			sum := 0.0
			for w := range m.Words {
				p := m.Phi(k, w)
				if !(p >= 0 && p <= 1) {
					t.Fatalf("φ_%d,%d = %v", k, w, p)
				}
				sum += p
			}
			if math.Abs(sum-1) > 1e-6 {
				t.Fatalf("φ of topic %d sums to %v", k, sum)
			}
		}
	})
}
