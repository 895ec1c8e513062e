package storage

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/gcra"
)

// table is one shard's keyspace. It is not safe for concurrent use: its shard's
// mutex guards it.
//
// The table is one array of 32-byte entries, slots, in which a key's entry is
// found from its hash alone: it lives at its home slot or, pushed on by
// collisions, in the slots after it (linear probing), two to a cache line. So
// a lookup is one random read of memory, where an index of slots pointing into
// a dense array of entries took two dependent ones, each a cache miss once
// the keyspace outgrows the caches (pipelined over 100k keys, the index's
// find took 22% of the server's CPU). A key of up to inlineKey bytes is
// stored in its entry; a longer one lives in a byte arena, a boxed kind's
// state (and its key) in the value arena (table.setValue). None of the
// arrays holds a pointer, so the garbage collector never scans them, and
// large ones are mapped outside the Go heap (see region): a million keys cost
// their own bytes in RSS, not twice that under GOGC's heap goal.
//
// The probing is Robin Hood's: along a run of occupied slots the entries are
// in the order of their home slots, each entry's distance from its home is in
// its entry (at most maxDist), and a lookup stops at the first entry that is
// closer to its home than the key would be. A key's home is its hash scaled
// to the table's length (hash*len>>32), so the table may have any length: it
// grows by a quarter when it would be more than 7/8 full, which keeps it
// between 70% and 87.5% full, 36.6 to 45.7 bytes a key. And a home grows
// with the hash, so SCAN walks a table in the order of its keys' hashes, and
// a resize between two calls neither skips nor repeats a key (table.scan).
// Deleting shifts the entries after it back (no tombstones).
//
// A table holds at most 2^32-2 keys (a shard, not the store); a key is under
// 256 MiB. Beyond either it refuses the key (ErrFull, ErrKeyTooLong) rather
// than fail.
type table struct {
	// slots holds the entries, empty ones zero; its length is zero or at
	// least minSlots, its capacity mem.slots'.
	slots []entry
	count int // occupied slots
	// boxed counts the keys of each boxed kind (Kind-1): the TATs are the
	// rest, for the keys-by-kind metric.
	boxed [2]int
	// resizes counts the moves to new slots, so that a walk that deletes
	// (expire) knows to start again.
	resizes int
	// shrinkBelow, when set, is the key count the table must fall under
	// before it tries to shrink again: the last try found the keys left
	// bunched in one part of the hash range (the expiry sweep leaves them
	// so, walking the table in order), so that the table of the length
	// asked did not hold them within maxDist and the resize grew it back
	// toward the length it had. Tried on every removal, that was a full
	// rehash, or several, a key. 0: no such bound.
	shrinkBelow int
	// rungBase, when set, puts the table's lengths from staggerFrom on a
	// ladder of its own (rung): the store staggers them across its shards
	// (staggeredBase).
	rungBase int
	// arena holds the keys longer than inlineKey; its capacity is
	// mem.arena's. Removed keys leave garbage bytes until it is compacted.
	arena   []byte
	garbage int
	// vals holds the states of boxed keys (table.setValue); its capacity is
	// mem.vals'.
	vals       []byte
	valGarbage int
	// valSpare is the room blobs have beyond what their states need now
	// (spare), which a compaction gives back.
	valSpare int
	// tidyMark is garbage and valGarbage when Tidy last looked.
	tidyMark [2]int

	mem *tableMem

	// log records which keys changed, for the persister, and feed the same
	// for replication (changeLog).
	log, feed changeLog
	// obs, when set, is told of each change as it is made (Store.Observe).
	obs Observer
	// hooked is set while a log is on or obs is set (rehook): markDirty's
	// one test.
	hooked bool

	// slotKeys is the store's count of keys per slot when it shards by
	// slot (Store.CountInSlot), else nil.
	slotKeys []int32

	// index is where slots is and how long, for prefetches made without
	// the lock (Store.PrefetchIndex); written under it by setSlots, which also
	// keeps the store's count of table bytes, indexBytes (nil: none).
	index      atomic.Pointer[tableIndex]
	indexBytes *atomic.Int64
}

