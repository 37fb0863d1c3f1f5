package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

// genLDAData writes a small generated corpus and returns its prefix.
func genLDAData(t *testing.T) string {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "gen")
	if code, _, stderr := runCLI(t, "gen", "lda", "--docs", "200", "--vocab", "300", "--topics", "5", "--doc-len", "40",
		"--test-docs", "30", "--seed", "2", "-o", prefix); code != 0 {
		t.Fatalf("gen lda: exit %d: %s", code, stderr)
	}
	return prefix
}

// TestLDACommand runs strads lda on both schedules and checks its outputs
// and its lines.
func TestLDACommand(t *testing.T) {
	prefix := genLDAData(t)
	for _, schedule := range []string{"rotation", "unscheduled"} {
		t.Run(schedule, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "topics.txt")
			code, stdout, stderr := runCLI(t, "lda", "--docword", prefix+".docword.txt", "--vocab", prefix+".vocab.txt",
				"--test-docword", prefix+".test.docword.txt", "--topics", "5", "--iters", "10", "--report-every", "5",
				"--workers", "2", "--schedule", schedule, "--top-words", "4", "--out", out,
				"--word-topic", filepath.Join(dir, "wt.csv"), "--doc-topic", filepath.Join(dir, "dt.csv"),
				"--metrics", filepath.Join(dir, "metrics.csv"), "--progress", "1ms")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, want := range []string{"log-likelihood/token", "tokens/s", "held-out perplexity"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			if !strings.Contains(stderr, "iter 10/10") {
				t.Errorf("no progress line of the last iteration (iter 10/10):\n%s", stderr)
			}
			metrics, err := os.ReadFile(filepath.Join(dir, "metrics.csv"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(metrics)), "\n")
			// The runtime's CSV, lda's figures as its app metrics: a row
			// per report (iterations 0, 5 and 10).
			if len(lines) != 4 || !strings.HasPrefix(lines[0], "time_s,round,objective,") || !strings.HasSuffix(lines[0], ",iter,tokens_per_s,sample_tokens_per_s_core,alpha_sum,alpha_min,alpha_max,beta,test_perplexity") {
				t.Errorf("metrics:\n%s", metrics)
			}
			topics, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(string(topics), "\ntopic ") != 5 {
				t.Errorf("topics:\n%s", topics)
			}
			assertNoOutput(t, dir, "topics.txt", "wt.csv", "dt.csv", "metrics.csv")
		})
	}
}

