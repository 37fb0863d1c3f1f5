//go:build !unix

package mf

import "unsafe"

// mapBytes returns size bytes of zeroed memory and a function that does
// nothing: without mmap the ratings live on Go's heap.
func mapBytes(size int) (unsafe.Pointer, func(), error) {
	b := make([]uint64, (size+7)/8)
	return unsafe.Pointer(unsafe.SliceData(b)), func() {}, nil
}
