package storage

import (
	"unsafe"

	"redcell/gcra"
)

// Change is one key's new state for the persister: its TAT (a KindTAT key)
// or expiry (another kind) and, for a boxed kind, its state; TAT zero when
// the key was deleted or expired.
type Change struct {
	Key   string
	TAT   gcra.Instant
	Kind  Kind
	Value string
}

// changeLog records which of a table's keys changed since the persister last
// took the changes, so that a flush writes only those. A written key is
// remembered by its entry (dirtyBit on the entry, its index in records); a
// deleted key by its bytes, as it no longer has an entry. A key may be
// recorded more than once; takeChanges reports a write once per call.
//
// It is off (records nothing) for a store that nothing persists.
type changeLog struct {
	on bool
	// bit is the entry.n bit that marks a key recorded in this log and not
	// yet taken: dirtyBit for the persister's, feedBit for replication's.
	bit uint32
	// records has one element per recorded change: an entry index whose key
	// was written, or deletedBit | length for a deleted key whose bytes
	// follow the previous deleted keys' in gone.
	records []uint32
	gone    []byte
}

// deletedBit in a record marks a deleted key's length.
const deletedBit = 1 << 31

// wrote records that the entry at i was written, or moved to i with its
// dirty bit still set.
func (l *changeLog) wrote(i int) {
	if l.on {
		l.records = append(l.records, uint32(i))
	}
}

// deleted records that key is gone.
func (l *changeLog) deleted(key []byte) {
	if l.on {
		l.records = append(l.records, deletedBit|uint32(len(key)))
		l.gone = append(l.gone, key...)
	}
}

// pending is how many changes are recorded: at least one per changed key,
// zero exactly when nothing waits.
func (l *changeLog) pending() int { return len(l.records) }

// markDirty records a write of the entry at i in each log that is on, once
// until that log's changes are taken, and tells the observer, if any, of
// every write. With no log on and no observer it costs one test, inlined:
// the hot path of a store that nothing persists, replicates or observes.
func (t *table) markDirty(i int) {
	if t.hooked {
		t.markDirtyHooked(i)
	}
}

// rehook sets hooked from the logs and the observer, wherever one of them
// is turned on or off.
func (t *table) rehook() { t.hooked = t.log.on || t.feed.on || t.obs != nil }

func (t *table) markDirtyHooked(i int) {
	e := &t.entries[i]
	if t.log.on && e.n&dirtyBit == 0 {
		e.n |= dirtyBit
		t.log.wrote(i)
	}
	if t.feed.on && e.n&feedBit == 0 {
		e.n |= feedBit
		t.feed.wrote(i)
	}
	if t.obs != nil {
		t.obs.Changed(t.keyOf(e))
	}
}

// markAllDirty records a write of every entry in the persister's log (not in
// replication's: nothing changed for a replica).
func (t *table) markAllDirty() {
	if !t.log.on {
		return
	}
	for i := range t.entries {
		if e := &t.entries[i]; e.n&dirtyBit == 0 {
			e.n |= dirtyBit
			t.log.wrote(i)
		}
	}
}

// deleted records in each log that key is gone.
func (t *table) deleted(key []byte) {
	t.log.deleted(key)
	t.feed.deleted(key)
}

// moved records, in each log that holds it, that the recorded entry now at
// i was moved there (removeAt).
func (t *table) moved(i int) {
	n := t.entries[i].n
	if n&dirtyBit != 0 {
		t.log.wrote(i)
	}
	if n&feedBit != 0 {
		t.feed.wrote(i)
	}
}

// requeue records again a change that was taken but not written, as the key
// is now: a write if it is present (its current TAT is what a flush must
// write), a deletion if it is absent. Each key stays recorded once however
// often its flush fails.
func (t *table) requeue(key []byte) {
	if i := t.lookup(key); i >= 0 {
		if e := &t.entries[i]; e.n&dirtyBit == 0 {
			e.n |= dirtyBit
			t.log.wrote(i)
		}
		return
	}
	t.log.deleted(key)
}

// takeChanges appends every change l recorded since the last call to buf,
// one per written key, and forgets them. A deleted key is reported unless it
// has been written since (then its write is reported); it may be reported
// more than once if it was deleted more than once.
func (t *table) takeChanges(l *changeLog, buf []Change) []Change {
	if len(l.records) == 0 {
		return buf
	}
	// First pass: decide what to report, each Key a view of the table's
	// memory, which does not move until we return.
	start, size := len(buf), 0
	view := func(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
	off := 0
	for _, c := range l.records {
		if c&deletedBit == 0 {
			// A write, unless the entry moved (then it was recorded again)
			// or was already reported in this call.
			if i := int(c); i < len(t.entries) && t.entries[i].n&l.bit != 0 {
				e := &t.entries[i]
				e.n &^= l.bit
				key := t.keyOf(e)
				ch := Change{Key: view(key), TAT: e.exp, Kind: e.kind()}
				if e.boxed() {
					v := t.value(e)
					ch.Value = view(v)
					size += len(v)
				}
				buf = append(buf, ch)
				size += len(key)
			}
			continue
		}
		key := l.gone[off : off+int(c&^deletedBit)]
		off += len(key)
		// A key written again since is reported by its write, or was
		// restored without tracking: either way nothing is deleted.
		if t.lookup(key) < 0 {
			buf = append(buf, Change{Key: view(key)})
			size += len(key)
		}
	}
	// Second pass: copy the keys into one string, one allocation for the
	// batch, so each Change.Key stays valid whatever the table does once
	// unlocked.
	keys := make([]byte, 0, size)
	for _, c := range buf[start:] {
		keys = append(keys, c.Key...)
		keys = append(keys, c.Value...)
	}
	s := view(keys)
	off = 0
	for j := start; j < len(buf); j++ {
		n, m := len(buf[j].Key), len(buf[j].Value)
		buf[j].Key = s[off : off+n]
		buf[j].Value = s[off+n : off+n+m]
		off += n + m
	}
	// Keep the buffers for the next batch unless a burst made them large.
	if cap(l.records) > 1<<16 {
		l.records, l.gone = nil, nil
	} else {
		l.records, l.gone = l.records[:0], l.gone[:0]
	}
	return buf
}
