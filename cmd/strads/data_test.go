package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/dataset"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
)

// putData stores file as the data set name with strads data put and the
// server flags given.
func putData(t *testing.T, file, name string, server ...string) {
	t.Helper()
	args := append([]string{"data", "put", file, "--name", name}, server...)
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 || !strings.Contains(stdout, "as nats:"+name+":") {
		t.Fatalf("data put %s: exit %d: %s%s", file, code, stdout, stderr)
	}
}

// sameFiles fails t unless the files at got and want hold the same bytes,
// not none, and returns those of want.
func sameFiles(t *testing.T, got, want string) []byte {
	t.Helper()
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) || len(w) == 0 {
		t.Errorf("%s (%d bytes) differs from %s (%d bytes)", got, len(g), want, len(w))
	}
	return w
}

// TestDataAllInOne stores a LIBSVM file, an mf ratings set and an LDA
// corpus in the object store of an embedded server's store directory
// (strads data put --store), runs all-in-one jobs that read them as
// nats:NAME from the same --store, and checks that their models are the
// local files' bit for bit (LDA's: its word-topic and document-topic
// files, since its summary names the test file), that what the command
// prints names the data set, and that the local copies are gone after the
// job.
func TestDataAllInOne(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the roles' copies go
	store := filepath.Join(t.TempDir(), "store")
	dir := t.TempDir()
	data := genData(t)
	train, test := genMFData(t)
	putData(t, data, "lasso.svm", "--store", store)
	putData(t, train, "train", "--store", store)
	putData(t, test, "test", "--store", store)
	if code, stdout, stderr := runCLI(t, "data", "ls", "--store", store); code != 0 || strings.Count(stdout, "nats:") != 3 {
		t.Errorf("data ls: exit %d: %s%s", code, stdout, stderr)
	}

	for _, layout := range []string{"rows", "cols"} {
		t.Run("lasso/"+layout, func(t *testing.T) {
			common := []string{"lasso", "--workers", "2", "--lambda-ratio", "0.05", "--seed", "7", "--max-rounds", "40",
				"--tol", "0", "--progress", "0", "--layout", layout, "--test"}
			local, remote := filepath.Join(dir, layout+"-local.csv"), filepath.Join(dir, layout+"-nats.csv")
			if code, _, stderr := runCLI(t, append(common, data, "--data", data, "--out", local)...); code != 0 {
				t.Fatalf("local: exit %d: %s", code, stderr)
			}
			if code, _, stderr := runCLI(t, append(common, "nats:lasso.svm", "--data", "nats:lasso.svm", "--store", store, "--out", remote)...); code != 0 {
				t.Fatalf("nats: exit %d: %s", code, stderr)
			}
			sameFiles(t, remote, local)
		})
	}
	t.Run("mf", func(t *testing.T) {
		common := []string{"mf", "--rank", "3", "--workers", "2", "--iters", "3", "--progress", "0", "--seed", "5"}
		local, remote := filepath.Join(dir, "mf-local"), filepath.Join(dir, "mf-nats")
		if code, _, stderr := runCLI(t, append(common, "--train", train, "--test", test, "--out", local)...); code != 0 {
			t.Fatalf("local: exit %d: %s", code, stderr)
		}
		code, stdout, stderr := runCLI(t, append(common, "--train", "nats:train", "--test", "nats:test", "--store", store, "--out", remote)...)
		if code != 0 || !strings.Contains(stdout, "test RMSE") {
			t.Fatalf("nats: exit %d: %s%s", code, stdout, stderr)
		}
		for _, suffix := range []string{".W.txt", ".H.txt"} {
			sameFiles(t, remote+suffix, local+suffix)
		}
	})
	t.Run("lda", func(t *testing.T) {
		prefix := filepath.Join(t.TempDir(), "corpus")
		if code, _, stderr := runCLI(t, "gen", "lda", "--docs", "200", "--vocab", "150", "--topics", "4", "--doc-len", "40",
			"--test-docs", "20", "--seed", "3", "-o", prefix); code != 0 {
			t.Fatalf("gen lda: exit %d: %s", code, stderr)
		}
		for _, f := range []string{"docword", "test.docword", "vocab"} {
			putData(t, prefix+"."+f+".txt", "lda-"+f, "--store", store)
		}
		common := []string{"lda", "--topics", "4", "--workers", "2", "--iters", "4", "--progress", "0", "--seed", "3"}
		run := func(tag string, files ...string) string {
			out := filepath.Join(dir, "lda-"+tag)
			args := append(common, "--docword", files[0], "--test-docword", files[1], "--vocab", files[2],
				"--out", out, "--word-topic", out+".wt.csv", "--doc-topic", out+".dt.csv")
			if tag == "nats" {
				args = append(args, "--store", store)
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", tag, code, stderr)
			}
			if tag == "nats" && !strings.Contains(stdout, "tokens of nats:lda-test.docword (") {
				t.Errorf("the output does not name the data set: %s", stdout)
			}
			return out
		}
		local := run("local", prefix+".docword.txt", prefix+".test.docword.txt", prefix+".vocab.txt")
		remote := run("nats", "nats:lda-docword", "nats:lda-test.docword", "nats:lda-vocab")
		for _, suffix := range []string{".wt.csv", ".dt.csv"} {
			sameFiles(t, remote+suffix, local+suffix)
		}
	})
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the copies are left in TMPDIR: %v", left)
	}
}

