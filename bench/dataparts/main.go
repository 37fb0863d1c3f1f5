// Command dataparts measures what a worker fetches of a data set over
// NATS (DESIGN "Data over NATS"): whole, as every worker did before
// data sets had an index (and still does for one stored without), against
// its part, the blocks of its rows.
//
// It generates a LIBSVM file (strads gen lasso), starts strads server with
// JetStream on a TCP port, and stores the file twice: with strads data put
// (blocks and an index) as nats:parts.svm, and as one object without an
// index, as strads stored them before, as nats:whole.svm. Then:
//
//   - transfers alone: for each of --workers shards, the time and bytes of
//     fetching the whole (dataset.Store.Fetch) and of fetching the blocks
//     of the shard's rows (dataset.Part.Lines, read to the end), the
//     shards one after another, then all at once;
//   - whole jobs: a Lasso job in the row layout whose roles are separate
//     processes (--workers workers, a coordinator, a scheduler; --rounds
//     rounds), on each data set, --reps times, interleaved, with each
//     worker's fetched bytes from its log (--verbose) and the job's wall
//     time; the models must be the same file.
//
// Usage, from the repository root:
//
//	go build -o /tmp/strads-bench ./cmd/strads
//	nice -n 10 go run ./bench/dataparts --bin /tmp/strads-bench --dir /tmp/dpb
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/dataset"
	"github.com/strads-go/strads/libsvm"
)

func main() {
	bin := flag.String("bin", "", "the strads `binary`")
	dir := flag.String("dir", "", "work `directory` (the data, the server's store, the models)")
	samples := flag.Int("samples", 100000, "rows of the generated data")
	features := flag.Int("features", 2000, "features of the generated data")
	density := flag.Float64("density", 0.04, "density of the generated data")
	workers := flag.Int("workers", 4, "workers")
	rounds := flag.Int("rounds", 5, "rounds of a whole job")
	reps := flag.Int("reps", 2, "whole jobs of each data set")
	flag.Parse()
	if *bin == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "dataparts: give --bin and --dir")
		os.Exit(2)
	}
	if err := run(*bin, *dir, *samples, *features, *density, *workers, *rounds, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "dataparts:", err)
		os.Exit(1)
	}
}

