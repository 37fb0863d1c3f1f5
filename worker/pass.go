package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
)

// passBox receives the parts that other workers pass a worker whose app
// is a schmp.Passer (DESIGN §2): it holds those that come before the
// worker awaits them, drops replays and parts nobody awaits, and fails on
// two different parts of one round from one sender.
type passBox[R any] struct {
	mb            *wire.Mailbox
	shard, shards int
	run           string
	timeout       time.Duration
	drop          func(msg *nats.Msg, reason string, err error)
	ledgers       map[int]*protocol.Ledger // by sender
	held          map[passKey]heldPass[R]
	taken         uint64   // the last round taken
	untaken       []uint64 // the rounds pushed whose parts are not taken yet
	// The last part this worker passed, encoded, and its addressee's
	// subject: sent again after a reconnect (DESIGN §6).
	sent    []byte
	sentTo  string
	sentRnd uint64
}

// passKey names a part: its round and sender.
type passKey struct {
	round uint64
	from  int
}

// heldPass is a part that came before it was awaited, and the hash of its
// message.
type heldPass[R any] struct {
	part R
	hash uint64
}

// newPassBox subscribes worker shard of shards to the parts passed to it.
func newPassBox[R any](c *wire.Conn, shard, shards int, run string, timeout time.Duration, drop func(*nats.Msg, string, error)) (*passBox[R], error) {
	mb, err := wire.NewMailbox(c, protocol.SubjectPass(shard))
	if err != nil {
		return nil, err
	}
	// A part is sent before its sender's partial, so it is due by the time
	// the next task comes: half the timeout lets the worker's error, which
	// names the sender, reach the coordinator before the coordinator's own
	// wait for this worker's answer ends.
	return &passBox[R]{
		mb: mb, shard: shard, shards: shards, run: run, timeout: timeout / 2, drop: drop,
		ledgers: map[int]*protocol.Ledger{}, held: map[passKey]heldPass[R]{},
	}, nil
}

// ledger returns the ledger of sender from.
func (b *passBox[R]) ledger(from int) *protocol.Ledger {
	l := b.ledgers[from]
	if l == nil {
		l = protocol.NewLedger()
		b.ledgers[from] = l
	}
	return l
}

// pass publishes the part of r, the partial of round, that w passes to
// another worker, and returns what goes to the coordinator.
func (b *passBox[R]) pass(c *wire.Conn, w schmp.Passer[R], round uint64, r R) (R, error) {
	b.untaken = append(b.untaken, round)
	var (
		coord, part R
		to          int
		ok          bool
	)
	if err := protocol.Guard("Pass", func() error { coord, part, to, ok = w.Pass(round, r); return nil }); err != nil {
		return r, err
	}
	if !ok {
		return coord, nil
	}
	if to < 0 || to >= b.shards || to == b.shard {
		return coord, fmt.Errorf("round %d: a part passed to worker %d in a job of %d", round, to, b.shards)
	}
	msg := protocol.Pass[R]{Header: protocol.Header{Type: protocol.TypePass, Run: b.run}, Round: round, From: b.shard, To: to, Part: part}
	data, err := codec.Marshal(msg)
	if err != nil {
		return coord, fmt.Errorf("round %d: pass to worker %d: %w", round, to, err)
	}
	b.sent, b.sentTo, b.sentRnd = data, protocol.SubjectPass(to), round
	if err := c.PublishData(b.sentTo, "", data); err != nil && !lost(err) {
		// A pass lost to a reconnect is sent again after it (resend).
		return coord, fmt.Errorf("round %d: pass to worker %d: %w", round, to, err)
	}
	return coord, nil
}

// resend sends the last part passed again: after a reconnect, or when the
// coordinator sends the task it answered again (its own reconnect). The
// addressee drops it if it has it (a duplicate).
func (b *passBox[R]) resend(c *wire.Conn, log *slog.Logger) {
	if b == nil || b.sent == nil {
		return
	}
	if err := c.PublishData(b.sentTo, "", b.sent); err != nil {
		log.Warn("pass not sent again", "round", b.sentRnd, "err", err)
	}
}

