package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/protocol"
	"github.com/strads-go/strads/wire"
)

// secFlags are the runtime's flags that reach a protected NATS server, and
// those that decide what the process opens to others: per role, never
// settings of the job, never shown.
type secFlags struct {
	creds      string
	tlsCA      string
	tlsCert    string
	tlsKey     string
	natsListen string
	store      string
	pprof      bool
	key        string   // --key
	jobKey     wire.Key // read from --key by checkSecurity
}

// addSecurityFlags adds the flags of secFlags to fs.
func (f *secFlags) addSecurityFlags(fs *flag.FlagSet) {
	f.addCredentialFlags(fs)
	fs.StringVar(&f.natsListen, "nats-listen", "", "whole job without --nats: let the embedded NATS server also take TCP connections on `HOST:PORT` (no host: 127.0.0.1), say for a tool that watches the job's subjects; by default it takes none, its nodes connect in-process")
	fs.StringVar(&f.store, "store", "", "whole job without --nats: enable JetStream in the embedded NATS server, with its store in `directory` DIR (created if missing), where checkpoints and data sets live and outlast the job (checkpoints without --store: $XDG_STATE_HOME/strads/store, by default ~/.local/state/strads/store); an external server (--nats) needs JetStream on instead (strads server --store DIR)")
	fs.BoolVar(&f.pprof, "pprof", false, "with --http, also serve pprof profiles on /debug/pprof/")
	fs.StringVar(&f.key, "key", "", "the job's key: a `file` (mode 0600) of at least 32 random bytes or their hex or base64 text, as strads key new writes it; every message of the job then carries a MAC under it, and a role without it cannot join or send the job anything; every role needs the same one. A whole job with --nats and no --key uses a random key of its own")
}

// addCredentialFlags adds the flags of secFlags that reach a protected
// server to fs: --creds and --tls-*.
func (f *secFlags) addCredentialFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.creds, "creds", "", "NATS credentials `file` (a user JWT and NKey seed, as nsc writes it) for the --nats server")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "PEM `file` of the CA that signed the --nats server's certificate (default: the system's CAs)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM `file` of this role's client certificate, for a --nats server that verifies clients (with --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM `file` of the key of --tls-cert")
}

// securityPerRole are the flags of secFlags, all per role.
var securityPerRole = []string{"creds", "tls-ca", "tls-cert", "tls-key", "nats-listen", "store", "pprof", "key"}

// checkSecurity checks the flags of secFlags against the role and the
// other runtime flags.
func (f *runFlags) checkSecurity(role Role) error {
	if f.store != "" && (role != All || f.nats != "") {
		return Usagef("--store: only for a whole job's embedded server, without --nats (an external server has its own: strads server --store DIR)")
	}
	if f.natsListen != "" {
		if role != All || f.nats != "" {
			return Usagef("--nats-listen: only for a whole job's embedded server, without --nats")
		}
		if _, _, err := net.SplitHostPort(f.natsListen); err != nil {
			return Usagef("--nats-listen %q: want HOST:PORT or :PORT", f.natsListen)
		}
	}
	if err := f.checkCredentials(f.nats); err != nil {
		return err
	}
	if f.key != "" {
		k, err := LoadKey(f.key)
		if err != nil {
			return UsageError(fmt.Errorf("--key: %w", err))
		}
		f.jobKey = k
	}
	if f.pprof && f.http == "" {
		return Usagef("--pprof: only with --http")
	}
	return nil
}

// checkCredentials checks --creds and --tls-*: only with a server's URL
// (nats), the files regular.
func (f *secFlags) checkCredentials(nats string) error {
	if nats == "" {
		for _, g := range []struct{ flag, v string }{{"--creds", f.creds}, {"--tls-ca", f.tlsCA}, {"--tls-cert", f.tlsCert}, {"--tls-key", f.tlsKey}} {
			if g.v != "" {
				return Usagef("%s: only with --nats, for an external server (the embedded one takes in-process connections only)", g.flag)
			}
		}
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return Usagef("--tls-cert and --tls-key go together")
	}
	for _, g := range []struct{ flag, path string }{{"--creds", f.creds}, {"--tls-ca", f.tlsCA}, {"--tls-cert", f.tlsCert}, {"--tls-key", f.tlsKey}} {
		if g.path == "" {
			continue
		}
		st, err := os.Stat(g.path)
		if err != nil {
			return UsageError(fmt.Errorf("%s: %w", g.flag, err))
		}
		if !st.Mode().IsRegular() {
			return Usagef("%s %s: not a regular file", g.flag, g.path)
		}
	}
	return nil
}

