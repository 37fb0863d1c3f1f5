package job_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

// evilAbort is a forged abort's text: a fake log line, a colour, a
// terminal title set by an OSC sequence, and a C1 CSI.
const evilAbort = "forged\nlevel=ERROR msg=INJECTED\x1b[31m red \x1b]0;pwned\x07 \u009b2J"

// TestForgedAbortText has a forged coordinator answer a worker's and a
// scheduler's join and ready, then abort them with evilAbort, as the
// coordinator's abort travels (a stop task on task, a stop plan request on
// plan.0): the role's error, which the command line prints, and its log
// carry the text escaped, with no raw ESC, C1 control or newline of it.
func TestForgedAbortText(t *testing.T) {
	srv := testhelper.StartServer(t, natsserver.Options{})
	prog := hostileProgram()
	for _, role := range []string{protocol.RoleWorker, protocol.RoleScheduler} {
		t.Run(role, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			connect := func() *wire.Conn {
				nc, err := nats.Connect(srv.ClientURL())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				c, err := wire.NewConn(nc, "esc-"+role)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			// The forged coordinator.
			fc := connect()
			const run = "forged-run"
			ready := make(chan struct{})
			var once sync.Once
			for name, answer := range map[string]func(msg *nats.Msg){
				protocol.SubjectJoin: func(msg *nats.Msg) {
					wire.Reply(fc, msg, protocol.JoinReply{Shard: 0, Shards: 1, Run: run})
				},
				protocol.SubjectReady: func(msg *nats.Msg) {
					wire.Reply(fc, msg, protocol.Ack{})
					once.Do(func() { close(ready) })
				},
			} {
				if _, err := fc.NATS().Subscribe(fc.Subject(name), answer); err != nil {
					t.Fatal(err)
				}
			}
			fc.NATS().Flush()

			var buf syncBuffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			c := connect()
			done := make(chan error, 1)
			go func() {
				opts := struct{ join, timeout time.Duration }{10 * time.Second, 20 * time.Second}
				if role == protocol.RoleWorker {
					done <- worker.Run(ctx, c, prog.NewWorker, worker.Options{JoinTimeout: opts.join, Timeout: opts.timeout, Logger: log})
				} else {
					done <- node.Run(ctx, c, prog.NewScheduler, node.Options{JoinTimeout: opts.join, Timeout: opts.timeout, Logger: log})
				}
			}()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("the %s ended before it was ready: %v", role, err)
			}
			// The abort, sent until the role ends (it may subscribe after
			// its ready).
			var err error
		wait:
			for {
				if role == protocol.RoleWorker {
					wire.Publish(fc, protocol.SubjectTask, protocol.Task[struct{}, struct{}]{Header: protocol.Header{Type: protocol.TypeTask, Run: run}, Stop: true, Abort: evilAbort})
				} else {
					wire.Publish(fc, protocol.SubjectPlan(0), protocol.PlanRequest{Header: protocol.Header{Type: protocol.TypePlanRequest, Run: run}, Stop: true, Abort: evilAbort})
				}
				select {
				case err = <-done:
					break wait
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				}
			}
			if !strings.Contains(err.Error(), `INJECTED\x1b[31m`) {
				t.Fatalf("the %s's error %q, want the forged abort, escaped", role, err)
			}
			for what, out := range map[string]string{"error": err.Error(), "log": buf.String()} {
				if strings.ContainsAny(out, "\x1b\u009b\x07") || strings.Contains(out, "\nlevel=ERROR msg=INJECTED") ||
					what == "error" && strings.Contains(out, "\n") {
					t.Errorf("the %s's %s holds the forged text raw: %q", role, what, out)
				}
			}
			t.Logf("%s: %v", role, err)
		})
	}
}