// takeAll gives w, before its next task, the parts it awaits of the
// rounds it pushed since it last took any, each waited for up to the
// worker's timeout (and ctx).
func (b *passBox[R]) takeAll(ctx context.Context, w schmp.Passer[R]) error {
	for len(b.untaken) > 0 {
		round := b.untaken[0]
		b.untaken = b.untaken[1:]
		from, ok := w.Awaits(round)
		if !ok {
			b.taken = round
			continue
		}
		if from < 0 || from >= b.shards || from == b.shard {
			return fmt.Errorf("round %d: awaits a part from worker %d in a job of %d", round, from, b.shards)
		}
		part, err := b.take(ctx, round, from)
		if err != nil {
			return err
		}
		b.taken = round
		if err := protocol.Guard("Take", func() error { return w.Take(round, from, part) }); err != nil {
			return err
		}
	}
	return nil
}

// take waits for the part of round from worker from.
func (b *passBox[R]) take(ctx context.Context, round uint64, from int) (R, error) {
	want := passKey{round, from}
	tctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	for {
		if h, ok := b.held[want]; ok {
			delete(b.held, want)
			b.ledger(from).Take(round, h.hash)
			b.forget(round)
			return h.part, nil
		}
		msg, err := b.mb.Next(tctx)
		if errors.Is(err, wire.ErrIncomplete) {
			b.drop(nil, protocol.DropIncomplete, err)
			continue
		}
		if err != nil {
			var zero R
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return zero, protocol.Timeout(fmt.Errorf("no block (pass) of round %d from worker shard %d in %s", round, from, b.timeout))
			}
			return zero, fmt.Errorf("round %d: awaiting the pass from worker shard %d: %w", round, from, err)
		}
		var p protocol.Pass[R]
		if err := protocol.Open(msg.Data, &p, protocol.TypePass, b.run); err != nil {
			b.drop(msg, protocol.Reason(err), err)
			continue
		}
		if err := p.Validate(b.shard, b.shards); err != nil {
			var zero R
			return zero, fmt.Errorf("a pass on %s: %w", msg.Subject, err)
		}
		key := passKey{p.Round, p.From}
		ledger := b.ledger(p.From)
		h := ledger.Hash(msg.Data)
		taken, err := ledger.Check(p.Round, h)
		if e, ok := b.held[key]; ok && !taken {
			taken = true
			if e.hash != h {
				err = fmt.Errorf("round %d: %w", p.Round, protocol.ErrConflict)
			}
		}
		switch {
		case err != nil:
			var zero R
			return zero, fmt.Errorf("a pass from worker shard %d on %s: %w", p.From, msg.Subject, err)
		case taken:
			b.drop(msg, protocol.DropDuplicate, fmt.Errorf("round %d: a pass from worker %d taken already", p.Round, p.From))
		case p.Round <= b.taken || p.Round > round+maxEarly || (p.Round == round && p.From != from):
			// Nobody sends it: a part of a round taken, far ahead, or
			// from another worker than the one awaited.
			b.drop(msg, protocol.DropUnexpected, fmt.Errorf("round %d: a pass from worker %d, awaiting round %d from worker %d", p.Round, p.From, round, from))
		default:
			b.held[key] = heldPass[R]{p.Part, h}
		}
	}
}

// forget drops the held parts of rounds up to round that nobody awaited.
func (b *passBox[R]) forget(round uint64) {
	for k := range b.held {
		if k.round < round {
			b.drop(nil, protocol.DropUnexpected, fmt.Errorf("round %d: a pass from worker %d that nobody awaited", k.round, k.from))
			delete(b.held, k)
		}
	}
}

// close ends the subscription.
func (b *passBox[R]) close() { _ = b.mb.Close() }