// TestDataSeparateProcesses runs a job whose roles are separate OS
// processes that read their data as nats:NAME from the server they join
// through, with no file of the data given to any, and checks the model
// against the all-in-one run on the local file: of a data set stored in
// small blocks, each worker of the row layout fetches only the blocks of
// its rows (its log says how many bytes, fewer than the whole's); of one
// stored whole, without an index, as strads stored them before, each
// fetches the whole.
func TestDataSeparateProcesses(t *testing.T) {
	url := testhelper.StartServer(t, natsserver.Options{StoreDir: t.TempDir()}).ClientURL()
	data := genData(t)
	content, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks of about a tenth of the file: a worker of two fetches about
	// half of it and a block or two more.
	if code, stdout, stderr := runCLI(t, "data", "put", data, "--name", "procs.svm", "--block-size", fmt.Sprint(len(content)/10), "--nats", url); code != 0 {
		t.Fatalf("data put: exit %d: %s%s", code, stdout, stderr)
	}
	putWhole(t, url, "whole.svm", content)
	logreg := filepath.Join(t.TempDir(), "logreg.svm")
	if code, _, stderr := runCLI(t, "gen", "logreg", "--samples", "200", "--features", "100", "--seed", "3", "-o", logreg); code != 0 {
		t.Fatalf("gen logreg: exit %d: %s", code, stderr)
	}
	lrContent, err := os.ReadFile(logreg)
	if err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, "data", "put", logreg, "--name", "logreg.svm", "--block-size", fmt.Sprint(len(lrContent)/10), "--nats", url); code != 0 {
		t.Fatalf("data put: exit %d: %s%s", code, stdout, stderr)
	}
	ldaPrefix := filepath.Join(t.TempDir(), "lda")
	if code, _, stderr := runCLI(t, "gen", "lda", "--docs", "300", "--vocab", "300", "--topics", "5", "--doc-len", "40", "-o", ldaPrefix); code != 0 {
		t.Fatalf("gen lda: exit %d: %s", code, stderr)
	}
	docword := ldaPrefix + ".docword.txt"
	dwContent, err := os.ReadFile(docword)
	if err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, "data", "put", docword, "--name", "lda.txt", "--block-size", fmt.Sprint(len(dwContent)/20), "--nats", url); code != 0 {
		t.Fatalf("data put: exit %d: %s%s", code, stdout, stderr)
	}
	dir := t.TempDir()
	lassoFlags := []string{"--lambda-ratio", "0.05", "--seed", "7", "--max-rounds", "200", "--layout", "rows", "--depth", "2"}
	for _, tc := range []struct {
		name, app, flag, file, set string
		size                       int  // bytes of the file
		parts                      bool // the workers fetch parts
		flags                      []string
	}{
		{"lasso in parts", "lasso", "data", data, "procs.svm", len(content), true, lassoFlags},
		{"lasso stored whole", "lasso", "data", data, "whole.svm", len(content), false, lassoFlags},
		{"lasso columns", "lasso", "data", data, "procs.svm", len(content), false, []string{"--lambda-ratio", "0.05", "--seed", "7", "--max-rounds", "20", "--layout", "cols"}},
		{"logreg in parts", "logreg", "data", logreg, "logreg.svm", len(lrContent), true, []string{"--lambda-ratio", "0.05", "--max-rounds", "50", "--layout", "rows"}},
		{"lda in parts", "lda", "docword", docword, "lda.txt", len(dwContent), true, []string{"--topics", "5", "--iters", "4", "--seed", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			common := append([]string{"--workers", "2", "--tol", "0", "--progress", "0"}, tc.flags...)
			outs := func(kind string) []string {
				o := []string{"--out", filepath.Join(dir, tc.name+"-"+kind+".out")}
				if tc.app == "lda" {
					o = append(o, "--doc-topic", filepath.Join(dir, tc.name+"-"+kind+".dt"))
				}
				return o
			}
			if code, _, stderr := runCLI(t, append(append([]string{tc.app, "--" + tc.flag, tc.file}, outs("local")...), common...)...); code != 0 {
				t.Fatalf("all-in-one: exit %d: %s", code, stderr)
			}
			job := strings.ReplaceAll(tc.name, " ", "-")
			roles := append([]string{"--app", tc.app, "--nats", url, "--job", job, "--" + tc.flag, "nats:" + tc.set}, common...)
			workers := []*process{
				startProcess(t, "worker 1", append([]string{"worker", "--verbose"}, roles...)...),
				startProcess(t, "worker 2", append([]string{"worker", "--verbose"}, roles...)...),
			}
			procs := append(workers,
				startProcess(t, "coordinator", append(append([]string{"coordinator"}, outs("nats")...), roles...)...),
				startProcess(t, "scheduler", append([]string{"scheduler"}, roles...)...),
			)
			waitAll(t, procs...)
			l, r := outs("local"), outs("nats")
			for i := 1; i < len(l); i += 2 {
				sameFiles(t, r[i], l[i])
			}
			size := int64(tc.size)
			for _, w := range workers {
				fetched, whole := fetchedOf(w.stderr.String())
				switch {
				case !tc.parts && whole && tc.set == "whole.svm":
					if !strings.Contains(w.stderr.String(), "stored without an index") {
						t.Errorf("%s: its log does not say that the data set has no index: %s", w.name, w.stderr.String())
					}
				case !tc.parts:
					if fetched != size {
						t.Errorf("%s fetched %d bytes of %d, want the whole: %s", w.name, fetched, size, w.stderr.String())
					}
				case fetched <= 0 || fetched > size*3/4:
					// Half, and a block or three: the header's, and those
					// at the ends of its part.
					t.Errorf("%s fetched %d bytes of %d, want about half: %s", w.name, fetched, size, w.stderr.String())
				}
			}
		})
	}
}

