package storage

import "unsafe"

// A pipelined batch runs its decisions one after another, and each would
// wait on memory for its key's entry: with more keys than the caches hold,
// that wait is most of a decision. The server lets the waits overlap with
// the decisions before: while a command runs, it calls PrefetchEntry for the
// next command's key and PrefetchIndex for the one after, so that each
// decision finds its entry in cache. A key's slot is known from its hash
// alone (table.home), so neither takes the shard's lock or waits on memory.

// prefetchMinIndex is the size of the store's tables from which Prefetching
// says yes: 1 MiB of slots is some 23-29 thousand keys, which outgrow a
// core's L2 cache. Below it, a lookup finds its line in cache anyway, and a
// prefetch would only cost its own work (BenchmarkConnBatchManyKeys: about
// 80 ns a command).
const prefetchMinIndex = 1 << 20

// Prefetching reports whether the keyspace is large enough that prefetching
// a decision's memory pays: one atomic load.
func (s *Store) Prefetching() bool { return s.indexBytes.Load() >= prefetchMinIndex }

// tableIndex is where a table's slots are and how many, published for
// prefetches made without the lock. base is an address, not a pointer: the
// slots may be unmapped by a resize while a prefetch reads it, which is
// harmless (a prefetch never faults), and the collector must not see it.
type tableIndex struct {
	base uintptr
	n    uint64
}

// setSlots makes s the table's slots, and publishes where they are for
// PrefetchIndex. The caller holds the shard's lock.
func (t *table) setSlots(s []entry) {
	if t.indexBytes != nil {
		t.indexBytes.Add(int64(len(s)-len(t.slots)) * entrySize)
	}
	t.slots = s
	if len(s) == 0 {
		t.index.Store(nil)
		return
	}
	t.index.Store(&tableIndex{base: uintptr(unsafe.Pointer(unsafe.SliceData(s))), n: uint64(len(s))})
}

// homeAddr is the address of the home slot of a key whose hash is h in the
// table published last, or 0.
func (t *table) homeAddr(h uint32) uintptr {
	ix := t.index.Load()
	if ix == nil {
		return 0
	}
	return ix.base + uintptr(uint64(h)*ix.n>>32)*entrySize
}

// PrefetchIndex starts bringing into the caches the slot where a decision
// on key will look first, without taking any lock and without waiting for
// it; slot is key's cluster slot or -1, as for ThrottleSlot. The table read
// may be one a concurrent resize has just replaced: the hint is then wasted,
// never wrong, as a prefetch of any address is harmless.
func (s *Store) PrefetchIndex(key []byte, slot int) {
	sh, h := s.locate(key, slot)
	if a := sh.t.homeAddr(h); a != 0 {
		prefetch(a)
	}
}

// PrefetchEntry starts bringing into the caches the cache line after the
// one of key's home slot, where its entry is when collisions pushed it on
// (at 70-87.5% full, 1.2 to 3.5 slots on, on average), as PrefetchIndex does
// for the home slot's line; the server calls it a command after
// PrefetchIndex, so that both lines are in cache when the decision runs. (The
// slot after the home slot would be in the home slot's own line half the
// time: the next line is never worse.)
func (s *Store) PrefetchEntry(key []byte, slot int) {
	sh, h := s.locate(key, slot)
	if a := sh.t.homeAddr(h); a != 0 {
		prefetch(a&^(cacheLine-1) + cacheLine)
	}
}

// cacheLine is the bytes of a cache line on amd64 and arm64 (two entries);
// a table of slots large enough to prefetch is mapped, so page-aligned.
const cacheLine = 64
