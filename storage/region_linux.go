package storage

import "syscall"

const offHeap = true

func mapAnon(size int) []byte {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		panic("storage: mmap " + err.Error())
	}
	return b
}

func unmapAnon(b []byte) {
	if err := syscall.Munmap(b); err != nil {
		panic("storage: munmap " + err.Error())
	}
}
