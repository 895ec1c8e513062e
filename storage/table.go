package storage

import "redcell/gcra"

// entry is one live key: its name and its TAT, which is also the instant the
// key expires.
type entry struct {
	key   string
	tat   gcra.Instant
	dirty bool // changed since the last takeChanges; only set when tracking
}

// table is one shard's keyspace. It is not safe for concurrent use: its shard's
// mutex guards it.
//
// Keys live in a dense slice so that the sweeper and SCAN can walk it with a
// plain index as their cursor, and so that updating an existing key writes
// the slice, not the map: an update allocates nothing.
type table struct {
	index   map[string]int32
	entries []entry

	// track makes every change append to changes, for the persister.
	track   bool
	changes []string
}

func newTable(track bool) table {
	return table{index: make(map[string]int32), track: track}
}

// get returns the TAT stored for key, expired or not.
func (t *table) get(key []byte) (gcra.Instant, bool) {
	i, ok := t.index[string(key)]
	if !ok {
		return 0, false
	}
	return t.entries[i].tat, true
}

// put stores tat for key, creating the key if needed.
func (t *table) put(key []byte, tat gcra.Instant) {
	if i, ok := t.index[string(key)]; ok {
		e := &t.entries[i]
		e.tat = tat
		t.markDirty(e)
		return
	}
	t.insert(string(key), tat)
}

// insert adds a key known to be absent.
func (t *table) insert(key string, tat gcra.Instant) {
	t.index[key] = int32(len(t.entries))
	t.entries = append(t.entries, entry{key: key, tat: tat})
	t.markDirty(&t.entries[len(t.entries)-1])
}

func (t *table) markDirty(e *entry) {
	if t.track && !e.dirty {
		e.dirty = true
		t.changes = append(t.changes, e.key)
	}
}

// remove deletes key and reports whether it was present.
func (t *table) remove(key []byte) bool {
	i, ok := t.index[string(key)]
	if !ok {
		return false
	}
	t.removeAt(int(i))
	return true
}

// removeAt deletes the entry at i by moving the last entry into its place.
func (t *table) removeAt(i int) {
	e := t.entries[i]
	delete(t.index, e.key)
	last := len(t.entries) - 1
	if i != last {
		t.entries[i] = t.entries[last]
		t.index[t.entries[i].key] = int32(i)
	}
	t.entries[last] = entry{}
	t.entries = t.entries[:last]
	// A dirty key is already in changes; either way takeChanges will find
	// it absent and record a deletion.
	if t.track && !e.dirty {
		t.changes = append(t.changes, e.key)
	}
}

// expire deletes expired entries among at most n starting at cursor and returns
// where the next pass should start and how many it deleted.
func (t *table) expire(cursor, n int, now gcra.Instant) (next, expired int) {
	if cursor >= len(t.entries) {
		cursor = 0
	}
	for i := cursor; i < len(t.entries) && n > 0; n-- {
		if t.entries[i].tat <= now {
			t.removeAt(i) // the last entry moved to i: look at i again
			expired++
			continue
		}
		i++
		cursor = i
	}
	return cursor, expired
}

// clear deletes every key.
func (t *table) clear() {
	if t.track {
		for _, e := range t.entries {
			if !e.dirty {
				t.changes = append(t.changes, e.key)
			}
		}
	}
	clear(t.index)
	clear(t.entries)
	t.entries = t.entries[:0]
}

// Change is one key's new state for the persister: its TAT, or zero when the
// key was deleted or expired.
type Change struct {
	Key string
	TAT gcra.Instant
}

// takeChanges appends every change since the last call to buf, one per key,
// and forgets them.
func (t *table) takeChanges(buf []Change) []Change {
	for _, k := range t.changes {
		i, ok := t.index[k]
		if !ok {
			buf = append(buf, Change{Key: k})
			continue
		}
		e := &t.entries[i]
		if e.dirty { // else already taken in this call
			e.dirty = false
			buf = append(buf, Change{Key: k, TAT: e.tat})
		}
	}
	clear(t.changes)
	t.changes = t.changes[:0]
	return buf
}