// entry is one key, or an empty slot (n zero): its kind, when it expires and
// its state. A TAT key (the GCRA family's) holds its TAT in exp, which is
// also when it expires, and a key of up to inlineKey bytes in the entry
// itself. A key of another kind (a window) keeps its key and its state
// together in the value arena (table.setValue), and exp is only its expiry.
type entry struct {
	exp gcra.Instant
	// n is the entry's tag (its Kind + 1; 0 for an empty slot), longBit,
	// dirtyBit, feedBit, an inline key's length and 14 bits of its hash
	// (hashBits), and the distance from the key's home slot.
	n uint32
	// key holds the key when inline (a TAT key of up to inlineKey bytes).
	// Otherwise bytes 8-11 hold its length and 12-15 its hash (hashKey), and
	// a long TAT key's offset in the arena is in bytes 0-7 (little-endian); a
	// boxed kind's blob's offset in the value arena is there, and its state's
	// capacity in bytes 16-19: the key is in the blob (entry.valOff).
	key [inlineKey]byte
}

const (
	inlineKey = 20 // makes an entry 32 bytes: two per cache line
	entrySize = 32
)

const (
	// dirtyBit in entry.n marks a key written since the persister last took
	// the changes (only when tracking).
	dirtyBit = 1 << 31
	// feedBit marks a key written since replication last took the
	// changes (only while it records them).
	feedBit = 1 << 30
	// tagShift and tagMask place the entry's tag in entry.n: its Kind + 1,
	// 0 for an empty slot.
	tagShift = 28
	tagMask  = 3 << tagShift
	tatTag   = uint32(KindTAT+1) << tagShift
	// longBit marks a TAT key too long for its entry, kept in the arena.
	longBit = 1 << 27
	// lenShift and inlineLenMask place an inline key's length.
	lenShift      = 8
	inlineLenMask = 31 << lenShift
	// hashBitsShift and hashBitsMask place 14 bits of an inline key's hash
	// (hashBits): a lookup passes over all but one in 16384 of the other
	// keys of its length without comparing their bytes.
	hashBitsShift = 13
	hashBitsMask  = (1<<14 - 1) << hashBitsShift
	// distMask is the entry's distance from its key's home slot.
	distMask = 255
	maxDist  = distMask
	// inlineSig is what entry.n holds, masked so, for an inline key:
	// tatTag | length<<lenShift | hashBits of its hash.
	inlineSig = tagMask | longBit | hashBitsMask | inlineLenMask

	// lenMask bounds a key's length: a key is at most 256 MiB long.
	lenMask = 1<<28 - 1

	minSlots     = 8
	minArena     = 256
	compactArena = 4 << 10 // arenas smaller than this are never compacted
)

func (e *entry) used() bool     { return e.n&tagMask != 0 }
func (e *entry) kind() Kind     { return Kind(e.n>>tagShift&3) - 1 }
func (e *entry) inline() bool   { return e.n&(tagMask|longBit) == tatTag }
func (e *entry) boxed() bool    { return e.n&tagMask > tatTag }
func (e *entry) dist() int      { return int(e.n & distMask) }
func (e *entry) keyOff() uint64 { return binary.LittleEndian.Uint64(e.key[:]) }

func (e *entry) keyLen() int {
	if e.inline() {
		return int(e.n & inlineLenMask >> lenShift)
	}
	return int(binary.LittleEndian.Uint32(e.key[8:]))
}

// setOutside records the length and hash of a key kept outside the entry.
func (e *entry) setOutside(n int, h uint32) {
	binary.LittleEndian.PutUint32(e.key[8:], uint32(n))
	binary.LittleEndian.PutUint32(e.key[12:], h)
}

// maxEntries is the most keys one table holds. (A variable so that a test
// can reach it without 4 billion keys.)
var maxEntries = math.MaxUint32 - 1

var keySeed = maphash.MakeSeed()

// keyHash is a key's one hash: its low bits pick its shard in a store not
// sharded by slot (Store.locate), its high 32 bits are the table's hash
// (hashKey), so that a decision hashes its key once.
func keyHash(key []byte) uint64 { return maphash.Bytes(keySeed, key) }

// hashKey is the table's hash of a key, which picks its home slot.
func hashKey(key []byte) uint32 { return uint32(keyHash(key) >> 32) }

