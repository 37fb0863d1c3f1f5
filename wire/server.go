package wire

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// MaxPayload is the max_payload the embedded server is started with: 8 MiB,
// deliberately above NATS's 1 MiB default so that model-sized messages
// (feature statistics of a few hundred thousand variables) fit in one
// message. Larger messages travel in chunks (see Publish).
const MaxPayload = 8 << 20

// Server is an embedded nats-server.
type Server struct {
	*server.Server
}

// StartServer starts a nats-server in this process, listening on
// 127.0.0.1:port (port 0 picks a free one, -1 listens on no TCP port at all,
// only in-process connections).
func StartServer(port int) (*Server, error) {
	return startServer(port, MaxPayload)
}

// startServer is StartServer with the given max_payload, for tests.
func startServer(port int, maxPayload int32) (*Server, error) {
	opts := &server.Options{
		Host:       "127.0.0.1",
		Port:       port,
		MaxPayload: maxPayload,
		NoLog:      true,
		NoSigs:     true,
	}
	if port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	if port < 0 {
		opts.DontListen = true
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("wire: embedded nats-server: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("wire: embedded nats-server not ready after 10s")
	}
	return &Server{ns}, nil
}

// Stop shuts the server down and waits for it.
func (s *Server) Stop() {
	s.Shutdown()
	s.WaitForShutdown()
}

// ConnectInProcess opens a client connection to s that bypasses TCP.
func (s *Server) ConnectInProcess(name string) (*nats.Conn, error) {
	nc, err := nats.Connect("", nats.InProcessServer(s.Server), nats.Name(name))
	if err != nil {
		return nil, fmt.Errorf("wire: in-process connection: %w", err)
	}
	return nc, nil
}

// Connect dials the NATS server at url (a comma-separated list for a
// cluster) and gives up after timeout.
func Connect(url, name string, timeout time.Duration) (*nats.Conn, error) {
	nc, err := nats.Connect(url,
		nats.Name(name),
		nats.Timeout(timeout),
		nats.RetryOnFailedConnect(false),
		nats.MaxReconnects(-1),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", url, err)
	}
	return nc, nil
}
