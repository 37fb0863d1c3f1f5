package job_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/wire"
)

// TestReplayedHeartbeats loses a worker of a job with a key while an
// attacker on the job's subjects sends every heartbeat it recorded again,
// the lost worker's among them, MACs and all: the beats carry sequence
// numbers, so the replays are dropped, and the coordinator's heartbeat
// check finds the loss after LostAfter, long before the round deadline.
func TestReplayedHeartbeats(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testhelper.StartServer(t, natsserver.Options{})
	const (
		name      = "replaybeat"
		timeout   = 20 * time.Second
		lostAfter = time.Second
	)
	key := wire.NewKey()
	var (
		mu    sync.Mutex
		beats []*nats.Msg
		lost  atomic.Int64
	)
	stop := watchKeyed(t, srv, name, func(a *attacker, msg *nats.Msg) {
		if strings.HasSuffix(msg.Subject, "."+protocol.SubjectBeat) && lost.Load() == 0 {
			mu.Lock()
			beats = append(beats, msg)
			mu.Unlock()
		}
	}, nil)
	defer stop()
	fctx, fstop := context.WithCancel(ctx)
	defer fstop()
	replayer := testhelper.Connect(t, srv)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for fctx.Err() == nil {
			<-tick.C
			if lost.Load() == 0 {
				continue
			}
			mu.Lock()
			for _, m := range beats {
				replayer.PublishMsg(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
			}
			mu.Unlock()
		}
	}()
	prog := hostileProgram()
	connect := func() *wire.Conn {
		c, err := wire.NewConn(testhelper.Connect(t, srv), name)
		if err == nil {
			err = c.SetKey(key)
		}
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	co := coordinator.Options{Workers: 2, Schedulers: 1, MaxRounds: 1 << 20, ReportEvery: 5,
		Timeout: timeout, JoinTimeout: 20 * time.Second, Heartbeat: 100 * time.Millisecond, LostAfter: lostAfter}
	var wg sync.WaitGroup
	victim := connect()
	goRoles(fctx, &wg, timeout, []*wire.Conn{connect()}, []*wire.Conn{connect(), victim})
	go func() {
		// Lose the victim once the job has run long enough for its beats
		// to be recorded.
		for fctx.Err() == nil {
			mu.Lock()
			n := len(beats)
			mu.Unlock()
			if n >= 20 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		lost.Store(time.Now().UnixNano())
		victim.NATS().Close()
	}()
	_, err := coordinator.Run(fctx, connect(), prog.NewCoordinator, co)
	took := time.Since(time.Unix(0, lost.Load()))
	fstop()
	wg.Wait()
	if err == nil || !errors.Is(err, protocol.ErrTimeout) || !strings.Contains(err.Error(), "worker shard") || !strings.Contains(err.Error(), "no heartbeat") {
		t.Fatalf("job: %v, want the heartbeat check to name a worker shard", err)
	}
	if limit := lostAfter + 4*time.Second; took > limit {
		t.Errorf("the loss found %s after it, more than %s: %v", took, limit, err)
	}
	t.Logf("after %s: %v", took.Round(time.Millisecond), err)
}
