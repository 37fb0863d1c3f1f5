// Package dataset keeps the data sets of jobs in the JetStream object
// store of their NATS server, so that no role needs a shared filesystem
// (DESIGN "Data over NATS"): `strads data put FILE` stores a file as
// the object of a name in the bucket Bucket, and an input flag that reads
// nats:NAME (Ref) makes a role fetch that object into a private local copy
// before the app opens it (package cli). It is a client only: it speaks to
// any NATS server with JetStream on, through nats.go's jetstream package.
package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/jsobject"
	"github.com/strads-go/strads/protocol"
)

// Bucket is the object store bucket that holds every data set of a
// server: one bucket for all jobs, since a data set outlives the jobs
// that read it and is named independently of them. Its stream is
// OBJ_strads-data, file storage, one replica.
const Bucket = "strads-data"

// Scheme is the prefix of an input flag's value that names a data set
// rather than a local file: --data nats:NAME.
const Scheme = "nats:"

// Errors, matched with errors.Is.
var (
	// ErrNotFound: no data set of the name is stored (or none at all).
	ErrNotFound = errors.New("no such data set")
	// ErrNoJetStream: the server has JetStream off, so it holds no
	// object store.
	ErrNoJetStream = errors.New("the NATS server has no JetStream")
	// ErrName: a name that a data set cannot have.
	ErrName = errors.New("bad data set name")
)

// Ref returns the name of the data set that an input flag's value names,
// and true, if the value is nats:NAME; "" and false for a local path.
func Ref(value string) (string, bool) {
	return strings.CutPrefix(value, Scheme)
}

// MaxName is the longest name of a data set, in bytes.
const MaxName = 200

// CheckName returns nil if name can name a data set: 1 to MaxName
// letters, digits, '.', '_' and '-', not starting with '.'; otherwise an
// error matching ErrName that quotes it. A name is also the file name of
// a role's local copy, so it holds no '/'.
func CheckName(name string) error {
	bad := name == "" || len(name) > MaxName || name[0] == '.'
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("%w %q: want 1 to %d letters, digits, '.', '_' or '-', not starting with '.'", ErrName, name, MaxName)
	}
	return nil
}

// Info describes a stored data set.
type Info struct {
	Name     string
	Size     uint64
	Digest   string // the object store's: "SHA-256=" and the base64url SHA-256 of the content
	Modified time.Time
}

// MinRate is the slowest transfer, in bytes per second, that a Put or a
// Get waits for: an operation on size bytes gets the Store's timeout plus
// size/MinRate in all, then fails.
const MinRate = 1 << 20

// Store is the data sets of one NATS server.
type Store struct {
	obs     jetstream.ObjectStore
	rd      *jsobject.Reader // reads its objects (copyObject)
	timeout time.Duration
	block   int
}

// Open returns the data sets of the server that nc is connected to.
// timeout bounds every wait for the server: each request, and a transfer
// that makes no progress for that long. With create, the bucket is
// created where missing (by put); without, a missing bucket is
// ErrNotFound (no data set was ever stored).
func Open(ctx context.Context, nc *nats.Conn, timeout time.Duration, create bool) (*Store, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("dataset: timeout %s: want > 0", timeout)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(timeout))
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var obs jetstream.ObjectStore
	if create {
		obs, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      Bucket,
			Description: "strads data sets (strads data put)",
			Storage:     jetstream.FileStorage,
		})
	} else {
		obs, err = js.ObjectStore(ctx, Bucket)
	}
	if err != nil {
		return nil, storeError(err, "")
	}
	return &Store{obs: obs, rd: jsobject.NewReader(js, Bucket, timeout), timeout: timeout, block: DefaultBlock}, nil
}

// storeError returns err, from the object store, as one of the package's
// errors where it is one: a missing bucket or object (of the data set
// name, if not empty) is ErrNotFound, JetStream off is ErrNoJetStream.
func storeError(err error, name string) error {
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		if name == "" {
			return fmt.Errorf("%w: the server stores no data sets (no object store bucket %s): store one with strads data put", ErrNotFound, Bucket)
		}
		return fmt.Errorf("%w %s%s: the server stores no data sets (no object store bucket %s): store it with strads data put", ErrNotFound, Scheme, name, Bucket)
	case errors.Is(err, jetstream.ErrObjectNotFound):
		return fmt.Errorf("%w %s%s in the object store bucket %s (strads data ls lists them)", ErrNotFound, Scheme, name, Bucket)
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount), errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%w (or not for this account), which holds the data sets: start it with JetStream, e.g. strads server --store DIR (%v)", ErrNoJetStream, err)
	}
	return fmt.Errorf("dataset: %w", err)
}

// deadline returns ctx bounded for a transfer of size bytes: the Store's
// timeout plus size/MinRate.
func (s *Store) deadline(ctx context.Context, size uint64) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout+time.Duration(size/MinRate)*time.Second)
}

