package storage

import "encoding/binary"

// The value arena holds the boxed keys (windows): each a blob of a 4-byte
// state length, the key, then the state with room to grow up to the blob's
// capacity. Key and state side by side make a lookup that compares the key
// read the state's first bytes with it: one cache miss fewer than a key
// arena apart (measured: a third of CL.WINDOW's time was the misses of
// find). A state that still fits is rewritten in place (an exact log reuses
// its key's buffer); one that outgrows its blob moves, key and all, to a new
// blob at the arena's end, an eighth larger, and the old one is garbage
// until the arena is compacted, as the key arena is. Like the other arrays
// the value arena holds no pointer and, once large, lives outside the Go
// heap.
//
// A boxed entry keeps its blob's offset in key[0:8], the key's length and
// hash in key[8:16] (entry.setOutside) and the state's capacity in
// key[16:20]; capacity 0 marks an entry whose blob was freed.

// valueHeader is the bytes before a blob's key: the state's length.
const valueHeader = 4

func (e *entry) valOff() uint64 { return binary.LittleEndian.Uint64(e.key[:]) }
func (e *entry) valCap() int    { return int(binary.LittleEndian.Uint32(e.key[16:])) }

func (e *entry) setVal(off uint64, capacity int) {
	binary.LittleEndian.PutUint64(e.key[:], off)
	binary.LittleEndian.PutUint32(e.key[16:], uint32(capacity))
}

// blobSize is the bytes of e's blob.
func (e *entry) blobSize() int { return valueHeader + e.keyLen() + e.valCap() }

// boxedKey is a boxed entry's key, a view of the arena.
func (t *table) boxedKey(e *entry) []byte {
	off := e.valOff() + valueHeader
	return t.vals[off : off+uint64(e.keyLen())]
}

// value returns a boxed entry's state as a view of the table's memory, valid
// until the table next changes.
func (t *table) value(e *entry) []byte {
	off := e.valOff()
	n := binary.LittleEndian.Uint32(t.vals[off:])
	start := off + valueHeader + uint64(e.keyLen())
	return t.vals[start : start+uint64(n)]
}

// blobCapacity is the room a blob gives a state of n bytes: an eighth
// more, so that a state growing a little at a time moves now and then.
func blobCapacity(n int) int { return n + n/8 + 8 }

// addBlob appends a blob of key and state v, making room first, and returns
// its offset and state capacity. When from is a blob of the same key (one
// moving), the key is copied from there, which compaction keeps valid.
func (t *table) addBlob(key, v []byte) (uint64, int) {
	capacity := blobCapacity(len(v))
	size := valueHeader + len(key) + capacity
	if len(t.vals)+size > cap(t.vals) {
		live := len(t.vals) - t.valGarbage + size
		t.compactValues(max(minArena, 2*live))
	}
	off := len(t.vals)
	t.vals = t.vals[:off+size] // within capacity
	binary.LittleEndian.PutUint32(t.vals[off:], uint32(len(v)))
	copy(t.vals[off+valueHeader:], key)
	copy(t.vals[off+valueHeader+len(key):], v)
	return uint64(off), capacity
}

// spare is the room a blob of capacity gives a state of n bytes beyond
// what a new blob would (blobCapacity): room a state that shrank no longer
// needs, which a compaction gives back (table.valSpare counts it).
func spare(capacity, n int) int { return max(0, capacity-blobCapacity(n)) }

// spareOf is spare of e's blob as it is.
func (t *table) spareOf(e *entry) int {
	return spare(e.valCap(), int(binary.LittleEndian.Uint32(t.vals[e.valOff():])))
}

// setValue stores v as the state of the boxed entry at slot p, and records
// the write.
func (t *table) setValue(p int, v []byte) {
	e := &t.slots[p]
	if c := e.valCap(); len(v) <= c {
		off := e.valOff()
		h := t.vals[off : off+valueHeader]
		t.valSpare += spare(c, len(v)) - spare(c, int(binary.LittleEndian.Uint32(h)))
		binary.LittleEndian.PutUint32(h, uint32(len(v)))
		copy(t.vals[off+valueHeader+uint64(e.keyLen()):], v)
		t.markDirty(p)
		return
	}
	// Moving: room first (compaction moves this blob too), then the key
	// from where the blob is now, then the old blob becomes garbage.
	n := e.keyLen()
	if need := valueHeader + n + blobCapacity(len(v)); len(t.vals)+need > cap(t.vals) {
		live := len(t.vals) - t.valGarbage + need
		t.compactValues(max(minArena, 2*live))
	}
	t.valSpare -= t.spareOf(e) // counted as garbage now
	oldSize := e.blobSize()
	off, capacity := t.addBlob(t.boxedKey(e), v) // fits: no compaction
	e.setVal(off, capacity)
	t.valGarbage += oldSize
	t.markDirty(p)
	t.maybeCompactValues()
}

// freeValue turns a boxed entry's blob into garbage; its key is gone with
// it.
func (t *table) freeValue(e *entry) {
	if e.valCap() > 0 {
		t.valSpare -= t.spareOf(e)
		t.valGarbage += e.blobSize()
		e.setVal(0, 0)
	}
}

// maybeCompactValues compacts the value arena once garbage is half of it.
func (t *table) maybeCompactValues() {
	if used := len(t.vals); t.valGarbage > used/2 && used >= compactArena {
		t.compactValues(2 * (used - t.valGarbage))
	}
}

// compactValues moves the live blobs into a fresh arena of at least size
// bytes, dropping the garbage. A blob whose state shrank since it was made
// (a key's leases released, a log's entries gone) keeps only the room a
// new one would have (blobCapacity): the rest was slack no write reclaims.
func (t *table) compactValues(size int) {
	old := replaceRegion(&t.mem.vals, size)
	vals := t.mem.vals.b[:0]
	for i := range t.slots {
		e := &t.slots[i]
		if !e.boxed() || e.valCap() == 0 {
			continue
		}
		off := e.valOff()
		n := int(binary.LittleEndian.Uint32(t.vals[off:]))
		capacity := min(e.valCap(), blobCapacity(n))
		used := valueHeader + e.keyLen() + n
		e.setVal(uint64(len(vals)), capacity)
		vals = append(vals, t.vals[off:off+uint64(used)]...)
		vals = vals[:len(vals)+capacity-n] // a fresh region: zeros
	}
	t.vals = vals
	t.valGarbage, t.valSpare = 0, 0
	old.free()
}
