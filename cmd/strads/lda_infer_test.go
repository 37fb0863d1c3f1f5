package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strads-go/strads/apps/lda"
)

// readProportions reads the CSV of strads lda infer: the header, then a
// line per document, doc_id (1, 2, … in order) and K proportions that add
// up to 1.
func readProportions(t *testing.T, path string, k int) [][]float64 {
	t.Helper()
	lines := readLines(t, path)
	header := "doc_id"
	for i := range k {
		header += ",theta_" + strconv.Itoa(i)
	}
	if lines[0] != header {
		t.Fatalf("%s: header %q, want %q", path, lines[0], header)
	}
	var theta [][]float64
	for i, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) != k+1 || f[0] != strconv.Itoa(i+1) {
			t.Fatalf("%s:%d: %q: want doc_id %d and %d proportions", path, i+2, l, i+1, k)
		}
		row := make([]float64, k)
		var sum float64
		for j := range row {
			v, err := strconv.ParseFloat(f[j+1], 64)
			if err != nil || v <= 0 {
				t.Fatalf("%s:%d: θ %q", path, i+2, f[j+1])
			}
			row[j], sum = v, sum+v
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Fatalf("%s:%d: proportions add up to %v", path, i+2, sum)
		}
		theta = append(theta, row)
	}
	return theta
}

// readDocTopic reads the --doc-topic CSV of strads lda (doc_id,topic,
// count,theta of the non-zero counts) into every document's proportions
// θ_dk = (n_dk + α_k)/(N_d + Σα), the topics it does not list included.
func readDocTopic(t *testing.T, path string, docs int, alpha []float64) [][]float64 {
	t.Helper()
	counts := make([][]float64, docs)
	for i := range counts {
		counts[i] = make([]float64, len(alpha))
	}
	for i, l := range readLines(t, path)[1:] {
		f := strings.Split(l, ",")
		d, err1 := strconv.Atoi(f[0])
		k, err2 := strconv.Atoi(f[1])
		n, err3 := strconv.Atoi(f[2])
		if len(f) != 4 || err1 != nil || err2 != nil || err3 != nil || d < 1 || d > docs || k < 0 || k >= len(alpha) {
			t.Fatalf("%s:%d: %q", path, i+2, l)
		}
		counts[d-1][k] = float64(n)
	}
	var asum float64
	for _, a := range alpha {
		asum += a
	}
	for _, row := range counts {
		var nd float64
		for _, n := range row {
			nd += n
		}
		for k, a := range alpha {
			row[k] = (row[k] + a) / (nd + asum)
		}
	}
	return counts
}

// totalVariation returns the total variation distance ½ Σ_k |p_k − q_k|.
func totalVariation(p, q []float64) float64 {
	var d float64
	for k := range p {
		d += math.Abs(p[k] - q[k])
	}
	return d / 2
}