// natsOptions returns the connection options of --creds and --tls-*.
func (f *secFlags) natsOptions() []nats.Option {
	var opts []nats.Option
	if f.creds != "" {
		opts = append(opts, nats.UserCredentials(f.creds))
	}
	if f.tlsCA != "" {
		opts = append(opts, nats.RootCAs(f.tlsCA))
	}
	if f.tlsCert != "" {
		opts = append(opts, nats.ClientCert(f.tlsCert, f.tlsKey))
	}
	return opts
}

// connectError returns err, a failed connection to --nats, with a hint
// of what the server may want.
func (f *secFlags) connectError(err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return fmt.Errorf("%w (the server refused this role's credentials: give a user and password, or a token, in the URL of --nats, or --creds FILE, or --tls-cert and --tls-key)", err)
	case strings.Contains(msg, "certificate required"), strings.Contains(msg, "bad certificate"), strings.Contains(msg, "closed by remote after TLS handshake"):
		return fmt.Errorf("%w (the server verifies clients: give a certificate it trusts with --tls-cert and --tls-key)", err)
	case strings.Contains(msg, "x509:"):
		return fmt.Errorf("%w (the server's certificate is not trusted: give its CA with --tls-ca)", err)
	case errors.Is(err, nats.ErrSecureConnRequired):
		return fmt.Errorf("%w (the server wants TLS: a tls:// URL, --tls-ca, or --tls-cert and --tls-key)", err)
	}
	return err
}

// secrets returns the passwords and tokens of --nats, which no output of
// the process may show.
func (f *runFlags) secrets() []string { return wire.Secrets(f.nats) }

// scrubWriter writes to w what it is given with the URLs' credentials and
// the secrets replaced (wire.Scrub). Each Write is scrubbed on its own:
// a log line, a progress line, an error, each written whole.
type scrubWriter struct {
	w       io.Writer
	secrets []string
}

// Write implements io.Writer.
func (s scrubWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, wire.Scrub(string(p), s.secrets)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// scrub returns w wrapped so that nothing written to it shows the
// credentials of --nats (nor any URL's: wire.RedactURL).
func (f *runFlags) scrub(w io.Writer) io.Writer {
	return scrubWriter{w, f.secrets()}
}

// cmdline returns the process's command line with the credentials of
// --nats scrubbed, for /debug/pprof/cmdline.
func (f *runFlags) cmdline() []string {
	secrets := f.secrets()
	out := make([]string, len(os.Args))
	for i, a := range os.Args {
		out[i] = wire.Scrub(a, secrets)
	}
	return out
}

// httpAddr returns the address of --http: a port alone (":9090") is on
// the loopback interface, 127.0.0.1, so that a metrics or profile server
// is open to other machines only when a host (0.0.0.0, an address) says
// so.
func httpAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q: want HOST:PORT or :PORT: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// info returns what the live page shows of the job (monitor's SetInfo):
// its name, app and this process's role, the server (credentials
// removed), and the job's settings as the role's manifest holds them.
// Credentials are per-role flags, never settings: none is shown.
func (f *runFlags) info(role Role, m protocol.Manifest) map[string]string {
	info := map[string]string{"job": f.job, "app": m.App, "role": string(role)}
	switch {
	case f.nats != "":
		info["nats"] = wire.RedactURL(f.nats)
	case f.natsListen != "":
		info["nats"] = "embedded, in-process and on " + f.natsListen
	default:
		info["nats"] = "embedded, in-process"
	}
	for name, v := range m.Settings {
		info["--"+name] = v
	}
	return info
}
