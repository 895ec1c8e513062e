package storage

import (
	"math"
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
// recorded more than once; a take reports a write once.
//
// A take (Store.takeChanges) works through the records in steps of at most
// takeChunk, the shard unlocked between them, so that no change set, however
// large, holds the lock for long. It begins by setting the records aside
// (taking, takingGone) for itself; what is recorded meanwhile goes to fresh
// records for the next take, except what concerns the entries the take still
// has to report: an entry moved (removeAt) or a key deleted with its bit set
// is recorded for the take too, so that it reports every change made before
// it began, as the key is at some moment of the take.
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
	// taking and takingGone are the records of the take under way (active),
	// worked through up to takePos and goneOff.
	active           bool
	taking           []uint32
	takingGone       []byte
	takePos, goneOff int
}

// deletedBit in a record marks a deleted key's length.
const deletedBit = 1 << 31

// wrote records that the entry at i was written.
func (l *changeLog) wrote(i int) {
	if l.on {
		l.records = append(l.records, uint32(i))
	}
}

// movedTo records that an entry with the log's bit set moved to i: for the
// take under way too, which may hold its record at its old index.
func (l *changeLog) movedTo(i int) {
	l.wrote(i)
	if l.active {
		l.taking = append(l.taking, uint32(i))
	}
}

// deleted records that key is gone; pending says whether its entry had the
// log's bit set, a change a take under way may still have to report.
func (l *changeLog) deleted(key []byte, pending bool) {
	if !l.on {
		return
	}
	l.records = append(l.records, deletedBit|uint32(len(key)))
	l.gone = append(l.gone, key...)
	if pending && l.active {
		l.taking = append(l.taking, deletedBit|uint32(len(key)))
		l.takingGone = append(l.takingGone, key...)
	}
}

// pending is how many changes are recorded: at least one per changed key,
// zero exactly when nothing waits.
func (l *changeLog) pending() int { return len(l.records) + len(l.taking) - l.takePos }

// markDirty records a write of the entry at i in each log that is on, once
// until that log's changes are taken.
func (t *table) markDirty(i int) {
	e := &t.entries[i]
	if t.log.on && e.n&dirtyBit == 0 {
		e.n |= dirtyBit
		t.log.wrote(i)
	}
	if t.feed.on && e.n&feedBit == 0 {
		e.n |= feedBit
		t.feed.wrote(i)
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

// deleted records in each log that the key of e is gone.
func (t *table) deleted(e *entry) {
	key := t.keyOf(e)
	t.log.deleted(key, e.n&dirtyBit != 0)
	t.feed.deleted(key, e.n&feedBit != 0)
}

// moved records, in each log that holds it, that the recorded entry now at
// i was moved there (removeAt).
func (t *table) moved(i int) {
	n := t.entries[i].n
	if n&dirtyBit != 0 {
		t.log.movedTo(i)
	}
	if n&feedBit != 0 {
		t.feed.movedTo(i)
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
	t.log.deleted(key, false)
}

// takeChunk bounds the records a take works through in one hold of the
// shard's lock: some 1024 random reads of the table, about 100 us.
var takeChunk = 1024

// takeChanges appends every change l recorded since the last call to buf,
// one per written key, and forgets them, all at once: the table's own
// callers hold nothing else up (Store.takeChanges takes a shard's changes in
// steps).
func (t *table) takeChanges(l *changeLog, buf []Change) []Change {
	t.beginTake(l)
	for done := false; !done; {
		buf, done = t.takeSome(l, buf, math.MaxInt)
	}
	return buf
}

// beginTake sets l's records aside for a take.
func (t *table) beginTake(l *changeLog) {
	l.active = true
	l.records, l.taking = l.taking[:0], l.records
	l.gone, l.takingGone = l.takingGone[:0], l.gone
	l.takePos, l.goneOff = 0, 0
}

// takeSome works through up to limit of the take's records, appending the
// changes they report to buf, and reports whether the take is done (then it
// is over: the log has no take under way). A deleted key is reported unless
// it is present now; a present key is then reported as it is, if it is
// recorded, as its write may have come after the take began.
func (t *table) takeSome(l *changeLog, buf []Change, limit int) ([]Change, bool) {
	// First pass: decide what to report, each Key a view of the table's
	// memory, which does not move until we return.
	start, size := len(buf), 0
	view := func(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
	report := func(i int) {
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
	end := min(len(l.taking), l.takePos+limit)
	for _, c := range l.taking[l.takePos:end] {
		if c&deletedBit == 0 {
			// A write, unless the entry moved (then it was recorded again)
			// or was already reported.
			if i := int(c); i < len(t.entries) && t.entries[i].n&l.bit != 0 {
				report(i)
			}
			continue
		}
		key := l.takingGone[l.goneOff : l.goneOff+int(c&^deletedBit)]
		l.goneOff += len(key)
		switch i := t.lookup(key); {
		case i < 0:
			buf = append(buf, Change{Key: view(key)})
			size += len(key)
		case t.entries[i].n&l.bit != 0:
			// Written again: by the take's end, perhaps, recorded for
			// the next take alone.
			report(i)
		}
		// Otherwise reported by its write already, or restored without
		// tracking: either way nothing is deleted.
	}
	l.takePos = end
	// Second pass: copy the keys into one string, one allocation for the
	// step, so each Change.Key stays valid whatever the table does once
	// unlocked.
	keys := make([]byte, 0, size)
	for _, c := range buf[start:] {
		keys = append(keys, c.Key...)
		keys = append(keys, c.Value...)
	}
	s := view(keys)
	off := 0
	for j := start; j < len(buf); j++ {
		n, m := len(buf[j].Key), len(buf[j].Value)
		buf[j].Key = s[off : off+n]
		buf[j].Value = s[off+n : off+n+m]
		off += n + m
	}
	if l.takePos < len(l.taking) {
		return buf, false
	}
	// Keep the buffers for the next take unless a burst made them large.
	l.active = false
	if cap(l.taking) > 1<<16 {
		l.taking, l.takingGone = nil, nil
	} else {
		l.taking, l.takingGone = l.taking[:0], l.takingGone[:0]
	}
	l.takePos, l.goneOff = 0, 0
	return buf, true
}
