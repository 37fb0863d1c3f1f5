package dataset_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/dataset"
	"github.com/strads-go/strads/internal/testhelper"
)

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	nc := testhelper.InProcess(t, true)
	if _, err := dataset.Open(ctx, nc, 5*time.Second, false); !errors.Is(err, dataset.ErrNotFound) || !strings.Contains(err.Error(), "strads data put") {
		t.Errorf("Open of a server that stores none: got %v, want ErrNotFound saying how to store one", err)
	}
	st, err := dataset.Open(ctx, nc, 5*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	if ins, err := st.List(ctx); err != nil || len(ins) != 0 {
		t.Errorf("List of an empty bucket: %v, %v", ins, err)
	}
	// Larger than the object store's chunks (128 KiB), so that it
	// travels in many.
	data := make([]byte, 1<<20+12345)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte('a' + r.IntN(26))
		if r.IntN(40) == 0 {
			data[i] = '\n'
		}
	}
	in, err := st.Put(ctx, "big.txt", bytes.NewReader(data), uint64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "big.txt" || in.Size != uint64(len(data)) || !strings.HasPrefix(in.Digest, "SHA-256=") {
		t.Errorf("Put: %+v", in)
	}
	if _, err := st.Put(ctx, "small", strings.NewReader("1 1:1\n"), 6); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := st.Get(ctx, "big.txt", &got); err != nil || !bytes.Equal(got.Bytes(), data) {
		t.Errorf("Get: %d bytes, %v; want the %d put", got.Len(), err, len(data))
	}
	dir := t.TempDir()
	path, _, err := st.Fetch(ctx, "small", dir)
	if b, rerr := os.ReadFile(path); err != nil || rerr != nil || string(b) != "1 1:1\n" || path != filepath.Join(dir, "small") {
		t.Errorf("Fetch: %s %q, %v, %v", path, b, err, rerr)
	}
	ins, err := st.List(ctx)
	if err != nil || len(ins) != 2 || ins[0].Name != "big.txt" || ins[1].Name != "small" {
		t.Errorf("List: %+v, %v", ins, err)
	}
	if err := st.Delete(ctx, "small"); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		func() error { _, err := st.Get(ctx, "small", &got); return err }(),
		func() error { _, err := st.Stat(ctx, "small"); return err }(),
		func() error { _, _, err := st.Fetch(ctx, "small", t.TempDir()); return err }(),
		st.Delete(ctx, "small"),
	} {
		if !errors.Is(err, dataset.ErrNotFound) || !strings.Contains(err.Error(), "nats:small") {
			t.Errorf("a removed data set: got %v, want ErrNotFound naming nats:small", err)
		}
	}
	if ins, err := st.List(ctx); err != nil || len(ins) != 1 {
		t.Errorf("List after Delete: %+v, %v", ins, err)
	}
	if _, err := st.Put(ctx, "../x", strings.NewReader(""), 0); !errors.Is(err, dataset.ErrName) {
		t.Errorf("Put ../x: got %v, want ErrName", err)
	}
}

func TestNoJetStream(t *testing.T) {
	nc := testhelper.InProcess(t, false)
	start := time.Now()
	_, err := dataset.Open(context.Background(), nc, 5*time.Second, false)
	if !errors.Is(err, dataset.ErrNoJetStream) || !strings.Contains(err.Error(), "--store") {
		t.Errorf("got %v, want ErrNoJetStream saying how to turn it on", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s: a server without JetStream answers at once", d)
	}
}

func TestNames(t *testing.T) {
	for _, name := range []string{"a", "data.svm", "ml-1m_train.txt", strings.Repeat("x", dataset.MaxName)} {
		if err := dataset.CheckName(name); err != nil {
			t.Errorf("CheckName(%q): %v", name, err)
		}
	}
	for _, name := range []string{"", ".hidden", "a/b", "..", "a b", "é", strings.Repeat("x", dataset.MaxName+1)} {
		if err := dataset.CheckName(name); !errors.Is(err, dataset.ErrName) {
			t.Errorf("CheckName(%q): got %v, want ErrName", name, err)
		}
	}
	if n, ok := dataset.Ref("nats:x.svm"); !ok || n != "x.svm" {
		t.Errorf("Ref(nats:x.svm) = %q, %v", n, ok)
	}
	if _, ok := dataset.Ref("/data/x.svm"); ok {
		t.Error("Ref of a path: ok")
	}
}
