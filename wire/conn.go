package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/codec"
)

// Conn is a NATS connection scoped to one job: every subject it names lives
// under strads.<job>.
type Conn struct {
	nc     *nats.Conn
	job    string
	prefix string
	limits chunkLimits
	events *watchers
	key    Key                    // the job's key; zero: none (SetKey)
	dropFn func(*nats.Msg, error) // OnDrop's
	held   *held                  // what its receivers hold (MaxHeld)
}

var jobName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// CheckJob returns an error unless job is a valid job name: letters, digits,
// '-' and '_' (it becomes one token of a NATS subject).
func CheckJob(job string) error {
	if !jobName.MatchString(job) {
		return fmt.Errorf("job name %q: want letters, digits, '-' or '_'", job)
	}
	return nil
}

// NewConn scopes nc to job. The caller keeps ownership of nc.
func NewConn(nc *nats.Conn, job string) (*Conn, error) {
	if err := CheckJob(job); err != nil {
		return nil, err
	}
	limits := defaultChunkLimits
	limits.maxPayload = nc.MaxPayload()
	return &Conn{nc: nc, job: job, prefix: "strads." + job + ".", limits: limits, events: watch(nc), held: &held{max: MaxHeld}}, nil
}

// EventKind tells a disconnect from a reconnect.
type EventKind int

const (
	// Disconnected: the connection to the server was lost; nats.go tries
	// to reconnect, buffering what is published meanwhile.
	Disconnected EventKind = iota
	// Reconnected: the connection is back, its subscriptions renewed.
	// Messages that were in flight when it broke are lost (core NATS).
	Reconnected
)

// String returns "disconnected" or "reconnected".
func (k EventKind) String() string {
	if k == Reconnected {
		return "reconnected"
	}
	return "disconnected"
}

// Event is a disconnect or a reconnect of a Conn's connection.
type Event struct {
	Kind EventKind
	// URL is the server's URL, its credentials redacted (RedactURL).
	URL string
	// Err is the cause of a disconnect, if nats.go knows one.
	Err error
	// Reconnects is the number of reconnects of the connection so far.
	Reconnects uint64
}

// watchers dispatches a connection's events to the functions watching
// it.
type watchers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(Event)
	url  string // the last server connected to, redacted
}

// watch installs the disconnect and reconnect handlers of nc that feed
// Conn.Watch, after any that nc had.
func watch(nc *nats.Conn) *watchers {
	w := &watchers{fns: map[int]func(Event){}, url: RedactURL(nc.ConnectedUrlRedacted())}
	prevDis, prevRe := nc.Opts.DisconnectedErrCB, nc.Opts.ReconnectedCB
	nc.SetDisconnectErrHandler(func(nc *nats.Conn, err error) {
		if prevDis != nil {
			prevDis(nc, err)
		}
		if nc.IsClosed() {
			return // closed by its owner: not an outage
		}
		w.send(Event{Kind: Disconnected, Err: err, Reconnects: nc.Stats().Reconnects})
	})
	nc.SetReconnectHandler(func(nc *nats.Conn) {
		if prevRe != nil {
			prevRe(nc)
		}
		w.mu.Lock()
		w.url = RedactURL(nc.ConnectedUrlRedacted())
		w.mu.Unlock()
		w.send(Event{Kind: Reconnected, Reconnects: nc.Stats().Reconnects})
	})
	return w
}

// send hands e, with the server's URL, to every watcher.
func (w *watchers) send(e Event) {
	w.mu.Lock()
	e.URL = w.url
	fns := make([]func(Event), 0, len(w.fns))
	for _, fn := range w.fns {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn(e)
	}
}

// Watch calls fn at every disconnect and reconnect of c's connection, from
// nats.go's callback goroutine (fn must not block), until stop is called.
func (c *Conn) Watch(fn func(Event)) (stop func()) {
	w := c.events
	w.mu.Lock()
	id := w.next
	w.next++
	w.fns[id] = fn
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.fns, id)
		w.mu.Unlock()
	}
}

