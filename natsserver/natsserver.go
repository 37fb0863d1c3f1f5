// Package natsserver runs a nats-server inside the process: the embedded
// server of an all-in-one job (package job) and of `strads server`. It is
// the only package of the module that links nats-server; the roles need
// only a client (package wire), so an app or a role binary that connects to
// an external server does not carry a server with it (DESIGN §8).
package natsserver

import (
	"fmt"
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

// Options configures a server.
type Options struct {
	// Port is the TCP port to listen on, on 127.0.0.1: 0 picks a free one,
	// −1 listens on no TCP port at all (in-process connections only).
	Port int
	// MaxPayload is the largest message the server accepts; 0 means
	// MaxPayload.
	MaxPayload int32
}

// Server is a nats-server running in this process.
type Server struct {
	*server.Server
}

// Start starts a server as opts says and waits until it accepts
// connections.
func Start(opts Options) (*Server, error) {
	so := &server.Options{
		Host:       "127.0.0.1",
		Port:       opts.Port,
		MaxPayload: opts.MaxPayload,
		NoLog:      true,
		NoSigs:     true,
	}
	if so.MaxPayload == 0 {
		so.MaxPayload = MaxPayload
	}
	switch {
	case opts.Port == 0:
		so.Port = server.RANDOM_PORT
	case opts.Port < 0:
		so.DontListen = true
	}
	ns, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("natsserver: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("natsserver: not ready for connections after 10s")
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
		return nil, fmt.Errorf("natsserver: in-process connection: %w", err)
	}
	return nc, nil
}
