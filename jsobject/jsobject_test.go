package jsobject_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/jsobject"
)

// store starts an embedded server with JetStream and returns its
// JetStream and an object store bucket "b" on it.
func store(t *testing.T) (jetstream.JetStream, jetstream.ObjectStore) {
	t.Helper()
	js, err := jetstream.New(testhelper.InProcess(t, true))
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.CreateObjectStore(context.Background(), jetstream.ObjectStoreConfig{Bucket: "b", Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	return js, obs
}

// TestCopyBadInfo reads an object through descriptions that do not match
// its chunks: each is an error naming the object, never a wrong content
// taken for the right one.
func TestCopyBadInfo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, obs := store(t)
	want := bytes.Repeat([]byte("0123456789"), 30000) // 3 chunks
	if _, err := obs.PutBytes(ctx, "o", want); err != nil {
		t.Fatal(err)
	}
	other, err := obs.PutBytes(ctx, "other", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	rd := jsobject.NewReader(js, "b", 10*time.Second)
	tests := []struct {
		name  string
		edit  func(*jetstream.ObjectInfo)
		match error  // the error's chain holds it, if not nil
		say   string // the error says it
	}{
		{"sound", func(*jetstream.ObjectInfo) {}, nil, ""},
		{"another digest", func(oi *jetstream.ObjectInfo) { oi.Digest = other.Digest }, jetstream.ErrDigestMismatch, ""},
		{"bad digest", func(oi *jetstream.ObjectInfo) { oi.Digest = "SHA-256=!" }, nil, "digest"},
		{"smaller", func(oi *jetstream.ObjectInfo) { oi.Size-- }, nil, "more than"},
		{"larger", func(oi *jetstream.ObjectInfo) { oi.Size++ }, nil, "its size is"},
		{"fewer chunks", func(oi *jetstream.ObjectInfo) { oi.Chunks-- }, nil, "its size is"},
		{"more chunks", func(oi *jetstream.ObjectInfo) { oi.Chunks++ }, jetstream.ErrMsgNotFound, ""},
		{"no chunks", func(oi *jetstream.ObjectInfo) { oi.Chunks = 0 }, nil, "0 chunks"},
		{"another object's chunks", func(oi *jetstream.ObjectInfo) { oi.NUID = other.NUID }, jetstream.ErrMsgNotFound, ""},
		{"a link", func(oi *jetstream.ObjectInfo) {
			oi.Opts = &jetstream.ObjectMetaOptions{Link: &jetstream.ObjectLink{Bucket: "b", Name: "other"}}
		}, nil, "link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oi, err := obs.GetInfo(ctx, "o")
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(oi)
			var got bytes.Buffer
			_, err = rd.Copy(ctx, oi, &got)
			switch {
			case tt.match == nil && tt.say == "":
				if err != nil || !bytes.Equal(got.Bytes(), want) {
					t.Fatalf("got %d bytes, %v; want the %d stored", got.Len(), err, len(want))
				}
			case err == nil || !strings.Contains(err.Error(), "object o of bucket b"):
				t.Fatalf("got %v, want an error naming the object", err)
			case tt.match != nil && !errors.Is(err, tt.match):
				t.Fatalf("got %v, want one matching %v", err, tt.match)
			case !strings.Contains(err.Error(), tt.say):
				t.Fatalf("got %v, want one saying %q", err, tt.say)
			}
		})
	}
}

// TestReadAllCancelled reads an object with a context already cancelled:
// the error is the cancel, at once, not a wait for a deadline.
func TestReadAllCancelled(t *testing.T) {
	js, obs := store(t)
	if _, err := obs.PutBytes(context.Background(), "o", make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := jsobject.NewReader(js, "b", time.Minute).ReadAll(ctx, obs, "o")
	if !errors.Is(err, context.Canceled) || errors.Is(err, jsobject.ErrStalled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
