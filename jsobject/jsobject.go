// Package jsobject reads the objects of JetStream object stores chunk by
// chunk, each chunk with a request of its own (a direct get from the
// bucket's stream), for the checkpoints (package checkpoint) and the data
// sets (package dataset) alike (DESIGN "Checkpoints").
//
// It exists because the reader of nats.go's ObjectStore.Get and GetBytes
// waits for the chunks until its context's deadline and ignores a cancel,
// while the cancel unsubscribes the ordered consumer that delivers them;
// and a consumer that an outage lost is rebuilt only after two missed
// heartbeats. A read that a reconnect cancelled, or that a role gave up,
// therefore went on until its deadline: for a checkpoint's commit, the
// whole --timeout; for a data set, its timeout plus a second per MiB. Here
// every request ends with its context, and a chunk missing is an error at
// once, matching jetstream.ErrMsgNotFound.
package jsobject

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrStalled is matched by the error of a read whose chunk did not come
// within the Reader's timeout, its context not ended.
var ErrStalled = errors.New("no chunk came")

// A Reader reads the objects of one object store bucket. It is safe for
// concurrent use.
type Reader struct {
	js      jetstream.JetStream
	bucket  string
	timeout time.Duration

	mu     sync.Mutex
	stream jetstream.Stream // the bucket's, once looked up
}

// NewReader returns a Reader of the objects of the object store bucket of
// js. A timeout > 0 bounds the wait for each chunk (and for the bucket's
// stream) besides the context: a chunk that does not come for that long is
// an error matching ErrStalled.
func NewReader(js jetstream.JetStream, bucket string, timeout time.Duration) *Reader {
	return &Reader{js: js, bucket: bucket, timeout: timeout}
}

// request returns ctx bounded by the Reader's timeout, if it has one.
func (r *Reader) request(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.timeout > 0 {
		return context.WithTimeoutCause(ctx, r.timeout, ErrStalled)
	}
	return context.WithCancel(ctx)
}

// wrap returns err of a request made with rctx, derived from ctx by
// request, as ErrStalled if it was rctx's timeout that ended it.
func (r *Reader) wrap(ctx, rctx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(context.Cause(rctx), ErrStalled) {
		return fmt.Errorf("%w for %s: %w", ErrStalled, r.timeout, err)
	}
	return err
}

// getStream returns the bucket's stream, looked up once.
func (r *Reader) getStream(ctx context.Context) (jetstream.Stream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stream != nil {
		return r.stream, nil
	}
	rctx, cancel := r.request(ctx)
	defer cancel()
	st, err := r.js.Stream(rctx, "OBJ_"+r.bucket)
	if err != nil {
		return nil, r.wrap(ctx, rctx, err)
	}
	r.stream = st
	return st, nil
}

// Copy writes the content of the object that info describes to w, chunk by
// chunk as they come, and returns the number of bytes written. It checks
// the content's size and SHA-256 against info's, at the end: w may have
// had part of a bad object by then. A chunk missing (the object removed or
// replaced since info was read) is an error matching
// jetstream.ErrMsgNotFound, a content that does not hash to info's digest
// one matching jetstream.ErrDigestMismatch.
func (r *Reader) Copy(ctx context.Context, info *jetstream.ObjectInfo, w io.Writer) (int64, error) {
	name := info.Name
	if info.Opts != nil && info.Opts.Link != nil {
		return 0, fmt.Errorf("object %s of bucket %s is a link", name, r.bucket)
	}
	want, err := jetstream.DecodeObjectDigest(info.Digest)
	if err != nil {
		return 0, fmt.Errorf("object %s of bucket %s: digest %q: %w", name, r.bucket, info.Digest, err)
	}
	h := sha256.New()
	var n uint64
	if info.Size == 0 || info.Chunks == 0 {
		if info.Size != 0 || info.Chunks != 0 {
			return 0, fmt.Errorf("object %s of bucket %s: %d chunks of %d bytes", name, r.bucket, info.Chunks, info.Size)
		}
	} else {
		stream, err := r.getStream(ctx)
		if err != nil {
			return 0, fmt.Errorf("object %s of bucket %s: %w", name, r.bucket, err)
		}
		subject := "$O." + r.bucket + ".C." + info.NUID // ADR-20
		seq := uint64(1)
		for i := range info.Chunks {
			rctx, cancel := r.request(ctx)
			msg, err := stream.GetMsg(rctx, seq, jetstream.WithGetMsgSubject(subject))
			cancel()
			if err != nil {
				return int64(n), fmt.Errorf("object %s of bucket %s: chunk %d of %d: %w", name, r.bucket, i+1, info.Chunks, r.wrap(ctx, rctx, err))
			}
			if n+uint64(len(msg.Data)) > info.Size {
				return int64(n), fmt.Errorf("object %s of bucket %s: its chunks hold more than its %d bytes", name, r.bucket, info.Size)
			}
			h.Write(msg.Data)
			k, err := w.Write(msg.Data)
			n += uint64(k)
			if err != nil {
				return int64(n), err
			}
			seq = msg.Sequence + 1
		}
	}
	if n != info.Size {
		return int64(n), fmt.Errorf("object %s of bucket %s: its chunks hold %d bytes, its size is %d", name, r.bucket, n, info.Size)
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return int64(n), fmt.Errorf("object %s of bucket %s: %w", name, r.bucket, jetstream.ErrDigestMismatch)
	}
	return int64(n), nil
}

// ReadAll returns the content of the object name of obs, the Reader's
// bucket, or an error matching jetstream.ErrObjectNotFound if it has none.
// An object replaced while read (its chunks gone once the new ones are in)
// is read again, as it is now.
func (r *Reader) ReadAll(ctx context.Context, obs jetstream.ObjectStore, name string) ([]byte, error) {
	var nuid string
	for {
		rctx, cancel := r.request(ctx)
		info, err := obs.GetInfo(rctx, name)
		cancel()
		if err != nil {
			return nil, r.wrap(ctx, rctx, err)
		}
		if info.NUID == nuid {
			return nil, fmt.Errorf("object %s of bucket %s: chunks missing: %w", name, r.bucket, jetstream.ErrMsgNotFound)
		}
		nuid = info.NUID
		var b bytes.Buffer
		b.Grow(int(min(info.Size, maxPrealloc)))
		_, err = r.Copy(ctx, info, &b)
		if !errors.Is(err, jetstream.ErrMsgNotFound) {
			if err != nil {
				return nil, err
			}
			if b.Len() == 0 {
				return []byte{}, nil
			}
			return b.Bytes(), nil
		}
	}
}

// maxPrealloc bounds the buffer ReadAll allocates ahead, whatever size an
// object's description claims.
const maxPrealloc = 64 << 20
