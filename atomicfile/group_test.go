package atomicfile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGroup checks that a group's files are committed all together or not
// at all: a path that cannot be created fails at once and leaves none, a
// failure of one file at Commit leaves none, and a successful Commit leaves
// them all, with no temporary file.
func TestGroup(t *testing.T) {
	cases := []struct {
		name string
		// paths are relative to the test's directory, which holds a
		// file "old" ("old\n") and no directory "missing".
		paths []string
		// breakAt, if ≥ 0, closes that file's temporary before Commit, so
		// that its flush fails.
		breakAt   int
		createErr string
		commitErr string
		want      []string // the directory's entries afterwards
	}{
		{"all committed", []string{"a.txt", "b.txt", "old"}, -1, "", "", []string{"a.txt", "b.txt", "old"}},
		{"a bad path fails at create", []string{"a.txt", "missing/b.txt", "c.txt"}, -1, "missing", "", []string{"old"}},
		{"the same file twice", []string{"a.txt", "./a.txt"}, -1, "the same file", "", []string{"old"}},
		{"a failed write commits none", []string{"a.txt", "old", "c.txt"}, 2, "", "c.txt", []string{"old"}},
		{"the first fails", []string{"a.txt", "old"}, 0, "", "a.txt", []string{"old"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "old"), []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, p := range tc.paths {
				paths = append(paths, filepath.Join(dir, p))
			}
			g, err := CreateGroup(paths...)
			switch {
			case tc.createErr != "" && (err == nil || !strings.Contains(err.Error(), tc.createErr)):
				t.Fatalf("CreateGroup: error %v, want one naming %q", err, tc.createErr)
			case tc.createErr == "" && err != nil:
				t.Fatal(err)
			}
			if err == nil {
				defer g.Abort()
				for i, f := range g.Files() {
					f.WriteString("new " + tc.paths[i] + "\n")
				}
				if tc.breakAt >= 0 {
					g.Files()[tc.breakAt].f.Close()
				}
				err = g.Commit()
				switch {
				case tc.commitErr != "" && (err == nil || !strings.Contains(err.Error(), tc.commitErr)):
					t.Fatalf("Commit: error %v, want one naming %q", err, tc.commitErr)
				case tc.commitErr == "" && err != nil:
					t.Fatal(err)
				}
				g.Abort() // does nothing now
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("directory holds %v, want %v", got, tc.want)
			}
			committed := tc.createErr == "" && tc.commitErr == ""
			for _, p := range tc.paths {
				b, err := os.ReadFile(filepath.Join(dir, p))
				want := "new " + p + "\n"
				if !committed {
					want = "old\n"
					if p != "old" {
						continue
					}
				}
				if err != nil || string(b) != want {
					t.Errorf("%s holds %q (%v), want %q", p, b, err, want)
				}
			}
		})
	}
}
