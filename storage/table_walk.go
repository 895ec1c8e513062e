package storage

import (
	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/gcra"
)

// Walks over a whole table: the expiry sweep (expire), SCAN's cursor
// (scan), FLUSHALL (clear) and giving the memory back (release).

// release frees the table's memory; it must hold no key.
func (t *table) release() {
	t.setSlots(nil)
	t.mem.free()
	t.count, t.boxed = 0, [2]int{}
	t.arena, t.garbage = nil, 0
	t.vals, t.valGarbage, t.valSpare = nil, 0, 0
	t.tidyMark = [2]int{}
	t.log.resized()
	t.feed.resized()
}

// expire deletes expired entries among at most n starting at slot cursor,
// and returns where the next pass should start, how many keys it examined
// and how many of them it deleted.
func (t *table) expire(cursor, n int, now gcra.Instant) (next, examined, expired int) {
	if cursor >= len(t.slots) {
		cursor = 0
	}
	budget := n
	for i := cursor; i < len(t.slots) && n > 0; {
		e := &t.slots[i]
		if !e.used() {
			i++
			cursor = i
			continue
		}
		n--
		if e.exp <= now {
			resizes := t.resizes
			t.removeAt(i) // the next entry may have moved to i: look at i again
			expired++
			if t.resizes != resizes {
				i, cursor = 0, 0 // every entry moved
			}
			continue
		}
		i++
		cursor = i
	}
	return cursor, budget - n, expired
}

// clear deletes every key.
func (t *table) clear() {
	for i := range t.slots {
		if e := &t.slots[i]; e.used() {
			t.deleted(e)
			if t.slotKeys != nil {
				t.slotKeys[cluster.Slot(t.keyOf(e))]--
			}
		}
	}
	t.release()
}

// scan calls fn for the entries whose hash is from or more and whose home is
// among the count slots from from's, in the order of their homes, and returns
// how many homes it covered and the hash to start the next call from, or
// done: the hashes of all keys are below it. A table that resizes between
// two calls is walked on from the same hash, so every key present through
// the walk is seen exactly once.
func (t *table) scan(from uint64, count int, fn func(e *entry)) (covered int, next uint64, done bool) {
	n := len(t.slots)
	if n == 0 {
		return 0, 0, true
	}
	p0 := int(from * uint64(n) >> 32)
	p1 := min(n, p0+max(count, 1))
	// i runs on past the end of the slots for the run that wraps around;
	// home is the entry's home slot in the same unwrapped numbering.
	for i := p0; ; i++ {
		e := &t.slots[i%n]
		if !e.used() {
			if i >= p1 {
				break
			}
			continue
		}
		home := i - e.dist()
		if home >= p1 {
			break
		}
		if home < p0 || home == p0 && uint64(t.hashOf(e)) < from {
			continue
		}
		fn(e)
	}
	if p1 == n {
		return p1 - p0, 0, true
	}
	// The least hash whose home is p1 or after.
	return p1 - p0, (uint64(p1)<<32 + uint64(n) - 1) / uint64(n), false
}
