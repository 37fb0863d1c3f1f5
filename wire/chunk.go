package wire

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// Headers of a chunk. A message too large for the server's max_payload
// travels as count consecutive NATS messages on its subject, each with the
// same reply subject and these headers; a message that fits has none.
const (
	// HeaderChunkID names the message a chunk belongs to (a nuid).
	HeaderChunkID = "Strads-Chunk-Id"
	// HeaderChunk is "index/count", index counting from 0.
	HeaderChunk = "Strads-Chunk"
	// HeaderChunkSize is the size in bytes of the whole message; only the
	// first chunk carries it.
	HeaderChunkSize = "Strads-Chunk-Size"
)

// MaxMessageSize is the largest message that wire sends or reassembles:
// 1 GiB. It is also what the chunks of partial messages held by one
// receiver may add up to.
const MaxMessageSize = 1 << 30

// MaxHeld is what the receivers of one Conn (a role's process) may hold at
// once of what came over the network and was not taken yet: the partial
// messages put together, as allocated, and the whole messages waiting in
// Mailboxes. A message that would go past it is dropped, with an error
// wrapping ErrIncomplete where its receiver looks: a flood costs this
// much memory at most, and fails the job rather than the process
// (DESIGN "Hostile traffic"). What nats.go queues before a subscription's
// handler runs is bounded per subscription apart (PendingBytes).
const MaxHeld = MaxMessageSize

// held is a byte budget shared by the receivers of a Conn. Its methods take
// and give bytes atomically; a nil *held takes everything.
type held struct {
	max       int64
	n         atomic.Int64
	collected atomic.Int64 // when collect last ran, in Unix nanoseconds
}

// take takes k bytes, if they fit.
func (h *held) take(k int64) bool {
	if h == nil || k <= 0 {
		return true
	}
	for {
		n := h.n.Load()
		if n+k > h.max {
			h.collect()
			return false
		}
		if h.n.CompareAndSwap(n, n+k) {
			return true
		}
	}
}

// collect runs the garbage collector, at most once a second, when a take
// fails: a flood's messages, dropped, are garbage that Go's pacing would
// otherwise let grow to as much again as what is held.
func (h *held) collect() {
	now := time.Now().UnixNano()
	last := h.collected.Load()
	if now-last < int64(time.Second) || !h.collected.CompareAndSwap(last, now) {
		return
	}
	go runtime.GC()
}

// give gives k bytes back.
func (h *held) give(k int64) {
	if h != nil && k > 0 {
		h.n.Add(-k)
	}
}

// String says what h holds, for errors.
func (h *held) String() string {
	if h == nil {
		return "no bound"
	}
	return fmt.Sprintf("this connection's receivers hold %d bytes (at most %d)", h.n.Load(), h.max)
}

// ErrIncomplete is returned (wrapped) by Next and Request when a message that
// was split into chunks cannot be put together again: a chunk went missing
// or came out of order, no chunk came for too long, or the receiver holds too
// many partial messages already. The message is dropped; the receiver stays
// usable and its next call returns the next message.
var ErrIncomplete = errors.New("incomplete chunked message")

const (
	// chunkHeaderRoom is what a chunk leaves of max_payload for its headers
	// (about 130 bytes at most, 190 with a MAC).
	chunkHeaderRoom = 256
	// minChunk is the smallest chunk worth sending.
	minChunk = 512
)

// chunkLimits bound what chunked messages may cost a Conn's receivers.
type chunkLimits struct {
	// maxMessage is the largest whole message sent or accepted, and what the
	// chunks of the partial messages of one receiver may add up to.
	maxMessage int64
	// maxPayload is the server's max_payload, which no chunk exceeds: a
	// message of count chunks announces at most count·maxPayload bytes.
	// 0: not known (no bound).
	maxPayload int64
	// maxPartial is the number of partial messages one receiver may hold.
	maxPartial int
	// stale is how long a partial message may go without a new chunk while
	// its receiver has nothing else queued, before it is dropped.
	stale time.Duration
}

var defaultChunkLimits = chunkLimits{
	maxMessage: MaxMessageSize,
	maxPartial: 256,
	stale:      30 * time.Second,
}

