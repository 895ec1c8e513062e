package storage

import "encoding/binary"

// The value arena holds the states of boxed keys (windows). A key's state is
// a blob at an offset: a 4-byte length, then up to the blob's capacity of
// bytes. A state that still fits is rewritten in place (an exact log reuses
// its key's buffer); one that outgrows its blob moves to a new blob at the
// arena's end, a quarter larger, and the old one is garbage until the arena
// is compacted, as the key arena is. Like the other arrays the value arena
// holds no pointer and, once large, lives outside the Go heap.

// valueHeader is the bytes before a blob's state: its length.
const valueHeader = 4

func (e *entry) valOff() uint64 { return binary.LittleEndian.Uint64(e.key[8:]) }
func (e *entry) valCap() int    { return int(binary.LittleEndian.Uint32(e.key[16:])) }

func (e *entry) setVal(off uint64, capacity int) {
	binary.LittleEndian.PutUint64(e.key[8:], off)
	binary.LittleEndian.PutUint32(e.key[16:], uint32(capacity))
}

// value returns a boxed entry's state as a view of the table's memory, valid
// until the table next changes.
func (t *table) value(e *entry) []byte {
	if e.valCap() == 0 {
		return nil
	}
	off := e.valOff()
	n := binary.LittleEndian.Uint32(t.vals[off:])
	return t.vals[off+valueHeader : off+valueHeader+uint64(n)]
}

// setValue stores v as the state of the boxed entry at i, and records the
// write.
func (t *table) setValue(i int, v []byte) {
	e := &t.entries[i]
	if c := e.valCap(); c > 0 {
		if len(v) <= c {
			off := e.valOff()
			binary.LittleEndian.PutUint32(t.vals[off:], uint32(len(v)))
			copy(t.vals[off+valueHeader:], v)
			t.markDirty(i)
			return
		}
		t.freeValue(e)
	}
	capacity := len(v) + len(v)/4 + 8
	if need := len(t.vals) + valueHeader + capacity; need > cap(t.vals) {
		live := len(t.vals) - t.valGarbage + valueHeader + capacity
		t.compactValues(max(minArena, 2*live))
	}
	off := uint64(len(t.vals))
	t.vals = t.vals[:len(t.vals)+valueHeader+capacity] // within capacity
	binary.LittleEndian.PutUint32(t.vals[off:], uint32(len(v)))
	copy(t.vals[off+valueHeader:], v)
	e.setVal(off, capacity)
	t.markDirty(i)
}

// freeValue turns a boxed entry's blob into garbage, compacting the arena
// once garbage is half of it.
func (t *table) freeValue(e *entry) {
	if c := e.valCap(); c > 0 {
		t.valGarbage += valueHeader + c
		e.setVal(0, 0)
	}
	if used := len(t.vals); t.valGarbage > used/2 && used >= compactArena {
		t.compactValues(2 * (used - t.valGarbage))
	}
}

// compactValues moves the live blobs into a fresh arena of at least size
// bytes, dropping the garbage.
func (t *table) compactValues(size int) {
	old := t.mem.vals
	t.mem.vals = allocRegion(size)
	vals := t.mem.vals.b[:0]
	for i := range t.entries {
		e := &t.entries[i]
		if !e.boxed() || e.valCap() == 0 {
			continue
		}
		off, c := e.valOff(), e.valCap()
		e.setVal(uint64(len(vals)), c)
		vals = append(vals, t.vals[off:off+uint64(valueHeader+c)]...)
	}
	t.vals = vals
	t.valGarbage = 0
	old.free()
}
