package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/strads-go/strads/dataset"
	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/wire"
)

// Data over NATS (DESIGN "Outputs and inputs"): an input flag of an app (a PerRole flag that
// is not one of its Outputs) whose value is nats:NAME names the data set
// NAME in the object store of the job's server (package dataset). Before
// the app's job is made, the command fetches each such data set into a
// private temporary directory of its own and sets the flag to the local
// copy, so that the apps, which open their files by path (package
// inputfile), and the data fingerprint of the manifest (computed from the
// copy's content, the same as from a local file with that content) work
// unchanged. In a worker process, a flag of the app's Parts is set to the
// copy's path without fetching it: the path is registered as a
// dataset.Part (an inputfile.Remote), and the readers fetch the blocks of
// the lines they read, or the whole where they open the file, while the
// counts and fingerprints come from the data set's index. The copies are
// removed when the command ends.

// openDatasets returns the data sets of the server at url, connected with
// opts, or, where url is empty, of an embedded server with JetStream on
// its store in storeDir, started for the purpose (no TCP port) and
// stopped by the returned close function, which also closes the
// connection. timeout bounds every wait for the server (dataset.Open).
// With create, the bucket is created where missing, and so is storeDir.
func openDatasets(ctx context.Context, url string, opts []nats.Option, storeDir string, timeout time.Duration, create bool) (*dataset.Store, func(), error) {
	var nc *nats.Conn
	stop := func() {}
	if url != "" {
		var err error
		// A write to a server that stalls fails after timeout, not after
		// nats.go's default minute.
		opts = append(slices.Clip(opts), nats.FlusherTimeout(timeout))
		if nc, err = wire.Connect(url, "strads-data", timeout, opts...); err != nil {
			return nil, nil, err
		}
	} else {
		if !create {
			if st, err := os.Stat(storeDir); err != nil || !st.IsDir() {
				return nil, nil, Usagef("--store %s: no such directory (strads data put --store DIR makes one)", storeDir)
			}
		}
		srv, err := natsserver.Start(natsserver.Options{Port: -1, StoreDir: storeDir})
		if err != nil {
			return nil, nil, UsageError(fmt.Errorf("--store %s: %w", storeDir, err))
		}
		if nc, err = srv.ConnectInProcess("strads-data"); err != nil {
			srv.Stop()
			return nil, nil, err
		}
		stop = srv.Stop
	}
	st, err := dataset.Open(ctx, nc, timeout, create)
	if err != nil {
		nc.Close()
		stop()
		return nil, nil, datasetError(err)
	}
	return st, func() { nc.Close(); stop() }, nil
}

// datasetError marks err, from package dataset, as bad input (exit status
// 2) where it is: a data set that is not there, a bad name, a server
// without JetStream.
func datasetError(err error) error {
	if errors.Is(err, dataset.ErrNotFound) || errors.Is(err, dataset.ErrName) || errors.Is(err, dataset.ErrNoJetStream) {
		return UsageError(err)
	}
	return err
}

// A fetched data set: the flag's value, and the path of the local copy.
type fetched struct {
	ref, path string
}