// LogEvents returns a function for Watch that logs each event at Warn
// level on log, with the server's URL redacted.
func LogEvents(log *slog.Logger) func(Event) {
	return func(e Event) {
		if e.Kind == Disconnected {
			log.Warn("NATS disconnected; reconnecting", "url", e.URL, "err", e.Err)
			return
		}
		log.Warn("NATS reconnected; messages in flight may be lost", "url", e.URL, "reconnects", e.Reconnects)
	}
}

// Flush waits, up to timeout, until the server has every message
// published on c. Across a reconnect it waits on: nats.go sends what was
// published meanwhile once it is back, so that the last message of a node
// that returns right after is not lost in a short outage.
func (c *Conn) Flush(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("wire: flush: %w", nats.ErrTimeout)
		}
		err := c.nc.FlushTimeout(left)
		if err == nil {
			return nil
		}
		if c.nc.IsClosed() || !(c.nc.IsReconnecting() || errors.Is(err, nats.ErrConnectionReconnecting)) {
			return fmt.Errorf("wire: flush: %w", err)
		}
		time.Sleep(min(ReconnectWait/4, time.Until(deadline)))
	}
}

// PublishData publishes data, a message encoded with codec.Marshal, on the
// job subject name with the job subject reply as its reply subject ("" for
// none), split into chunks if it exceeds the server's max_payload. Sending
// the same bytes again is how a node repeats a message after a reconnect:
// its receiver recognizes them (DESIGN "NATS outages").
func (c *Conn) PublishData(name, reply string, data []byte) error {
	if reply != "" {
		reply = c.Subject(reply)
	}
	return c.send(c.Subject(name), reply, data)
}

