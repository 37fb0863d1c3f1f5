package wire

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/nats-io/nats.go"
)

// Conn is a NATS connection scoped to one job: every subject it names lives
// under strads.<job>.
type Conn struct {
	nc     *nats.Conn
	prefix string
}

var jobName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// CheckJob returns an error unless job is a valid job name: letters, digits,
// '-' and '_' (it becomes one token of a NATS subject).
func CheckJob(job string) error {
	if !jobName.MatchString(job) {
		return fmt.Errorf("--job %q: want letters, digits, '-' or '_'", job)
	}
	return nil
}

// NewConn scopes nc to job. The caller keeps ownership of nc.
func NewConn(nc *nats.Conn, job string) (*Conn, error) {
	if err := CheckJob(job); err != nil {
		return nil, err
	}
	return &Conn{nc: nc, prefix: "strads." + job + "."}, nil
}

// NATS returns the underlying connection.
func (c *Conn) NATS() *nats.Conn { return c.nc }

// Subject returns the full subject of name within the job.
func (c *Conn) Subject(name string) string { return c.prefix + name }

// Publish encodes v and publishes it on the job subject name.
func Publish[T any](c *Conn, name string, v T) error {
	data, err := Marshal(v)
	if err != nil {
		return err
	}
	return c.publish(c.Subject(name), data)
}

// PublishRequest is Publish with a reply subject: answers to v are to be
// sent to the job subject reply.
func PublishRequest[T any](c *Conn, name, reply string, v T) error {
	data, err := Marshal(v)
	if err != nil {
		return err
	}
	subject := c.Subject(name)
	if err := c.checkSize(subject, data); err != nil {
		return err
	}
	if err := c.nc.PublishRequest(subject, c.Subject(reply), data); err != nil {
		return fmt.Errorf("wire: publish %s: %w", subject, err)
	}
	return nil
}

func (c *Conn) checkSize(subject string, data []byte) error {
	if max := c.nc.MaxPayload(); int64(len(data)) > max {
		return fmt.Errorf("wire: message of %d bytes on %s exceeds the server's max_payload of %d bytes", len(data), subject, max)
	}
	return nil
}

func (c *Conn) publish(subject string, data []byte) error {
	if err := c.checkSize(subject, data); err != nil {
		return err
	}
	if err := c.nc.Publish(subject, data); err != nil {
		return fmt.Errorf("wire: publish %s: %w", subject, err)
	}
	return nil
}

// Reply encodes v and sends it as the reply to msg.
func Reply[T any](c *Conn, msg *nats.Msg, v T) error {
	if msg.Reply == "" {
		return fmt.Errorf("wire: message on %s expects no reply", msg.Subject)
	}
	data, err := Marshal(v)
	if err != nil {
		return err
	}
	return c.publish(msg.Reply, data)
}

// ErrNoResponders is returned by Request when nobody listens on the subject.
var ErrNoResponders = nats.ErrNoResponders

// Request encodes req, sends it on the job subject name and decodes the
// reply. It gives up when ctx is done.
func Request[Req, Rep any](ctx context.Context, c *Conn, name string, req Req) (Rep, error) {
	var rep Rep
	data, err := Marshal(req)
	if err != nil {
		return rep, err
	}
	subject := c.Subject(name)
	if max := c.nc.MaxPayload(); int64(len(data)) > max {
		return rep, fmt.Errorf("wire: request of %d bytes on %s exceeds the server's max_payload of %d bytes", len(data), subject, max)
	}
	msg, err := c.nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return rep, fmt.Errorf("wire: request %s: %w", subject, ErrNoResponders)
		}
		return rep, fmt.Errorf("wire: request %s: %w", subject, err)
	}
	if err := Unmarshal(msg.Data, &rep); err != nil {
		return rep, fmt.Errorf("wire: reply on %s: %w", subject, err)
	}
	return rep, nil
}

// Inbox is a subscription that yields decoded values of type T in arrival
// order.
type Inbox[T any] struct {
	sub *nats.Subscription
}

// Subscribe subscribes to the job subject name. Messages queue in the
// client (up to 1 GiB) until Next takes them.
func Subscribe[T any](c *Conn, name string) (*Inbox[T], error) {
	subject := c.Subject(name)
	sub, err := c.nc.SubscribeSync(subject)
	if err != nil {
		return nil, fmt.Errorf("wire: subscribe %s: %w", subject, err)
	}
	if err := sub.SetPendingLimits(1<<20, 1<<30); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("wire: subscribe %s: %w", subject, err)
	}
	return &Inbox[T]{sub: sub}, nil
}

// Next waits for the next message and decodes it. It returns the raw
// message too, for replies. It gives up when ctx is done.
func (in *Inbox[T]) Next(ctx context.Context) (T, *nats.Msg, error) {
	var v T
	msg, err := in.sub.NextMsgWithContext(ctx)
	if err != nil {
		return v, nil, fmt.Errorf("wire: waiting on %s: %w", in.sub.Subject, err)
	}
	if err := Unmarshal(msg.Data, &v); err != nil {
		return v, msg, fmt.Errorf("wire: message on %s: %w", in.sub.Subject, err)
	}
	return v, msg, nil
}

// Close unsubscribes.
func (in *Inbox[T]) Close() error { return in.sub.Unsubscribe() }

// Mailbox is one queue fed by several subjects, for a node that waits on
// more than one kind of message at a time. Messages of one subject from one
// sender keep their order.
type Mailbox struct {
	ch   chan *nats.Msg
	done chan struct{}
	subs []*nats.Subscription
}

// NewMailbox subscribes to the job subjects names. Messages queue in the
// client (up to 1 GiB per subject) until Next takes them.
func NewMailbox(c *Conn, names ...string) (*Mailbox, error) {
	m := &Mailbox{ch: make(chan *nats.Msg), done: make(chan struct{})}
	for _, name := range names {
		subject := c.Subject(name)
		sub, err := c.nc.Subscribe(subject, func(msg *nats.Msg) {
			select {
			case m.ch <- msg:
			case <-m.done:
			}
		})
		if err == nil {
			err = sub.SetPendingLimits(1<<20, 1<<30)
		}
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("wire: subscribe %s: %w", subject, err)
		}
		m.subs = append(m.subs, sub)
	}
	return m, nil
}

// Next waits for the next message on any of the mailbox's subjects; decode
// it with Unmarshal. It gives up when ctx is done.
func (m *Mailbox) Next(ctx context.Context) (*nats.Msg, error) {
	select {
	case msg := <-m.ch:
		return msg, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wire: waiting for messages: %w", ctx.Err())
	}
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
	return errors.Join(errs...)
}
