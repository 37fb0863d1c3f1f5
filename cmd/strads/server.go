package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/natsserver"
)

// runServer runs a NATS server until interrupted, for jobs whose roles run
// as separate processes. Any nats-server works as well.
func runServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	port := fs.Int("port", 4222, "TCP port to listen on, on 127.0.0.1 (0: any free port)")
	if err := cli.Parse(fs, args, stdout, "strads server [--port 4222]"); err != nil {
		return err
	}
	srv, err := natsserver.Start(natsserver.Options{Port: *port})
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Fprintf(stdout, "nats-server listening on %s\n", srv.ClientURL())
	<-ctx.Done()
	return nil
}