// fetchData fetches the data sets that the app's input flags name
// (nats:NAME) into a new temporary directory and sets the flags to the
// copies. It returns the fetched ones and the function that removes the
// copies. In a worker process, a flag of the app's Parts whose data set
// has an index is not fetched but registered (inputfile.Register) as a
// dataset.Part at its copy's path, which the readers fetch from as they
// read, until the returned function, which then also closes the
// connection to the server.
func (s *session) fetchData(ctx context.Context) ([]fetched, func(), error) {
	var names []string // the flags that name data sets
	for _, name := range s.app.PerRole {
		if f := s.fs.Lookup(name); f != nil && !slices.Contains(s.app.Outputs, name) {
			if _, ok := dataset.Ref(f.Value.String()); ok {
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		return nil, func() {}, nil
	}
	rf := s.rf
	if rf.nats == "" && rf.store == "" {
		return nil, nil, Usagef("--%s %s: a data set in NATS's object store needs --nats URL, its server, or --store DIR, the store of the embedded server (where strads data put --store DIR put it)", names[0], s.fs.Lookup(names[0]).Value)
	}
	for _, name := range names {
		ref := s.fs.Lookup(name).Value.String()
		if err := dataset.CheckName(strings.TrimPrefix(ref, dataset.Scheme)); err != nil {
			return nil, nil, Usagef("--%s: %v", name, err)
		}
	}
	st, closeStore, err := openDatasets(ctx, rf.nats, rf.natsOptions(), rf.store, rf.timeout, false)
	if err != nil {
		return nil, nil, fmt.Errorf("--%s %s: %w", names[0], s.fs.Lookup(names[0]).Value, rf.connectError(err))
	}
	dir, err := os.MkdirTemp("", "strads-nats-")
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	var parts []func() // what release undoes of the parts
	release := func() {
		for _, undo := range parts {
			undo()
		}
		closeStore()
		os.RemoveAll(dir)
	}
	var got []fetched
	for _, name := range names {
		ref := s.fs.Lookup(name).Value.String()
		i := slices.IndexFunc(got, func(f fetched) bool { return f.ref == ref })
		if i < 0 {
			ds, _ := dataset.Ref(ref)
			var path string
			var err error
			if s.role == Worker && slices.Contains(s.app.Parts, name) {
				var undo func()
				path, undo, err = s.openPart(ctx, st, name, ref, dir)
				if undo != nil {
					parts = append(parts, undo)
				}
			}
			if path == "" && err == nil {
				start := time.Now()
				var in dataset.Info
				path, in, err = st.Fetch(ctx, ds, dir)
				if err == nil {
					s.log.Info("fetched a data set", "flag", "--"+name, "data", ref, "bytes", in.Size, "digest", in.Digest, "copy", path, "seconds", time.Since(start).Seconds())
				}
			}
			if err != nil {
				release()
				return nil, nil, fmt.Errorf("--%s: %w", name, datasetError(err))
			}
			got = append(got, fetched{ref, path})
			i = len(got) - 1
		}
		if err := s.fs.Set(name, got[i].path); err != nil {
			release()
			return nil, nil, err
		}
	}
	if len(parts) == 0 {
		closeStore()
		closeStore = func() {}
	}
	return got, release, nil
}

// openPart registers the data set of the flag name, ref (nats:NAME), as a
// dataset.Part at its copy's path in dir, and returns the path and the
// function that unregisters it and logs what was fetched of it. A data
// set stored without an index gives "" and no error: it is fetched whole.
func (s *session) openPart(ctx context.Context, st *dataset.Store, name, ref, dir string) (string, func(), error) {
	ds, _ := dataset.Ref(ref)
	path := filepath.Join(dir, ds)
	p, err := st.OpenPart(ctx, ds, path)
	if errors.Is(err, dataset.ErrNoIndex) {
		s.log.Info("a data set stored without an index: fetching it whole", "flag", "--"+name, "data", ref)
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	unregister := inputfile.Register(path, p)
	in := p.Info()
	s.log.Info("reading a data set in parts", "flag", "--"+name, "data", ref, "bytes", in.Size, "digest", in.Digest, "copy", path)
	return path, func() {
		unregister()
		s.log.Info("fetched part of a data set", "flag", "--"+name, "data", ref, "fetched", p.Fetched(), "bytes", in.Size)
	}, nil
}

// renameCopies returns err with the paths of the local copies in its
// message replaced by the data sets they copy (nats:NAME), so that an
// error of the app that names its file, as a parse error does, names what
// the user gave. A *libsvm.ParseError of a copy is changed in place: the
// command prints it alone.
func renameCopies(err error, got []fetched) error {
	if err == nil || len(got) == 0 {
		return err
	}
	var pe *libsvm.ParseError
	if errors.As(err, &pe) {
		for _, f := range got {
			if pe.File == f.path {
				pe.File = f.ref
			}
		}
	}
	msg := err.Error()
	for _, f := range got {
		msg = strings.ReplaceAll(msg, f.path, f.ref)
	}
	if msg == err.Error() {
		return err
	}
	return renamed{err, msg}
}

// renameWriter writes to w what it is given with the paths of the local
// copies replaced by the data sets they copy, each Write on its own (a
// line, a progress line, a log record, written whole).
type renameWriter struct {
	w   io.Writer
	got []fetched
}

// Write implements io.Writer.
func (r renameWriter) Write(p []byte) (int, error) {
	s := string(p)
	for _, f := range r.got {
		s = strings.ReplaceAll(s, f.path, f.ref)
	}
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// renamed is an error with another message.
type renamed struct {
	err error
	msg string
}

func (e renamed) Error() string { return e.msg }
func (e renamed) Unwrap() error { return e.err }

// NATSFlags are the flags of a command that is no role of a job but
// reaches a job's NATS server, as strads data does: --nats URL and the
// roles' credential flags (--creds, --tls-ca, --tls-cert, --tls-key), or
// --store DIR, the store of an embedded server that an all-in-one job on
// the same --store will start; and --timeout.
type NATSFlags struct {
	url     string
	store   string
	timeout time.Duration
	sec     secFlags
}

// AddNATSFlags adds the flags of NATSFlags to fs.
func AddNATSFlags(fs *flag.FlagSet) *NATSFlags {
	f := &NATSFlags{}
	fs.StringVar(&f.url, "nats", "", "`URL` of the NATS server whose JetStream holds the data sets (strads server --store DIR starts one)")
	fs.StringVar(&f.store, "store", "", "without --nats: the JetStream store `directory` DIR of an embedded server, the one an all-in-one job given --store DIR starts")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "longest wait for the server: each request, and a transfer that makes no progress")
	f.sec.addCredentialFlags(fs)
	return f
}

// Check checks the flags: one of --nats and --store, the credentials only
// with --nats.
func (f *NATSFlags) Check() error {
	switch {
	case f.url == "" && f.store == "":
		return Usagef("give --nats URL (a server with JetStream) or --store DIR (an embedded server's store)")
	case f.url != "" && f.store != "":
		return Usagef("--nats and --store: give one, --store is for an embedded server")
	case f.timeout <= 0:
		return Usagef("--timeout must be > 0")
	}
	return f.sec.checkCredentials(f.url)
}

// Datasets returns the data sets of the server, and the function that
// closes the connection (and stops the embedded server). With create, the
// bucket (and the store directory) are created where missing. Errors
// never show the credentials of --nats.
func (f *NATSFlags) Datasets(ctx context.Context, create bool) (*dataset.Store, func(), error) {
	st, closeStore, err := openDatasets(ctx, f.url, f.sec.natsOptions(), f.store, f.timeout, create)
	if err != nil {
		return nil, nil, f.Redact(f.sec.connectError(err))
	}
	return st, closeStore, nil
}

// Redact returns err without the credentials of --nats, marked as bad
// input where it is (a missing data set, a bad name, no JetStream).
func (f *NATSFlags) Redact(err error) error {
	return wire.Redact(datasetError(err), f.url)
}

// Scrub returns w wrapped so that nothing written to it shows the
// credentials of --nats.
func (f *NATSFlags) Scrub(w io.Writer) io.Writer {
	return scrubWriter{w, wire.Secrets(f.url)}
}
