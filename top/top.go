// Package top finds the most limited keys (CL.TOP): a heavy-hitters sketch
// of bounded size, whatever the number of keys, over about the last minute.
//
// A Sketch is the space-saving algorithm (Metwally, Agrawal and El Abbadi,
// 2005) over the limited decisions of one storage shard: it tracks at most
// Capacity keys; a limited decision on a key not tracked, with every slot
// taken, replaces the key of the fewest and starts from that count plus
// its own. The store keeps one Sketch a shard, updated under the shard's
// lock that the decision holds anyway: no lock, no contention, and a key is
// in one shard only, so the shards' sketches merge by concatenation.
// Allowed decisions are counted for the keys tracked, from when they are.
//
// What it costs a decision is Quick, inlined into it: a tracked key's
// decision, allowed or limited, is counted in its slot, found through a
// direct-mapped index of the tracked keys' hashes; an allowed decision on
// a key not tracked is a load and a comparison. A limited decision on a
// key not tracked, every slot taken, would cost a replacement each
// (finding the fewest, copying the key): a flood of distinct limited keys,
// when an operator most needs CL.TOP, would double a decision's
// instructions. So while every slot is taken those decisions are sampled:
// one in Sample on average is counted, as Sample decisions, the gaps
// between samples drawn at random so that no pattern of keys is missed
// (Note). A key limited often still enters after about Sample of its
// decisions and is counted one by one from then on; the others cost a
// decrement. While a slot is free every decision counts as itself, so a
// node limiting few keys gets exact counts.
//
// Error bound. The counts add up to the N limited decisions the sketch
// counted (sampled ones at their weight): space saving loses none, so the
// fewest is at most N/Capacity. A tracked key's limited count is its own
// decisions since it entered plus what it inherited then (Entry.Error): the
// fewest's count, and when sampled the Sample that stands for its own
// decisions before entry, which were Sample on average and more than 3
// Sample with probability e^-3 (5%). So a key limited more than N/Capacity
// times, and a few Sample, in its shard is listed, within N/Capacity +
// Sample of its count. Keys spread over S shards by their hash, that is
// above N/(Capacity S) of all the limited decisions: 0.1% on 32 shards,
// and 1% whenever the key's shard counted under a third of them.
//
// Time is in two generations of Generation each: a count is the current
// generation's and the last one's, so a key not limited for a minute
// leaves, and "about the last minute" is between one and two generations.
//
// Memory: fixed arrays (KeyBytes of key inline a slot), no pointer, no
// allocation ever: Size bytes a sketch (3,296 on 64-bit platforms),
// whatever it has seen.
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

// Sample is, every slot taken, one in how many limited decisions on keys
// not tracked are counted (each as Sample decisions).
const Sample = 32

// Generation is the length of one generation.
const Generation = 30 * gcra.Instant(1e9)

// Size is a Sketch's size in bytes: its memory, whatever it has seen.
const Size = int(unsafe.Sizeof(Sketch{}))

// indexSize is the buckets of the index of tracked keys: eight a key, so
// that two tracked keys rarely share one (several).
const indexSize = 256

// several marks a bucket of the index that more than one tracked key has:
// find looks for them.
const several = 0xff

// keyBuf is a tracked key's bytes, KeyBytes at most.
type keyBuf struct {
	n    uint8
	long bool // the key was longer than KeyBytes
	b    [KeyBytes]byte
}

// Sketch is one shard's heavy hitters. The zero Sketch is ready. It is not
// safe for concurrent use: the shard's lock guards it.
//
// Slot i (of used) is the key of hash hashes[i], and hashes[i] is 0 for a
// slot not used. The index's bucket of a tracked key (bucket) holds its
// slot, or several; a bucket no key has holds anything else (a slot whose
// key's bucket is another, or 0: holder). The arrays are apart so that
// what a decision reads (index, hashes, limited, allowed) is in few cache
// lines, and replace's search for the fewest reads limited alone.
type Sketch struct {
	index  [indexSize]uint8
	hashes [Capacity]uint64
	// limited and allowed are the decisions over both generations, of
	// which lastLimited and lastAllowed the last one's.
	limited, allowed         [Capacity]uint32
	lastLimited, lastAllowed [Capacity]uint32
	err                      [Capacity]uint32
	used                     int
	// genEnd is when the current generation ends (0: not started).
	genEnd gcra.Instant
	// gap is the limited decisions on keys not tracked, every slot taken,
	// until the next sample, this one included: drawn at random in
	// [1, 2*Sample-1]; 0 while a slot is free.
	gap int
	rng uint64
	key [Capacity]keyBuf
}

// bucket is the index's bucket of hash h: its top byte, which the store's
// choice of a shard (the low bits, up to 16) does not fix.
func bucket(h uint64) uint8 { return uint8(h >> 56) }

// Quick counts the decision on the key of hash h at now if it needs
// nothing but the hash, and reports whether it did; when it did not, Note
// counts it. It is what every decision pays, inlined: a tracked key's
// decision is counted in its slot, an allowed one on a key not tracked is
// not counted, and a limited one on a key not tracked, every slot taken,
// counts down to the next sample.
//
// A slot's hash is a tracked key's or 0 (Sketch), so a slot holding h is
// h's key's whatever its bucket says; a key that is not at its bucket's
// slot is not tracked, unless several keys have its bucket.
func (s *Sketch) Quick(h uint64, limited bool, now gcra.Instant) bool {
	v := s.index[h>>56] // bucket(h), which would not leave Quick inlined
	if i := v % Capacity; s.hashes[i] == h {
		if now >= s.genEnd {
			return false
		}
		if limited {
			s.limited[i]++
		} else {
			s.allowed[i]++
		}
		return true
	}
	switch {
	case v == several:
		return false
	case !limited:
		return true
	case s.gap > 1: // every slot taken (age)
		s.gap--
		return true
	}
	return false
}

