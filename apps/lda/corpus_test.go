package lda

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestScanBadInput checks that every kind of malformed input is refused
// with a *ParseError that names the file and the line.
func TestScanBadInput(t *testing.T) {
	const vocab = "a\nb\nc\n"
	cases := []struct {
		name, docword, vocab string
		file                 string // "docword" or "vocab"
		line                 int
		want                 string
	}{
		{"empty file", "", vocab, "docword", 1, "missing header line 1"},
		{"short header", "2\n3\n", vocab, "docword", 3, "missing header line 3"},
		{"bad header", "2\nthree\n1\n1 1 1\n", vocab, "docword", 2, "header line 2"},
		{"zero D", "0\n3\n1\n1 1 1\n", vocab, "docword", 1, "header line 1"},
		{"NNZ too small", "2\n3\n1\n1 1 1\n2 2 1\n", vocab, "docword", 5, "more than NNZ = 1"},
		{"NNZ too large", "2\n3\n3\n1 1 1\n2 2 1\n", vocab, "docword", 3, "NNZ = 3 but the file has 2"},
		{"doc id > D", "2\n3\n2\n1 1 1\n3 2 1\n", vocab, "docword", 5, "docID 3 out of range"},
		{"word id > W", "2\n3\n2\n1 1 1\n2 4 1\n", vocab, "docword", 5, "wordID 4 out of range"},
		{"word id 0", "2\n3\n2\n1 0 1\n2 2 1\n", vocab, "docword", 4, "wordID 0 out of range"},
		{"zero count", "2\n3\n2\n1 1 1\n2 2 0\n", vocab, "docword", 5, "count 0"},
		{"negative count", "2\n3\n2\n1 1 -2\n2 2 1\n", vocab, "docword", 4, "count -2"},
		{"CRLF", "2\r\n3\r\n2\r\n1 1 1\r\n2 2 1\r\n", vocab, "docword", 1, "CRLF"},
		{"CRLF entry", "2\n3\n2\n1 1 1\r\n2 2 1\n", vocab, "docword", 4, "CRLF"},
		{"two fields", "2\n3\n2\n1 1\n2 2 1\n", vocab, "docword", 4, "docID wordID count"},
		{"not a number", "2\n3\n2\n1 x 1\n2 2 1\n", vocab, "docword", 4, `wordID "x"`},
		{"unsorted docs", "2\n3\n2\n2 1 1\n1 2 1\n", vocab, "docword", 5, "sorted by document"},
		{"duplicate word", "2\n3\n2\n1 1 1\n1 1 2\n", vocab, "docword", 5, "twice"},
		{"blank line", "2\n3\n2\n1 1 1\n\n2 2 1\n", vocab, "docword", 5, "docID wordID count"},
		{"short vocab", "2\n3\n2\n1 1 1\n2 2 1\n", "a\nb\n", "vocab", 3, "missing word 3"},
		{"long vocab", "2\n3\n2\n1 1 1\n2 2 1\n", "a\nb\nc\nd\n", "vocab", 4, "more than W = 3"},
		{"blank vocab line", "2\n3\n2\n1 1 1\n2 2 1\n", "a\n\nc\n", "vocab", 2, "blank line"},
		{"CRLF vocab", "2\n3\n2\n1 1 1\n2 2 1\n", "a\r\nb\r\nc\r\n", "vocab", 1, "CRLF"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := map[string]string{
				"docword": writeFile(t, dir, "docword.txt", tc.docword),
				"vocab":   writeFile(t, dir, "vocab.txt", tc.vocab),
			}
			_, err := Scan(Config{Docword: paths["docword"], Vocab: paths["vocab"], Topics: 2, Alpha: 1, Beta: 1, Iters: 1, ReportEvery: 1, Workers: 1, MHSteps: 1})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *ParseError", err)
			}
			if pe.File != paths[tc.file] || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.want) {
				t.Errorf("error %q, want %s:%d: …%s…", err, paths[tc.file], tc.line, tc.want)
			}
		})
	}
}

