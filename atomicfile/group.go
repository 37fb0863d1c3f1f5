package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// A Group is a set of output files that make one result (the files of a
// model, say) and are committed together: all of them or none.
//
// Commit first flushes, syncs and closes every temporary file; a failure
// there (a write error, a full disk) removes them all and leaves every
// target as it was. Only then does it rename the files into place, one
// after another in the order they were created, and sync their
// directories. A rename in a directory the process could write to at
// Create hardly fails; if one does, the files already renamed are removed
// again, so that none of the group is left (the older files they replaced
// are lost). A rename is atomic but a group of them is not: a crash
// between two renames leaves the first files of the group new, the others
// as they were before (or absent), and the temporary files of the others
// beside them (".NAME.tmp-*", which the next Create of the same target
// removes once the process is dead). The fixed order lets a reader that needs a
// complete set check the last file of the group: if it is the new one,
// so are all the others.
type Group struct {
	files []*File
}

// CreateGroup starts writing the files at paths, in that order: each is
// created as Create does, so that a bad path (a directory that does not
// exist or cannot be written, a device) fails now, before anything is
// computed. If one cannot be created, or two paths name the same file
// (Same: through symbolic links, or hard links), the others are removed
// and the error names the path.
func CreateGroup(paths ...string) (*Group, error) {
	g := &Group{}
	for i, path := range paths {
		for _, prev := range paths[:i] {
			if Same(path, prev) {
				g.Abort()
				return nil, fmt.Errorf("create %s: the same file as %s, another output", path, prev)
			}
		}
		f, err := Create(path)
		if err != nil {
			g.Abort()
			return nil, err
		}
		g.files = append(g.files, f)
	}
	return g, nil
}

// Files returns the group's files, in the order of their paths.
func (g *Group) Files() []*File { return g.files }

// Commit commits every file of the group, or none (see Group). Once it
// returns, the group is finished: Abort does nothing.
func (g *Group) Commit() error {
	for i, f := range g.files {
		if err := f.finish(); err != nil {
			for _, o := range g.files[i+1:] {
				o.Abort()
			}
			for _, o := range g.files[:i] {
				os.Remove(o.f.Name())
			}
			return err
		}
	}
	for i, f := range g.files {
		if err := os.Rename(f.f.Name(), f.target); err != nil {
			err = fmt.Errorf("write %s: %w", f.path, err)
			for _, o := range g.files[:i] {
				if rerr := os.Remove(o.target); rerr != nil {
					err = errors.Join(err, fmt.Errorf("remove %s, committed before: %w", o.path, rerr))
				}
			}
			for _, o := range g.files[i:] {
				os.Remove(o.f.Name())
			}
			return err
		}
	}
	synced := map[string]bool{}
	for _, f := range g.files {
		dir := filepath.Dir(f.target)
		if synced[dir] {
			continue
		}
		synced[dir] = true
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("write %s: sync its directory: %w", f.path, err)
		}
	}
	return nil
}

// Abort discards every file of the group not committed. It is safe to call
// after Commit, where it does nothing, so that it can be deferred.
func (g *Group) Abort() {
	if g == nil {
		return
	}
	for _, f := range g.files {
		f.Abort()
	}
}
