// Package dataset keeps the data sets of jobs in the JetStream object
// store of their NATS server, so that no role needs a shared filesystem
// (DESIGN §6, "Data over NATS"): `strads data put FILE` stores a file as
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
	timeout time.Duration
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
	return &Store{obs: obs, timeout: timeout}, nil
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
// that name, and returns its Info. A transfer that makes no progress for
// the Store's timeout fails then; the whole has timeout + size/MinRate.
func (s *Store) Put(ctx context.Context, name string, r io.Reader, size uint64) (Info, error) {
	if err := CheckName(name); err != nil {
		return Info{}, err
	}
	ctx, cancel := s.deadline(ctx, size)
	defer cancel()
	ctx, stall := context.WithCancelCause(ctx)
	defer stall(nil)
	var sent atomic.Int64
	stop := s.watch(&sent, func(n int64) {
		stall(fmt.Errorf("nothing went for %s, after %d of %d bytes", s.timeout, n, size))
	})
	oi, err := s.obs.Put(ctx, jetstream.ObjectMeta{Name: name}, &counter{r, &sent})
	stop()
	if cause := context.Cause(ctx); err != nil && cause != nil && ctx.Err() != nil {
		return Info{}, fmt.Errorf("dataset: put %s%s: %w", Scheme, name, cause)
	}
	if err != nil {
		return Info{}, storeError(err, name)
	}
	if oi.Size != size {
		return Info{}, fmt.Errorf("dataset: stored %d bytes of %s, want %d: did the file change while it was read?", oi.Size, name, size)
	}
	return info(oi), nil
}

func info(oi *jetstream.ObjectInfo) Info {
	return Info{Name: oi.Name, Size: oi.Size, Digest: oi.Digest, Modified: oi.ModTime}
}

// Stat returns the Info of the data set name.
func (s *Store) Stat(ctx context.Context, name string) (Info, error) {
	if err := CheckName(name); err != nil {
		return Info{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	oi, err := s.obs.GetInfo(ctx, name)
	if err != nil {
		return Info{}, storeError(err, name)
	}
	return info(oi), nil
}

// List returns every stored data set, by name.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ois, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeError(err, "")
	}
	out := make([]Info, 0, len(ois))
	for _, oi := range ois {
		out = append(out, info(oi))
	}
	return out, nil
}

// Delete removes the data set name.
func (s *Store) Delete(ctx context.Context, name string) error {
	if _, err := s.Stat(ctx, name); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.obs.Delete(ctx, name); err != nil {
		return storeError(err, name)
	}
	return nil
}

// Get writes the content of the data set name to w and returns its Info.
// The object store checks the content against its SHA-256 digest as it
// ends. A transfer that brings nothing for the Store's timeout fails at
// once; the whole has timeout + size/MinRate.
func (s *Store) Get(ctx context.Context, name string, w io.Writer) (Info, error) {
	in, err := s.Stat(ctx, name)
	if err != nil {
		return in, err
	}
	ctx, cancel := s.deadline(ctx, in.Size)
	defer cancel()
	res, err := s.obs.Get(ctx, name)
	if err != nil {
		return in, storeError(err, name)
	}
	var got atomic.Int64
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(w, &counter{res, &got})
		res.Close()
		done <- err
	}()
	stalled := make(chan int64, 1)
	stop := s.watch(&got, func(n int64) { stalled <- n })
	defer stop()
	// A return before the copy's end leaves it to end by itself: a read of
	// the object store's blocks until the next chunk comes or the
	// context's deadline passes, whatever else ends the context, and
	// nothing else ends it (its Close waits for the read).
	select {
	case err := <-done:
		switch {
		case err != nil:
			return in, fmt.Errorf("dataset: read %s%s: %w", Scheme, name, err)
		case uint64(got.Load()) != in.Size:
			return in, fmt.Errorf("dataset: read %s%s: %d bytes, want %d", Scheme, name, got.Load(), in.Size)
		}
		return in, nil
	case <-ctx.Done():
		return in, fmt.Errorf("dataset: read %s%s: %w after %d of %d bytes", Scheme, name, context.Cause(ctx), got.Load(), in.Size)
	case n := <-stalled:
		return in, fmt.Errorf("dataset: read %s%s: nothing came for %s, after %d of %d bytes", Scheme, name, s.timeout, n, in.Size)
	}
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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", Info{}, fmt.Errorf("dataset: %w", err)
	}
	in, err := s.Get(ctx, name, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("dataset: %w", cerr)
	}
	if err != nil {
		os.Remove(path)
		return "", in, err
	}
	return path, in, nil
}
