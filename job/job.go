// Package job runs a whole job in one process: an embedded nats-server (or
// an external one), the scheduler nodes, one coordinator node and the
// worker nodes, each on its own connection, exactly as they would run on
// separate machines.
package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/coordinator"
	"github.com/strads-go/strads/monitor"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/scheduler/node"
	"github.com/strads-go/strads/schmp"
	"github.com/strads-go/strads/wire"
	"github.com/strads-go/strads/worker"
)

// Options configures an all-in-one job.
type Options struct {
	// Job names the job; its subjects live under strads.<Job>.
	Job string
	// NATS is the URL of an external NATS server; empty starts an embedded
	// one, to which the nodes connect in-process: it listens on no TCP
	// port unless Listen says where.
	NATS string
	// NATSOptions add to the options of every node's connection to the
	// external server of NATS: credentials, TLS (see wire.Connect).
	NATSOptions []nats.Option
	// Listen, if set, is the address (host:port, port 0: a free one) where
	// the embedded server also takes TCP connections, for other processes
	// (a tool that watches the job's subjects, say). Empty: none, so that
	// no other process on the machine reaches the job (DESIGN "Failures and durability").
	Listen string
	// Store, if set, enables JetStream in the embedded server, with its
	// file store in this directory (created if missing): checkpoints and
	// data sets live there and survive the job (DESIGN "Checkpoints"). Unused with
	// NATS.
	Store string
	// Listening, if set, is called with the embedded server's client URL
	// once it listens on Listen.
	Listening func(url string)
	// Coordinator configures the coordinator node; its Workers and
	// Schedulers are the numbers of worker and scheduler nodes started.
	Coordinator coordinator.Options
	// Timeout bounds the waits of the worker and scheduler nodes.
	Timeout time.Duration
	// Logger receives every node's log; nil discards it.
	Logger *slog.Logger
	// Monitor, if set, receives every node's metrics (the coordinator's
	// through Coordinator.Monitor, which Run sets to it).
	Monitor *monitor.Metrics
	// Key, if set, is the job's key: every node's messages carry a MAC
	// under it, and each node drops those that do not (DESIGN "Hostile traffic"). A node
	// of another process joins the job only with the same key.
	Key wire.Key
}

// Run runs prog's job to the end. It returns the coordinator's result, or
// the error that ended the job (the coordinator's, if it has one).
func Run[P, R, U, S any](ctx context.Context, prog schmp.Program[P, R, U, S], opts Options) (*coordinator.Result, error) {
	if err := opts.Coordinator.Validate(); err != nil {
		return nil, err
	}
	if err := wire.CheckJob(opts.Job); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	connect, private, stop, err := connector(opts, log)
	if err != nil {
		return nil, err
	}
	defer stop()
	// No other process can reach an embedded server without TCP: no other
	// coordinator can hold the job's name.
	opts.Coordinator.Private = opts.Coordinator.Private || private

	// A node that fails cancels the others with errJobFailed: they do not
	// report an interrupt to the coordinator (DESIGN "How a job fails"), which knows.
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(errJobFailed) }
	defer cancel()
	// The schedulers and workers run on rctx: ctx, unless the job takes
	// checkpoints: an interrupt (ctx done) then reaches the coordinator
	// alone, which takes a final checkpoint, with the others' help, before
	// it stops and the others with it (DESIGN "Checkpoints").
	rctx := ctx
	if opts.Coordinator.Checkpointing() {
		var rcancel context.CancelCauseFunc
		rctx, rcancel = context.WithCancelCause(context.WithoutCancel(ctx))
		defer rcancel(errJobFailed)
		inner := cancel
		cancel = func() { inner(); rcancel(errJobFailed) }
	}
	var wg sync.WaitGroup
	schedulers := max(opts.Coordinator.Schedulers, 1)
	errs := make(chan error, opts.Coordinator.Workers+schedulers)
	start := func(name string, run func(c *wire.Conn) error) error {
		nc, err := connect(name)
		if err != nil {
			return err
		}
		c, err := nodeConn(nc, name, opts)
		if err != nil {
			nc.Close()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer nc.Close()
			if err := run(c); err != nil {
				errs <- err
				// A failed node fails the job; the coordinator notices
				// through its own timeouts, but there is no need to wait.
				cancel()
			}
		}()
		return nil
	}
	// The coordinator first: the roles start once it holds the job's name
	// (DESIGN "Roles, subjects and messages"), so that none joins another job of the name, and a
	// coordinator refused for its name fails the job with that reason.
	nc, err := connect("coordinator")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	c, err := wire.NewConn(nc, opts.Job)
	if err == nil {
		err = c.SetKey(opts.Key)
	}
	if err == nil && opts.Monitor != nil {
		err = opts.Monitor.AddConn("coordinator", nc)
	}
	if err != nil {
		return nil, err
	}
	copts := opts.Coordinator
	if opts.Monitor != nil {
		copts.Monitor = opts.Monitor
	}
	if copts.Logger == nil {
		copts.Logger = log
	}
	claimed := make(chan struct{})
	copts.Claimed = func() {
		close(claimed)
		if opts.Coordinator.Claimed != nil {
			opts.Coordinator.Claimed()
		}
	}
	var res *coordinator.Result
	var cerr error
	coordDone := make(chan struct{})
	go func() {
		defer close(coordDone)
		res, cerr = coordinator.Run(ctx, c, prog.NewCoordinator, copts)
		if cerr != nil {
			cancel()
		}
	}()
	select {
	case <-claimed:
	case <-coordDone:
		return nil, cerr
	}

	join := opts.Coordinator.JoinTimeout
	for i := range schedulers {
		if err := start(fmt.Sprintf("scheduler-%d", i), func(c *wire.Conn) error {
			return node.Run(rctx, c, prog.NewScheduler, node.Options{JoinTimeout: join, Timeout: opts.Timeout, Logger: log, Monitor: opts.Monitor})
		}); err != nil {
			cancel()
			<-coordDone
			wg.Wait()
			return nil, err
		}
	}
	for i := 0; i < opts.Coordinator.Workers; i++ {
		if err := start(fmt.Sprintf("worker-%d", i), func(c *wire.Conn) error {
			return worker.Run(rctx, c, prog.NewWorker, worker.Options{JoinTimeout: join, Timeout: opts.Timeout, Logger: log, Monitor: opts.Monitor})
		}); err != nil {
			cancel()
			<-coordDone
			wg.Wait()
			return nil, err
		}
	}
	<-coordDone
	wg.Wait()
	close(errs)
	var roleErrs []error // the other nodes' own errors, not cancellations, in the order they failed
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			roleErrs = append(roleErrs, err)
		}
	}
	// The coordinator's error names the cause, unless it only saw the job
	// cancelled because another node failed first: then that node's does.
	// A node's error reaches the coordinator as text, which it relays; the
	// node's own error says the same with its chain of causes (a
	// *libsvm.ParseError, say), which the caller can inspect. Several nodes
	// may fail (every worker on one bad file), and the one whose text the
	// coordinator relays need not be the first to have failed here.
	if cerr != nil && !errors.Is(cerr, context.Canceled) {
		for _, err := range roleErrs {
			if strings.Contains(cerr.Error(), err.Error()) {
				return nil, err
			}
		}
		return nil, cerr
	}
	if len(roleErrs) > 0 {
		return nil, roleErrs[0]
	}
	if cerr != nil {
		return nil, cerr
	}
	return res, nil
}

