package storage

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"sync/atomic"
	"unsafe"

	"redcell/cluster"
	"redcell/gcra"
)

// table is one shard's keyspace. It is not safe for concurrent use: its shard's
// mutex guards it.
//
// Keys live in a dense array, entries, so that the sweeper and SCAN can walk
// it with a plain index as their cursor; removing a key moves the last entry
// into its place. An open-addressing index, slots, finds a key's entry. A key
// of up to inlineKey bytes is stored in its entry, so a lookup touches two
// cache lines (slot, entry); a longer one lives in a byte arena. None of the
// arrays holds a pointer, so the garbage collector never scans them, and
// large ones are mapped outside the Go heap (see region): a million keys cost
// their own bytes in RSS, not twice that under GOGC's heap goal.
//
// A table holds at most 2^32-2 keys (a shard, not the store; the index keeps
// an entry's position in 32 bits); a key is under 256 MiB. Beyond either
// it refuses the key (ErrFull, ErrKeyTooLong) rather than fail.
type table struct {
	// entries has one element per key; its capacity is mem.entries'.
	entries []entry
	// slots is the index: 0 for an empty slot, else the key's 32-bit hash
	// in the high half and its entry index + 1 in the low half. Its length
	// is zero or a power of two; linear probing; at most 3/4 full.
	slots []uint64
	// arena holds the keys longer than inlineKey; its capacity is
	// mem.arena's. Removed keys leave garbage bytes until it is compacted.
	arena   []byte
	garbage int
	// vals holds the states of boxed keys (table.setValue); its capacity is
	// mem.vals'.
	vals       []byte
	valGarbage int

	mem *tableMem

	// log records which keys changed, for the persister, and feed the same
	// for replication (changeLog).
	log, feed changeLog

	// slotKeys is the store's count of keys per slot when it shards by
	// slot (Store.CountInSlot), else nil.
	slotKeys []int32

	// index is where slots is and how long, for prefetches made without
	// the lock (Store.PrefetchIndex); written under it by setSlots, which also
	// keeps the store's count of index bytes, indexBytes (nil: none).
	index      atomic.Uint64
	indexBytes *atomic.Int64
}

// entry is one key: its kind, when it expires and its state. A TAT key (the
// GCRA family's) holds its TAT in exp, which is also when it expires, and a
// key of up to inlineKey bytes in the entry itself: 32 bytes a key. A key of
// another kind (a window) keeps its key and its state together in the value
// arena (table.setValue), and exp is only its expiry.
type entry struct {
	exp gcra.Instant
	n   uint32 // key length (lenMask), kind (kindMask), dirtyBit, feedBit
	// key holds the key when inline (a TAT key of up to inlineKey bytes),
	// else the key's offset in the arena (little-endian, bytes 0-7); for a
	// boxed kind, its blob's offset in the value arena (0-7) and its
	// state's capacity (16-19): the key is in the blob (entry.valOff).
	key [inlineKey]byte
}

const inlineKey = 20 // makes an entry 32 bytes: two per cache line

// Kind is what a key holds.
type Kind uint8

const (
	// KindTAT is the GCRA family's state: a TAT (CL.THROTTLE, GCRA,
	// CL.RESERVE), stored inline.
	KindTAT Kind = iota
	// KindWindow is CL.WINDOW's state: a log or counters (package window),
	// boxed in the value arena.
	KindWindow
)

const (
	// dirtyBit in entry.n marks a key written since the last takeChanges
	// (only when tracking).
	dirtyBit = 1 << 31
	// kindShift and kindMask place the Kind in entry.n.
	kindShift = 29
	kindMask  = 3 << kindShift
	// feedBit marks a key written since replication last took the
	// changes (only while it records them).
	feedBit = 1 << 28
	// lenMask is the key's length: a key is at most 256 MiB long.
	lenMask = feedBit - 1

	minSlots     = 8
	minEntries   = 4
	minArena     = 256
	compactArena = 4 << 10 // arenas smaller than this are never compacted
)

func (e *entry) kind() Kind     { return Kind(e.n & kindMask >> kindShift) }
func (e *entry) keyLen() int    { return int(e.n & lenMask) }
func (e *entry) inline() bool   { return e.n&(kindMask|lenMask) <= inlineKey }
func (e *entry) boxed() bool    { return e.n&kindMask != 0 }
func (e *entry) keyOff() uint64 { return binary.LittleEndian.Uint64(e.key[:]) }

// maxEntries is the most keys one table holds: the index keeps an entry's
// position + 1 in 32 bits, and 0 means an empty slot. (A variable so that a
// test can reach it without 4 billion keys.)
var maxEntries = math.MaxUint32 - 1

var keySeed = maphash.MakeSeed()

// keyHash is a key's one hash: its low bits pick its shard in a store not
// sharded by slot (Store.locate), its high 32 bits are the table's hash
// (hashKey), so that a decision hashes its key once.
func keyHash(key []byte) uint64 { return maphash.Bytes(keySeed, key) }

