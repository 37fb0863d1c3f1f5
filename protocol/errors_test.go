package protocol

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// TestKinds checks that a marked error keeps its text and its chain and
// matches its kind, and only it.
func TestKinds(t *testing.T) {
	cause := fmt.Errorf("open x: %w", fs.ErrNotExist)
	node := &NodeError{Node: Node{Role: RoleWorker, Place: 1, Host: "h", PID: 7}, Round: 3, Err: cause}
	for _, tc := range []struct {
		mark func(error) error
		kind error
	}{{Timeout, ErrTimeout}, {Aborted, ErrAborted}, {Mismatch, ErrManifest}} {
		err := fmt.Errorf("coordinator: %w", tc.mark(node))
		var ne *NodeError
		if err.Error() != "coordinator: worker shard 1 (host h, pid 7): round 3: open x: file does not exist" ||
			!errors.Is(err, tc.kind) || !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &ne) || ne.Round != 3 {
			t.Errorf("%v: does not match %v, its cause and its node", err, tc.kind)
		}
		for _, other := range []error{ErrTimeout, ErrAborted, ErrManifest} {
			if other != tc.kind && errors.Is(err, other) {
				t.Errorf("%v matches %v", err, other)
			}
		}
	}
}

func TestNodeString(t *testing.T) {
	for _, tc := range []struct {
		n    Node
		want string
	}{
		{Node{Role: RoleWorker, Place: 1, Host: "h", PID: 123}, "worker shard 1 (host h, pid 123)"},
		{Node{Role: RoleScheduler, Place: 0, Host: "h", PID: 7}, "scheduler 0 (host h, pid 7)"},
		{Node{Role: RoleWorker, Place: -1, Host: "h", PID: 9}, "worker (host h, pid 9)"},
		{Node{Role: RoleWorker, Place: 2}, "worker shard 2"},
		{Node{Place: 0, PID: 5}, "worker shard 0 (pid 5)"},
	} {
		if got := tc.n.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.n, got, tc.want)
		}
	}
}
