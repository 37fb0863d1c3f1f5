package protocol

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestGuard checks that Guard returns f's error as it is, and turns a
// panic into an error that matches ErrPanic and names the method, the
// panic and where it happened.
func TestGuard(t *testing.T) {
	var s []int
	for _, tc := range []struct {
		name  string
		f     func() error
		err   error  // the error f returns
		panic string // a part of the error of a panic; "" if f returns
	}{
		{"no error", func() error { return nil }, nil, ""},
		{"an error", func() error { return io.EOF }, io.EOF, ""},
		{"index", func() error { s[3]++; return nil }, nil, "Push panicked: runtime error: index out of range [3] with length 0 (protocol.TestGuard.func"},
		{"value", func() error { panic("boom") }, nil, "Push panicked: boom (protocol.TestGuard.func"},
	} {
		err := Guard("Push", tc.f)
		if tc.panic == "" {
			if err != tc.err {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
			}
			continue
		}
		if !errors.Is(err, ErrPanic) || !strings.Contains(err.Error(), tc.panic) || !strings.Contains(err.Error(), "guard_test.go:") {
			t.Errorf("%s: %v, want ErrPanic saying %q and the line", tc.name, err, tc.panic)
		}
	}
}