// hashKey is the table's hash of a key: its low bits pick the home slot, all
// 32 are kept in the slot to skip most mismatches without reading the entry.
func hashKey(key []byte) uint32 { return uint32(keyHash(key) >> 32) }

func newTable(track bool) table {
	return table{mem: newTableMem(), log: changeLog{on: track, bit: dirtyBit}, feed: changeLog{bit: feedBit}}
}

// len returns the number of keys, expired or not.
func (t *table) len() int { return len(t.entries) }

// expAt returns when the entry at i expires (a TAT key's TAT), for i < len().
func (t *table) expAt(i int) gcra.Instant { return t.entries[i].exp }

// keyAt returns a copy of the key at i, for i < len(): the copy stays valid
// whatever happens to the table afterwards.
func (t *table) keyAt(i int) string { return string(t.keyOf(&t.entries[i])) }

// viewAt returns the key at i, for i < len(), as a view of the table's
// memory: valid until the table next changes.
func (t *table) viewAt(i int) []byte { return t.keyOf(&t.entries[i]) }

// keyOf returns e's key as a view of the table's memory, valid until the
// table next changes.
func (t *table) keyOf(e *entry) []byte {
	n := e.keyLen()
	if e.inline() {
		return e.key[:n]
	}
	if e.boxed() {
		return t.boxedKey(e)
	}
	off := e.keyOff()
	return t.arena[off : off+uint64(n)]
}

// find returns the entry index of key, whose hash is h, and the position of
// its slot; for an absent key, -1 and the empty slot where it would go. The
// index must not be empty.
func (t *table) find(key []byte, h uint32) (idx, pos int) {
	mask := len(t.slots) - 1
	for p := int(h) & mask; ; p = (p + 1) & mask {
		s := t.slots[p]
		if s == 0 {
			return -1, p
		}
		if uint32(s>>32) == h {
			i := int(uint32(s)) - 1
			if e := &t.entries[i]; e.keyLen() == len(key) && string(t.keyOf(e)) == string(key) {
				return i, p
			}
		}
	}
}

// slotOf returns the position of the slot pointing at entry i.
func (t *table) slotOf(i int) int {
	h := hashKey(t.keyOf(&t.entries[i]))
	mask := len(t.slots) - 1
	want := uint64(h)<<32 | uint64(i+1)
	for p := int(h) & mask; ; p = (p + 1) & mask {
		if t.slots[p] == want {
			return p
		}
	}
}

// lookup returns the entry index of key, or -1.
func (t *table) lookup(key []byte) int { return t.lookupHashed(key, hashKey(key)) }

// lookupHashed is lookup of a key that hashes to h.
func (t *table) lookupHashed(key []byte, h uint32) int {
	if len(t.entries) == 0 {
		return -1
	}
	i, _ := t.find(key, h)
	return i
}

// setTAT stores tat as the TAT of the TAT key at i.
func (t *table) setTAT(i int, tat gcra.Instant) {
	t.entries[i].exp = tat
	t.markDirty(i)
}

// get returns what key holds, expired or not: its expiry (a TAT key's TAT)
// and its kind.
func (t *table) get(key []byte) (gcra.Instant, Kind, bool) {
	if i := t.lookup(key); i >= 0 {
		e := &t.entries[i]
		return e.exp, e.kind(), true
	}
	return 0, 0, false
}

// put stores tat for key, a TAT key or absent, creating the key if needed.
// It fails, storing nothing, only when the key cannot be added
// (ErrKeyTooLong, ErrFull).
func (t *table) put(key []byte, tat gcra.Instant) error {
	h := hashKey(key)
	if len(t.entries) > 0 {
		if i, _ := t.find(key, h); i >= 0 {
			t.setTAT(i, tat)
			return nil
		}
	}
	return t.add(key, h, tat, KindTAT, nil)
}

// insert adds a TAT key known to be absent.
func (t *table) insert(key string, tat gcra.Instant) error {
	b := unsafe.Slice(unsafe.StringData(key), len(key)) // read only
	return t.add(b, hashKey(b), tat, KindTAT, nil)
}

