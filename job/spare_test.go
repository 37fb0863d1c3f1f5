package job_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/job"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/wire"
)

// TestSpareAnyMoment loses nodes of a job with spares at a moment the
// issue 28 probe found them unused: before any checkpoint (a job that
// takes none goes back to its start, round 0), and a worker and the
// scheduler at once (both are replaced, not only the first found), and a
// spare lost during the rollback (never ready: the next spare takes its
// place after JoinTimeout, where the job failed). Each job ends with the
// model of the job that lost nothing, bit for bit.
func TestSpareAnyMoment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const rounds = 400
	base := coordinator.Options{Workers: 2, Schedulers: 1, MaxRounds: rounds, ReportEvery: 5,
		Timeout: 20 * time.Second, JoinTimeout: 20 * time.Second}
	ref := base
	ref.Out = filepath.Join(t.TempDir(), "ref.csv")
	if _, err := job.Run(ctx, hostileProgram(), job.Options{Job: "ref", Timeout: 20 * time.Second, Coordinator: ref}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(ref.Out)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		every     uint64 // CheckpointEvery
		scheduler bool   // the scheduler is lost with worker 1
		restart   bool   // the NATS server restarts just before
		deadSpare bool   // the first worker spare is lost with worker 1
	}{
		{"a worker, no checkpoints", 0, false, false, false},
		{"a worker and the scheduler, no checkpoints", 0, true, false, false},
		{"a worker and the scheduler, checkpoints", 10, true, false, false},
		{"a worker after a reconnect", 10, false, true, false},
		{"a spare lost during the rollback", 10, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := t.TempDir()
			srv := testhelper.StartServer(t, natsserver.Options{StoreDir: store})
			name := fmt.Sprintf("spare%d", tc.every)
			// Over TCP, as roles connect, so that they reconnect.
			dial := func() *nats.Conn {
				nc, err := wire.Connect(srv.ClientURL(), "test", 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				return nc
			}
			connect := func() *wire.Conn {
				c, err := wire.NewConn(dial(), name)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			partials, err := dial().SubscribeSync("strads." + name + ".partial")
			if err != nil {
				t.Fatal(err)
			}
			fctx, fstop := context.WithCancel(ctx)
			defer fstop()
			var wg sync.WaitGroup
			s0, w1 := connect(), connect()
			goRoles(fctx, &wg, 20*time.Second, []*wire.Conn{s0}, []*wire.Conn{connect(), w1})
			co := base
			co.Out, co.CheckpointEvery, co.Spares = filepath.Join(t.TempDir(), "model.csv"), tc.every, 1
			co.Heartbeat, co.LostAfter = 100*time.Millisecond, time.Second
			if tc.deadSpare {
				co.Spares, co.JoinTimeout = 2, 3*time.Second
			}
			var res *coordinator.Result
			var jobErr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				res, jobErr = coordinator.Run(fctx, connect(), hostileProgram().NewCoordinator, co)
			}()
			// The places are taken once partials come: the nodes that join
			// now are spares. The losses come at round 100 or so.
			var dead *wire.Conn
			if tc.deadSpare {
				if _, err := partials.NextMsg(20 * time.Second); err != nil {
					t.Fatalf("no partials: %v", err)
				}
				// The first spare in line, which the rollback assigns: the
				// others join 30 rounds later.
				dead = connect()
				goRoles(fctx, &wg, 20*time.Second, nil, []*wire.Conn{dead})
			}
			for range 20 {
				if _, err := partials.NextMsg(20 * time.Second); err != nil {
					t.Fatalf("no partials: %v", err)
				}
			}
			if tc.deadSpare {
				for range 40 {
					if _, err := partials.NextMsg(20 * time.Second); err != nil {
						t.Fatalf("no partials: %v", err)
					}
				}
			}
			goRoles(fctx, &wg, 20*time.Second, []*wire.Conn{connect()}, []*wire.Conn{connect()})
			for range 180 {
				if _, err := partials.NextMsg(20 * time.Second); err != nil {
					t.Fatalf("no partials: %v", err)
				}
			}
			if tc.restart {
				port := srv.Addr().(*net.TCPAddr).Port
				srv.Stop()
				if srv, err = natsserver.Start(natsserver.Options{Port: port, StoreDir: store}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Stop)
				// Right after the roles are back: a second of their own
				// reconnects at most.
				if _, err := partials.NextMsg(20 * time.Second); err != nil {
					t.Fatalf("no partials after the restart: %v", err)
				}
			}
			w1.NATS().Close()
			if dead != nil {
				dead.NATS().Close()
			}
			lost := 1
			if tc.scheduler {
				// Processes killed at once fall silent up to a heartbeat
				// apart: their last beats had their own phases.
				time.Sleep(co.Heartbeat)
				s0.NATS().Close()
				lost = 2
			}
			<-done
			fstop()
			wg.Wait()
			if jobErr != nil {
				t.Fatal(jobErr)
			}
			if res.Replaced != lost {
				t.Errorf("%d nodes replaced, want %d", res.Replaced, lost)
			}
			got, err := os.ReadFile(co.Out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Error("the model differs from the job's that lost nothing")
			}
		})
	}
}
