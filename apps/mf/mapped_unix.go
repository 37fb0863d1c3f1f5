//go:build unix

package mf

import (
	"fmt"
	"syscall"
	"unsafe"
)

// mapBytes returns size bytes of zeroed memory in an anonymous private
// mapping, outside Go's heap, and the function that unmaps them.
func mapBytes(size int) (unsafe.Pointer, func(), error) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("map %d bytes for the ratings: %w", size, err)
	}
	return unsafe.Pointer(unsafe.SliceData(b)), func() { syscall.Munmap(b) }, nil
}