// add appends an entry of kind for key, which is absent and hashes to h;
// value is a boxed kind's state (a TAT key has none).
func (t *table) add(key []byte, h uint32, exp gcra.Instant, kind Kind, value []byte) error {
	if len(key) > lenMask {
		return ErrKeyTooLong
	}
	n := len(t.entries)
	if n >= maxEntries {
		return ErrFull
	}
	if (n+1)*4 > len(t.slots)*3 {
		t.resizeSlots(max(minSlots, 2*len(t.slots)))
	}
	if n == cap(t.entries) {
		t.resizeEntries(max(minEntries, 2*n))
	}
	e := entry{exp: exp, n: uint32(len(key)) | uint32(kind)<<kindShift}
	switch {
	case e.boxed():
		e.setVal(t.addBlob(key, value))
	case e.inline():
		copy(e.key[:], key)
	default:
		binary.LittleEndian.PutUint64(e.key[:], t.appendKey(key))
	}
	t.entries = append(t.entries, e) // within capacity: never reallocates

	_, pos := t.find(key, h) // an empty slot, as the key is absent
	t.slots[pos] = uint64(h)<<32 | uint64(n+1)
	t.markDirty(n)
	if t.slotKeys != nil {
		t.slotKeys[cluster.Slot(key)]++
	}
	return nil
}

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
	for i := range t.entries {
		e := &t.entries[i]
		if !e.inline() && !e.boxed() {
			off := len(arena)
			arena = append(arena, t.keyOf(e)...)
			binary.LittleEndian.PutUint64(e.key[:], uint64(off))
		}
	}
	t.arena = arena
	t.garbage = 0
	old.free()
}

// resizeEntries moves the entries to an array of capacity n >= len.
func (t *table) resizeEntries(n int) {
	old := replaceRegion(&t.mem.entries, n*int(unsafe.Sizeof(entry{})))
	es := unsafe.Slice((*entry)(unsafe.Pointer(unsafe.SliceData(t.mem.entries.b))), n)
	t.entries = es[:copy(es, t.entries)]
	old.free()
}

// resizeSlots rebuilds the index with n slots, a power of two.
func (t *table) resizeSlots(n int) {
	old, oldSlots := replaceRegion(&t.mem.slots, n*8), t.slots
	t.setSlots(unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(t.mem.slots.b))), n))
	mask := n - 1
	for _, s := range oldSlots {
		if s == 0 {
			continue
		}
		p := int(s>>32) & mask
		for t.slots[p] != 0 {
			p = (p + 1) & mask
		}
		t.slots[p] = s
	}
	old.free()
}

// remove deletes key and reports whether it was present.
func (t *table) remove(key []byte) bool {
	i := t.lookup(key)
	if i < 0 {
		return false
	}
	t.removeAt(i)
	return true
}

// removeAt deletes the entry at i by moving the last entry into its place.
func (t *table) removeAt(i int) {
	e := &t.entries[i]
	t.deleteSlot(t.slotOf(i))
	t.deleted(e)
	if t.slotKeys != nil {
		t.slotKeys[cluster.Slot(t.keyOf(e))]--
	}
	switch {
	case e.boxed():
		t.freeValue(e)
	case !e.inline():
		t.garbage += e.keyLen()
	}

	last := len(t.entries) - 1
	if i != last {
		p := t.slotOf(last)
		t.slots[p] = t.slots[p]&^math.MaxUint32 | uint64(i+1)
		t.entries[i] = t.entries[last]
		t.moved(i) // its index changed
	}
	t.entries = t.entries[:last]

	switch {
	case last == 0:
		t.release()
		return
	case last*16 < len(t.slots) && len(t.slots) > minSlots:
		t.resizeSlots(len(t.slots) / 2)
	}
	if last*4 < cap(t.entries) && cap(t.entries) > minEntries {
		t.resizeEntries(cap(t.entries) / 2)
	}
	if used := len(t.arena); t.garbage > used/2 && used >= compactArena {
		t.compactArena(2 * (used - t.garbage))
	}
	t.maybeCompactValues()
}

// deleteSlot empties the slot at p, shifting back the slots after it that
// would otherwise no longer be found (linear probing needs no tombstones).
func (t *table) deleteSlot(p int) {
	mask := len(t.slots) - 1
	for q := (p + 1) & mask; t.slots[q] != 0; q = (q + 1) & mask {
		home := int(t.slots[q]>>32) & mask
		// The slot at q may move to p unless its home lies cyclically in
		// (p, q]: a lookup starting there would not see p.
		if (q-home)&mask >= (q-p)&mask {
			t.slots[p] = t.slots[q]
			p = q
		}
	}
	t.slots[p] = 0
}

// release frees the table's memory; it must hold no key.
func (t *table) release() {
	t.setSlots(nil)
	t.mem.free()
	t.entries, t.arena, t.garbage = nil, nil, 0
	t.vals, t.valGarbage = nil, 0
}

// expire deletes expired entries among at most n starting at cursor and returns
// where the next pass should start and how many it deleted.
func (t *table) expire(cursor, n int, now gcra.Instant) (next, expired int) {
	if cursor >= len(t.entries) {
		cursor = 0
	}
	for i := cursor; i < len(t.entries) && n > 0; n-- {
		if t.entries[i].exp <= now {
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
	for i := range t.entries {
		t.deleted(&t.entries[i])
		if t.slotKeys != nil {
			t.slotKeys[cluster.Slot(t.keyOf(&t.entries[i]))]--
		}
	}
	t.release()
}
