//go:build amd64 || arm64

package storage

// prefetch asks the CPU to bring the cache line at addr into its caches,
// without waiting for it. It never faults: addr may be stale, or not mapped
// at all, and is then only a wasted hint.
func prefetch(addr uintptr)
