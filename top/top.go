// Package top finds the most limited keys (CL.TOP): a heavy-hitters sketch
// of bounded size, whatever the number of keys, over about the last minute.
//
// A Sketch is the space-saving algorithm (Metwally, Agrawal and El Abbadi,
// 2005) over the limited decisions of one storage shard: it tracks at most
// Capacity keys; a limited decision on a key not tracked, with every slot
// taken, replaces the key of the fewest and starts from that count plus
// one. So a tracked key's limited count is over by at most the count it
// inherited (Entry.Error), never under, and every key limited more than
// N/Capacity times of the N limited decisions its sketch saw is tracked.
// The store keeps one Sketch a shard, updated under the shard's lock that
// the decision holds anyway: no lock, no contention, and a key is in one
// shard only, so the shards' sketches merge by concatenation.
//
// Allowed decisions are counted for the keys tracked only: a bit a key in
// a small filter says whether to look (Watched), so an allowed decision on
// any other key costs a load and a test.
//
// Time is in two generations of Generation each: a count is the current
// generation's and the last one's, so a key not limited for a minute
// leaves, and "about the last minute" is between one and two generations.
//
// Memory: Capacity entries of a fixed size (KeyBytes of key inline), no
// pointer, no allocation after New: Size bytes a sketch.
package top

import (
	"unsafe"

	"github.com/redcell/redcell/gcra"
)

// Capacity is the keys one sketch tracks.
const Capacity = 32

// KeyBytes is the longest key kept whole; a longer one is kept by its first
// KeyBytes-3 bytes and "..." (Entry.Key), told apart from others of the
// same prefix by its hash.
const KeyBytes = 64

// Generation is the length of one generation.
const Generation = 30 * gcra.Instant(1e9)

// filterBits is the size of the filter of tracked keys.
const filterBits = 1024

// Size is a Sketch's size in bytes: its memory, whatever it has seen.
const Size = int(unsafe.Sizeof(Sketch{}))

// slot is one tracked key.
type slot struct {
	hash    uint64
	keyLen  uint8
	long    bool // the key was longer than KeyBytes
	key     [KeyBytes]byte
	limited [2]uint32 // by generation: [cur], [prev]
	allowed [2]uint32
	err     uint32 // the count inherited when the key took the slot
}

// Sketch is one shard's heavy hitters. The zero Sketch is ready. It is not
// safe for concurrent use: the shard's lock guards it.
type Sketch struct {
	slots  [Capacity]slot
	used   int
	filter [filterBits / 64]uint64
	// genEnd is when the current generation ends (0: not started).
	genEnd gcra.Instant
	// last is the slot Note counted last, lastHash its key's hash: Hit
	// counts that key again in pending (allowed, limited) without a search.
	last     int
	lastHash uint64
	pending  [2]uint32
}

// Watched reports whether the key of hash h may be tracked: only then does
// an allowed decision on it need Note. It is what every allowed decision
// pays.
func (s *Sketch) Watched(h uint64) bool {
	b := h % filterBits
	return s.filter[b/64]&(1<<(b%64)) != 0
}

// Hit counts a decision on the key noted last, of hash h, within the
// generation, and reports whether it did: the hot key of a shard is counted
// here, inlined into the decision, in two counters that Note and AppendTo
// add to its slot (settle). Any other decision goes to Note.
func (s *Sketch) Hit(h uint64, limited bool, now gcra.Instant) bool {
	if h != s.lastHash || now >= s.genEnd {
		return false
	}
	if limited {
		s.pending[1]++
	} else {
		s.pending[0]++
	}
	return true
}

// Note counts one decision on key, of hash h (the store's 64-bit hash of
// the key), at now: limited or allowed. An allowed decision on a key not
// tracked is not counted. A key is told from another by its hash: two keys
// of one shard share one in 2^64.
func (s *Sketch) Note(key []byte, h uint64, limited bool, now gcra.Instant) {
	if s.Hit(h, limited, now) {
		return
	}
	s.settle()
	if now >= s.genEnd {
		s.age(now)
	}
	i := s.find(h)
	if i < 0 {
		if !limited {
			return
		}
		i = s.take(key, h)
	}
	s.last, s.lastHash = i, h
	s.slots[i].count(limited)
}

func (e *slot) count(limited bool) {
	if limited {
		e.limited[0]++
	} else {
		e.allowed[0]++
	}
}

// settle adds what Hit counted to the slot it counted for.
func (s *Sketch) settle() {
	if s.pending != [2]uint32{} {
		e := &s.slots[s.last]
		e.allowed[0] += s.pending[0]
		e.limited[0] += s.pending[1]
		s.pending = [2]uint32{}
	}
}

// find returns the slot tracking the key of hash h, or -1.
func (s *Sketch) find(h uint64) int {
	for i := range s.used {
		if s.slots[i].hash == h {
			return i
		}
	}
	return -1
}

// take gives key a slot: a free one, or the one limited least (space
// saving), whose count the key inherits.
func (s *Sketch) take(key []byte, h uint64) int {
	i, inherit := s.used, uint32(0)
	if s.used < Capacity {
		s.used++
	} else {
		i = 0
		for j := 1; j < Capacity; j++ {
			if s.slots[j].total() < s.slots[i].total() {
				i = j
			}
		}
		inherit = s.slots[i].total()
	}
	e := &s.slots[i]
	*e = slot{hash: h, keyLen: uint8(min(len(key), KeyBytes)), long: len(key) > KeyBytes, err: inherit}
	copy(e.key[:], key)
	e.limited[0] = inherit
	s.refilter()
	return i
}

func (e *slot) total() uint32 { return e.limited[0] + e.limited[1] }

// age starts a new generation at now: the last one is forgotten, the
// current becomes the last, and a key limited in neither leaves.
func (s *Sketch) age(now gcra.Instant) {
	s.settle()
	if s.genEnd != 0 && now < s.genEnd+Generation {
		for i := range s.used {
			e := &s.slots[i]
			e.limited = [2]uint32{0, e.limited[0]}
			e.allowed = [2]uint32{0, e.allowed[0]}
			e.err = min(e.err, e.limited[1])
		}
	} else {
		s.used = 0 // a generation or more went by without a decision
	}
	kept := 0
	for i := range s.used {
		if s.slots[i].total() > 0 {
			s.slots[kept] = s.slots[i]
			kept++
		}
	}
	s.used = kept
	s.genEnd = now + Generation
	s.last, s.lastHash = 0, 0
	s.refilter()
}

// refilter sets the filter from the keys tracked.
func (s *Sketch) refilter() {
	clear(s.filter[:])
	for i := range s.used {
		b := s.slots[i].hash % filterBits
		s.filter[b/64] |= 1 << (b % 64)
	}
}

// Entry is one key of the top: its limited and allowed decisions over the
// two generations, and by how much Limited may be over.
type Entry struct {
	Key              string
	Limited, Allowed int64
	Error            int64
}

// AppendTo appends the keys tracked at now to out. A sketch not aged for a
// generation or more is aged first (a shard idle since).
func (s *Sketch) AppendTo(out []Entry, now gcra.Instant) []Entry {
	s.settle()
	if s.genEnd != 0 && now >= s.genEnd {
		s.age(now)
	}
	for i := range s.used {
		e := &s.slots[i]
		key := string(e.key[:e.keyLen])
		if e.long {
			key = key[:KeyBytes-3] + "..."
		}
		out = append(out, Entry{Key: key, Limited: int64(e.total()),
			Allowed: int64(e.allowed[0]) + int64(e.allowed[1]), Error: int64(e.err)})
	}
	return out
}
