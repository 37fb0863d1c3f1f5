package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/natsserver"
)

// serverSynopsis is the usage line of strads server.
const serverSynopsis = "strads server [--addr HOST:PORT] [--config FILE] [--max-payload BYTES] [--store DIR]"

// runServer runs a NATS server until interrupted, for jobs whose roles run
// as separate processes. Any nats-server works as well.
func runServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4222", "listen on `HOST:PORT` (port 0: any free one); the default is this machine only: roles on other machines need 0.0.0.0:4222 (all interfaces) or one of this machine's addresses. Overrides the --config file's listen, host and port")
	config := fs.String("config", "", "nats-server configuration `file` (nats-server's own format and parser: cluster, authorization, accounts, tls, logging, …); --addr and --max-payload, when given, override what it says")
	maxPayload := fs.Int("max-payload", natsserver.MaxPayload, "largest message in `bytes` (larger ones travel in chunks); overrides the --config file's max_payload when given")
	store := fs.String("store", "", "enable JetStream, with its store in `directory` DIR (created if missing): checkpoints (--checkpoint-every, --resume) and data sets (strads data put) live there and survive a restart; off by default, unless the --config file enables it")
	if err := cli.Parse(fs, args, stdout, serverSynopsis); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	opts := natsserver.Options{ConfigFile: *config, ConfigAddr: *config != "" && !given["addr"], StoreDir: *store}
	if !opts.ConfigAddr {
		host, port, err := net.SplitHostPort(*addr)
		if err != nil {
			return cli.Usagef("--addr %q: want HOST:PORT, e.g. 0.0.0.0:4222", *addr)
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return cli.Usagef("--addr %q: port %q is not a number from 0 to 65535", *addr, port)
		}
		opts.Host, opts.Port = host, int(p)
		if opts.Host == "" {
			opts.Host = "0.0.0.0"
		}
	}
	if *config == "" || given["max-payload"] {
		if *maxPayload <= 0 || *maxPayload > 1<<30 {
			return cli.Usagef("--max-payload %d: want 1 to %d bytes", *maxPayload, 1<<30)
		}
		opts.MaxPayload = int32(*maxPayload)
	}
	srv, err := natsserver.Start(opts)
	if err != nil {
		if *config != "" {
			return cli.UsageError(fmt.Errorf("--config: %w", err))
		}
		return fmt.Errorf("--addr %s: %w", *addr, err)
	}
	defer srv.Stop()
	fmt.Fprintf(stdout, "nats-server listening on %s\n", srv.ClientURL())
	if srv.Loopback() {
		fmt.Fprintf(stderr, "strads server: %s is this machine only; for roles on other machines, give --addr 0.0.0.0:%d or one of this machine's addresses\n", srv.Addr(), srv.Addr().(*net.TCPAddr).Port)
	}
	<-ctx.Done()
	return nil
}
