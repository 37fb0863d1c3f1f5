package lda

import (
	"os"
	"path/filepath"
	"testing"
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
		path := filepath.Join(t.TempDir(), "t.txt")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
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