func newTable(track bool) table {
	return table{mem: newTableMem(), log: changeLog{on: track, bit: dirtyBit}, feed: changeLog{bit: feedBit}, hooked: track}
}

// len returns the number of keys, expired or not.
func (t *table) len() int { return t.count }

// home is the slot where a key whose hash is h belongs: h scaled to the
// table's length, so that homes grow with hashes.
func (t *table) home(h uint32) int { return int(uint64(h) * uint64(len(t.slots)) >> 32) }

// next is the slot after p, wrapping around.
func (t *table) next(p int) int {
	if p++; p == len(t.slots) {
		return 0
	}
	return p
}

// hashBits is the bits of a key's hash h an inline entry keeps in n: the low
// ones, as keys near one another share the high ones that pick their homes.
func hashBits(h uint32) uint32 { return h << hashBitsShift & hashBitsMask }

// hashOf is the table's hash of e's key.
func (t *table) hashOf(e *entry) uint32 {
	if e.inline() {
		return hashKey(e.key[:e.keyLen()])
	}
	return binary.LittleEndian.Uint32(e.key[12:])
}

// keyOf returns e's key as a view of the table's memory, valid until the
// table next changes.
func (t *table) keyOf(e *entry) []byte {
	if e.inline() {
		return e.key[:e.keyLen()]
	}
	if e.boxed() {
		return t.boxedKey(e)
	}
	off := e.keyOff()
	return t.arena[off : off+uint64(e.keyLen())]
}

// find returns the slot of key, whose hash is h, and true; for an absent
// key, the slot where it would go and false. The table must have slots.
func (t *table) find(key []byte, h uint32) (int, bool) {
	sig := uint32(inlineSig) // no entry's: an inline key of this length cannot be
	if len(key) <= inlineKey {
		sig = tatTag | uint32(len(key))<<lenShift | hashBits(h)
	}
	p := t.home(h)
	for d := uint32(0); ; d++ {
		e := &t.slots[p]
		if e.n&inlineSig == sig && string(e.key[:len(key)]) == string(key) {
			return p, true
		}
		if e.n&tagMask == 0 || e.n&distMask < d {
			return p, false // an empty slot, or one whose key belongs after key's
		}
		if !e.inline() && binary.LittleEndian.Uint32(e.key[12:]) == h && string(t.keyOf(e)) == string(key) {
			return p, true
		}
		if p++; p == len(t.slots) {
			p = 0
		}
	}
}

// lookup returns the slot of key, or -1.
func (t *table) lookup(key []byte) int { return t.lookupHashed(key, hashKey(key)) }

// lookupHashed is lookup of a key that hashes to h.
func (t *table) lookupHashed(key []byte, h uint32) int {
	if t.count == 0 {
		return -1
	}
	if p, ok := t.find(key, h); ok {
		return p
	}
	return -1
}

// setTAT stores tat as the TAT of the TAT key at slot p.
func (t *table) setTAT(p int, tat gcra.Instant) {
	t.slots[p].exp = tat
	t.markDirty(p)
}

// get returns what key holds, expired or not: its expiry (a TAT key's TAT)
// and its kind.
func (t *table) get(key []byte) (gcra.Instant, Kind, bool) {
	if p := t.lookup(key); p >= 0 {
		e := &t.slots[p]
		return e.exp, e.kind(), true
	}
	return 0, 0, false
}

// put stores tat for key, a TAT key or absent, creating the key if needed.
// It fails, storing nothing, only when the key cannot be added
// (ErrKeyTooLong, ErrFull).
func (t *table) put(key []byte, tat gcra.Instant) error {
	h := hashKey(key)
	if p := t.lookupHashed(key, h); p >= 0 {
		t.setTAT(p, tat)
		return nil
	}
	return t.add(key, h, tat, KindTAT, nil)
}

// insert adds a TAT key known to be absent.
func (t *table) insert(key string, tat gcra.Instant) error {
	b := unsafe.Slice(unsafe.StringData(key), len(key)) // read only
	return t.add(b, hashKey(b), tat, KindTAT, nil)
}