// send publishes data on subject with reply subject reply (none if empty):
// as one message when it fits the server's max_payload, in chunks
// otherwise.
func (c *Conn) send(subject, reply string, data []byte) error {
	max := c.nc.MaxPayload()
	if c.Keyed() && int64(len(data))+macRoom <= max {
		msg := &nats.Msg{Subject: subject, Reply: reply, Data: data}
		c.key.seal(msg)
		if err := c.nc.PublishMsg(msg); err != nil {
			return fmt.Errorf("wire: publish %s: %w", subject, err)
		}
		return nil
	}
	if !c.Keyed() && int64(len(data)) <= max {
		var err error
		if reply == "" {
			err = c.nc.Publish(subject, data)
		} else {
			err = c.nc.PublishRequest(subject, reply, data)
		}
		if err != nil {
			return fmt.Errorf("wire: publish %s: %w", subject, err)
		}
		return nil
	}
	switch {
	case int64(len(data)) > c.limits.maxMessage:
		return fmt.Errorf("wire: message of %d bytes on %s exceeds the largest message of %d bytes (the server's max_payload is %d bytes)", len(data), subject, c.limits.maxMessage, max)
	case !c.nc.HeadersSupported():
		return fmt.Errorf("wire: message of %d bytes on %s exceeds the server's max_payload of %d bytes, and the server does not support the headers needed to split it", len(data), subject, max)
	case max < chunkHeaderRoom+minChunk:
		return fmt.Errorf("wire: message of %d bytes on %s exceeds the server's max_payload of %d bytes, too small to split it", len(data), subject, max)
	}
	msgs := chunkMsgs(subject, reply, data, int(max)-chunkHeaderRoom)
	for i, msg := range msgs {
		if c.Keyed() {
			c.key.seal(msg)
		}
		if err := c.nc.PublishMsg(msg); err != nil {
			return fmt.Errorf("wire: publish %s: chunk %d of %d of a message of %d bytes: %w", subject, i+1, len(msgs), len(data), err)
		}
	}
	return nil
}

// chunkMsgs splits data into messages of at most size bytes of data each.
func chunkMsgs(subject, reply string, data []byte, size int) []*nats.Msg {
	id := nuid.Next()
	n := (len(data) + size - 1) / size
	msgs := make([]*nats.Msg, n)
	suffix := "/" + strconv.Itoa(n)
	for i := range msgs {
		h := nats.Header{
			HeaderChunkID: {id},
			HeaderChunk:   {strconv.Itoa(i) + suffix},
		}
		if i == 0 {
			h[HeaderChunkSize] = []string{strconv.Itoa(len(data))}
		}
		lo := i * size
		hi := min(lo+size, len(data))
		msgs[i] = &nats.Msg{Subject: subject, Reply: reply, Header: h, Data: data[lo:hi:hi]}
	}
	return msgs
}

// partial is a message of which some chunks have arrived.
type partial struct {
	subject, reply string
	size           int64  // the size of the whole message, as announced
	data           []byte // the chunks so far; it grows as they arrive
	next, count    int    // the index of the next chunk, and how many
	last           time.Time
}

// assembler puts chunked messages of one subscription together again. It is
// used by one goroutine at a time; mu guards parts for describe, which may
// be called from elsewhere. Whole messages without headers pass through
// untouched while no partial message is held.
type assembler struct {
	limits chunkLimits
	// caughtUp reports whether every message the subscription has received
	// was handed to add.
	caughtUp func(sub *nats.Subscription) bool
	// admit, if set, checks a message's MAC before it is taken (Conn.admit).
	admit func(msg *nats.Msg) error
	// held, if set, is the Conn's budget, from which the partial
	// messages' arrays are taken.
	held *held

	mu       sync.Mutex
	parts    map[string]*partial
	bytes    int64     // the bytes of parts received, in all
	drained  time.Time // the last time caughtUp held while parts were held
	errs     []error   // dropped messages not yet reported
	orphaned int       // chunks of messages whose first chunk never came
}

func newAssembler(limits chunkLimits, caughtUp func(*nats.Subscription) bool) *assembler {
	return &assembler{limits: limits, caughtUp: caughtUp}
}

// pendingEmpty is the caughtUp of a synchronous subscription.
func pendingEmpty(sub *nats.Subscription) bool {
	n, _, err := sub.Pending()
	return err == nil && n == 0
}

// pendingOnlyThis is the caughtUp of an asynchronous subscription's handler,
// whose message still counts as pending.
func pendingOnlyThis(sub *nats.Subscription) bool {
	n, _, err := sub.Pending()
	return err == nil && n <= 1
}