// Lost reports whether err, from a publish, says only that the
// connection broke: the message is lost, as one in flight would be, and
// nats.go reconnects, after which a node sends again what may be lost
// (DESIGN "NATS outages"). Besides a full buffer for the reconnect, that
// is a write on a connection that the server closed before nats.go saw
// it close (a slow consumer, say): a closed pipe in process, a closed
// socket, a broken pipe or a reset over TCP.
func Lost(err error) bool {
	for _, target := range []error{nats.ErrReconnectBufExceeded, nats.ErrConnectionReconnecting, io.ErrClosedPipe, net.ErrClosed, syscall.EPIPE, syscall.ECONNRESET} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// Job returns the name of the job that c is scoped to.
func (c *Conn) Job() string { return c.job }

// NATS returns the underlying connection.
func (c *Conn) NATS() *nats.Conn { return c.nc }

// Subject returns the full subject of name within the job.
func (c *Conn) Subject(name string) string { return c.prefix + name }

// Publish encodes v and publishes it on the job subject name, split into
// chunks if it exceeds the server's max_payload.
func Publish[T any](c *Conn, name string, v T) error {
	data, err := codec.Marshal(v)
	if err != nil {
		return err
	}
	return c.send(c.Subject(name), "", data)
}

// PublishRequest is Publish with a reply subject: answers to v are to be
// sent to the job subject reply.
func PublishRequest[T any](c *Conn, name, reply string, v T) error {
	data, err := codec.Marshal(v)
	if err != nil {
		return err
	}
	return c.send(c.Subject(name), c.Subject(reply), data)
}

// Reply encodes v and sends it as the reply to msg, split into chunks if it
// exceeds the server's max_payload.
func Reply[T any](c *Conn, msg *nats.Msg, v T) error {
	if msg.Reply == "" {
		return fmt.Errorf("wire: message on %s expects no reply", msg.Subject)
	}
	data, err := codec.Marshal(v)
	if err != nil {
		return err
	}
	return c.send(msg.Reply, "", data)
}

// ErrNoResponders is returned by Request when nobody listens on the subject.
var ErrNoResponders = nats.ErrNoResponders

// Request encodes req, sends it on the job subject name and decodes the
// reply; either may be larger than the server's max_payload. It gives up
// when ctx is done. Nobody listening ends it at once with ErrNoResponders;
// with a key (SetKey), whose replies must verify, that status, which
// carries no MAC, only adds ErrNoResponders to the error once ctx is done.
func Request[Req, Rep any](ctx context.Context, c *Conn, name string, req Req) (Rep, error) {
	return request[Req, Rep](ctx, c, name, req, false)
}

// RequestRetried is Request where nobody listening ends the wait at once
// with ErrNoResponders even with a key: for a request that its caller
// sends again after any error (a join), which a forged status can only
// make it send again sooner.
func RequestRetried[Req, Rep any](ctx context.Context, c *Conn, name string, req Req) (Rep, error) {
	return request[Req, Rep](ctx, c, name, req, true)
}

// request implements Request and RequestRetried; trustNobody says
// whether the no-responders status ends the wait with a key.
func request[Req, Rep any](ctx context.Context, c *Conn, name string, req Req, trustNobody bool) (Rep, error) {
	var rep Rep
	data, err := codec.Marshal(req)
	if err != nil {
		return rep, err
	}
	subject := c.Subject(name)
	// A reply may come in chunks, which nats.Conn.Request would not wait
	// for: listen on an inbox of our own. The server handles the SUB before
	// the request, so the reply cannot come too early. (An asynchronous
	// subscription: a synchronous one allocates a channel of 64k messages.)
	inbox := c.nc.NewInbox()
	asm := newAssembler(c.limits, pendingOnlyThis)
	asm.held = c.held
	got := make(chan mail, 1)
	var rejected atomic.Pointer[error] // the last reply dropped for its MAC
	give := func(x mail) {
		select {
		case got <- x:
		default: // the first reply or error wins
		}
	}
	var noResponders atomic.Bool // with a key: the server said nobody listens
	sub, err := c.nc.Subscribe(inbox, func(msg *nats.Msg) {
		switch {
		case c.Keyed() && !trustNobody && isNoResponders(msg):
			// Anyone who reads the request's reply subject can send this
			// status: with a key it does not end the wait, which an
			// authenticated reply may still end.
			noResponders.Store(true)
			return
		case !isNoResponders(msg):
			if err := c.admit(msg); err != nil {
				rejected.Store(&err)
				return
			}
		}
		if msg.Header != nil || !asm.idle() {
			msg = asm.add(msg)
			switch err := asm.takeErr(); {
			case msg != nil && isNoResponders(msg):
				give(mail{err: ErrNoResponders})
			case msg != nil:
				give(mail{msg: msg})
			case err != nil:
				give(mail{err: err})
			}
			return
		}
		give(mail{msg: msg})
	})
	if err == nil {
		err = sub.SetPendingLimits(1<<20, PendingBytes)
	}
	if err != nil {
		if sub != nil {
			sub.Unsubscribe()
		}
		return rep, fmt.Errorf("wire: request %s: %w", subject, err)
	}
	defer asm.clear()
	defer sub.Unsubscribe()
	if err := c.send(subject, inbox, data); err != nil {
		return rep, err
	}
	var x mail
	select {
	case x = <-got:
	case <-ctx.Done():
		x.err = asm.annotate(ctx.Err())
		if p := rejected.Load(); p != nil {
			x.err = fmt.Errorf("%w; a reply was dropped: %w", x.err, *p)
		}
		if noResponders.Load() {
			x.err = fmt.Errorf("%w (%w)", x.err, ErrNoResponders)
		}
	}
	if x.err != nil {
		return rep, fmt.Errorf("wire: request %s: %w", subject, x.err)
	}
	if err := codec.Unmarshal(x.msg.Data, &rep); err != nil {
		return rep, fmt.Errorf("wire: reply on %s: %w", subject, err)
	}
	return rep, nil
}

// IsNoResponders reports whether msg is the server's answer to a request
// that nobody listens to (status 503, no payload): what a reply subject
// gets when a request is sent while its receiver is away, reconnecting
// say.
func IsNoResponders(msg *nats.Msg) bool { return isNoResponders(msg) }

// isNoResponders reports whether msg is the server's answer to a request
// that nobody listens to.
func isNoResponders(msg *nats.Msg) bool {
	return len(msg.Data) == 0 && msg.Header != nil && msg.Header.Get("Status") == "503"
}

// PendingBytes is what nats.go may queue for one subscription of a Conn
// before its handler (or a synchronous Next) takes it: 256 MiB. A
// Mailbox's and a request's handlers never block, so their queues hold
// only what comes while the handler runs; past it nats.go drops messages
// (a slow consumer), which their receivers see as messages missing.
const PendingBytes = 256 << 20

// subscribeSync subscribes to the full subject with a queue of up to
// PendingBytes.
func (c *Conn) subscribeSync(subject string) (*nats.Subscription, error) {
	sub, err := c.nc.SubscribeSync(subject)
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(1<<20, PendingBytes); err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	return sub, nil
}

// next waits for the next whole message on the synchronous subscription
// sub, or for a chunked message it had to drop (ErrIncomplete).
func (a *assembler) next(ctx context.Context, sub *nats.Subscription) (*nats.Msg, error) {
	for {
		if err := a.takeErr(); err != nil {
			return nil, err
		}
		a.sweep(sub)
		if err := a.takeErr(); err != nil {
			return nil, err
		}
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, a.annotate(err)
		}
		if a.admit != nil && a.admit(msg) != nil {
			continue
		}
		if msg.Header == nil && len(a.parts) == 0 {
			return msg, nil
		}
		if whole := a.add(msg); whole != nil {
			return whole, nil
		}
	}
}

