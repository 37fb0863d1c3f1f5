// Command checkpoints measures what checkpoints cost (issue 12): whole jobs
// of the built strads command, 2 workers, default flags, without
// checkpoints and with --checkpoint-every N, run side by side (the runs of
// every variant interleaved), and the time to --resume against a fresh
// start.
//
// For every run it records the whole process's wall time, the rounds (the
// final line), the checkpoints begun and committed, each one's time from
// its first piece stored to its commit, the size of the last (its
// manifest's bytes) and the SHA-256 of every model file. A whole job's
// coordinator logs nothing (job.Run gives it no logger), so the
// checkpoints are counted by watching the object store: every job listens
// on a TCP port (--nats-listen 127.0.0.1:0, every variant, the baseline
// too; the nodes still connect in-process), and an observer subscribes to
// the object store's metadata subjects ($O.<bucket>.M.>) as soon as the
// command prints the port. A piece "coordinator" stored in the bucket of a
// round (strads-ckpt-<job>-r<round>) is a
// checkpoint begun; an object "manifest" stored is a commit. Once the job
// is over, the manifest is read from the store (an embedded server started
// on the job's --store).
//
// Usage, from the repository root:
//
//	go build -o /tmp/strads-bench ./cmd/strads
//	nice -n 10 go run ./bench/checkpoints --bin /tmp/strads-bench --data /tmp/ckb --out bench/checkpoints/results
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/bench/machine"
	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/natsserver"
)

// app is one job measured: how its data are made and its command.
type app struct {
	name string
	gen  []string // strads gen's arguments, "-o" and the output last
	out  string   // the --out flag's value: a file or a prefix
	args []string // the app's flags, without --out
}

func apps(data string) []app {
	p := func(s string) string { return filepath.Join(data, s) }
	return []app{
		{"lasso", []string{"gen", "lasso", "--samples", "5000", "--features", "50000", "--density", "0.018", "--true-nnz", "500", "--noise", "0.5", "-o", p("lasso.svm")},
			"lasso.txt", []string{"lasso", "--data", p("lasso.svm"), "--lambda-ratio", "0.01"}},
		{"lasso-rows", []string{"gen", "lasso", "--samples", "3000", "--features", "3000", "--density", "0.02", "-o", p("lasso-rows.svm")},
			"lasso-rows.txt", []string{"lasso", "--data", p("lasso-rows.svm"), "--lambda-ratio", "0.05", "--layout", "rows"}},
		{"logreg", []string{"gen", "logreg", "--samples", "5000", "--features", "20000", "--density", "0.01", "--true-nnz", "200", "-o", p("logreg.svm")},
			"logreg.txt", []string{"logreg", "--data", p("logreg.svm"), "--lambda-ratio", "0.01"}},
		{"lda", []string{"gen", "lda", "-o", p("lda")},
			"lda.txt", []string{"lda", "--docword", p("lda.docword.txt")}},
		{"mf", []string{"gen", "mf", "-o", p("mf")},
			"mf", []string{"mf", "--train", p("mf.train.txt"), "--test", p("mf.test.txt")}},
	}
}

// event is an object store's metadata message seen by the observer.
type event struct {
	t       time.Time
	name    string
	deleted bool
	size    int64
}

// run is one process's record.
type run struct {
	App, Variant string
	Run          int
	Every        uint64
	Resume       bool
	Wall         time.Duration
	CPU          time.Duration // user + system time of the process
	Rounds       int
	Begun        int             // checkpoints begun (a coordinator piece stored)
	Committed    int             // manifests stored
	FirstSeen    uint64          // the round of the first checkpoint the observer saw
	CommitTimes  []time.Duration // first piece stored → commit, per checkpoint committed
	LastRound    uint64          // the last manifest's round
	Bytes        int64           // its pieces' bytes
	Pieces       int
	Resumed      uint64 // a resume's checkpoint round
	Model        string // SHA-256 of the model files, concatenated in name order
	Err          string
}

var (
	roundsRE = regexp.MustCompile(`\brounds (\d+)\b`)
	listenRE = regexp.MustCompile(`embedded nats-server listening on (\S+)`)
)

