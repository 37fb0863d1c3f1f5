package mf

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// A worker's training ratings live outside Go's heap, in memory mapped
// from the operating system (mapped), and so do the temporaries of their
// grouping: Go's collector lets the heap grow to twice what it held at
// its last run (GOGC=100), so ratings on the heap, most of a worker's
// memory, would let the garbage of every round (the messages, W at every
// evaluation) grow to as much again. Outside it they count once: the
// heap holds the rest, and its headroom is that of the rest. Where the
// system has no mmap (not unix) they are on the heap.

// plain is the types that mapped holds: without pointers, which Go's
// collector would not see there.
type plain interface {
	int32 | uint64 | float64 | biasRating
}

// mapped returns n zeroed values of type T outside Go's heap and the
// function that gives them back (once; later calls do nothing). The
// values must not be used after it.
func mapped[T plain](n int) ([]T, func(), error) {
	if n == 0 {
		return nil, func() {}, nil
	}
	size := n * int(unsafe.Sizeof(*new(T)))
	p, unmap, err := mapBytes(size)
	if err != nil {
		return nil, nil, err
	}
	mappedNow.add(int64(size))
	var once sync.Once
	return unsafe.Slice((*T)(p), n), func() {
		once.Do(func() {
			unmap()
			mappedNow.add(-int64(size))
		})
	}, nil
}

// owner gives back memory from mapped once it is unreachable (a cleanup
// of Go's runtime): the ratings that use the memory hold it.
type owner struct{ n int }

// newOwner returns an owner of the memory that frees give back.
func newOwner(frees ...func()) *owner {
	o := &owner{n: len(frees)}
	runtime.AddCleanup(o, func(frees []func()) {
		for _, f := range frees {
			f()
		}
	}, frees)
	return o
}

// mappedNow counts the bytes that mapped has out, and their peak since
// the last reset (for tests and measurements).
var mappedNow gauge

// gauge is a level and its peak, safe for concurrent use.
type gauge struct{ now, peak atomic.Int64 }

func (g *gauge) add(d int64) {
	now := g.now.Add(d)
	for p := g.peak.Load(); now > p && !g.peak.CompareAndSwap(p, now); p = g.peak.Load() {
	}
}

// reset sets the peak to the level.
func (g *gauge) reset() { g.peak.Store(g.now.Load()) }
