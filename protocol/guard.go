package protocol

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrPanic is wrapped in the error of an app's method that panicked (see
// Guard).
var ErrPanic = errors.New("panicked")

// Guard calls f, which calls the app's method named method, and returns
// f's error; if f panics, it returns an error matching ErrPanic that names
// the method, the panic's value and where it happened, e.g.
//
//	Push panicked: runtime error: index out of range [5] with length 3 (lasso.(*Worker).Push, worker.go:120)
//
// The nodes call the apps' methods through it (DESIGN "How a job fails"), so that a panic
// fails the node, and the job, as a returned error does: the coordinator
// learns of it at once, named with the role and the round, instead of
// waiting out its timeout for a process that crashed. It is a backstop,
// not the validation: a node whose method panicked uses the app no more,
// so no state that the panic left half-changed is ever read.
func Guard(method string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s %w: %v (%s)", method, ErrPanic, r, panicSite())
		}
	}()
	return f()
}

// panicSite returns the function, file and line that panicked, as seen
// from a deferred call during the panic: the first frame after the
// runtime's panic frames.
func panicSite() string {
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case strings.HasPrefix(f.Function, "runtime."):
			panicking = panicking || f.Function == "runtime.gopanic"
		case panicking:
			fn := f.Function[strings.LastIndex(f.Function, "/")+1:]
			return fmt.Sprintf("%s, %s:%d", fn, filepath.Base(f.File), f.Line)
		}
		if !more {
			return "unknown site"
		}
	}
}