func main() {
	bin := flag.String("bin", "/tmp/strads-bench", "the strads binary")
	data := flag.String("data", "/tmp/ckb", "directory of the data sets (generated there if missing) and the runs' stores and models")
	out := flag.String("out", "bench/checkpoints/results", "directory of the results")
	runs := flag.Int("runs", 3, "runs of every variant")
	everyFlag := flag.String("every", "1,10,100", "checkpoint cadences, rounds")
	appsFlag := flag.String("apps", "lasso,lasso-rows,logreg,lda,mf", "apps to measure")
	resumeEvery := flag.Uint64("resume-every", 10, "the cadence whose run's store --resume continues from (1 for an app with fewer rounds)")
	flag.Parse()

	var everies []uint64
	for _, s := range strings.Split(*everyFlag, ",") {
		n, err := strconv.ParseUint(s, 10, 64)
		check(err)
		everies = append(everies, n)
	}
	check(os.MkdirAll(*out, 0o755))
	check(os.MkdirAll(*data, 0o755))
	want := strings.Split(*appsFlag, ",")
	var as []app
	for _, a := range apps(*data) {
		if slices.Contains(want, a.name) {
			as = append(as, a)
		}
	}
	for _, a := range as {
		target := a.gen[len(a.gen)-1]
		if a.name == "lda" || a.name == "mf" {
			target += map[string]string{"lda": ".docword.txt", "mf": ".train.txt"}[a.name]
		}
		if _, err := os.Stat(target); err != nil {
			fmt.Fprintln(os.Stderr, "generating", target)
			cmd := exec.Command(*bin, a.gen...)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			check(cmd.Run())
		}
	}
	start := time.Now()
	header := fmt.Sprintf("started %s UTC; machine %s, %d CPUs; load at start %s; bin %s\n",
		start.UTC().Format(time.RFC3339), machine.CPUModel(), numCPU(), machine.LoadAverage(), *bin)
	fmt.Print(header)
	var all []run
	for r := 1; r <= *runs; r++ {
		for _, a := range as {
			variants := append([]uint64{0}, everies...)
			for _, every := range variants {
				rec := measure(*bin, *data, a, r, every, false)
				all = append(all, rec)
				log(rec)
				if every == *resumeEvery || (a.name == "lasso" && every == 1) {
					res := measure(*bin, *data, a, r, every, true)
					res.Resumed = rec.LastRound
					all = append(all, res)
					log(res)
				}
			}
		}
		fmt.Printf("run %d done, load %s, %s\n", r, machine.LoadAverage(), time.Since(start).Round(time.Second))
	}
	footer := fmt.Sprintf("ended %s UTC, load at end %s, %s in all\n", time.Now().UTC().Format(time.RFC3339), machine.LoadAverage(), time.Since(start).Round(time.Second))
	fmt.Print(footer)
	b, err := json.MarshalIndent(all, "", " ")
	check(err)
	check(os.WriteFile(filepath.Join(*out, "runs.json"), b, 0o644))
	check(os.WriteFile(filepath.Join(*out, "summary.md"), []byte(header+footer+"\n"+summary(all, as, everies)), 0o644))
	fmt.Print(summary(all, as, everies))
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkpoints:", err)
		os.Exit(1)
	}
}

func log(r run) {
	fmt.Printf("%-10s %-9s run %d  wall %6.2fs  cpu %6.2fs  rounds %6d  begun %5d  committed %5d  last %6d  bytes %9d  resumed %d  model %.12s %s\n",
		r.App, r.Variant, r.Run, r.Wall.Seconds(), r.CPU.Seconds(), r.Rounds, r.Begun, r.Committed, r.LastRound, r.Bytes, r.Resumed, r.Model, r.Err)
}

