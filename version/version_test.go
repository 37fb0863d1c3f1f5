package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	rev := "3f2a9c1d0b7e55aa00112233445566778899aabb"
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"tagged main module", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.4.0"}}, "v0.4.0"},
		{"devel with revision", debug.BuildInfo{
			Main:     debug.Module{Path: Module, Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}},
		}, "(devel) 3f2a9c1d0b7e"},
		{"modified tree", debug.BuildInfo{
			Main:     debug.Module{Path: Module},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}},
		}, "(devel) 3f2a9c1d0b7e+dirty"},
		{"pseudo-version names the revision", debug.BuildInfo{
			Main:     debug.Module{Path: Module, Version: "v0.0.0-20261123101500-3f2a9c1d0b7e"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}},
		}, "v0.0.0-20261123101500-3f2a9c1d0b7e"},
		{"a dependency", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/mymodel"},
			Deps: []*debug.Module{{Path: "gonum.org/v1/gonum", Version: "v0.17.0"}, {Path: Module, Version: "v0.4.0"}},
		}, "v0.4.0"},
		{"a replaced dependency", debug.BuildInfo{
			Main: debug.Module{Path: "example.com/mymodel"},
			Deps: []*debug.Module{{Path: Module, Version: "v0.0.0", Replace: &debug.Module{Path: "../strads"}}},
		}, "v0.0.0 => ../strads"},
		{"not linked", debug.BuildInfo{Main: debug.Module{Path: "example.com/other"}}, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fromBuildInfo(&tt.bi); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
