//go:build !linux

package storage

// Elsewhere every region is Go memory.
const offHeap = false

func mapAnon(int) []byte { panic("unreachable") }

func unmapAnon([]byte) { panic("unreachable") }
