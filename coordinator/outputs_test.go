package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/scheduler"
	"github.com/strads-go/strads/schmp"
)

// countingWorker is a relay worker that counts the rounds it pushed: its
// report is that count, and so is its final report, whose calls finals
// counts.
type countingWorker struct {
	*relayWorker
	pushed int
	finals *atomic.Int32
}

func (w *countingWorker) Push(ctx context.Context, round uint64, t scheduler.Turn) (relayBlock, error) {
	b, err := w.relayWorker.Push(ctx, round, t)
	w.pushed++
	return b, err
}
func (w *countingWorker) Report() (int, error) { return w.pushed, nil }
func (w *countingWorker) FinalReport() (int, error) {
	w.finals.Add(1)
	return w.pushed, nil
}

// filesCoordinator is a relay coordinator whose model is three files
// (schmp.Outputter), written from the workers' final reports
// (schmp.Finisher), and whose rounds come in iterations of the rotation
// (schmp.Iterated). Its objective 1 + 2^−r, r the rounds the workers
// pushed, converges (relatively, to 1e-3) at r = 10.
type filesCoordinator struct {
	relayCoordinator
	finals   [][]int // each Finish's reports
	lasts    []uint64
	badPath  bool // the second file's directory does not exist
	badWrite bool // the second file's Write fails
}

func (c *filesCoordinator) Objective(reports []int) (schmp.Progress, error) {
	return schmp.Progress{Objective: 1 + 1/float64(uint64(1)<<reports[0])}, nil
}
func (c *filesCoordinator) RoundsPerIteration() uint64 { return uint64(c.rot.Workers) }
func (c *filesCoordinator) LastRound(last uint64) error {
	c.lasts = append(c.lasts, last)
	return nil
}
func (c *filesCoordinator) Finish(reports []int) error {
	c.finals = append(c.finals, slices.Clone(reports))
	return nil
}
func (c *filesCoordinator) Outputs(out string) ([]schmp.Output, error) {
	second := out + ".visits"
	if c.badPath {
		second = filepath.Join(filepath.Dir(out), "missing", "x.visits")
	}
	return []schmp.Output{
		{Path: out + ".finals", Write: func(w io.Writer) error { _, err := fmt.Fprintln(w, c.finals); return err }},
		{Path: second, Write: func(w io.Writer) error {
			if c.badWrite {
				return errors.New("disk on fire")
			}
			_, err := fmt.Fprintln(w, c.blocks)
			return err
		}},
		{Path: out + ".lasts", Write: func(w io.Writer) error { _, err := fmt.Fprintln(w, c.lasts); return err }},
	}, nil
}

// TestOutputs runs a model of three files on the runtime, over NATS: a
// --tol stop of the rotation lands at the end of a sweep; every worker
// sends its final report once, of the state the check certified, which
// the coordinator's Finish takes before the files are written; the three
// files and the metrics are committed together, and a bad path or a
// failed write leaves none of them.
func TestOutputs(t *testing.T) {
	const workers = 3
	cases := []struct {
		name              string
		badPath, badWrite bool
		err               string
		wantFiles         bool
	}{
		{"committed", false, false, "", true},
		{"a bad path fails at once", true, false, "missing", false},
		{"a failed write leaves none", false, true, "disk on fire", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "model")
			rot := scheduler.Rotation{Workers: workers}
			coord := &filesCoordinator{relayCoordinator: relayCoordinator{rot: rot}, badPath: tc.badPath, badWrite: tc.badWrite}
			var finals atomic.Int32
			prog := schmp.Program[scheduler.Turn, relayBlock, relayUpdate, int]{
				Name: "files",
				NewScheduler: func(_ context.Context, part, parts int) (schmp.Scheduler[scheduler.Turn], error) {
					return scheduler.NewRotation(workers, part, parts)
				},
				NewWorker: func(_ context.Context, shard, _ int) (schmp.Worker[scheduler.Turn, relayBlock, relayUpdate, int], error) {
					return &countingWorker{relayWorker: &relayWorker{rot: rot, shard: shard}, finals: &finals}, nil
				},
				NewCoordinator: func(context.Context) (schmp.Coordinator[scheduler.Turn, relayBlock, relayUpdate, int], error) {
					return coord, nil
				},
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := job.Run(ctx, prog, job.Options{
				Job: "files",
				Coordinator: coordinator.Options{Workers: workers, Tol: 1e-3, ReportEvery: 1, MaxRounds: 100,
					Out: out, Metrics: filepath.Join(dir, "metrics.csv"), Timeout: 10 * time.Second, JoinTimeout: 10 * time.Second},
				Timeout: 10 * time.Second,
			})
			entries, _ := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				if len(names) != 0 {
					t.Fatalf("a failed job left %v", names)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The report of state 10 (round 11) decides the stop, which
			// lands at the end of the sweep, round 12, where the check
			// confirms it.
			if res.Reason != schmp.StopConverged || res.Rounds != 12 {
				t.Fatalf("stopped (%s) after %d rounds, want converged after 12, the end of the 4th sweep", res.Reason, res.Rounds)
			}
			if n := finals.Load(); n != workers {
				t.Errorf("%d final reports, want one from each of %d workers", n, workers)
			}
			if want := [][]int{{12, 12, 12}}; !slices.EqualFunc(coord.finals, want, slices.Equal) {
				t.Errorf("Finish took %v, want %v: once, the state after round 12 from every worker", coord.finals, want)
			}
			for _, b := range coord.blocks {
				for w, v := range b.Visits {
					if v != 4 {
						t.Errorf("worker %d visited block %d %d times, want 4", w, b.ID, v)
					}
				}
			}
			want := []string{"metrics.csv", "model.finals", "model.lasts", "model.visits"}
			if !slices.Equal(names, want) {
				t.Fatalf("the job left %v, want %v", names, want)
			}
			for name, content := range map[string]string{"model.finals": "[[12 12 12]]\n", "model.lasts": "[12]\n"} {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != content {
					t.Errorf("%s holds %q (%v), want %q", name, b, err, content)
				}
			}
		})
	}
}
