package dataset_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/dataset"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/jsobject"
)

// cancelWriter cancels its context at its second write, mid-way through
// the first object's chunks, and waits there for a while, as a slow disk
// would: if the Get it serves returns meanwhile, the write was left in
// flight (late).
type cancelWriter struct {
	cancel   context.CancelFunc
	returned chan struct{} // closed when the Get returned
	done     chan struct{} // closed when the cancelling write ended
	writes   int
	late     bool
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes == 2 {
		w.cancel()
		select {
		case <-w.returned:
			w.late = true
		case <-time.After(200 * time.Millisecond):
		}
		close(w.done)
	}
	return len(p), nil
}

// TestGetCancelled cancels a Get mid-way, of a data set in blocks and of
// one stored whole, with a minute left to its deadline and to the Store's
// timeout: the Get ends with the cancel (context.Canceled, not a deadline
// or a stall), and returns only once nothing writes to its writer any
// more. With ObjectStore.Get, whose reader ignores a cancel, the copy went
// on in a goroutine of its own until the deadline, its write in flight
// after Get returned.
func TestGetCancelled(t *testing.T) {
	nc := testhelper.InProcess(t, true)
	st, err := dataset.Open(context.Background(), nc, time.Minute, true)
	if err != nil {
		t.Fatal(err)
	}
	st.SetBlock(1 << 20) // blocks of 8 chunks
	data := lines(3, 100000, false)
	if _, err := st.Put(context.Background(), "blocks", bytes.NewReader(data), uint64(len(data))); err != nil {
		t.Fatal(err)
	}
	if _, err := bucket(t, nc).PutBytes(context.Background(), "whole", data); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"blocks", "whole"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			w := &cancelWriter{cancel: cancel, returned: make(chan struct{}), done: make(chan struct{})}
			_, err := st.Get(ctx, name, w)
			close(w.returned)
			<-w.done
			if !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jsobject.ErrStalled) {
				t.Errorf("Get cancelled mid-way: %v, want context.Canceled", err)
			}
			if w.late {
				t.Errorf("Get returned with a write to its writer in flight")
			}
			t.Log(err)
		})
	}
}

// TestChunksGone removes the chunks of a block of a data set, its object's
// description kept, after OpenPart: a read of the block is an ErrIndex
// error at once, not a wait for the Store's timeout (a minute here).
func TestChunksGone(t *testing.T) {
	ctx := context.Background()
	nc := testhelper.InProcess(t, true)
	st, err := dataset.Open(ctx, nc, time.Minute, true)
	if err != nil {
		t.Fatal(err)
	}
	st.SetBlock(1 << 20)
	data := lines(4, 100000, false)
	if _, err := st.Put(ctx, "d", bytes.NewReader(data), uint64(len(data))); err != nil {
		t.Fatal(err)
	}
	p, err := st.OpenPart(ctx, "d", filepath.Join(t.TempDir(), "d"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, "OBJ_"+dataset.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	var block string
	for _, o := range objects(t, bucket(t, nc)) {
		if strings.HasPrefix(o, "d/") && (block == "" || o < block) {
			block = o
		}
	}
	oi, err := bucket(t, nc).GetInfo(ctx, block)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject("$O."+dataset.Bucket+".C."+oi.NUID)); err != nil {
		t.Fatal(err)
	}
	rc, _, err := p.Lines(0, 10)
	if rc != nil {
		rc.Close()
	}
	if !errors.Is(err, dataset.ErrIndex) || !errors.Is(err, jetstream.ErrMsgNotFound) || !strings.Contains(err.Error(), "nats:d") {
		t.Fatalf("Lines of a block whose chunks are gone: %v, want ErrIndex naming nats:d, matching ErrMsgNotFound", err)
	}
	t.Log(err)
}
