//go:build !linux

package atomicfile

// procStart returns false: only Linux tells a process's start time here.
func procStart(int) (uint64, bool) { return 0, false }

// pidNamespace returns "": only Linux has pid namespaces.
func pidNamespace() string { return "" }