// idle reports whether the assembler holds nothing: no partial message and
// no error to report.
func (a *assembler) idle() bool { return len(a.parts) == 0 && len(a.errs) == 0 }

// takeErr returns the oldest unreported error, if any.
func (a *assembler) takeErr() error {
	if len(a.errs) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.errs[0]
	a.errs = a.errs[1:]
	if len(a.errs) == 0 {
		a.errs = nil
	}
	return err
}

// add takes msg, as received, and returns the whole message it completes:
// msg itself when it is not a chunk, nil when a message is still partial.
// Messages it drops are queued for takeErr.
func (a *assembler) add(msg *nats.Msg) *nats.Msg {
	id := msg.Header.Get(HeaderChunkID)
	if id == "" {
		a.sweep(msg.Sub)
		return msg
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	whole := a.addChunk(msg, id, now)
	if len(a.parts) > 0 && msg.Sub != nil && a.caughtUp(msg.Sub) {
		a.drained = now
		a.dropStale()
	}
	return whole
}

func (a *assembler) addChunk(msg *nats.Msg, id string, now time.Time) *nats.Msg {
	index, count, err := parseChunk(msg.Header.Get(HeaderChunk))
	if err != nil {
		a.fail(msg.Subject, id, err.Error())
		if p := a.parts[id]; p != nil {
			a.drop(id, p)
		}
		return nil
	}
	p := a.parts[id]
	if index == 0 {
		if p != nil {
			a.drop(id, p)
			a.fail(msg.Subject, id, "its first chunk came twice")
			return nil
		}
		size, err := strconv.ParseInt(msg.Header.Get(HeaderChunkSize), 10, 64)
		// The announced size is bounded by what count chunks can carry,
		// and memory by what arrives: a chunk that announces a large
		// message reserves nothing (DESIGN "Roles, subjects and messages").
		switch {
		case err != nil || size < 1:
			a.fail(msg.Subject, id, fmt.Sprintf("bad %s %q", HeaderChunkSize, msg.Header.Get(HeaderChunkSize)))
			return nil
		case size > a.limits.maxMessage:
			a.fail(msg.Subject, id, fmt.Sprintf("%d bytes exceed the largest message of %d bytes", size, a.limits.maxMessage))
			return nil
		case int64(count) > size || a.limits.maxPayload > 0 && size > int64(count)*a.limits.maxPayload:
			a.fail(msg.Subject, id, fmt.Sprintf("%d bytes cannot come in %d chunks of 1 to %d bytes", size, count, a.limits.maxPayload))
			return nil
		case len(a.parts) >= a.limits.maxPartial:
			a.fail(msg.Subject, id, fmt.Sprintf("%d bytes do not fit: %d partial messages are held already (at most %d)",
				size, len(a.parts), a.limits.maxPartial))
			return nil
		}
		p = &partial{subject: msg.Subject, reply: msg.Reply, size: size, count: count}
		if a.parts == nil {
			a.parts = make(map[string]*partial)
		}
		a.parts[id] = p
	} else if p == nil {
		// Its first chunk came before we subscribed, or its message was
		// dropped and reported already.
		a.orphaned++
		return nil
	}
	switch {
	case index != p.next || count != p.count:
		a.drop(id, p)
		a.fail(p.subject, id, fmt.Sprintf("chunk %d/%d came after chunk %d/%d", index, count, p.next-1, p.count))
		return nil
	case msg.Subject != p.subject || msg.Reply != p.reply:
		a.drop(id, p)
		a.fail(p.subject, id, fmt.Sprintf("chunk %d came on %s (reply %q), chunk 0 on %s (reply %q)", index, msg.Subject, msg.Reply, p.subject, p.reply))
		return nil
	case len(msg.Data) == 0 || a.limits.maxPayload > 0 && int64(len(msg.Data)) > a.limits.maxPayload:
		a.drop(id, p)
		a.fail(p.subject, id, fmt.Sprintf("chunk %d/%d has %d bytes (1 to %d)", index, count, len(msg.Data), a.limits.maxPayload))
		return nil
	case int64(len(p.data)+len(msg.Data)) > p.size:
		a.drop(id, p)
		a.fail(p.subject, id, fmt.Sprintf("chunk %d/%d overflows the %d bytes announced", index, count, p.size))
		return nil
	case a.bytes+int64(len(msg.Data)) > a.limits.maxMessage:
		a.drop(id, p)
		a.fail(p.subject, id, fmt.Sprintf("chunk %d/%d does not fit: %d partial messages hold %d bytes already (at most %d)",
			index, count, len(a.parts)+1, a.bytes, a.limits.maxMessage))
		return nil
	}
	switch need := len(p.data) + len(msg.Data); {
	case p.data == nil && int64(cap(msg.Data)) <= p.size && a.held.take(int64(cap(msg.Data))):
		// The first chunk's array, nats.go's copy of the payload,
		// becomes the message's: nothing is copied or left as garbage.
		p.data = msg.Data
	case need > cap(p.data):
		// Grow by doubling, up to the size announced: at most twice what
		// arrived is allocated, and each byte is copied about twice.
		size := min(p.size, max(2*int64(cap(p.data)), int64(need)))
		if !a.held.take(size - int64(cap(p.data))) {
			a.drop(id, p)
			a.fail(p.subject, id, fmt.Sprintf("chunk %d/%d does not fit: %s", index, count, a.held))
			return nil
		}
		grown := make([]byte, len(p.data), size)
		copy(grown, p.data)
		p.data = append(grown, msg.Data...)
	default:
		p.data = append(p.data, msg.Data...)
	}
	a.bytes += int64(len(msg.Data))
	p.next++
	p.last = now
	if p.next < p.count {
		return nil
	}
	a.drop(id, p)
	if int64(len(p.data)) != p.size {
		a.fail(p.subject, id, fmt.Sprintf("%d of the %d bytes announced came", len(p.data), p.size))
		return nil
	}
	return &nats.Msg{Subject: p.subject, Reply: p.reply, Data: p.data, Sub: msg.Sub}
}

// sweep drops stale partial messages when the subscription has caught up.
func (a *assembler) sweep(sub *nats.Subscription) {
	if len(a.parts) == 0 || sub == nil || !a.caughtUp(sub) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.drained = time.Now()
	a.dropStale()
}

// dropStale drops the partial messages that had no chunk for limits.stale
// before the subscription was last seen caught up: chunks of one message
// are published back to back, so their next chunk is overdue.
func (a *assembler) dropStale() {
	for id, p := range a.parts {
		if idle := a.drained.Sub(p.last); idle >= a.limits.stale {
			a.drop(id, p)
			a.fail(p.subject, id, fmt.Sprintf("no chunk for %s after chunk %d/%d", idle.Round(time.Millisecond), p.next-1, p.count))
		}
	}
}

// clear drops every partial message, giving their bytes back: its
// subscription is gone.
func (a *assembler) clear() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, p := range a.parts {
		a.drop(id, p)
	}
}

