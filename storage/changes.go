package storage

import (
	"math"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/redcell/redcell/gcra"
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
// marked on its entry (the log's bit: dirtyBit for the persister's, feedBit
// for replication's) and its block of blockSlots slots in blocks; a deleted
// key is remembered by its bytes, as it no longer has an entry. Entries move
// between slots (a key placed before them, one deleted before them, a
// resize) and take their bit with them, so nothing records where a key was:
// a take (takeSome) reads the blocks marked, and each entry marked in them.
//
// A take works in steps of at most takeChunk keys, the shard unlocked
// between them (Store.takeChanges), so that no change set, however large,
// holds the lock for long. It reports every change made before it began, each
// key as it is at some moment of the take: it walks the blocks in order from
// the first, and an entry that moves behind it (rescan) or a key deleted with
// its bit still set (taking) is taken too; a resize starts the walk again
// from the first block.
//
// It is off (records nothing) for a store that nothing persists.
type changeLog struct {
	on  bool
	bit uint32
	// blocks has a bit per block of blockSlots slots: set when an entry
	// there may carry the log's bit; marked counts the entries that do.
	blocks []uint64
	marked int
	// goneLens has the length of each deleted key, whose bytes follow the
	// previous ones' in gone.
	goneLens []uint32
	gone     []byte

	// A take under way (active): the next block it reads (cursor), the
	// least block behind it that a marked entry moved to (rescan, noRescan
	// when none), and the deleted keys it reports, up to gonePos in
	// takingLens and goneOff in takingGone.
	active           bool
	cursor, rescan   int
	takingLens       []uint32
	takingGone       []byte
	gonePos, goneOff int
}

const (
	// blockShift makes a block 16 slots (512 bytes): a take reads the
	// blocks marked, so a block the size of a few cache lines costs it
	// little for each change.
	blockShift = 4
	noRescan   = math.MaxInt
)

// resized clears the log's blocks for a table just resized: the table marks
// them again as it places its entries. A take under way starts its walk
// again.
func (l *changeLog) resized() {
	l.blocks = nil
	if l.active {
		l.cursor, l.rescan = 0, noRescan
	}
}

// markBlock marks the block of slot p of a table of n slots, making the
// blocks first if they are not made.
func (l *changeLog) markBlock(p, n int) {
	b := p >> blockShift
	if b>>6 >= len(l.blocks) {
		l.blocks = append(l.blocks, make([]uint64, (n>>blockShift+64)/64-len(l.blocks))...)
	}
	l.blocks[b>>6] |= 1 << (b & 63)
}

// moved notes that an entry marked in the log is now at slot p of a table of
// n slots.
func (l *changeLog) moved(p, n int) {
	l.markBlock(p, n)
	if b := p >> blockShift; l.active && b < l.cursor {
		l.rescan = min(l.rescan, b)
	}
}

// deleted records that key is gone; marked says whether its entry carried
// the log's bit: a change a take under way may not have reported yet.
func (l *changeLog) deleted(key []byte, marked bool) {
	if marked {
		l.marked--
		if l.active {
			l.takingLens = append(l.takingLens, uint32(len(key)))
			l.takingGone = append(l.takingGone, key...)
		}
	}
	if l.on {
		l.goneLens = append(l.goneLens, uint32(len(key)))
		l.gone = append(l.gone, key...)
	}
}

// pending is how many changes are recorded: at least one per changed key,
// zero exactly when nothing waits.
func (l *changeLog) pending() int { return l.marked + len(l.goneLens) + len(l.takingLens) - l.gonePos }

// mark sets the log's bit on the entry at slot p, unless it is set.
func (t *table) mark(l *changeLog, p int) {
	if e := &t.slots[p]; e.n&l.bit == 0 {
		e.n |= l.bit
		l.marked++
		l.markBlock(p, len(t.slots))
	}
}

// markDirty records a write of the entry at slot p in each log that is on,
// once until that log's changes are taken, and tells the observer, if any, of
// every write. With no log on and no observer it costs one test, inlined:
// the hot path of a store that nothing persists, replicates or observes.
func (t *table) markDirty(p int) {
	if t.hooked {
		t.markDirtyHooked(p)
	}
}

// rehook sets hooked from the logs and the observer, wherever one of them
// is turned on or off.
func (t *table) rehook() { t.hooked = t.log.on || t.feed.on || t.obs != nil }

func (t *table) markDirtyHooked(p int) {
	if t.log.on {
		t.mark(&t.log, p)
	}
	if t.feed.on {
		t.mark(&t.feed, p)
	}
	if t.obs != nil {
		t.obs.Changed(t.keyOf(&t.slots[p]))
	}
}

// markAllDirty records a write of every entry in the persister's log (not in
// replication's: nothing changed for a replica).
func (t *table) markAllDirty() {
	if !t.log.on {
		return
	}
	for p := range t.slots {
		if t.slots[p].used() {
			t.mark(&t.log, p)
		}
	}
}

// deleted records in each log that the key of e is gone.
func (t *table) deleted(e *entry) {
	if !t.log.on && !t.feed.on && e.n&(dirtyBit|feedBit) == 0 {
		return
	}
	key := t.keyOf(e)
	t.log.deleted(key, e.n&dirtyBit != 0)
	t.feed.deleted(key, e.n&feedBit != 0)
}

// moved notes, in each log that marks it, that the entry now at slot p moved
// there. (Whether the log is on or not: an entry marked must be found.)
func (t *table) moved(p int) {
	n := t.slots[p].n
	if n&dirtyBit != 0 {
		t.log.moved(p, len(t.slots))
	}
	if n&feedBit != 0 {
		t.feed.moved(p, len(t.slots))
	}
}

// notePending marks, in each log, the block of a marked entry placed at p
// by a resize.
func (t *table) notePending(p int) {
	n := t.slots[p].n
	if n&dirtyBit != 0 {
		t.log.markBlock(p, len(t.slots))
	}
	if n&feedBit != 0 {
		t.feed.markBlock(p, len(t.slots))
	}
}

// requeue records again a change that was taken but not written, as the key
// is now: a write if it is present (its current TAT is what a flush must
// write), a deletion if it is absent. Each key stays recorded once however
// often its flush fails.
func (t *table) requeue(key []byte) {
	if p := t.lookup(key); p >= 0 {
		t.mark(&t.log, p)
		return
	}
	t.log.deleted(key, false)
}

// takeChunk bounds the keys a take reports in one hold of the shard's lock:
// some 1024 entries read and copied, about 100 us.
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

// beginTake starts a take of l: the walk of the blocks from the first, and
// the keys deleted so far.
func (t *table) beginTake(l *changeLog) {
	l.active = true
	l.cursor, l.rescan = 0, noRescan
	l.goneLens, l.takingLens = l.takingLens[:0], l.goneLens
	l.gone, l.takingGone = l.takingGone[:0], l.gone
	l.gonePos, l.goneOff = 0, 0
}

// takeSome goes on with l's take for up to about limit keys (whole blocks),
// appending the changes they report to buf, and reports whether the take is
// done (then it is over: the log has no take under way). A deleted key is
// reported unless it is present now; a present key is then reported as it
// is, if it is marked, as its write may have come after the take began.
func (t *table) takeSome(l *changeLog, buf []Change, limit int) ([]Change, bool) {
	// First pass: decide what to report, each Key a view of the table's
	// memory, which does not move until we return.
	start, size := len(buf), 0
	view := func(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
	report := func(e *entry) {
		e.n &^= l.bit
		l.marked--
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
	for len(buf)-start < limit {
		b := l.nextBlock()
		if b < 0 {
			break
		}
		l.blocks[b>>6] &^= 1 << (b & 63)
		for p := b << blockShift; p < min(len(t.slots), (b+1)<<blockShift); p++ {
			if e := &t.slots[p]; e.n&l.bit != 0 {
				report(e)
			}
		}
		l.cursor = b + 1
	}
	for l.gonePos < len(l.takingLens) && len(buf)-start < limit {
		key := l.takingGone[l.goneOff : l.goneOff+int(l.takingLens[l.gonePos])]
		l.gonePos++
		l.goneOff += len(key)
		switch p := t.lookup(key); {
		case p < 0:
			buf = append(buf, Change{Key: view(key)})
			size += len(key)
		case t.slots[p].n&l.bit != 0:
			// Written again: by the take's end, perhaps, marked for the
			// next take alone.
			report(&t.slots[p])
		}
		// Otherwise reported by its write already, or restored without
		// tracking: either way nothing is deleted.
	}
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
	if l.nextBlock() >= 0 || l.gonePos < len(l.takingLens) {
		return buf, false
	}
	// Keep the buffers for the next take unless a burst made them large.
	l.active = false
	if cap(l.takingLens) > 1<<16 {
		l.takingLens, l.takingGone = nil, nil
	} else {
		l.takingLens, l.takingGone = l.takingLens[:0], l.takingGone[:0]
	}
	l.gonePos, l.goneOff = 0, 0
	return buf, true
}

// nextBlock is the next marked block of the take's walk at or after its
// cursor, going back once to rescan when the walk reaches the end; -1 when
// there is none.
func (l *changeLog) nextBlock() int {
	for {
		for w := l.cursor >> 6; w < len(l.blocks); w++ {
			word := l.blocks[w]
			if w == l.cursor>>6 {
				word &^= 1<<(l.cursor&63) - 1
			}
			if word != 0 {
				return w<<6 + bits.TrailingZeros64(word)
			}
		}
		if l.rescan == noRescan {
			l.cursor = len(l.blocks) << 6
			return -1
		}
		l.cursor, l.rescan = l.rescan, noRescan
	}
}

// MarkAllChanged records every key as changed for the persister, so that the
// next flush writes every key again. Each shard's lock is held for one pass
// over its keys.
func (s *Store) MarkAllChanged() { s.forShards(nil, func(sh *shard) { sh.t.markAllDirty() }) }

// PendingChanges returns how many changes are recorded and not yet taken by
// a flush: zero exactly when every change has been taken. (The Flusher adds
// the ones it has taken and not yet synced: Flusher.Pending.)
func (s *Store) PendingChanges() int { return s.pendingChanges(nil) }

func (s *Store) pendingChanges(tx *Txn) int {
	n := 0
	s.forShards(tx, func(sh *shard) { n += sh.t.log.pending() })
	return n
}

// forShards calls fn for every shard in order, each under its lock: taken
// here, or held by tx.
func (s *Store) forShards(tx *Txn, fn func(sh *shard)) {
	for i := range s.shards {
		sh := &s.shards[i]
		if tx.holds(i) {
			fn(sh)
		} else {
			sh.with(fn)
		}
	}
}

// Requeue records again changes that a flush took but could not write, so
// that the next flush writes each key as it is then: once, with its latest
// state.
func (s *Store) Requeue(changes []Change) {
	for _, c := range changes {
		key := unsafe.Slice(unsafe.StringData(c.Key), len(c.Key)) // read only
		sh := s.shardOf(key)
		sh.mu.Lock()
		sh.t.requeue(key)
		sh.mu.Unlock()
	}
}

// TakeChanges appends to buf every key changed since the previous call, with
// its current TAT or zero for a deleted key, and forgets them. Only a Store
// built with TrackChanges records changes. Each shard's lock is held only to
// copy its changes out, never during the caller's I/O.
func (s *Store) TakeChanges(buf []Change) []Change {
	for i := range s.shards {
		buf = s.TakeShardChanges(i, buf)
	}
	return buf
}

// TakeShardChanges is TakeChanges for shard i alone (0 <= i < Shards()), so
// that a flush can write the store in bounded batches. It holds the shard's
// lock for at most takeChunk changes at a time, whatever their number, and
// reports every change made before it was called, each key as it is at
// some moment of the call.
func (s *Store) TakeShardChanges(i int, buf []Change) []Change {
	sh := &s.shards[i]
	return s.takeChanges(sh, &sh.t.log, buf)
}

// takeChanges takes l's changes, l a log of sh's table, in steps of at most
// takeChunk records, the lock released between them. Only one take of a
// log may run at once (the Flusher's lock, or replication's one goroutine).
func (s *Store) takeChanges(sh *shard, l *changeLog, buf []Change) []Change {
	begun := false
	for {
		var done bool
		sh.with(func(sh *shard) {
			if !begun {
				sh.t.beginTake(l)
				begun = true
			}
			buf, done = sh.t.takeSome(l, buf, takeChunk)
		})
		if done {
			return buf
		}
		// Let a decision waiting on the lock have it: Unlock alone hands
		// it over only to a waiter that has run again.
		runtime.Gosched()
		if betweenTakeSteps != nil {
			betweenTakeSteps()
		}
	}
}
