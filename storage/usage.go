package storage

import "github.com/redcell/redcell/gcra"

// MemoryUsage returns an estimate of the bytes key costs in its shard's table,
// if the key is live at now, for MEMORY USAGE: its share of the shard's slots
// (32-byte entries, kept 70% to 87.5% full: the slots' bytes over the
// shard's keys, from 36.6 to 45.7 bytes a key, more in a shard of few keys),
// and its bytes in the arena if it is too long to be stored in its entry.
// Not counted: the arena's garbage, which all keys of the shard share and
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
	p := sh.t.lookup(key)
	if p < 0 || sh.t.slots[p].exp <= now {
		return 0, false
	}
	return sh.t.usage(p), true
}

// usage is MemoryUsage's estimate for the entry at slot p.
func (t *table) usage(p int) int64 {
	keys := int64(t.count)
	size := (int64(len(t.slots))*entrySize + keys - 1) / keys // the slots' bytes, shared, rounded up
	switch e := &t.slots[p]; {
	case e.boxed():
		size += int64(e.blobSize())
	case !e.inline():
		size += int64(e.keyLen())
	}
	return size
}