// add stores an entry of kind for key, which is absent and hashes to h;
// value is a boxed kind's state (a TAT key has none).
func (t *table) add(key []byte, h uint32, exp gcra.Instant, kind Kind, value []byte) error {
	if len(key) > lenMask {
		return ErrKeyTooLong
	}
	if t.count >= maxEntries {
		return ErrFull
	}
	if (t.count+1)*8 > len(t.slots)*7 {
		t.resize(t.grown())
		t.shrinkBelow = 0 // its keys spread anew
	}
	e := entry{exp: exp, n: uint32(kind+1) << tagShift}
	switch {
	case e.boxed():
		e.setOutside(len(key), h)
		e.setVal(t.addBlob(key, value))
	case len(key) <= inlineKey:
		e.n |= uint32(len(key))<<lenShift | hashBits(h)
		copy(e.key[:], key)
	default:
		e.n |= longBit
		e.setOutside(len(key), h)
		binary.LittleEndian.PutUint64(e.key[:], t.appendKey(key))
	}
	p, ok := t.place(e, h)
	for !ok { // a key too far from its home: never, short of 256 keys with one hash
		t.resize(t.grown())
		t.shrinkBelow = 0 // its keys spread anew
		p, ok = t.place(e, h)
	}
	t.count++
	if kind.Boxed() {
		t.boxed[kind-1]++
	}
	t.markDirty(p)
	if t.slotKeys != nil {
		t.slotKeys[cluster.Slot(key)]++
	}
	return nil
}

// place puts e, whose key hashes to h and is absent, in its slot, shifting
// the entries after it in their run on by one, and returns its slot. It
// reports false, changing nothing, if that would put an entry further than
// maxDist from its home.
func (t *table) place(e entry, h uint32) (int, bool) {
	p, d := t.home(h), uint32(0)
	for s := &t.slots[p]; s.used() && s.n&distMask >= d; s = &t.slots[p] {
		p, d = t.next(p), d+1
		if d > maxDist {
			return 0, false
		}
	}
	q := p // the end of the run, an empty slot
	for t.slots[q].used() {
		if t.slots[q].n&distMask == maxDist {
			return 0, false
		}
		q = t.next(q)
	}
	for q != p {
		from := q - 1
		if from < 0 {
			from = len(t.slots) - 1
		}
		t.slots[q] = t.slots[from]
		t.slots[q].n++
		t.moved(q)
		q = from
	}
	e.n = e.n&^distMask | d
	t.slots[p] = e
	return p, true
}

// remove deletes key and reports whether it was present.
func (t *table) remove(key []byte) bool {
	p := t.lookup(key)
	if p < 0 {
		return false
	}
	t.removeAt(p)
	return true
}

// removeAt deletes the entry at slot p, shifting back the entries after it
// in its run that are not at their home. The table may shrink: the slots
// of every other key may change.
func (t *table) removeAt(p int) {
	e := &t.slots[p]
	if k := e.kind(); k.Boxed() {
		t.boxed[k-1]--
	}
	t.deleted(e)
	if t.obs != nil {
		t.obs.Changed(t.keyOf(e))
	}
	if t.slotKeys != nil {
		t.slotKeys[cluster.Slot(t.keyOf(e))]--
	}
	switch {
	case e.boxed():
		t.freeValue(e)
	case !e.inline():
		t.garbage += e.keyLen()
	}
	for q := t.next(p); t.slots[q].n&distMask != 0; q = t.next(q) {
		// A used slot at distance 0 or an empty slot ends the shift.
		t.slots[p] = t.slots[q]
		t.slots[p].n--
		t.moved(p)
		p = q
	}
	t.slots[p] = entry{}
	t.count--

	switch {
	case t.count == 0:
		t.release()
		return
	case t.count*5 < len(t.slots) && len(t.slots) > minSlots && (t.shrinkBelow == 0 || t.count < t.shrinkBelow):
		// Under a fifth full: half full again.
		want := t.rung(max(minSlots, 2*t.count))
		t.resize(want)
		t.shrinkBelow = 0
		if len(t.slots) > want {
			t.shrinkBelow = t.count / 2 // it had to grow back: see shrinkBelow
		}
	}
	if used := len(t.arena); t.garbage > used/2 && used >= compactArena {
		t.compactArena(2 * (used - t.garbage))
	}
	t.maybeCompactValues()
}
