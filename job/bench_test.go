package job_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/schmp"
)

// empty is a program whose rounds do nothing: a plan, partials and updates
// of one small integer, so that a round costs only the runtime.
type empty struct{}

func (empty) Schedule(round uint64, _ []schmp.Feedback) (int, schmp.PlanInfo, error) {
	return int(round), schmp.PlanInfo{Selected: 1}, nil
}
func (empty) Describe() (int, error)                         { return 0, nil }
func (empty) Apply(int) error                                { return nil }
func (empty) Push(context.Context, uint64, int) (int, error) { return 1, nil }
func (empty) Report() (int, error)                           { return 0, nil }
func (empty) Start([]int) (int, error)                       { return 0, nil }
func (empty) Pull(uint64, int, []int) (int, schmp.Feedback, error) {
	return 0, schmp.Feedback{}, nil
}
func (empty) Objective([]int) (schmp.Progress, error) { return schmp.Progress{}, nil }
func (empty) WriteModel(io.Writer) error              { return nil }

var emptyProgram = schmp.Program[int, int, int, int]{
	Name:           "empty",
	NewScheduler:   func(context.Context, int, int) (schmp.Scheduler[int], error) { return empty{}, nil },
	NewWorker:      func(context.Context, int, int) (schmp.Worker[int, int, int, int], error) { return empty{}, nil },
	NewCoordinator: func(context.Context) (schmp.Coordinator[int, int, int, int], error) { return empty{}, nil },
}

// BenchmarkRoundOverhead measures what a round costs the runtime alone: a
// job of b.N rounds of the empty program, on the embedded nats-server over
// in-process connections and over TCP loopback, with 2 and 4 workers at
// depth 1. It reports the median and p99 round latency (from sending the
// task to the end of Pull) and the time per round; ns/op is the time per
// round too, start-up excluded.
func BenchmarkRoundOverhead(b *testing.B) {
	for _, tcp := range []bool{false, true} {
		for _, workers := range []int{2, 4} {
			name := fmt.Sprintf("inproc/workers=%d", workers)
			if tcp {
				name = fmt.Sprintf("tcp/workers=%d", workers)
			}
			b.Run(name, func(b *testing.B) {
				opts := job.Options{
					Job:         "bench",
					Coordinator: coordinator.Options{Workers: workers, MaxRounds: uint64(max(b.N, 2)), ReportEvery: 1 << 30},
					Timeout:     10 * time.Second,
				}
				if tcp {
					srv, err := natsserver.Start(natsserver.Options{})
					if err != nil {
						b.Fatal(err)
					}
					defer srv.Stop()
					opts.NATS = srv.ClientURL()
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				res, err := job.Run(ctx, emptyProgram, opts)
				if err != nil {
					b.Fatal(err)
				}
				perRound := float64(res.Elapsed.Nanoseconds()) / float64(res.Rounds)
				b.ReportMetric(perRound, "ns/op")
				b.ReportMetric(float64(res.RoundQuantile(0.5).Nanoseconds())/1e3, "p50-µs")
				b.ReportMetric(float64(res.RoundQuantile(0.99).Nanoseconds())/1e3, "p99-µs")
			})
		}
	}
}
