package storage

import (
	"unsafe"

	"redcell/gcra"
)

// MemoryUsage returns an estimate of the bytes key costs in its shard's table,
// if the key is live at now, for MEMORY USAGE: its entry (32 bytes), its share
// of the shard's index (8-byte slots, kept at most 3/4 full: the index's
// bytes over the shard's keys, from 10.7 bytes a key when the index is full
// to 21.3 just after it doubled, more in a shard of few keys), and its bytes
// in the arena if it is too long to be stored in its entry. Not counted: the
// spare capacity of the entries array (up to 4 times the keys, after
// deletions) and the arena's garbage, which all keys of the shard share and
// compaction bounds. It never deletes an expired key.
func (s *Store) MemoryUsage(key []byte, now gcra.Instant) (int64, bool) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return memoryUsage(sh, key, now)
}

// MemoryUsage is Store.MemoryUsage under the transaction's locks.
func (tx *Txn) MemoryUsage(key []byte, now gcra.Instant) (n int64, ok bool) {
	tx.withShard(key, func(sh *shard) { n, ok = memoryUsage(sh, key, now) })
	return n, ok
}

func memoryUsage(sh *shard, key []byte, now gcra.Instant) (int64, bool) {
	i := sh.t.lookup(key)
	if i < 0 || sh.t.expAt(i) <= now {
		return 0, false
	}
	return sh.t.usage(i), true
}

// usage is MemoryUsage's estimate for the entry at i, for i < len().
func (t *table) usage(i int) int64 {
	keys := int64(len(t.entries))
	size := int64(unsafe.Sizeof(entry{}))
	size += (int64(len(t.slots))*8 + keys - 1) / keys // the index's bytes, shared, rounded up
	switch e := &t.entries[i]; {
	case e.boxed():
		size += int64(e.blobSize())
	case !e.inline():
		size += int64(e.keyLen())
	}
	return size
}
