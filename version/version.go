// Package version says which strads built the running program: the module
// version and the revision of the source it was built from, as the Go
// toolchain records them in the binary (runtime/debug.ReadBuildInfo).
package version

import (
	"runtime/debug"
	"strings"
)

// Module is the path of the strads module.
const Module = "github.com/strads-go/strads"

// String returns the strads version of the running program, e.g.
// "v0.4.0", "(devel) 3f2a9c1d0b7e+dirty" for a build of a modified working
// tree, or "unknown" when the binary carries no build information. The
// strads module is the main module (the strads command, its tests) or a
// dependency (a user's own model built on it).
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return fromBuildInfo(bi)
}

// fromBuildInfo is String for the build information bi.
func fromBuildInfo(bi *debug.BuildInfo) string {
	if bi.Main.Path != Module {
		for _, d := range bi.Deps {
			if d.Path != Module {
				continue
			}
			if d.Replace != nil {
				return d.Version + " => " + d.Replace.Path
			}
			return d.Version
		}
		return "unknown"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	if rev == "" || strings.Contains(v, shortRev(rev)) {
		// A pseudo-version already names the revision.
		return v
	}
	v += " " + shortRev(rev)
	if modified == "true" {
		v += "+dirty"
	}
	return v
}

// shortRev returns the first 12 hex digits of a revision, as Go's
// pseudo-versions do.
func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
