package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strads-go/strads/cli"
)

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	hex64 := strings.Repeat("ab", 32)
	cases := []struct {
		name string
		data string
		mode os.FileMode
		want string // "" for a key; else a part of the error
	}{
		{"hex", hex64 + "\n", 0o600, ""},
		{"raw", strings.Repeat("\x01\xfe", 16), 0o400, ""},
		{"short", strings.Repeat("ab", 16), 0o600, "want at least 32"},
		{"empty", "", 0o600, "want at least 32"},
		{"group-readable", hex64, 0o640, "chmod 600"},
		{"world-readable", hex64, 0o604, "chmod 600"},
		{"huge", strings.Repeat("a", 5000), 0o600, "more than a key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			k, err := cli.LoadKey(path)
			switch {
			case tc.want == "" && (err != nil || k.IsZero()):
				t.Fatalf("LoadKey: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("LoadKey took %s", path)
			case tc.want != "" && (!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path)):
				t.Fatalf("error %q does not name %s and say %q", err, path, tc.want)
			case err != nil && tc.data != "" && strings.Contains(err.Error(), tc.data):
				t.Fatalf("error %q shows the key", err)
			}
		})
	}
	if _, err := cli.LoadKey(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := cli.LoadKey(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
}

func TestKeyNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.key")
	var out bytes.Buffer
	cl := &cli.CommandLine{Name: "prog", Apps: []cli.App{toyApp("toy")}, Commands: []cli.Command{cli.KeyCommand}}
	if code := cl.Run(context.Background(), []string{"key", "new", path}, &out, &out); code != 0 {
		t.Fatalf("key new: exit %d: %s", code, out.String())
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o, want 0600", st.Mode().Perm())
	}
	k, err := cli.LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if strings.Contains(out.String(), strings.TrimSpace(string(before))) {
		t.Error("key new printed the key")
	}
	// Never over an existing key.
	out.Reset()
	if code := cl.Run(context.Background(), []string{"key", "new", path}, &out, &out); code == 0 || !strings.Contains(out.String(), "exists") {
		t.Errorf("key new over a key: exit %d: %s", code, out.String())
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("key new replaced a key")
	}
	k2, err := cli.LoadKey(path)
	if err != nil || k2.Hex() != k.Hex() {
		t.Errorf("the key changed: %v", err)
	}
	for _, args := range [][]string{{"key"}, {"key", "old", path}, {"key", "new"}, {"key", "new", "a", "b"}} {
		out.Reset()
		if code := cl.Run(context.Background(), args, &out, &out); code != 2 {
			t.Errorf("%q: exit %d, want 2: %s", args, code, out.String())
		}
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