// measure runs app a once: without checkpoints (every 0), with
// --checkpoint-every every on a new store, or, resume set, with --resume
// on the store the run with every left.
func measure(bin, data string, a app, r int, every uint64, resume bool) run {
	rec := run{App: a.name, Run: r, Every: every, Resume: resume, Variant: "none"}
	if every > 0 {
		rec.Variant = "every " + strconv.FormatUint(every, 10)
	}
	if resume {
		rec.Variant = "resume " + strconv.FormatUint(every, 10)
	}
	jobName := "ckb-" + a.name
	store := filepath.Join(data, "store-"+a.name)
	models := filepath.Join(data, "models", fmt.Sprintf("%s-%s-%d", a.name, strings.ReplaceAll(rec.Variant, " ", ""), r))
	check(os.RemoveAll(models))
	check(os.MkdirAll(models, 0o755))
	args := append(slices.Clone(a.args), "--workers", "2", "--progress", "0", "--job", jobName,
		"--nats-listen", "127.0.0.1:0", "--out", filepath.Join(models, a.out))
	if every > 0 {
		if !resume {
			check(os.RemoveAll(store))
		}
		args = append(args, "--store", store, "--checkpoint-every", strconv.FormatUint(every, 10))
	}
	if resume {
		args = append(args, "--resume")
	}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = cmd.Stdout
	var (
		mu     sync.Mutex
		events []event
		nc     *nats.Conn
		text   strings.Builder
	)
	t0 := time.Now()
	check(cmd.Start())
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		text.WriteString(line + "\n")
		if m := listenRE.FindStringSubmatch(line); m != nil && every > 0 && nc == nil {
			c, err := nats.Connect(m[1], nats.Name("checkpoints-observer"))
			if err != nil {
				rec.Err += "observer: " + err.Error() + "; "
				continue
			}
			nc = c
			// The manifests are in bucket strads-ckpt-<job>, the pieces of
			// round C in strads-ckpt-<job>-rC: a piece is seen as
			// "<round>/<piece>".
			_, err = nc.Subscribe("$O.*.M.>", func(msg *nats.Msg) {
				var info struct {
					Name    string `json:"name"`
					Size    int64  `json:"size"`
					Deleted bool   `json:"deleted"`
				}
				if json.Unmarshal(msg.Data, &info) != nil {
					return
				}
				bucket := strings.Split(msg.Subject, ".")[1]
				switch r, ok := strings.CutPrefix(bucket, "strads-ckpt-"+jobName+"-r"); {
				case ok:
					info.Name = r + "/" + info.Name
				case bucket != "strads-ckpt-"+jobName:
					return
				}
				mu.Lock()
				events = append(events, event{time.Now(), info.Name, info.Deleted, info.Size})
				mu.Unlock()
			})
			if err == nil {
				err = nc.Flush()
			}
			if err != nil {
				rec.Err += "observer: " + err.Error() + "; "
			}
		}
	}
	err = cmd.Wait()
	rec.Wall = time.Since(t0)
	if cmd.ProcessState != nil {
		rec.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if nc != nil {
		nc.Close()
	}
	if err != nil {
		rec.Err += fmt.Sprintf("exit: %v: %s", err, lastLines(text.String(), 3))
	}
	if m := roundsRE.FindAllStringSubmatch(text.String(), -1); m != nil {
		rec.Rounds, _ = strconv.Atoi(m[len(m)-1][1])
	}
	rec.Model = digest(models)
	check(os.WriteFile(models+".log", []byte(text.String()), 0o644))
	if every == 0 {
		return rec
	}
	mu.Lock()
	analyze(&rec, events)
	mu.Unlock()
	readManifest(&rec, store, jobName)
	return rec
}

// analyze counts the checkpoints begun and committed from the observer's
// events, and each one's time from its first piece to its commit.
func analyze(rec *run, events []event) {
	first := map[uint64]time.Time{} // round → first piece stored
	complete := map[uint64]bool{}
	var pending []uint64 // rounds begun, not yet committed, in order
	for _, e := range events {
		if e.deleted {
			continue
		}
		if e.name == "manifest" {
			rec.Committed++
			// The commit is of the oldest checkpoint begun whose pieces
			// were seen before it (commits are in order; a skipped or
			// abandoned one is never committed, so take the newest
			// begun before this manifest).
			if len(pending) > 0 {
				r := pending[len(pending)-1]
				rec.CommitTimes = append(rec.CommitTimes, e.t.Sub(first[r]))
				pending = pending[:0]
			}
			continue
		}
		rs, piece, ok := strings.Cut(e.name, "/")
		if !ok {
			continue
		}
		round, err := strconv.ParseUint(rs, 10, 64)
		if err != nil {
			continue
		}
		if _, ok := first[round]; !ok {
			first[round] = e.t
			pending = append(pending, round)
		}
		if piece == checkpoint.CoordinatorPiece && !complete[round] {
			complete[round] = true
			rec.Begun++
			if rec.FirstSeen == 0 {
				rec.FirstSeen = round
			}
		}
	}
}

