//go:build !amd64 && !arm64

package storage

// prefetch is a no-op where the CPU has no prefetch instruction redcell
// issues (prefetch_asm.go).
func prefetch(uintptr) {}
