package checkpoint_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/wire"
)

// TestKeyedManifest: a store with the job's key seals the manifests it
// commits; a reader with the key takes them, and refuses one that is
// forged (by someone who may write the bucket, but has no key), committed
// without the key, or under another key.
func TestKeyedManifest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := testhelper.InProcess(t, true)
	key := wire.NewKey()
	open := func(k wire.Key, create bool) *checkpoint.Store {
		t.Helper()
		c, err := wire.NewConn(nc, "j")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetKey(k); err != nil {
			t.Fatal(err)
		}
		s, err := checkpoint.OpenConn(ctx, c, create)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	keyed, keyless, other := open(key, true), open(wire.Key{}, false), open(wire.NewKey(), false)
	sealed := put(t, keyed, 10, "coordinator", "worker-0")
	if err := keyed.Commit(ctx, sealed, 3); err != nil {
		t.Fatal(err)
	}
	m, err := keyed.Latest(ctx)
	if err != nil || m.Round != 10 || m.MAC == "" {
		t.Fatalf("latest: round %d, MAC %q, %v", m.Round, m.MAC, err)
	}

	forged := m
	forged.Round = 20
	forged.Pieces = map[string]string{"coordinator": checkpoint.Digest([]byte("forged"))}
	cases := []struct {
		name   string
		commit func() error // what is committed, by whom
		reader *checkpoint.Store
		round  uint64
		want   error // nil: taken
	}{
		{"sealed, read with the key", nil, keyed, 10, nil},
		{"sealed, read without a key", nil, keyless, 10, nil},
		{"sealed, read with another key", nil, other, 10, checkpoint.ErrForgedManifest},
		{"forged with the MAC of another manifest", func() error { return keyless.Commit(ctx, forged, 3) }, keyed, 20, checkpoint.ErrForgedManifest},
		{"committed without a key", func() error {
			return keyless.Commit(ctx, checkpoint.Manifest{Job: "j", Round: 30, Pieces: map[string]string{}}, 3)
		}, keyed, 30, checkpoint.ErrForgedManifest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.commit != nil {
				if err := tc.commit(); err != nil {
					t.Fatal(err)
				}
			}
			for _, read := range []func() (checkpoint.Manifest, error){
				func() (checkpoint.Manifest, error) { return tc.reader.Latest(ctx) },
				func() (checkpoint.Manifest, error) { return tc.reader.Manifest(ctx, tc.round) },
			} {
				m, err := read()
				switch {
				case tc.want == nil && (err != nil || m.Round != tc.round):
					t.Errorf("round %d, %v; want round %d", m.Round, err, tc.round)
				case tc.want != nil && !errors.Is(err, tc.want):
					t.Errorf("round %d, %v; want %v", m.Round, err, tc.want)
				}
			}
		})
	}
	// A keyed commit keeps no manifest that does not verify.
	if err := keyed.Commit(ctx, put(t, keyed, 40, "coordinator"), 5); err != nil {
		t.Fatal(err)
	}
	if _, err := keyed.Manifest(ctx, 10); err != nil {
		t.Errorf("round 10: %v", err)
	}
	for _, r := range []uint64{20, 30} {
		if _, err := keyless.Manifest(ctx, r); !errors.Is(err, checkpoint.ErrNone) {
			t.Errorf("round %d kept: %v", r, err)
		}
	}
}
