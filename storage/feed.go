package storage

import (
	"unsafe"

	"github.com/redcell/redcell/gcra"
)

// What replication needs of the keyspace: a second change log, the feed,
// that a master's replication takes from as the persister takes from its
// own (changeLog), a copy of every key for a full resynchronization, and
// Apply, how a replica stores what its master sent.
//
// Replication sends states, not commands: a key's state as it is when the
// feed is taken. Applying a state twice, or a newer one over an older one,
// leaves the replica as the master, so the order between the copy and the
// feed need only hold per key (Feed's contract).

// SetFeed starts (on) or stops recording changes in the feed. While it is
// off nothing is recorded and the hot path pays one branch; stopping it
// forgets what was recorded and not taken.
func (s *Store) SetFeed(on bool) {
	s.forShards(nil, func(sh *shard) {
		f := &sh.t.feed
		if f.on == on {
			return
		}
		f.on = on
		sh.t.rehook()
		if !on {
			for i := range sh.t.slots {
				sh.t.slots[i].n &^= feedBit
			}
			f.blocks, f.marked = nil, 0
			f.goneLens, f.gone = nil, nil
		}
	})
}

// TakeFeed appends to buf every key of shard i (0 <= i < Shards()) changed
// since the previous call while the feed was on, as TakeShardChanges does
// for the persister: once per key with its state as it is now, a deleted
// key with TAT zero. The shard's lock is held only to copy the changes, at
// most takeChunk of them at a time.
func (s *Store) TakeFeed(i int, buf []Change) []Change {
	sh := &s.shards[i]
	return s.takeChanges(sh, &sh.t.feed, buf)
}

// CopyShard appends to buf every live key of shard i with its state, copied
// under the shard's lock into one allocation: the first phase of a snapshot,
// whose writing happens after the lock is released.
func (s *Store) CopyShard(i int, now gcra.Instant, buf []Change) []Change {
	sh := &s.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.t.copyLive(now, nil, buf)
}

// copyLive appends to buf every live key at now that keep accepts (nil:
// every one) with its state, the keys' and states' bytes copied into one
// allocation, so that the Changes stay valid once the lock is released.
func (t *table) copyLive(now gcra.Instant, keep func(key []byte) bool, buf []Change) []Change {
	live := func(e *entry) bool { return e.exp > now && (keep == nil || keep(t.keyOf(e))) }
	size := 0
	for j := range t.slots {
		if e := &t.slots[j]; e.used() && live(e) {
			size += e.keyLen()
			if e.boxed() {
				size += len(t.value(e))
			}
		}
	}
	data := make([]byte, 0, size)
	for j := range t.slots {
		e := &t.slots[j]
		if !e.used() || !live(e) {
			continue
		}
		off := len(data)
		data = append(data, t.keyOf(e)...)
		key := unsafe.String(unsafe.SliceData(data[off:]), len(data)-off)
		ch := Change{Key: key, TAT: e.exp, Kind: e.kind()}
		if e.boxed() {
			off = len(data)
			data = append(data, t.value(e)...)
			ch.Value = unsafe.String(unsafe.SliceData(data[off:]), len(data)-off)
		}
		buf = append(buf, ch)
	}
	return buf
}

// Apply stores key's state as a master sent it: a TAT key's TAT (exp), or
// another kind's state (value) expiring at exp, replacing whatever key held.
// Unlike Restore it records the change, so the replica persists it. It never
// refuses for memory: a replica holds what its master holds, as Redis's
// replica-ignore-maxmemory.
func (s *Store) Apply(key []byte, kind Kind, exp gcra.Instant, value []byte) error {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if i := sh.t.lookup(key); i >= 0 && sh.t.slots[i].kind() != kind {
		sh.t.removeAt(i)
	}
	return sh.t.set(key, kind, exp, value)
}

// set stores key's state of kind, the key absent or of that kind.
func (t *table) set(key []byte, kind Kind, exp gcra.Instant, value []byte) error {
	if kind == KindTAT {
		return t.put(key, exp)
	}
	return t.putBoxed(key, kind, exp, value)
}