// Inbox is a subscription that yields decoded values of type T in arrival
// order, chunked messages put together again.
type Inbox[T any] struct {
	sub  *nats.Subscription
	asm  *assembler
	turn chan struct{} // held by the Next that reads sub
}

// Subscribe subscribes to the job subject name. Messages queue in the
// client (up to PendingBytes) until Next takes them.
func Subscribe[T any](c *Conn, name string) (*Inbox[T], error) {
	subject := c.Subject(name)
	sub, err := c.subscribeSync(subject)
	if err != nil {
		return nil, fmt.Errorf("wire: subscribe %s: %w", subject, err)
	}
	asm := newAssembler(c.limits, pendingEmpty)
	asm.admit, asm.held = c.admit, c.held
	return &Inbox[T]{sub: sub, asm: asm, turn: make(chan struct{}, 1)}, nil
}

// Next waits for the next message and decodes it. It returns the raw
// message too, for replies: for a message that came in chunks, one with the
// whole payload and the sender's subject and reply subject. It gives up when
// ctx is done. An error wrapping ErrIncomplete reports a chunked message
// that was dropped; the next call goes on with the following messages.
func (in *Inbox[T]) Next(ctx context.Context) (T, *nats.Msg, error) {
	var v T
	select {
	case in.turn <- struct{}{}:
	case <-ctx.Done():
		return v, nil, fmt.Errorf("wire: waiting on %s: %w", in.sub.Subject, ctx.Err())
	}
	msg, err := in.asm.next(ctx, in.sub)
	<-in.turn
	if err != nil {
		if errors.Is(err, ErrIncomplete) {
			return v, nil, err
		}
		return v, nil, fmt.Errorf("wire: waiting on %s: %w", in.sub.Subject, err)
	}
	if err := codec.Unmarshal(msg.Data, &v); err != nil {
		return v, msg, fmt.Errorf("wire: message on %s: %w", in.sub.Subject, err)
	}
	return v, msg, nil
}

// Close unsubscribes.
func (in *Inbox[T]) Close() error {
	err := in.sub.Unsubscribe()
	in.asm.clear()
	return err
}

// Mailbox is one queue fed by several subjects, for a node that waits on
// more than one kind of message at a time. Messages of one subject from one
// sender keep their order.
type Mailbox struct {
	held   *held
	signal chan struct{} // a token while the queue may have mail
	done   chan struct{}
	subs   []*nats.Subscription
	asms   []*assembler

	mu     sync.Mutex
	q      []mail
	closed bool
}

// mail is a whole message, or a chunked message dropped; neither is a wake.
type mail struct {
	msg *nats.Msg
	err error
}