func run(bin, dir string, samples, features int, density float64, workers, rounds, reps int) error {
	ctx := context.Background()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data := filepath.Join(dir, "data.svm")
	if _, err := os.Stat(data); err != nil {
		start := time.Now()
		if out, err := exec.Command(bin, "gen", "lasso", "--samples", strconv.Itoa(samples), "--features", strconv.Itoa(features),
			"--density", fmt.Sprint(density), "--seed", "1", "-o", data).CombinedOutput(); err != nil {
			return fmt.Errorf("gen: %v: %s", err, out)
		}
		fmt.Printf("generated %s in %.1fs\n", data, time.Since(start).Seconds())
	}
	st, err := os.Stat(data)
	if err != nil {
		return err
	}
	size := st.Size()
	rows, err := libsvm.CountRows(data)
	if err != nil {
		return err
	}
	fmt.Printf("data: %d bytes, %d rows (gen lasso --samples %d --features %d --density %g)\n", size, rows, samples, features, density)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	store := filepath.Join(dir, "store")
	os.RemoveAll(store)
	srv := exec.Command(bin, "server", "--store", store, "--addr", addr)
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	url := "nats://" + addr
	var nc *nats.Conn
	for range 50 {
		if nc, err = nats.Connect(url); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer nc.Close()

	start := time.Now()
	if out, err := exec.Command(bin, "data", "put", data, "--name", "parts.svm", "--nats", url).CombinedOutput(); err != nil {
		return fmt.Errorf("data put: %v: %s", err, out)
	}
	fmt.Printf("strads data put (blocks of %d MiB and the index): %.2fs\n", dataset.DefaultBlock>>20, time.Since(start).Seconds())
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	obs, err := js.ObjectStore(ctx, dataset.Bucket)
	if err != nil {
		return err
	}
	f, err := os.Open(data)
	if err != nil {
		return err
	}
	start = time.Now()
	_, err = obs.Put(ctx, jetstream.ObjectMeta{Name: "whole.svm"}, f)
	f.Close()
	if err != nil {
		return err
	}
	fmt.Printf("put as one object, without an index (as before): %.2fs\n", time.Since(start).Seconds())

	ds, err := dataset.Open(ctx, nc, 30*time.Second, false)
	if err != nil {
		return err
	}
	if err := transfers(ctx, ds, dir, rows, workers); err != nil {
		return err
	}
	return jobs(bin, dir, url, workers, rounds, reps, size)
}

// transfers times, for each shard, fetching the whole against fetching the
// blocks of its rows: one after another, then all at once.
func transfers(ctx context.Context, ds *dataset.Store, dir string, rows, workers int) error {
	tmp := filepath.Join(dir, "copies")
	fetch := func(k int, whole bool) (int64, time.Duration, error) {
		d := filepath.Join(tmp, fmt.Sprintf("%v-%d", whole, k))
		os.RemoveAll(d)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, 0, err
		}
		defer os.RemoveAll(d)
		start := time.Now()
		if whole {
			_, in, err := ds.Fetch(ctx, "whole.svm", d)
			return int64(in.Size), time.Since(start), err
		}
		p, err := ds.OpenPart(ctx, "parts.svm", filepath.Join(d, "parts.svm"))
		if err != nil {
			return 0, 0, err
		}
		lo, hi := libsvm.ShardRange(rows, k, workers)
		rc, _, err := p.Lines(lo, hi)
		if err != nil {
			return 0, 0, err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		return p.Fetched(), time.Since(start), err
	}
	fmt.Printf("\ntransfers alone, %d shards, one after another:\n", workers)
	fmt.Println("shard  whole_bytes  whole_s  part_bytes  part_s")
	for k := range workers {
		wb, wt, err := fetch(k, true)
		if err != nil {
			return err
		}
		pb, pt, err := fetch(k, false)
		if err != nil {
			return err
		}
		fmt.Printf("%5d  %11d  %7.2f  %10d  %6.2f\n", k, wb, wt.Seconds(), pb, pt.Seconds())
	}
	for _, whole := range []bool{true, false} {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var total int64
		var first error
		start := time.Now()
		for k := range workers {
			wg.Go(func() {
				b, _, err := fetch(k, whole)
				mu.Lock()
				defer mu.Unlock()
				total += b
				if err != nil && first == nil {
					first = err
				}
			})
		}
		wg.Wait()
		if first != nil {
			return first
		}
		what := "parts"
		if whole {
			what = "whole"
		}
		fmt.Printf("all %d shards at once, %s: %d bytes in all, %.2fs\n", workers, what, total, time.Since(start).Seconds())
	}
	return nil
}

var fetchedRE = regexp.MustCompile(`fetched=(\d+)`)

// jobs runs whole Lasso jobs as separate processes on each data set.
func jobs(bin, dir, url string, workers, rounds, reps int, size int64) error {
	fmt.Printf("\nwhole jobs: lasso --layout rows --workers %d --max-rounds %d, separate processes:\n", workers, rounds)
	fmt.Println("data set   rep  job_s  worker_fetched_bytes")
	sums := map[string]string{}
	n := 0
	for rep := range reps {
		for _, set := range []string{"whole.svm", "parts.svm"} {
			n++
			out := filepath.Join(dir, fmt.Sprintf("beta-%s-%d.csv", set, rep))
			common := []string{"--app", "lasso", "--nats", url, "--job", fmt.Sprintf("dp%d", n), "--data", "nats:" + set,
				"--workers", strconv.Itoa(workers), "--layout", "rows", "--max-rounds", strconv.Itoa(rounds), "--tol", "0",
				"--lambda-ratio", "0.1", "--progress", "0", "--timeout", "2m", "--join-timeout", "5m"}
			start := time.Now()
			var procs []*exec.Cmd
			var logs []*bytes.Buffer
			for k := range workers + 2 {
				args := append([]string{"worker", "--verbose"}, common...)
				switch k {
				case workers:
					args = append([]string{"scheduler"}, common...)
				case workers + 1:
					args = append([]string{"coordinator", "--out", out}, common...)
				}
				c := exec.Command(bin, args...)
				var b bytes.Buffer
				c.Stderr = &b
				if err := c.Start(); err != nil {
					return err
				}
				procs, logs = append(procs, c), append(logs, &b)
			}
			for k, c := range procs {
				if err := c.Wait(); err != nil {
					return fmt.Errorf("%s, process %d: %v: %s", set, k, err, logs[k])
				}
			}
			took := time.Since(start)
			var fetched []int64
			for _, b := range logs[:workers] {
				if m := fetchedRE.FindSubmatch(b.Bytes()); m != nil {
					v, _ := strconv.ParseInt(string(m[1]), 10, 64)
					fetched = append(fetched, v)
				} else if bytes.Contains(b.Bytes(), []byte("fetched a data set")) {
					fetched = append(fetched, size)
				}
			}
			fmt.Printf("%-9s  %3d  %5.1f  %v\n", set, rep, took.Seconds(), fetched)
			b, err := os.ReadFile(out)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			sums[hex.EncodeToString(h[:8])] += set + " "
		}
	}
	fmt.Printf("model SHA-256 prefixes: %v\n", sums)
	if len(sums) != 1 {
		return fmt.Errorf("the models differ: %v", sums)
	}
	return nil
}