// fetchedOf returns the bytes that a worker's log (--verbose) says it
// fetched of a data set read in parts, and whether it fetched one whole
// instead.
func fetchedOf(log string) (fetched int64, whole bool) {
	if i := strings.Index(log, "fetched="); i >= 0 {
		fmt.Sscan(log[i+len("fetched="):], &fetched)
		return fetched, false
	}
	return 0, strings.Contains(log, `msg="fetched a data set"`)
}

// putWhole stores content as the data set name the way strads stored them
// before indexes: one object, whole.
func putWhole(t *testing.T, url, name string, content []byte) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	obs, err := js.ObjectStore(ctx, dataset.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(ctx, name, content); err != nil {
		t.Fatal(err)
	}
}

// TestDataErrors checks that a data set that is not there, a bad name, a
// server without JetStream and bad data in a data set are errors that say
// so, with exit status 2, at once.
func TestDataErrors(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	bad := testhelper.WriteFile(t, "bad.svm", "1 1:1\n1 2:x\n")
	putData(t, bad, "bad.svm", "--store", store)
	plain := testhelper.ServerURL(t) // no JetStream
	missingStore := filepath.Join(t.TempDir(), "none")
	lasso := []string{"lasso", "--workers", "2", "--lambda-ratio", "0.1", "--progress", "0"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing data set", append(lasso, "--data", "nats:nope", "--store", store), []string{"no such data set nats:nope", "strads data ls"}},
		{"bad name", append(lasso, "--data", "nats:a/b", "--store", store), []string{"--data", `bad data set name "a/b"`}},
		{"no server", append(lasso, "--data", "nats:bad.svm"), []string{"--data nats:bad.svm", "--nats URL", "--store DIR"}},
		{"store of nothing", append(lasso, "--data", "nats:bad.svm", "--store", missingStore), []string{"--store " + missingStore, "no such directory"}},
		{"no JetStream", append(lasso, "--data", "nats:bad.svm", "--nats", plain), []string{"no JetStream", "--store DIR"}},
		{"no bucket", []string{"data", "ls", "--store", t.TempDir()}, []string{"stores no data sets"}},
		{"bad data", append(lasso, "--data", "nats:bad.svm", "--store", store), []string{"nats:bad.svm:2:"}},
		{"store and nats", append(lasso, "--data", "x", "--store", store, "--nats", plain), []string{"--store: only for a whole job"}},
		{"store on a role", []string{"worker", "--app", "lasso", "--data", "x", "--nats", plain, "--store", store}, []string{"--store: only for a whole job"}},
		{"rm missing", []string{"data", "rm", "nope", "--store", store}, []string{"no such data set nats:nope"}},
		{"get missing", []string{"data", "get", "nope", "-o", filepath.Join(t.TempDir(), "x"), "--store", store}, []string{"no such data set nats:nope"}},
		{"put missing file", []string{"data", "put", filepath.Join(t.TempDir(), "x"), "--store", store}, []string{"no such file"}},
		{"put without server", []string{"data", "put", bad}, []string{"--nats URL", "--store DIR"}},
		{"put bad name", []string{"data", "put", bad, "--name", ".x", "--store", store}, []string{"bad data set name"}},
		{"put bad block size", []string{"data", "put", bad, "--block-size", "0", "--store", store}, []string{"--block-size must be in [1, "}},
		{"data without a verb", []string{"data"}, []string{"put, ls, get or rm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, _, stderr := runCLI(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// TestDataCommands checks put, ls, get and rm against a server of --nats.
func TestDataCommands(t *testing.T) {
	url := testhelper.StartServer(t, natsserver.Options{StoreDir: t.TempDir()}).ClientURL()
	data := genData(t)
	putData(t, data, "d1", "--nats", url)
	// The default name is the file's.
	if code, stdout, stderr := runCLI(t, "data", "put", "--nats", url, data); code != 0 || !strings.Contains(stdout, "nats:data.svm") {
		t.Fatalf("put: exit %d: %s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, "data", "ls", "--nats", url)
	if code != 0 || !strings.Contains(stdout, "nats:d1 ") || !strings.Contains(stdout, "nats:data.svm ") || !strings.Contains(stdout, "SHA-256=") {
		t.Errorf("ls: exit %d: %s%s", code, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "back.svm")
	if code, _, stderr := runCLI(t, "data", "get", "nats:d1", "-o", out, "--nats", url); code != 0 {
		t.Fatalf("get: exit %d: %s", code, stderr)
	}
	sameFiles(t, out, data)
	if code, _, stderr := runCLI(t, "data", "rm", "d1", "--nats", url); code != 0 {
		t.Fatalf("rm: exit %d: %s", code, stderr)
	}
	if _, stdout, _ := runCLI(t, "data", "ls", "--nats", url); strings.Contains(stdout, "nats:d1 ") {
		t.Errorf("ls after rm: %s", stdout)
	}
}

// TestDataCredentials checks strads data and a job's data sets against a
// server that takes only a user with a password: refused without them,
// with exit status 1 and a hint; taken with them in the URL, which no
// output shows.
func TestDataCredentials(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "nats.conf")
	text := fmt.Sprintf("authorization { user: strads, password: s3cret }\nlisten: 127.0.0.1:-1\njetstream { store_dir: %q }\nlog_file: %q\n",
		filepath.Join(dir, "store"), filepath.Join(dir, "nats.log"))
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testhelper.StartServer(t, natsserver.Options{ConfigFile: config, ConfigAddr: true})
	url := "nats://127.0.0.1:" + port(t, srv.ClientURL())
	good := strings.Replace(url, "nats://", "nats://strads:s3cret@", 1)
	bad := strings.Replace(url, "nats://", "nats://strads:wrong@", 1)
	data := genData(t)
	code, _, stderr := runCLI(t, "data", "put", data, "--nats", url)
	if code != 1 || !strings.Contains(stderr, "Authorization Violation") || !strings.Contains(stderr, "refused this role's credentials") {
		t.Errorf("put without credentials: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "data", "ls", "--nats", bad)
	if code != 1 || strings.Contains(stderr, "wrong") {
		t.Errorf("ls with a wrong password: exit %d, want 1 and the password hidden: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "data", "put", data, "--name", "secure", "--nats", good)
	if code != 0 || strings.Contains(stdout+stderr, "s3cret") {
		t.Fatalf("put with credentials: exit %d: %s%s", code, stdout, stderr)
	}
	out := filepath.Join(dir, "model.csv")
	code, stdout, stderr = runCLI(t, "lasso", "--data", "nats:secure", "--nats", good, "--workers", "2", "--lambda-ratio", "0.05",
		"--progress", "0", "--verbose", "--out", out)
	if code != 0 || strings.Contains(stdout+stderr, "s3cret") || !strings.Contains(stderr, "fetched a data set") {
		t.Fatalf("all-in-one on --nats: exit %d: %s%s", code, stdout, stderr)
	}
	local := filepath.Join(dir, "local.csv")
	if code, _, stderr := runCLI(t, "lasso", "--data", data, "--workers", "2", "--lambda-ratio", "0.05", "--progress", "0", "--out", local); code != 0 {
		t.Fatalf("local: exit %d: %s", code, stderr)
	}
	sameFiles(t, out, local)
	code, _, stderr = runCLI(t, "lasso", "--data", "nats:secure", "--nats", url, "--workers", "2", "--lambda-ratio", "0.05", "--progress", "0")
	if code != 1 || !strings.Contains(stderr, "--data nats:secure") || !strings.Contains(stderr, "Authorization Violation") {
		t.Errorf("a job without credentials: exit %d: %s", code, stderr)
	}
}
