package storage

import (
	"math/bits"
	"unsafe"
)

// A pipelined batch runs its decisions one after another, and each would
// wait on memory twice: for its key's index slot, then for the entry the
// slot points at (table.find). With more keys than the caches hold, those
// two waits are most of a decision. The server lets the waits overlap with
// the decisions before: while a command runs, it calls PrefetchEntry for
// the next command's key and PrefetchIndex for the one after, so that each
// decision finds both lines in cache.

// prefetchMinIndex is the size of the store's index from which Prefetching
// says yes: 256 KiB of slots is some 16-32 thousand keys, whose index and
// entries (1-1.5 MiB) outgrow a core's L2 cache. Below it, a lookup finds its
// lines in cache anyway, and a prefetch would only cost its own work
// (BenchmarkConnBatchManyKeys: about 80 ns a command).
const prefetchMinIndex = 256 << 10

// Prefetching reports whether the keyspace is large enough that prefetching
// a decision's memory pays: one atomic load.
func (s *Store) Prefetching() bool { return s.indexBytes.Load() >= prefetchMinIndex }

// prefetchAddrBits is the bits of table.index holding the slots' address:
// user addresses are below 2^48 on amd64 and arm64.
const prefetchAddrBits = 48

// setSlots makes s the table's index, and publishes where it is for
// PrefetchIndex. The caller holds the shard's lock.
func (t *table) setSlots(s []uint64) {
	if t.indexBytes != nil {
		t.indexBytes.Add(int64(len(s)-len(t.slots)) * 8)
	}
	t.slots = s
	var v uint64
	if len(s) > 0 {
		v = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(s)))) | uint64(bits.TrailingZeros(uint(len(s))))<<prefetchAddrBits
	}
	t.index.Store(v)
}

// PrefetchIndex starts bringing into the caches the index slot where a
// decision on key will look first, without taking any lock and without
// waiting for it; slot is key's cluster slot or -1, as for ThrottleSlot.
// The index read may be one a concurrent resize has just replaced: the hint
// is then wasted, never wrong, as a prefetch of any address is harmless.
func (s *Store) PrefetchIndex(key []byte, slot int) {
	sh, h := s.locate(key, slot)
	v := sh.t.index.Load()
	if v == 0 {
		return
	}
	base := uintptr(v & (1<<prefetchAddrBits - 1))
	mask := uintptr(1)<<(v>>prefetchAddrBits) - 1
	prefetch(base + uintptr(h)&mask*8)
}

// PrefetchEntry starts bringing into the caches the entry of key, if it
// holds one, without waiting for it. It reads key's index slots under the
// shard's lock, held for those few reads: call PrefetchIndex a while
// before, or it waits on them.
func (s *Store) PrefetchEntry(key []byte, slot int) {
	sh, h := s.locate(key, slot)
	sh.mu.Lock()
	t := &sh.t
	if mask := len(t.slots) - 1; mask >= 0 {
		for p := int(h) & mask; ; p = (p + 1) & mask {
			v := t.slots[p]
			if v == 0 {
				break
			}
			if uint32(v>>32) == h {
				prefetch(uintptr(unsafe.Pointer(&t.entries[int(uint32(v))-1])))
				break
			}
		}
	}
	sh.mu.Unlock()
}