// TestLDAText runs strads lda on raw text with a stop-word list.
func TestLDAText(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 60 {
		if i%2 == 0 {
			b.WriteString("The cat chased the mouse; cats and mice, the cat again.\n")
		} else {
			b.WriteString("Stocks fell, the market fell: traders sold stocks.\n")
		}
	}
	text := filepath.Join(dir, "text.txt")
	stop := filepath.Join(dir, "stop.txt")
	os.WriteFile(text, []byte(b.String()), 0o644)
	os.WriteFile(stop, []byte("the and\nagain\n"), 0o644)
	out := filepath.Join(dir, "topics.txt")
	code, _, stderr := runCLI(t, "lda", "--text", text, "--stop-words", stop, "--min-df", "2", "--topics", "2",
		"--iters", "30", "--workers", "2", "--progress", "0", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	topics, _ := os.ReadFile(out)
	// Two topics, one of cats and one of stocks, whichever comes first.
	var cat, stock int
	for _, l := range strings.Split(string(topics), "\n") {
		if !strings.HasPrefix(l, "topic ") {
			continue
		}
		if strings.Contains(l, " the ") {
			t.Errorf("stop word in %q", l)
		}
		if strings.Contains(l, "cat") && !strings.Contains(l, "stocks") {
			cat++
		}
		if strings.Contains(l, "stocks") && !strings.Contains(l, "cat") {
			stock++
		}
	}
	if cat != 1 || stock != 1 {
		t.Errorf("topics do not separate cats from stocks:\n%s", topics)
	}
}

// TestLDABadInput checks that malformed input fails before the job with
// exit status 2, one line naming file:line, and no output.
func TestLDABadInput(t *testing.T) {
	const vocab = "a\nb\nc\n"
	cases := []struct {
		name, docword, vocab, want string
	}{
		{"NNZ too small", "2\n3\n1\n1 1 1\n2 2 1\n", vocab, "docword.txt:5:"},
		{"NNZ too large", "2\n3\n3\n1 1 1\n2 2 1\n", vocab, "docword.txt:3:"},
		{"D too small", "1\n3\n2\n1 1 1\n2 2 1\n", vocab, "docword.txt:5:"},
		{"word id > W", "2\n3\n2\n1 1 1\n2 7 1\n", vocab, "docword.txt:5:"},
		{"zero count", "2\n3\n2\n1 1 0\n2 2 1\n", vocab, "docword.txt:4:"},
		{"negative count", "2\n3\n2\n1 1 1\n2 2 -1\n", vocab, "docword.txt:5:"},
		{"CRLF", "2\r\n3\r\n2\r\n1 1 1\r\n2 2 1\r\n", vocab, "docword.txt:1:"},
		{"short vocab", "2\n3\n2\n1 1 1\n2 2 1\n", "a\nb\n", "vocab.txt:3:"},
		// 2·10⁹ tokens of 2 entries: state per token would exhaust the memory.
		{"count past the entries", "2\n3\n2\n1 1 1\n2 2 2000000000\n", vocab, "docword.txt:5: count 2000000000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			docword := filepath.Join(dir, "docword.txt")
			vocabPath := filepath.Join(dir, "vocab.txt")
			os.WriteFile(docword, []byte(tc.docword), 0o644)
			os.WriteFile(vocabPath, []byte(tc.vocab), 0o644)
			code, _, stderr := runCLI(t, "lda", "--docword", docword, "--vocab", vocabPath, "--topics", "2", "--iters", "2",
				"--out", filepath.Join(dir, "topics.txt"), "--metrics", filepath.Join(dir, "metrics.csv"),
				"--doc-topic", filepath.Join(dir, "dt.csv"), "--progress", "0")
			if code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			if !strings.Contains(stderr, filepath.Join(dir, tc.want)) {
				t.Errorf("error %q does not name %s", stderr, tc.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n != 0 {
				t.Errorf("error has %d lines, want one: %q", n+1, stderr)
			}
			assertNoOutput(t, dir, "docword.txt", "vocab.txt")
		})
	}
}

// TestLDABadFlags checks the usage errors of strads lda.
func TestLDABadFlags(t *testing.T) {
	prefix := genLDAData(t)
	data := []string{"--docword", prefix + ".docword.txt", "--progress", "0"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--depth", "2"}, "--depth 2"},
		{[]string{"--schedulers", "2"}, "one scheduler"},
		{[]string{"--max-rounds", "5"}, "--iters"},
		{[]string{"--schedule", "random"}, "--schedule"},
		{[]string{"--topics", "0"}, "--topics"},
		{[]string{"--alpha", "0"}, "--alpha"},
		{[]string{"--doc-topic", "/tmp/dt.csv"}, "give --out too"},
		{[]string{"--text", prefix + ".vocab.txt"}, "exclude each other"},
		{[]string{"--docword", "/nonexistent/docword.txt"}, "/nonexistent/docword.txt"},
		{[]string{"--test-docword", prefix + ".vocab.txt"}, ".vocab.txt:"},
		{[]string{"--out", "/nonexistent/dir/topics.txt"}, "does not exist"},
	}
	for _, tc := range cases {
		code, _, stderr := runCLI(t, append(append([]string{"lda"}, data...), tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if code, _, stderr := runCLI(t, "gen", "lda", "--docs", "0", "-o", filepath.Join(t.TempDir(), "x")); code != 2 || !strings.Contains(stderr, "--docs") {
		t.Errorf("gen lda --docs 0: exit %d, %q", code, stderr)
	}
}

// TestLDASeparateProcesses runs the roles as separate processes over a
// NATS server and checks that they find the same topics as the all-in-one
// job.
func TestLDASeparateProcesses(t *testing.T) {
	prefix := genLDAData(t)
	dir := t.TempDir()
	common := []string{"--docword", prefix + ".docword.txt", "--vocab", prefix + ".vocab.txt", "--topics", "5",
		"--iters", "8", "--workers", "2", "--seed", "3", "--progress", "0", "--job", "lda-proc"}
	allInOne := filepath.Join(dir, "all-in-one.txt")
	if code, _, stderr := runCLI(t, append([]string{"lda", "--out", allInOne}, common...)...); code != 0 {
		t.Fatalf("all-in-one: exit %d: %s", code, stderr)
	}
	url := testhelper.ServerURL(t)
	distributed := filepath.Join(dir, "distributed.txt")
	roles := append([]string{"--app", "lda", "--nats", url}, common...)
	procs := []*process{
		startProcess(t, "worker 1", append([]string{"worker"}, roles...)...),
		startProcess(t, "worker 2", append([]string{"worker"}, roles...)...),
		startProcess(t, "coordinator", append([]string{"coordinator", "--out", distributed}, roles...)...),
		startProcess(t, "scheduler", append([]string{"scheduler"}, roles...)...),
	}
	waitAll(t, procs...)
	sameFiles(t, distributed, allInOne)
}