// connector returns how a whole job's nodes connect: to the external
// server of opts.NATS, or to an embedded one that it starts (private: it
// takes no TCP connection), and the function that stops that server.
func connector(opts Options, log *slog.Logger) (connect func(name string) (*nats.Conn, error), private bool, stop func(), err error) {
	if opts.NATS != "" {
		return func(name string) (*nats.Conn, error) {
			return wire.Connect(opts.NATS, name, 10*time.Second, opts.NATSOptions...)
		}, false, func() {}, nil
	}
	srv, err := startEmbedded(opts.Listen, opts.Store)
	if err != nil {
		return nil, false, nil, err
	}
	if srv.Addr() != nil {
		log.Info("embedded nats-server", "url", srv.ClientURL())
		if opts.Listening != nil {
			opts.Listening(srv.ClientURL())
		}
	} else {
		log.Info("embedded nats-server, in-process connections only")
	}
	connect = func(name string) (*nats.Conn, error) { return srv.ConnectInProcess(name, wire.Reconnects()...) }
	return connect, srv.Addr() == nil, srv.Stop, nil
}

// nodeConn returns the job's connection of node name over nc: under
// opts.Job, with opts.Key, and watched by opts.Monitor.
func nodeConn(nc *nats.Conn, name string, opts Options) (*wire.Conn, error) {
	c, err := wire.NewConn(nc, opts.Job)
	if err == nil {
		err = c.SetKey(opts.Key)
	}
	if err == nil && opts.Monitor != nil {
		err = opts.Monitor.AddConn(name, nc)
	}
	return c, err
}

// Dial starts what a whole job's nodes connect through, as Run does (the
// embedded nats-server unless opts.NATS is set; opts.Listen, Store,
// Listening and Logger as there), for a job that runs its nodes itself
// (a parameter-server job: package ps/node). dial opens a node's
// connection, under opts.Job and with opts.Key; close closes every
// connection it opened and stops the server.
func Dial(opts Options) (dial func(name string) (*wire.Conn, error), close func(), err error) {
	if err := wire.CheckJob(opts.Job); err != nil {
		return nil, nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	connect, _, stop, err := connector(opts, log)
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	var conns []*nats.Conn
	dial = func(name string) (*wire.Conn, error) {
		nc, err := connect(name)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		conns = append(conns, nc)
		mu.Unlock()
		return nodeConn(nc, name, opts)
	}
	close = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			nc.Close()
		}
		conns = nil
		stop()
	}
	return dial, close, nil
}

// errJobFailed is the cause of the context of a job's nodes when one of
// them failed: it matches protocol.ErrAborted and context.Canceled.
var errJobFailed = protocol.Aborted(context.Canceled)

// startEmbedded starts the embedded server of a job: on no TCP port if
// listen is empty, else on listen (host:port; no host: loopback); with
// JetStream stored in store if it is not empty.
func startEmbedded(listen, store string) (*natsserver.Server, error) {
	o := natsserver.Options{Port: -1, StoreDir: store}
	if listen != "" {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, fmt.Errorf("job: listen %q: want HOST:PORT: %w", listen, err)
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("job: listen %q: port %q is not a number from 0 to 65535", listen, port)
		}
		o.Host, o.Port = host, int(p)
	}
	return natsserver.Start(o)
}
