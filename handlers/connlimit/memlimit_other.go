//go:build !linux

package connlimit

// MemoryLimit is 0 (none known) where there are no cgroups.
func MemoryLimit() uint64 { return 0 }
