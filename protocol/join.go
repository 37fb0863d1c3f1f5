package protocol

import (
	"context"
	"fmt"
	"time"

	"github.com/strads-go/strads/wire"
)

// Join asks the coordinator of c's job for a place as role until it answers
// or ctx is done; each try waits at most try for the answer.
func Join(ctx context.Context, c *wire.Conn, id, role string, try time.Duration) (JoinReply, error) {
	req := JoinRequest{ID: id, Role: role}
	for {
		rctx, cancel := context.WithTimeout(ctx, min(try, 5*time.Second))
		rep, err := wire.Request[JoinRequest, JoinReply](rctx, c, SubjectJoin, req)
		cancel()
		if err == nil {
			if rep.Err != "" {
				return rep, fmt.Errorf("%s: join refused: %s", role, rep.Err)
			}
			return rep, nil
		}
		if ctx.Err() != nil {
			return rep, fmt.Errorf("%s: no coordinator answered on %s: %w", role, c.Subject(SubjectJoin), ctx.Err())
		}
		// No coordinator yet (no responders) or a lost reply: try again.
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Announce tells the coordinator that the node is ready (or, with r.Err
// set, that it failed to load), and waits for the acknowledgement.
func Announce[S any](ctx context.Context, c *wire.Conn, r Ready[S]) error {
	ack, err := wire.Request[Ready[S], Ack](ctx, c, SubjectReady, r)
	switch {
	case err != nil:
		return fmt.Errorf("%s %d: report ready: %w", r.Role, r.Shard, err)
	case ack.Err != "" && r.Err == "":
		return fmt.Errorf("%s %d: coordinator refused: %s", r.Role, r.Shard, ack.Err)
	}
	return nil
}
