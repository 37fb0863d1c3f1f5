// Package natsserver runs a nats-server inside the process: the embedded
// server of an all-in-one job (package job) and of `strads server`. It is
// the only package of the module that links nats-server; the roles need
// only a client (package wire), so an app or a role binary that connects to
// an external server does not carry a server with it (DESIGN "Package layout").
package natsserver

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// MaxPayload is the max_payload a server is started with unless told
// otherwise: 8 MiB, deliberately above NATS's 1 MiB default so that
// model-sized messages (feature statistics of a few hundred thousand
// variables) fit in one message. Larger messages travel in chunks (see
// wire.Publish), so the roles work with any server's max_payload.
const MaxPayload = 8 << 20

// MaxPending is the max_pending a server is started with unless its
// config file says otherwise: what it may queue for one client that reads
// slower than the others publish to it before it drops the client as a
// slow consumer. It is 1 GiB, what wire lets the receivers of one
// connection hold (wire.MaxHeld), well above nats-server's 64 MiB: a
// round's partials all go to the coordinator at once, and 16 workers'
// parts of a factor matrix of 480,000 × 40 float64 are 154 MB.
const MaxPending = 1 << 30

// DefaultHost is the interface a server listens on unless told otherwise:
// the loopback interface, so that a server started without thought is not
// open to the network (nats-server alone listens on all interfaces).
const DefaultHost = "127.0.0.1"

// Options configures a server.
type Options struct {
	// ConfigFile, if set, is a nats-server configuration file, read with
	// nats-server's own parser (server.ProcessConfigFile): clustering,
	// accounts and users, TLS, logging, limits. The fields below override
	// what it says where they say so.
	ConfigFile string
	// ConfigAddr takes the host and port to listen on from ConfigFile
	// (DefaultHost where the file names no host, 4222 where it names no
	// port; "port: -1" picks a free one) instead of Host and Port.
	ConfigAddr bool
	// Host is the interface to listen on: an IP address or a host name,
	// "0.0.0.0" all of them; "" means DefaultHost.
	Host string
	// Port is the TCP port to listen on: 0 picks a free one, −1 listens on
	// no TCP port at all (in-process connections only).
	Port int
	// MaxPayload is the largest message the server accepts; 0 means the
	// config file's max_payload, or MaxPayload where there is none.
	MaxPayload int32
	// StoreDir, if set, enables JetStream with its file store in this
	// directory (created if missing): the checkpoints and the data sets of
	// jobs live there (DESIGN "Checkpoints"), and survive the server. "" leaves
	// JetStream as the config file says (off without one).
	StoreDir string
}

// Server is a nats-server running in this process.
type Server struct {
	*server.Server
}

// serverOptions returns the nats-server options that opts describe.
func serverOptions(opts Options) (*server.Options, error) {
	so := &server.Options{}
	if opts.ConfigFile != "" {
		var err error
		if so, err = server.ProcessConfigFile(opts.ConfigFile); err != nil {
			return nil, fmt.Errorf("natsserver: config %s: %w", opts.ConfigFile, err)
		}
	} else {
		so.NoLog = true
	}
	so.NoSigs = true
	if opts.StoreDir != "" {
		so.JetStream = true
		so.StoreDir = opts.StoreDir
	}
	if opts.MaxPayload != 0 {
		so.MaxPayload = opts.MaxPayload
	}
	if so.MaxPayload == 0 {
		so.MaxPayload = MaxPayload
	}
	if so.MaxPending == 0 {
		so.MaxPending = MaxPending
	}
	if opts.ConfigFile != "" && opts.ConfigAddr {
		if so.Host == "" {
			so.Host = DefaultHost
		}
		return so, nil
	}
	so.Host = opts.Host
	if so.Host == "" {
		so.Host = DefaultHost
	}
	so.Port = opts.Port
	switch {
	case opts.Port == 0:
		so.Port = server.RANDOM_PORT
	case opts.Port < 0:
		so.DontListen = true
	}
	return so, nil
}

// Start starts a server as opts says and waits until it accepts
// connections.
func Start(opts Options) (*Server, error) {
	so, err := serverOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := checkPort(so); err != nil {
		return nil, err
	}
	ns, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("natsserver: %w", err)
	}
	if !so.NoLog {
		// The config file's logging: its log_file, debug, trace, syslog.
		ns.ConfigureLogger()
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("natsserver: not ready for connections on %s after 10s (is the port taken?)", net.JoinHostPort(so.Host, strconv.Itoa(so.Port)))
	}
	return &Server{ns}, nil
}

// checkPort tries the port so names, if a fixed one, so that a port taken
// fails at once with the system's error rather than after Start's wait
// (nats-server's listener only logs its error).
func checkPort(so *server.Options) error {
	port := so.Port
	if port == 0 {
		port = server.DEFAULT_PORT
	}
	if so.DontListen || port < 0 {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(so.Host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("natsserver: %w", err)
	}
	return ln.Close()
}

// Stop shuts the server down and waits for it.
func (s *Server) Stop() {
	s.Shutdown()
	s.WaitForShutdown()
}

// Loopback reports whether the server listens on a loopback interface
// only, so that no other machine can reach it; false without a TCP
// listener.
func (s *Server) Loopback() bool {
	a, ok := s.Addr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// ConnectInProcess opens a client connection to s that bypasses TCP,
// with nats.go's options opts.
func (s *Server) ConnectInProcess(name string, opts ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect("", append([]nats.Option{nats.InProcessServer(s.Server), nats.Name(name)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("natsserver: in-process connection: %w", err)
	}
	return nc, nil
}