// readManifest reads the last checkpoint's manifest from the job's store.
func readManifest(rec *run, store, job string) {
	srv, err := natsserver.Start(natsserver.Options{Port: -1, StoreDir: store})
	if err != nil {
		rec.Err += "store: " + err.Error() + "; "
		return
	}
	defer srv.Stop()
	nc, err := srv.ConnectInProcess("checkpoints-reader")
	if err != nil {
		rec.Err += "store: " + err.Error() + "; "
		return
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := checkpoint.Open(ctx, nc, job, false)
	if err != nil {
		rec.Err += "store: " + err.Error() + "; "
		return
	}
	m, err := s.Latest(ctx)
	if err != nil {
		return // none committed
	}
	rec.LastRound, rec.Bytes, rec.Pieces = m.Round, m.Bytes, len(m.Pieces)
}

// digest returns the SHA-256 of the files of dir, in name order.
func digest(dir string) string {
	es, err := os.ReadDir(dir)
	if err != nil {
		return "error: " + err.Error()
	}
	h := sha256.New()
	for _, e := range es {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return "error: " + err.Error()
		}
		fmt.Fprintf(h, "%s\x00", e.Name())
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "error: " + err.Error()
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}

func median(ds []float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// summary is the table of medians, by app and variant.
func summary(all []run, as []app, everies []uint64) string {
	var b strings.Builder
	fmt.Fprintln(&b, "| app | variant | rounds | wall (s), median (runs) | vs none | CPU (s), median | vs none | checkpoints begun / committed | skipped (rounds/N − begun) | last checkpoint (bytes, pieces) | first piece → commit, median (ms) | model = none's |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, a := range as {
		base, baseCPU := 0.0, 0.0
		var baseModel string
		variants := []string{"none"}
		for _, e := range everies {
			variants = append(variants, "every "+strconv.FormatUint(e, 10))
		}
		for _, e := range everies {
			variants = append(variants, "resume "+strconv.FormatUint(e, 10))
		}
		for _, v := range variants {
			var rs []run
			for _, r := range all {
				if r.App == a.name && r.Variant == v {
					rs = append(rs, r)
				}
			}
			if len(rs) == 0 {
				continue
			}
			var walls, cpus, cts []float64
			var walltxt []string
			same := true
			var errs []string
			for _, r := range rs {
				walls = append(walls, r.Wall.Seconds())
				cpus = append(cpus, r.CPU.Seconds())
				walltxt = append(walltxt, fmt.Sprintf("%.2f", r.Wall.Seconds()))
				for _, c := range r.CommitTimes {
					cts = append(cts, float64(c.Microseconds())/1000)
				}
				if v == "none" && baseModel == "" {
					baseModel = r.Model
				}
				if r.Model != baseModel {
					same = false
				}
				if r.Err != "" {
					errs = append(errs, r.Err)
				}
			}
			m, mc := median(walls), median(cpus)
			if v == "none" {
				base, baseCPU = m, mc
			}
			r0 := rs[0]
			ckpts, skipped, last, ct := "–", "–", "–", "–"
			if r0.Resume {
				var from []string
				for _, r := range rs {
					from = append(from, strconv.FormatUint(r.Resumed, 10))
				}
				last = "resumed from round " + strings.Join(slices.Compact(from), ",")
			}
			if r0.Every > 0 && !r0.Resume {
				var beg, com, sk []string
				for _, r := range rs {
					beg = append(beg, strconv.Itoa(r.Begun))
					com = append(com, strconv.Itoa(r.Committed))
					sk = append(sk, strconv.Itoa(r.Rounds/int(r.Every)-r.Begun))
				}
				ckpts = strings.Join(beg, ",") + " / " + strings.Join(com, ",")
				skipped = strings.Join(sk, ",")
				if r0.Pieces > 0 {
					last = fmt.Sprintf("%d (round %d, %d pieces)", r0.Bytes, r0.LastRound, r0.Pieces)
				}
				if len(cts) > 0 {
					ct = fmt.Sprintf("%.1f (%d)", median(cts), len(cts))
				}
			}
			rounds := []string{}
			for _, r := range rs {
				rounds = append(rounds, strconv.Itoa(r.Rounds))
			}
			rounds = slices.Compact(rounds)
			sameText := "yes"
			if !same {
				sameText = "**no**"
			}
			if len(errs) > 0 {
				sameText += " (errors: " + strings.Join(errs, "; ") + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.2f (%s) | %+.0f%% | %.2f | %+.0f%% | %s | %s | %s | %s | %s |\n",
				a.name, v, strings.Join(rounds, ","), m, strings.Join(walltxt, ", "), (m/base-1)*100, mc, (mc/baseCPU-1)*100, ckpts, skipped, last, ct, sameText)
		}
	}
	return b.String()
}
