// Package sealtest checks, for the tests of the packages whose snapshots
// are sealed (schmp.Seal), that a role refuses every kind of bad snapshot
// with an error that names it, and stays as it was (Sealed.Check), or
// refuses the snapshots of other roles (Refuses).
package sealtest

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/strads-go/strads/codec"
	"github.com/strads-go/strads/schmp"
)

// Role is a schmp.Snapshotter.
type Role interface {
	Snapshot() ([]byte, error)
	Restore([]byte) error
}

// Sealed describes how a role's snapshots are sealed.
type Sealed struct {
	Kind    string
	Version int
	// Others are kinds of other roles, whose snapshots the role refuses.
	Others []string
	// Unsealed are the fields that, set in the body, make it the role's
	// last snapshot before it was sealed (bare msgpack: {"version": 1}).
	Unsealed map[string]any
	// Reencodes says that the role's snapshot after a restore may encode
	// what is empty otherwise than its first: the role is then compared,
	// after the bad snapshots, with its snapshot after a good restore.
	Reencodes bool
}

// Check checks that role's snapshot is sealed as s says: that its body
// sealed again restores, and that a snapshot of another kind or version,
// the unsealed one, a sealed body of another shape, a truncated one, one
// with a byte more or a byte changed is an error that names s.Kind and
// says why, and leaves the role as it was.
func (s Sealed) Check(t *testing.T, role Role) {
	t.Helper()
	good := Snap(t, role)
	var body map[string]any
	if err := schmp.Unseal(good, s.Kind, s.Version, &body); err != nil {
		t.Fatalf("%s: %v", s.Kind, err)
	}
	reseal := func(kind string, version int, body any) []byte {
		b, err := schmp.Seal(kind, version, body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if err := role.Restore(reseal(s.Kind, s.Version, body)); err != nil {
		t.Fatalf("%s: its own body sealed again: %v", s.Kind, err)
	}
	ref := good
	if s.Reencodes {
		ref = Snap(t, role)
	}
	old := maps.Clone(body)
	maps.Copy(old, s.Unsealed)
	bare, err := codec.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		return b
	}
	type bad struct {
		name, want string
		b          []byte
	}
	var cases []bad
	for _, k := range s.Others {
		cases = append(cases, bad{"kind " + k, "a snapshot of", reseal(k, s.Version, body)})
	}
	cases = append(cases, []bad{
		{"newer version", "version", reseal(s.Kind, s.Version+1, body)},
		{"older version", "version", reseal(s.Kind, s.Version-1, body)},
		{"unsealed", "checksum", bare},
		{"sealed, of another shape", "msgpack", reseal(s.Kind, s.Version, "not a state")},
		{"empty", "too short", nil},
		{"truncated to 3", "too short", good[:3]},
		{"truncated to 4", "checksum", good[:4]},
		{"truncated to half", "checksum", good[:len(good)/2]},
		{"truncated by 1", "checksum", good[:len(good)-1]},
		{"without its checksum", "checksum", good[:len(good)-4]},
		{"one byte more", "checksum", append(bytes.Clone(good), 0)},
		{"first byte changed", "checksum", flip(0)},
		{"a byte changed at a third", "checksum", flip(len(good) / 3)},
		{"a byte of the body changed", "checksum", flip(len(good) - 5)},
		{"checksum changed", "checksum", flip(len(good) - 1)},
	}...)
	for _, tc := range cases {
		err := role.Restore(tc.b)
		switch {
		case err == nil:
			t.Errorf("%s: %s: no error", s.Kind, tc.name)
		case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), s.Kind):
			t.Errorf("%s: %s: %v, want an error of %s that says %q", s.Kind, tc.name, err, s.Kind, tc.want)
		default:
			t.Logf("%s: %s: %v", s.Kind, tc.name, err)
		}
	}
	if b := Snap(t, role); !bytes.Equal(b, ref) {
		t.Errorf("%s: the bad snapshots changed the role", s.Kind)
	}
}

// Snap returns role's snapshot.
func Snap(t *testing.T, role Role) []byte {
	t.Helper()
	b, err := role.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Refuses checks that restoring into role, named name in the errors,
// each of the bytes bad that do not fit it (other roles' snapshots, or
// others of its own), and then truncations of its own snapshot and
// garbage, is an error.
func Refuses(t *testing.T, name string, role Role, bad ...[]byte) {
	t.Helper()
	good, err := role.Snapshot()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	bad = append(bad, nil, good[:len(good)/2], good[:len(good)-1], []byte("\x85garbage"), []byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	for k, b := range bad {
		if err := role.Restore(b); err == nil {
			t.Errorf("%s: bad snapshot %d: no error", name, k)
		} else {
			t.Logf("%s: bad snapshot %d: %v", name, k, err)
		}
	}
}