// TestText checks the text corpus: lower-cased words split on non-letters,
// stop words and rare words dropped, the vocabulary sorted.
func TestText(t *testing.T) {
	dir := t.TempDir()
	text := writeFile(t, dir, "text.txt", "The cat sat; the CAT ran.\r\nA dog, the dog!\n\n42 cats\nÉté cat-dog été")
	stop := writeFile(t, dir, "stop.txt", "the\na\n")
	for _, tc := range []struct {
		minDF int
		words []string
		docs  map[int][]string // doc → its tokens' words, sorted
	}{
		{1, []string{"cat", "cats", "dog", "ran", "sat", "été"}, map[int][]string{
			0: {"cat", "cat", "ran", "sat"}, 1: {"dog", "dog"}, 3: {"cats"}, 4: {"cat", "dog", "été", "été"},
		}},
		{2, []string{"cat", "dog"}, map[int][]string{0: {"cat", "cat"}, 1: {"dog", "dog"}, 4: {"cat", "dog"}}},
	} {
		cfg := Config{Text: text, StopWords: stop, MinDocFreq: tc.minDF}
		c, err := openCorpus(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.text.words, tc.words) || c.docs != 5 || c.words != len(tc.words) {
			t.Errorf("min-df %d: vocabulary %q of %d documents, want %q of 5", tc.minDF, c.text.words, c.docs, tc.words)
		}
		got := map[int][]string{}
		if err := c.read(0, c.docs, true, func(doc int, words, counts []int32) error {
			for j, w := range words {
				for range counts[j] {
					got[doc] = append(got[doc], c.text.words[w])
				}
			}
			slices.Sort(got[doc])
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for d, want := range tc.docs {
			if !slices.Equal(got[d], want) {
				t.Errorf("min-df %d: document %d has %q, want %q", tc.minDF, d, got[d], want)
			}
		}
		if len(got) != len(tc.docs) {
			t.Errorf("min-df %d: %d non-empty documents, want %d", tc.minDF, len(got), len(tc.docs))
		}
	}
}

// TestShardReadsItsDocuments checks that a worker's shard holds exactly
// its range of documents.
func TestShardReadsItsDocuments(t *testing.T) {
	f := genCorpus(t, GenConfig{Docs: 37, Vocab: 50, Topics: 3, DocLen: 10, Alpha: 0.5, Beta: 0.1, Seed: 2})
	cfg := f.config(3, 1)
	var total int64
	next := int32(0)
	for k := range 3 {
		w, err := NewWorker(cfg, k, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range w.sh.docIDs {
			if d < next {
				t.Errorf("shard %d: document %d again or out of order", k, d)
			}
			next = d + 1
		}
		total += w.sh.tokens
	}
	if total != f.model.Tokens {
		t.Errorf("shards hold %d tokens, the corpus %d", total, f.model.Tokens)
	}
}

// TestTextLongLine checks that a document line longer than maxTextLine is
// refused as it is read, naming the file and line (issue 28: a 1 GiB line
// took 3.8 GB before the process died), and that one of the limit is
// taken.
func TestTextLongLine(t *testing.T) {
	defer func(old int) { maxTextLine = old }(maxTextLine)
	maxTextLine = 3 << 20 // three of the reader's 1 MiB buffers
	dir := t.TempDir()
	doc := strings.Repeat("word ", maxTextLine/5)
	ok := writeFile(t, dir, "ok.txt", "first doc\n"+doc+"\nlast doc\n")
	long := writeFile(t, dir, "long.txt", "first doc\n"+doc+"more words\nlast doc\n")
	if _, err := openCorpus(&Config{Text: ok}); err != nil {
		t.Errorf("a line of the limit: %v", err)
	}
	_, err := openCorpus(&Config{Text: long})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != long || pe.Line != 2 || !strings.Contains(pe.Msg, "longer than 3 MiB") {
		t.Errorf("a line past the limit: %v, want a ParseError of %s:2", err, long)
	}
}
