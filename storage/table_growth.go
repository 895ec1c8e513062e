package storage

import (
	"encoding/binary"
	"unsafe"
)

// How a table grows, shrinks and keeps its key arena: resizing to the next
// rung (staggered so that shards do not all resize at once), rehashing, and
// compacting the arena of long keys.

// grown is the table's length for one more key: a quarter more.
func (t *table) grown() int { return t.rung(max(minSlots, len(t.slots)+len(t.slots)/4)) }

// rung is the length to give the table for n slots: n, or from staggerFrom
// on, the least length at least n on the table's ladder, rungBase grown by
// quarters. Keys spread evenly over the shards, so tables that all grew
// alike would all resize at the same moment, each moving its whole table
// under its shard's lock: filling 10M keys, 32 resizes of about 25 ms came
// within a second, every ~10 s, and decisions fell from 400k/s to
// 50-100k/s for that second. Ladders that start a fraction of a quarter
// apart (staggeredBase) keep each shard's resizes at its own fraction of
// every growth step, shrinking too. Small tables, cheap to resize, keep
// plain lengths, so that a small store's tables (SCAN's pages, MEMORY
// USAGE's shares) stay small.
func (t *table) rung(n int) int {
	if t.rungBase == 0 || n < staggerFrom {
		return n
	}
	r := t.rungBase
	for r < n {
		r += r / 4
	}
	return r
}

// staggeredBase is the ladder's first rung (table.rungBase) of shard i of
// n: from staggerFrom up to a quarter more, evenly.
func staggeredBase(i, n int) int { return staggerFrom + staggerFrom*i/(4*n) }

// staggerFrom is the least length on a ladder: 128 KiB of slots, which a
// resize moves in well under a millisecond.
const staggerFrom = 4096

// appendKey copies a long key to the end of the arena, making room by
// compacting or growing it, and returns its offset.
func (t *table) appendKey(key []byte) uint64 {
	if len(t.arena)+len(key) > cap(t.arena) {
		// Growing copies the live keys anyway: drop the garbage as well.
		live := len(t.arena) - t.garbage + len(key)
		t.compactArena(max(minArena, 2*live))
	}
	off := len(t.arena)
	t.arena = append(t.arena, key...) // within capacity: never reallocates
	return uint64(off)
}

// compactArena moves the live long keys into a fresh arena of at least size
// bytes, dropping the garbage.
func (t *table) compactArena(size int) {
	old := replaceRegion(&t.mem.arena, size)
	arena := t.mem.arena.b[:0]
	for i := range t.slots {
		e := &t.slots[i]
		if e.used() && !e.inline() && !e.boxed() {
			off := len(arena)
			arena = append(arena, t.keyOf(e)...)
			binary.LittleEndian.PutUint64(e.key[:], uint64(off))
		}
	}
	t.arena = arena
	t.garbage = 0
	old.free()
}

// resize moves the entries to a table of n slots, n >= minSlots and more
// than the keys, growing it further in the (never seen) case that a key
// would land too far from its home.
func (t *table) resize(n int) {
	t.resizes++
	old, oldSlots := t.mem.slots, t.slots
	for {
		t.mem.slots = allocRegion(n * entrySize)
		t.setSlots(unsafe.Slice((*entry)(unsafe.Pointer(unsafe.SliceData(t.mem.slots.b))), n))
		t.log.resized()
		t.feed.resized()
		if t.rehash(oldSlots) {
			break
		}
		t.mem.slots.free()
		n += n / 4
	}
	old.free()
}

// rehash places every entry of old in the table's fresh slots, in order:
// their homes in the new table are in about the same order, so few move
// twice.
func (t *table) rehash(old []entry) bool {
	for i := range old {
		e := old[i]
		if !e.used() {
			continue
		}
		p, ok := t.place(e, t.hashOf(&e))
		if !ok {
			return false
		}
		t.notePending(p)
	}
	return true
}