// Note counts one decision on key, of hash h (the store's 64-bit hash of
// the key), at now: limited or allowed. An allowed decision on a key not
// tracked is not counted. A key is told from another by its hash: two keys
// of one shard share one in 2^64. It is the whole of what Quick does
// and the rest: the store calls it only when Quick did not count the
// decision, so it does not ask Quick again.
func (s *Sketch) Note(key []byte, h uint64, limited bool, now gcra.Instant) {
	if now >= s.genEnd {
		s.age(now)
	}
	if i := s.find(h); i >= 0 {
		if limited {
			s.limited[i]++
		} else {
			s.allowed[i]++
		}
		return
	}
	if !limited {
		return
	}
	if s.used < Capacity {
		s.put(s.used, key, h, 0, 1)
		s.used++
		return
	}
	if s.gap > 1 { // a key whose bucket is several's, not tracked
		s.gap--
		return
	}
	s.gap = 1 + int(s.random()%(2*Sample-1))
	s.replace(key, h)
}

// find returns the slot tracking the key of hash h, or -1.
func (s *Sketch) find(h uint64) int {
	if v := s.index[bucket(h)]; v != several {
		if i := int(v % Capacity); s.hashes[i] == h {
			return i
		}
		return -1
	}
	for i := range s.used {
		if s.hashes[i] == h {
			return i
		}
	}
	return -1
}

// replace gives the slot of the key limited least to key, a sampled
// decision (space saving): it starts from that key's count plus Sample.
func (s *Sketch) replace(key []byte, h uint64) {
	i, inherit := 0, s.limited[0]
	for j, n := range s.limited[1:] {
		if n < inherit {
			i, inherit = j+1, n
		}
	}
	old := bucket(s.hashes[i])
	s.put(i, key, h, inherit+Sample-1, inherit+Sample)
	if s.index[old] == several {
		s.rebucket(old)
	}
}

// rebucket sets bucket b of the index from the keys tracked: a bucket
// several keys had is one key's again when the others leave, so that a
// flood's replacements do not leave every bucket several's and every
// decision to find.
func (s *Sketch) rebucket(b uint8) {
	v, n := uint8(0), 0
	for i := range s.used {
		if bucket(s.hashes[i]) == b {
			v, n = uint8(i), n+1
		}
	}
	if n < 2 {
		s.index[b] = v // 0 when none: slot 0's key has another bucket
	}
}

// put makes slot i key's, of hash h, limited times this generation, of
// which err may not be key's.
func (s *Sketch) put(i int, key []byte, h uint64, err, limited uint32) {
	s.hashes[i] = h
	s.limited[i], s.allowed[i] = limited, 0
	s.lastLimited[i], s.lastAllowed[i] = 0, 0
	s.err[i] = err
	k := &s.key[i]
	k.n, k.long = uint8(min(len(key), KeyBytes)), len(key) > KeyBytes
	copy(k.b[:], key)
	s.mark(i)
}

// mark enters slot i in the index.
func (s *Sketch) mark(i int) {
	b := bucket(s.hashes[i])
	if j := s.holder(b); j < 0 || j == i {
		s.index[b] = uint8(i)
	} else {
		s.index[b] = several
	}
}

// holder returns the slot of the key of bucket b (several when more than
// one), or -1 when no key has b.
func (s *Sketch) holder(b uint8) int {
	v := s.index[b]
	if v == several || int(v) < s.used && bucket(s.hashes[v]) == b {
		return int(v)
	}
	return -1
}

// random is splitmix64: the sample gaps' source, seeded the same in every
// sketch so that a test sees the same counts every run.
func (s *Sketch) random() uint64 {
	s.rng += 0x9e3779b97f4a7c15
	z := s.rng
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// age starts a new generation at now: the last one is forgotten, the
// current becomes the last, and a key limited in neither leaves.
func (s *Sketch) age(now gcra.Instant) {
	n := s.used
	if s.genEnd == 0 || now >= s.genEnd+Generation {
		n = 0 // a generation or more went by without a decision
	}
	kept := 0
	for i := range n {
		limited := s.limited[i] - s.lastLimited[i] // the current generation's
		if limited == 0 {
			continue
		}
		allowed := s.allowed[i] - s.lastAllowed[i]
		s.hashes[kept], s.key[kept] = s.hashes[i], s.key[i]
		s.limited[kept], s.lastLimited[kept] = limited, limited
		s.allowed[kept], s.lastAllowed[kept] = allowed, allowed
		s.err[kept] = min(s.err[i], limited)
		kept++
	}
	clear(s.hashes[kept:s.used])
	s.used = kept
	if kept < Capacity {
		s.gap = 0
	}
	clear(s.index[:])
	for i := range kept {
		s.mark(i)
	}
	s.genEnd = now + Generation
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
	if s.genEnd != 0 && now >= s.genEnd {
		s.age(now)
	}
	for i := range s.used {
		k := &s.key[i]
		key := string(k.b[:k.n])
		if k.long {
			key = key[:KeyBytes-3] + "..."
		}
		out = append(out, Entry{Key: key, Limited: int64(s.limited[i]), Allowed: int64(s.allowed[i]),
			Error: int64(s.err[i])})
	}
	return out
}