// TestLDAInfer trains a model with strads lda --model on a generated
// corpus of well separated topics (K = 5, β = 0.005 on 300 words), then
// folds the training documents back in with strads lda infer: the
// inferred proportions must be those of the training run's --doc-topic,
// θ_dk = (n_dk + α_k)/(N_d + Σα), within a mean total variation distance
// of 0.03 over the 300 documents. Measured with training seed 1 (a job is
// deterministic given its flags): mean 0.0060, median 0.0030, worst
// document 0.046; with seeds 2 to 5, means 0.0049 to 0.0082; two different
// documents' proportions are at a mean TV of 0.74. The training run's θ_d
// comes from one sample of the document's topics, the inferred one from a
// mean over 20 sweeps: they differ most in documents that mix topics.
// (Seed 6 lands in a local optimum, a topic split in two near copies,
// between which a document's one sample and its mean disagree: mean 0.058,
// which the bound would catch.) --threads does not change
// a byte of the output, stdout gets the same lines as --out, and the
// proportions of --text on the model's vocabulary are those of the same
// documents as docword.
func TestLDAInfer(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "gen")
	if code, _, stderr := runCLI(t, "gen", "lda", "--docs", "300", "--vocab", "300", "--topics", "5", "--doc-len", "100",
		"--beta", "0.005", "--seed", "3", "-o", prefix); code != 0 {
		t.Fatalf("gen lda: exit %d: %s", code, stderr)
	}
	// A vocabulary of letters ("w1" … of gen lda would be split into "w"
	// by --text): word i is i in base 26, a to z.
	dir := t.TempDir()
	docword, vocab := prefix+".docword.txt", filepath.Join(dir, "vocab.txt")
	var words strings.Builder
	for i := range 300 {
		words.WriteString(letters(i) + "\n")
	}
	os.WriteFile(vocab, []byte(words.String()), 0o644)
	model, dt := filepath.Join(dir, "model.json"), filepath.Join(dir, "dt.csv")
	if code, _, stderr := runCLI(t, "lda", "--docword", docword, "--vocab", vocab, "--topics", "5", "--iters", "80",
		"--workers", "2", "--optimize-burn-in", "20", "--report-every", "20", "--seed", "1", "--progress", "0",
		"--out", filepath.Join(dir, "topics.txt"), "--doc-topic", dt, "--model", model); code != 0 {
		t.Fatalf("lda: exit %d: %s", code, stderr)
	}
	m, err := lda.LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "theta.csv")
	code, stdout, stderr := runCLI(t, "lda", "infer", "--model", model, "--docword", docword, "--out", out, "--threads", "1")
	if code != 0 || !strings.Contains(stdout, "topic proportions of 300 documents") {
		t.Fatalf("infer: exit %d: %s%s", code, stdout, stderr)
	}
	inferred := readProportions(t, out, 5)
	trained := readDocTopic(t, dt, 300, m.Alpha)
	if len(inferred) != 300 {
		t.Fatalf("%d documents inferred, want 300", len(inferred))
	}
	dist := make([]float64, len(inferred))
	var sum, other float64
	for d := range inferred {
		dist[d] = totalVariation(inferred[d], trained[d])
		sum += dist[d]
		other += totalVariation(trained[d], trained[(d+150)%300])
	}
	mean := sum / 300
	slices.Sort(dist)
	t.Logf("TV between trained and inferred θ_d: mean %.4f, median %.4f, max %.4f; between two documents: mean %.3f", mean, dist[150], dist[299], other/300)
	if mean > 0.03 {
		t.Errorf("mean total variation %.4f between the trained and the inferred proportions, want ≤ 0.03", mean)
	}

	// The same with 3 threads, to stdout.
	code, stdout, stderr = runCLI(t, "lda", "infer", "--model", model, "--docword", docword, "--threads", "3")
	want, _ := os.ReadFile(out)
	if code != 0 || stdout != string(want) {
		t.Errorf("infer to stdout with 3 threads: exit %d, %d bytes, not the %d of --out with 1 thread: %s", code, len(stdout), len(want), stderr)
	}

	// The first 5 documents as text: the words of the vocabulary, each
	// as often as the docword file says; then the same proportions as
	// those documents' in docword (ReadText keeps the words in order of
	// the text, ReadDocword by word id: written so, they agree).
	docs, err := lda.ReadDocword(docword, m.Words)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, d := range docs[:5] {
		for i, w := range d {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(m.Vocab[w])
		}
		b.WriteString(" unknownword\n")
	}
	text, textOut := filepath.Join(dir, "new.txt"), filepath.Join(dir, "text-theta.csv")
	os.WriteFile(text, []byte(b.String()), 0o644)
	if code, stdout, stderr := runCLI(t, "lda", "infer", "--model", model, "--text", text, "--out", textOut); code != 0 {
		t.Fatalf("infer --text: exit %d: %s%s", code, stdout, stderr)
	}
	got := readLines(t, textOut)
	if wantLines := readLines(t, out)[:6]; !slices.Equal(got, wantLines) {
		t.Errorf("--text gave\n%s\nwant, as the docword's first documents\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
}

// TestLDAInferErrors checks that strads lda infer refuses bad usage and
// bad input with exit status 2 and one line naming the file (and line,
// where there is one), and writes nothing.
func TestLDAInferErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	m := &lda.Model{Topics: 2, Words: 3, Alpha: []float64{0.1, 0.2}, Beta: 0.01, TopicTotals: []int64{3, 1},
		WordTopic: []lda.WordTopicCount{{Word: 0, Topic: 0, Count: 2}, {Word: 1, Topic: 0, Count: 1}, {Word: 2, Topic: 1, Count: 1}}}
	var b bytes.Buffer
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	noVocab := write("novocab.json", b.String())
	m.Vocab = []string{"a", "b", "c"}
	b.Reset()
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	model := write("model.json", b.String())
	broken := write("broken.json", strings.Replace(b.String(), `"beta":0.01`, `"beta":"x"`, 1))
	pretty := write("pretty.json", "{\n  \"format\": \"strads-lda\",\n  \"version\": 1,\n  \"topics\": 2 2\n}\n")
	badTotals := write("totals.json", strings.Replace(b.String(), `"topic_totals":[3,1]`, `"topic_totals":[3,2]`, 1))
	good := write("docword.txt", "2\n3\n3\n1 1 2\n2 2 1\n2 3 1\n")
	wideW := write("wide.txt", "2\n4\n2\n1 1 2\n2 4 1\n")
	badLine := write("badline.txt", "2\n3\n2\n1 1 2\n2 x 1\n")
	text := write("text.txt", "a b c\n")
	out := filepath.Join(dir, "theta.csv")
	inputs := []string{"novocab.json", "model.json", "broken.json", "pretty.json", "totals.json", "docword.txt", "wide.txt", "badline.txt", "text.txt"}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no model", []string{"--docword", good}, "--model FILE is required"},
		{"no documents", []string{"--model", model}, "--docword FILE or --text FILE is required"},
		{"docword and text", []string{"--model", model, "--docword", good, "--text", text}, "exclude each other"},
		{"zero sweeps", []string{"--model", model, "--docword", good, "--sweeps", "0"}, "--sweeps must be >= 1"},
		{"zero threads", []string{"--model", model, "--docword", good, "--threads", "0"}, "--threads must be >= 1"},
		{"out is an input", []string{"--model", model, "--docword", good, "--out", good}, "would overwrite an input"},
		{"argument", []string{"--model", model, "--docword", good, "extra"}, `unexpected argument "extra"`},
		{"missing model", []string{"--model", filepath.Join(dir, "none.json"), "--docword", good}, "none.json: no such file"},
		{"model value of the wrong type", []string{"--model", broken, "--docword", good}, broken + ":1: json: cannot unmarshal"},
		{"model syntax", []string{"--model", pretty, "--docword", good}, pretty + ":4: invalid character '2'"},
		{"model counts", []string{"--model", badTotals, "--docword", good}, totalsMsg(badTotals)},
		{"W differs", []string{"--model", model, "--docword", wideW}, wideW + ":2: W = 4, but the model has W = 3"},
		{"bad docword line", []string{"--model", model, "--docword", badLine}, badLine + ":5:"},
		{"missing docword", []string{"--model", model, "--docword", filepath.Join(dir, "none.txt")}, "none.txt: no such file"},
		{"text without vocabulary", []string{"--model", noVocab, "--text", text}, "has no vocabulary"},
		{"missing text", []string{"--model", model, "--text", filepath.Join(dir, "none.txt")}, "none.txt: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"lda", "infer"}, tc.args...)
			if !slices.Contains(tc.args, "--out") {
				args = append(args, "--out", out)
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || !strings.HasPrefix(stderr, "strads lda infer: ") {
				t.Errorf("exit %d, error %q; want 2 and %q", code, stderr, tc.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 || stdout != "" {
				t.Errorf("error of %d lines, want one; stdout %q", n+1, stdout)
			}
			assertNoOutput(t, dir, inputs...)
		})
	}

	// The good inputs give the proportions, the text's as the docword's
	// first document.
	if code, stdout, stderr := runCLI(t, "lda", "infer", "--model", model, "--docword", good); code != 0 || !strings.HasPrefix(stdout, "doc_id,theta_0,theta_1\n1,") || strings.Count(stdout, "\n") != 3 {
		t.Errorf("infer: exit %d: %q %s", code, stdout, stderr)
	}
}

// totalsMsg is the error of a model file whose topic totals are wrong.
func totalsMsg(path string) string {
	return path + ": lda: topic 1: the word-topic counts add up to 1, Model.TopicTotals says 2"
}

// letters returns i in base 26 with the digits a to z.
func letters(i int) string {
	s := string(rune('a' + i%26))
	for i /= 26; i > 0; i /= 26 {
		s = string(rune('a'+i%26)) + s
	}
	return s
}