// NewMailbox subscribes to the job subjects names. Messages queue in the
// mailbox until Next takes them, within the Conn's MaxHeld: the handlers
// never block, so nats.go's own queue stays short.
func NewMailbox(c *Conn, names ...string) (*Mailbox, error) {
	m := &Mailbox{held: c.held, signal: make(chan struct{}, 1), done: make(chan struct{})}
	for _, name := range names {
		subject := c.Subject(name)
		asm := newAssembler(c.limits, pendingOnlyThis)
		asm.held = c.held
		sub, err := c.nc.Subscribe(subject, func(msg *nats.Msg) {
			if c.admit(msg) != nil {
				return
			}
			if msg.Header == nil && asm.idle() {
				m.put(mail{msg: msg})
				return
			}
			whole := asm.add(msg)
			for err := asm.takeErr(); err != nil; err = asm.takeErr() {
				m.put(mail{err: err})
			}
			if whole != nil {
				m.put(mail{msg: whole})
			}
		})
		if err == nil {
			err = sub.SetPendingLimits(1<<20, PendingBytes)
		}
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("wire: subscribe %s: %w", subject, err)
		}
		m.subs = append(m.subs, sub)
		m.asms = append(m.asms, asm)
	}
	return m, nil
}

// put queues x for Next, unless the mailbox is closed. A message that does
// not fit the Conn's MaxHeld is dropped for an error that says so; errors
// count as their text's bytes.
func (m *Mailbox) put(x mail) {
	if !m.held.take(x.size()) {
		what := "a message"
		if x.msg != nil {
			what = fmt.Sprintf("a message of %d bytes on %s", len(x.msg.Data), x.msg.Subject)
		}
		x = mail{err: fmt.Errorf("wire: %w: %s dropped: %s", ErrIncomplete, what, m.held)}
		if !m.held.take(x.size()) {
			return // errors enough are queued to say so
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.held.give(x.size())
		return
	}
	m.q = append(m.q, x)
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// size is what x holds of the Conn's MaxHeld.
func (x mail) size() int64 {
	switch {
	case x.msg != nil:
		return int64(len(x.msg.Data))
	case x.err != nil:
		return int64(len(x.err.Error()))
	}
	return 0
}

// Next waits for the next message on any of the mailbox's subjects; decode
// it with codec.Unmarshal. A message that came in chunks is returned whole,
// with the sender's subject and reply subject. It gives up when ctx is done. An
// error wrapping ErrIncomplete reports a chunked message that was dropped,
// or a message the Conn had no room to hold (MaxHeld);
// the next call goes on with the following messages.
func (m *Mailbox) Next(ctx context.Context) (*nats.Msg, error) {
	for {
		m.mu.Lock()
		if len(m.q) > 0 {
			x := m.q[0]
			m.q[0] = mail{}
			m.q = m.q[1:]
			if len(m.q) > 0 {
				select {
				case m.signal <- struct{}{}:
				default:
				}
			}
			m.mu.Unlock()
			m.held.give(x.size())
			return x.msg, x.err
		}
		m.mu.Unlock()
		select {
		case <-m.signal:
		case <-ctx.Done():
			var held []string
			for _, asm := range m.asms {
				if d := asm.describe(); d != "" {
					held = append(held, d)
				}
			}
			if len(held) > 0 {
				return nil, fmt.Errorf("wire: waiting for messages: %w (%s)", ctx.Err(), strings.Join(held, "; "))
			}
			return nil, fmt.Errorf("wire: waiting for messages: %w", ctx.Err())
		}
	}
}

// Wake makes a Next that waits return a nil message and no error (or the
// next Next, if none waits), so that its caller looks at what changed
// meanwhile (a reconnect, say).
func (m *Mailbox) Wake() {
	m.put(mail{})
}

// Close unsubscribes from every subject.
func (m *Mailbox) Close() error {
	select {
	case <-m.done:
		return nil
	default:
	}
	close(m.done)
	var errs []error
	for _, sub := range m.subs {
		errs = append(errs, sub.Unsubscribe())
	}
	for _, asm := range m.asms {
		asm.clear()
	}
	// What was queued is given back, and what comes after is not taken.
	m.mu.Lock()
	m.closed = true
	var queued int64
	for _, x := range m.q {
		queued += x.size()
	}
	m.q = nil
	m.mu.Unlock()
	m.held.give(queued)
	return errors.Join(errs...)
}

// ReconnectWait is how long a connection of Connect waits between two
// attempts to reconnect (plus a random jitter of as much), and
// ReconnectBuffer how many bytes it holds of what is published meanwhile:
// a short outage of the server costs a job a fraction of a second.
const (
	ReconnectWait   = 100 * time.Millisecond
	ReconnectBuffer = 64 << 20
)

// Reconnects are the options of a connection that reconnects for ever,
// every ReconnectWait, holding ReconnectBuffer bytes meanwhile: Connect's,
// and those an in-process connection to the embedded server needs too
// (nats.go's defaults wait 2 s between 60 tries).
func Reconnects() []nats.Option {
	return []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(ReconnectWait),
		nats.ReconnectJitter(ReconnectWait, time.Second),
		nats.ReconnectBufSize(ReconnectBuffer),
	}
}

// Connect dials the NATS server at url (a comma-separated list for a
// cluster) and gives up after timeout; opts add to the connection's
// options (credentials, TLS). Its error never shows the credentials of
// url: see RedactURL.
func Connect(url, name string, timeout time.Duration, opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{
		nats.Name(name),
		nats.Timeout(timeout),
		// A server that is not there at the start is a usage error (a
		// wrong URL), said at once; one that goes away later is waited
		// for (DESIGN "How a job fails").
		nats.RetryOnFailedConnect(false),
	}, Reconnects()...)
	all = append(all, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", RedactURL(url), Redact(err, url))
	}
	return nc, nil
}

