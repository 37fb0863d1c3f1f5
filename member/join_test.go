package member_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/member"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/wire"
)

// TestJoinUnread checks a node's answer to "your join could not be read":
// it may answer a corrupted copy of the node's join that someone sent with
// its reply subject, so the node asks again; a coordinator that keeps
// answering it (another protocol version) refuses the node.
func TestJoinUnread(t *testing.T) {
	for _, tc := range []struct {
		unread int // answers that say so before a place
		ok     bool
	}{{0, true}, {1, true}, {3, true}, {100, false}} {
		nc := testhelper.InProcess(t, false)
		c, err := wire.NewConn(nc, "unread")
		if err != nil {
			t.Fatal(err)
		}
		var asked atomic.Int32
		sub, err := c.NATS().Subscribe(c.Subject(protocol.SubjectJoin), func(msg *nats.Msg) {
			rep := protocol.JoinReply{Shard: 0, Shards: 1, Run: "r"}
			if int(asked.Add(1)) <= tc.unread {
				rep = protocol.JoinReply{Err: "not a join request of protocol version 8: truncated", Unread: true}
			}
			if err := wire.Reply(c, msg, rep); err != nil {
				t.Error(err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rep, err := member.Join(ctx, c, protocol.JoinRequest{ID: "n1"}, time.Second)
		cancel()
		sub.Unsubscribe()
		if tc.ok && (err != nil || rep.Run != "r") {
			t.Errorf("%d unread answers: %v, %+v; want the place", tc.unread, err, rep)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "not a join request")) {
			t.Errorf("unread answers every time: %v; want the refusal", err)
		}
	}
}

// TestAdmitSpareAssigned: a spare's Assign that comes at once after its
// join reply, before the node serves the Entry (a command takes the job's
// settings in between), is not lost: the Entry listened on the spare
// subject before it joined.
func TestAdmitSpareAssigned(t *testing.T) {
	nc := testhelper.InProcess(t, false)
	c, err := wire.NewConn(nc, "admit")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.NATS().Subscribe(c.Subject(protocol.SubjectJoin), func(msg *nats.Msg) {
		var req protocol.JoinRequest
		if err := protocol.Open(msg.Data, &req, protocol.TypeJoin, ""); err != nil {
			t.Error(err)
			return
		}
		if err := wire.Reply(c, msg, protocol.JoinReply{Spare: true, Shards: 2, Run: "r1"}); err != nil {
			t.Error(err)
		}
		a := protocol.Assign{Header: protocol.Header{Type: protocol.TypeAssign, Run: "r1"}, Shard: 1, Shards: 2, Rollback: &protocol.Rollback{Round: 4, Run: "r2"}}
		if err := wire.Publish(c, protocol.SubjectSpare(req.ID), a); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	e, err := member.Admit(ctx, c, protocol.JoinRequest{ID: "spare-1", Role: protocol.RoleWorker}, 5*time.Second, time.Second, func(string) {}, log)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Reply.Spare || e.ID != "spare-1" {
		t.Fatalf("entry %+v, want a spare's of spare-1", e)
	}
	var served protocol.JoinReply
	err = e.Serve(ctx, log, func(place protocol.JoinReply) error {
		served = place
		return nil
	})
	if err != nil || served.Spare || served.Shard != 1 || served.Run != "r2" || served.Resume != 4 {
		t.Fatalf("Serve: %v, place %+v; want shard 1 of the assignment", err, served)
	}
}
