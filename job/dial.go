package job

import (
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/wire"
)

// Dialer is how a job that runs on another runtime than the coordinator's
// (the parameter server of package ps/node, say) reaches its NATS server:
// Dial returns a new connection for every node, under the job's subjects
// and key, and Close closes them all and stops the embedded server.
type Dialer struct {
	stop  func()
	mu    sync.Mutex
	conns []*nats.Conn
	dial  func(name string) (*wire.Conn, error)
}

// NewDialer starts the embedded server of opts (or connects to opts.NATS,
// with opts.NATSOptions, opts.Key and opts.Job): the NATS part of Run.
// Only those fields and Listen, Store, Listening and Logger count.
func NewDialer(opts Options) (*Dialer, error) {
	if err := wire.CheckJob(opts.Job); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Dialer{stop: func() {}}
	connect := func(name string) (*nats.Conn, error) {
		return wire.Connect(opts.NATS, name, 10*time.Second, opts.NATSOptions...)
	}
	if opts.NATS == "" {
		srv, err := startEmbedded(opts.Listen, opts.Store)
		if err != nil {
			return nil, err
		}
		d.stop = srv.Stop
		if srv.Addr() != nil {
			log.Info("embedded nats-server", "url", srv.ClientURL())
			if opts.Listening != nil {
				opts.Listening(srv.ClientURL())
			}
		}
		connect = srv.ConnectInProcess
	}
	d.dial = func(name string) (*wire.Conn, error) {
		nc, err := connect(name)
		if err != nil {
			return nil, err
		}
		d.mu.Lock()
		d.conns = append(d.conns, nc)
		d.mu.Unlock()
		c, err := wire.NewConn(nc, opts.Job)
		if err != nil {
			return nil, err
		}
		if err := c.SetKey(opts.Key); err != nil {
			return nil, err
		}
		return c, nil
	}
	return d, nil
}

// Dial returns a new connection named name.
func (d *Dialer) Dial(name string) (*wire.Conn, error) {
	return d.dial(name)
}

// Close closes every connection Dial made and stops the embedded server.
func (d *Dialer) Close() {
	d.mu.Lock()
	conns := d.conns
	d.conns = nil
	d.mu.Unlock()
	for _, nc := range conns {
		nc.Close()
	}
	d.stop()
}