// userinfo matches the user information of a URL, "scheme://userinfo@",
// in any text: the scheme (group 1) and the user information (group 2).
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^/?#@\s,"']+)@`)

// Redacted stands for a password or token that RedactURL removed.
const Redacted = "xxxxx"

// RedactURL returns s, a URL, a comma-separated list of them, or any text
// that contains some, with their passwords replaced by Redacted:
// "nats://alice:s3cret@host" becomes "nats://alice:xxxxx@host". A user
// without a password, "nats://TOKEN@host", is a token and is replaced
// whole.
func RedactURL(s string) string {
	return userinfo.ReplaceAllStringFunc(s, func(m string) string {
		sub := userinfo.FindStringSubmatch(m)
		user, _, hasPassword := strings.Cut(sub[2], ":")
		if !hasPassword {
			user = Redacted
		} else {
			user += ":" + Redacted
		}
		return sub[1] + user + "@"
	})
}

// Secrets returns the passwords and tokens in the user information of
// url (a comma-separated list of URLs), as written and unescaped, longest
// first, so that a text can be scrubbed of them wherever they appear, in
// a URL or not.
func Secrets(url string) []string {
	var out []string
	for _, m := range userinfo.FindAllStringSubmatch(url, -1) {
		user, password, hasPassword := strings.Cut(m[2], ":")
		secret := password
		if !hasPassword {
			secret = user
		}
		if secret == "" {
			continue
		}
		out = append(out, secret)
		if u, err := neturl.PathUnescape(secret); err == nil && u != secret && u != "" {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// minSecret is the shortest secret that Scrub replaces outside a URL:
// replacing a shorter one everywhere would mangle every word that holds
// it, and a URL shows it in full anyway, which RedactURL catches.
const minSecret = 4

// Scrub returns s with the URLs' credentials redacted (RedactURL) and
// every secret of at least 4 bytes replaced by Redacted wherever it
// appears.
func Scrub(s string, secrets []string) string {
	s = RedactURL(s)
	for _, secret := range secrets {
		if len(secret) >= minSecret {
			s = strings.ReplaceAll(s, secret, Redacted)
		}
	}
	return s
}

// Redact returns err with the credentials of url scrubbed from its
// message (Scrub): err itself if there is nothing to scrub. The errors of its chain stay reachable
// with errors.Is and errors.As; their own messages are not scrubbed.
func Redact(err error, url string) error {
	secrets := Secrets(url)
	if err == nil || Scrub(err.Error(), secrets) == err.Error() {
		return err
	}
	return redacted{err, secrets}
}

// redacted is an error whose message is scrubbed of secrets.
type redacted struct {
	err     error
	secrets []string
}

func (e redacted) Error() string { return Scrub(e.err.Error(), e.secrets) }
func (e redacted) Unwrap() error { return e.err }
