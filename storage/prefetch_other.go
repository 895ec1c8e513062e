//go:build !amd64 && !arm64

package storage

// prefetch is a no-op where the CPU has no prefetch instruction redcell
// issues (the amd64 and arm64 prefetch, in assembly).
func prefetch(uintptr) {}
