package atomicfile

import (
	"errors"
	"fmt"
	"sync"
)

// ErrInput is the error, in Create's chain, of an output that is the same
// file as an input that Protect protects.
var ErrInput = errors.New("the same file as an input")

// inputs are the files that Protect protects, each with its count.
var inputs = struct {
	sync.Mutex
	paths map[string]int
}{paths: map[string]int{}}

// Protect marks paths as inputs of this process, which no output may
// replace until release is called: Create (and so Write and CreateGroup)
// refuses an output whose target is the same file as one of them (Same),
// with an error matching ErrInput. Empty paths are ignored. A program
// that reads some files and writes others calls it with the files it
// reads before it creates its outputs, since only it knows which are
// which; package cli does so with the inputs of a job's command line.
func Protect(paths ...string) (release func()) {
	var taken []string
	inputs.Lock()
	for _, p := range paths {
		if p != "" {
			inputs.paths[p]++
			taken = append(taken, p)
		}
	}
	inputs.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			inputs.Lock()
			defer inputs.Unlock()
			for _, p := range taken {
				if inputs.paths[p]--; inputs.paths[p] <= 0 {
					delete(inputs.paths, p)
				}
			}
		})
	}
}

// checkInput returns an error matching ErrInput if target, an output's,
// is the same file as a protected input.
func checkInput(target string) error {
	inputs.Lock()
	defer inputs.Unlock()
	for p := range inputs.paths {
		if Same(target, p) {
			return fmt.Errorf("%w, %s", ErrInput, p)
		}
	}
	return nil
}