// Put stores the size bytes of r as the data set name, replacing one of
// that name, and returns its Info: the content in blocks of whole lines
// of about the Store's block size, each an object of its own, and then the
// index, the object of the name, which lists them (DESIGN "Failures and durability"). A reader
// sees the old data set or the new, never half of one: the index comes
// last, and the old one's blocks go after it. A failed put removes the
// blocks it stored (what it cannot remove, rm does). A transfer that
// makes no progress for the Store's timeout fails then; the whole has
// timeout + size/MinRate.
func (s *Store) Put(ctx context.Context, name string, r io.ReaderAt, size uint64) (Info, error) {
	if err := CheckName(name); err != nil {
		return Info{}, err
	}
	ctx, cancel := s.deadline(ctx, size)
	defer cancel()
	ctx, stall := context.WithCancelCause(ctx)
	defer stall(nil)
	old := s.oldBlocks(ctx, name)
	var sent atomic.Int64
	stop := s.watch(&sent, func(n int64) {
		stall(fmt.Errorf("nothing went for %s, after %d of %d bytes", s.timeout, n, size))
	})
	ix, err := s.putBlocks(ctx, name, &counter{io.NewSectionReader(r, 0, int64(size)), &sent}, size)
	stop()
	if err == nil {
		ix.Fingerprint = protocol.FingerprintSum(int64(ix.Size), ix.CRC32C)
		var oi *jetstream.ObjectInfo
		if oi, err = s.putIndex(ctx, name, ix); err == nil {
			s.removeBlocks(old)
			return indexInfo(oi, ix), nil
		}
	}
	s.removeBlocks(ix.Blocks)
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		return Info{}, fmt.Errorf("dataset: put %s%s: %w", Scheme, name, cause)
	}
	return Info{}, err
}

// Stat returns the Info of the data set name.
func (s *Store) Stat(ctx context.Context, name string) (Info, error) {
	oi, err := s.stat(ctx, name)
	if err != nil {
		return Info{}, err
	}
	return oinfo(oi)
}

func (s *Store) stat(ctx context.Context, name string) (*jetstream.ObjectInfo, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	oi, err := s.obs.GetInfo(ctx, name)
	if err != nil {
		return nil, storeError(err, name)
	}
	return oi, nil
}

// List returns every stored data set, by name.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	ois, err := s.objects(ctx)
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, oi := range ois {
		if strings.Contains(oi.Name, "/") {
			continue // a block
		}
		in, err := oinfo(oi)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

// objects returns every object of the bucket.
func (s *Store) objects(ctx context.Context) ([]*jetstream.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ois, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeError(err, "")
	}
	return ois, nil
}

// Delete removes the data set name: its index, then its blocks (and any
// that a failed put left).
func (s *Store) Delete(ctx context.Context, name string) error {
	if _, err := s.stat(ctx, name); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.obs.Delete(dctx, name); err != nil {
		return storeError(err, name)
	}
	ois, err := s.objects(ctx)
	if err != nil {
		return err
	}
	for _, oi := range ois {
		if strings.HasPrefix(oi.Name, name+"/") {
			dctx, cancel := context.WithTimeout(ctx, s.timeout)
			err := s.obs.Delete(dctx, oi.Name)
			cancel()
			if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
				return fmt.Errorf("dataset: removed %s%s, but not its block %s: %w", Scheme, name, oi.Name, err)
			}
		}
	}
	return nil
}

// Get writes the content of the data set name to w and returns its Info.
// It reads each object chunk by chunk (package jsobject), checks it
// against its SHA-256 digest as it ends, and the whole content against
// the index's. A transfer that brings nothing for the Store's timeout
// fails at once; the whole has timeout + size/MinRate; a cancel of ctx
// ends it at once, and Get returns with nothing left writing to w.
func (s *Store) Get(ctx context.Context, name string, w io.Writer) (Info, error) {
	oi, err := s.stat(ctx, name)
	if err != nil {
		return Info{}, err
	}
	if oi.Metadata[metaFormat] == "" {
		// A data set stored whole, before indexes.
		in := info(oi)
		ctx, cancel := s.deadline(ctx, in.Size)
		defer cancel()
		var got atomic.Int64
		if err := s.copyObject(ctx, name, oi, w, &got); err != nil {
			return in, err
		}
		if uint64(got.Load()) != in.Size {
			return in, fmt.Errorf("dataset: read %s%s: %d bytes, want %d", Scheme, name, got.Load(), in.Size)
		}
		return in, nil
	}
	ix, err := s.readIndex(ctx, name, oi)
	if err != nil {
		return Info{}, err
	}
	in := indexInfo(oi, ix)
	var got atomic.Int64
	return in, s.getBlocks(ctx, name, ix, w, &got)
}

// watch calls stalled, once, with the count n if n stays the same for the
// Store's timeout, until the returned function is called.
func (s *Store) watch(n *atomic.Int64, stalled func(int64)) (stop func()) {
	quit := make(chan struct{})
	go func() {
		tick := time.NewTicker(min(s.timeout/4, time.Second))
		defer tick.Stop()
		last, since := n.Load(), time.Now()
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				if k := n.Load(); k != last {
					last, since = k, now
				} else if now.Sub(since) >= s.timeout {
					stalled(k)
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit) }) }
}

// counter is a reader that counts what it reads into n.
type counter struct {
	r io.Reader
	n *atomic.Int64
}

func (c *counter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// Fetch writes the data set name into a new file of that name in dir, and
// returns the file's path and the data set's Info. A failed fetch removes
// the file.
func (s *Store) Fetch(ctx context.Context, name, dir string) (string, Info, error) {
	if err := CheckName(name); err != nil {
		return "", Info{}, err
	}
	path := filepath.Join(dir, name)
	var in Info
	err := writeNew(path, func(w io.Writer) error {
		var err error
		in, err = s.Get(ctx, name, w)
		return err
	})
	if err != nil {
		return "", in, err
	}
	return path, in, nil
}

// writeNew writes a new file at path with write; a failed write removes it.
func writeNew(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("dataset: %w", cerr)
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