func (a *assembler) drop(id string, p *partial) {
	delete(a.parts, id)
	a.bytes -= int64(len(p.data))
	a.held.give(int64(cap(p.data)))
}

func (a *assembler) fail(subject, id, why string) {
	// The id, from a header, is the sender's text: quoted, it cannot
	// reach a terminal with its control characters raw.
	a.errs = append(a.errs, fmt.Errorf("wire: message on %s: %w %.64q dropped: %s", subject, ErrIncomplete, id, why))
}

// describe lists the partial messages held, for an error that says why a
// wait ended without a message; "" when there are none.
func (a *assembler) describe() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.parts) == 0 {
		return ""
	}
	var s []string
	now := time.Now()
	for id, p := range a.parts {
		s = append(s, fmt.Sprintf("%.64q on %s: %d of %d chunks, the last %s ago", id, p.subject, p.next, p.count, now.Sub(p.last).Round(time.Millisecond)))
	}
	sort.Strings(s)
	return "partial messages held: " + strings.Join(s, "; ")
}

// annotate adds to err, which ended a wait, the partial messages held.
func (a *assembler) annotate(err error) error {
	if d := a.describe(); d != "" {
		return fmt.Errorf("%w (%s)", err, d)
	}
	return err
}

// parseChunk parses a HeaderChunk value "index/count".
func parseChunk(s string) (index, count int, err error) {
	i, n, ok := strings.Cut(s, "/")
	if ok {
		index, err = strconv.Atoi(i)
		if err == nil {
			count, err = strconv.Atoi(n)
		}
	}
	if !ok || err != nil || index < 0 || count < 1 || index >= count {
		return 0, 0, fmt.Errorf("bad %s %q", HeaderChunk, s)
	}
	return index, count, nil
}
