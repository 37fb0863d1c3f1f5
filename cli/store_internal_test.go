package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultStore checks where a whole job's checkpoints go without
// --store: the XDG state directory, never the working directory.
func TestDefaultStore(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	tests := []struct{ xdg, want string }{
		{state, filepath.Join(state, "strads", "store")},
		{"", filepath.Join(home, ".local", "state", "strads", "store")},
		{"relative/state", filepath.Join(home, ".local", "state", "strads", "store")},
	}
	for _, tt := range tests {
		t.Run(tt.xdg, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("XDG_STATE_HOME", tt.xdg)
			f := runFlags{resume: true, ckptKeep: 1}
			var w bytes.Buffer
			if err := f.checkCheckpoints(All, &w); err != nil {
				t.Fatal(err)
			}
			if f.store != tt.want || !strings.Contains(w.String(), "checkpoints in "+tt.want) {
				t.Errorf("store %q (said %q), want %q", f.store, w.String(), tt.want)
			}
		})
	}
}
