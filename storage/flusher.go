package storage

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/gcra"
)

// DefaultFlushInterval is how often changed keys are written by default, as
// Redis's appendfsync everysec.
const DefaultFlushInterval = time.Second

// DefaultStaleGrace is how long after the start the keys found stale at load
// are deleted from disk (Flusher.CleanStale).
const DefaultStaleGrace = time.Hour

// frameStep is the least change of the wall clock's offset for which a flush
// writes every key again (Flusher.frame): a step, not the time between two
// clock reads.
const frameStep = time.Second

// FlusherOptions configure a Flusher. The zero value takes every default.
type FlusherOptions struct {
	// Now is the wall clock, for LASTSAVE and for CleanStale. The default
	// is time.Now.
	Now func() time.Time
	// WallOffset converts the store's instants, read on a clock that never
	// steps (package clock), to wall-clock instants for the disk: a TAT t
	// is written as t + WallOffset(). The default is none.
	WallOffset func() time.Duration
	// Logger receives a line when flushing starts to fail, with the
	// error, and when it succeeds again, with the count of failures in
	// between; nothing for each retry. The default discards them.
	Logger *slog.Logger
	// Log, when set, is durable mode's write path: Sync appends each
	// group commit's changes to it, and Flush (a checkpoint, every
	// CheckpointInterval from RunGroupCommit) applies what it logged to
	// the backend and drops it from the log. The default is none: Sync
	// flushes to the backend.
	Log CommitLog
}

// Flusher writes a Store's changes to a Backend: every interval (Run), on
// demand (SAVE, BGSAVE, shutdown: Flush, BackgroundSave) and, in durable
// mode, before replies are sent (Sync, with group commit; with a commit log,
// checkpoints apply the log to the backend). Its three machines share one
// flush and one count of what is pending; each has its state and its
// contract beside its code: groupCommit, logCheckpoint, flushRecord. It is
// safe for concurrent use.
//
// A flush is two-phase: each shard's lock is held only to copy its changed
// keys out (Store.TakeShardChanges); the backend write happens after,
// unlocked. The changes of a write that fails go back to the store
// (Store.Requeue), so the next flush writes each such key once, as it is
// then. Changes count as pending (Pending, INFO's
// rdb_changes_since_last_save) until a sync has made them durable.
type Flusher struct {
	store   *Store
	backend Backend
	opts    FlusherOptions

	mu  sync.Mutex // one flush at a time
	buf []Change
	// frame is the wall clock's offset (FlusherOptions.WallOffset) the
	// keys on disk were written with: every key is written again when it
	// moves by frameStep or more.
	frame time.Duration
	// unsynced counts changes written without a sync since the last one
	// that succeeded; taken counts them and those taken but not yet
	// written, for Pending.
	unsynced int
	taken    atomic.Int64
	// handover is held while changes pass between the store and taken
	// (taken from it, or handed back by a failed flush), so that Pending,
	// which holds it too, never counts them in both or in neither.
	handover sync.Mutex

	bg        sync.WaitGroup // a BackgroundSave's flush
	bgRunning atomic.Bool

	flushRecord
	groupCommit
	logCheckpoint
}

// NewFlusher returns a Flusher from store to backend. The store must be
// tracking changes (Config.TrackChanges).
func NewFlusher(store *Store, backend Backend, opts FlusherOptions) *Flusher {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.WallOffset == nil {
		opts.WallOffset = func() time.Duration { return 0 }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Flusher{store: store, backend: backend, opts: opts}
	f.groupCommit.init()
	f.logCheckpoint.init()
	f.lastSave.Store(opts.Now().Unix())
	return f
}

// flushBatch bounds the changes one backend write carries, so that a flush
// of a million changed keys never holds them all in memory at once. It also
// keeps each Pebble batch well under the memtable's large-batch threshold
// (2 MiB by default; a larger batch is copied into a memtable of its own)
// and under the size a reused batch keeps its buffer at (1 MiB): a batch of
// 8Ki keys is about 300 KiB. At 64Ki keys a fill of 1M keys allocated 85 MB
// of Pebble batches, and RSS grew with them.
const flushBatch = 1 << 13

// flushBatchBytes bounds one backend write's bytes too, for the same
// reasons: a boxed kind's state is no TAT (CL.ACQUIRE's 100 leases are
// 2 KB), and 8Ki such keys made 16 MB batches, each copied into a memtable
// of its own: a held lease's RSS went from 73 to 37 bytes with this bound
// (10,000 keys of 100 leases filled by redis-benchmark).
const flushBatchBytes = 512 << 10

// batchLen returns how many of changes, from the first, one backend write
// carries: at most flushBatch changes and flushBatchBytes bytes (at least
// one change); full is false when all of them fit with room to spare.
func batchLen(changes []Change) (n int, full bool) {
	size := 0
	for i, c := range changes {
		size += c.batchSize()
		if i == flushBatch || i > 0 && size > flushBatchBytes {
			return i, true
		}
	}
	return len(changes), false
}

// changeFraming is a change's bytes in a Pebble batch besides its key and
// value: its kind, varint lengths and the value's header, about.
const changeFraming = 32

// batchSize is about what c takes in a Pebble batch: what batchLen bounds
// a write by, and what a write asks the disk's room for (PebbleBackend.Apply).
func (c Change) batchSize() int { return len(c.Key) + len(c.Value) + changeFraming }

// Flush writes every change made so far and syncs it. The changes go out in
// batches (batchLen), shard by shard: each key's stored state
// is always one it had. Only the last batch is synced: syncing the log makes
// every batch written before it durable too. When a batch fails, its changes
// and those not yet written go back to the store, and the shards not yet
// taken keep theirs.
func (f *Flusher) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.opts.Log != nil {
		return f.checkpoint()
	}
	return f.flushLocked()
}

// flushLocked is Flush, f.mu held.
func (f *Flusher) flushLocked() error {
	defer f.keepOnPanic(&f.buf)
	start := time.Now()
	offset := f.opts.WallOffset()
	if f.stepped(offset) {
		// The wall clock stepped since the disk was last written in one
		// frame: write every key again, in the new one, so that the
		// saved instant (OpenPebble's correction) holds for them all.
		f.store.MarkAllChanged()
		f.frame = offset
	}
	saved := gcra.InstantOf(f.opts.Now())
	var err error
	written := 0
	shards := f.store.Shards()
	for i := 0; i < shards && err == nil; i++ {
		f.buf = f.take(i, f.buf)
		last := i == shards-1
		// A shard may hold more than a batch (batchLen): write them in
		// batches, and keep the rest for the next shard's.
		for err == nil && len(f.buf) > 0 {
			n, full := batchLen(f.buf)
			if !full && !last {
				break
			}
			final := last && n == len(f.buf)
			batch := f.buf[:n]
			if err = f.backend.Apply(prepare(batch, offset), saved, final); err != nil {
				break
			}
			written += n
			f.unsynced += n
			if final {
				f.unsynced = 0
			}
			m := copy(f.buf, f.buf[n:])
			clear(f.buf[m:]) // drop references to key strings
			f.buf = f.buf[:m]
		}
	}
	if err != nil {
		f.handBack(f.buf, true)
	} else if f.unsynced > 0 || written == 0 && f.failing.Load() > 0 {
		// A flush whose sync failed left writes to sync; or flushes have
		// been failing, and with nothing to write this sync is what tells
		// whether the disk answers again.
		err = f.backend.Sync()
		if err == nil {
			f.unsynced = 0
		}
	}
	if err == nil {
		f.taken.Store(0)
	} else {
		f.taken.Store(int64(f.unsynced))
	}
	clear(f.buf)
	f.buf = f.buf[:0]
	if cap(f.buf) > 2*flushBatch {
		f.buf = nil // do not pin an outsized buffer between bursts
	}
	f.finish(err, written, time.Since(start))
	return err
}

// take appends shard i's changes to buf, counting them as taken (Pending).
func (f *Flusher) take(i int, buf []Change) []Change {
	f.handover.Lock()
	defer f.handover.Unlock()
	n := len(buf)
	buf = f.store.TakeShardChanges(i, buf)
	f.taken.Add(int64(len(buf) - n))
	return buf
}

// keepOnPanic, deferred by a flush or a group commit, hands the changes it
// took into *buf and has not written back to the store if it panics, then
// panics on: the panic is contained above it (contain.Run), and the next
// flush writes those changes, so that a bug loses none.
func (f *Flusher) keepOnPanic(buf *[]Change) {
	if v := recover(); v != nil {
		f.handBack(*buf, true)
		clear(*buf)
		*buf = (*buf)[:0]
		panic(v)
	}
}

// handBack ends the taking of changes: they are no longer counted as
// taken, and with requeue they go back to the store, by key only (a failed
// batch may hold a key twice, its TATs converted: each key is taken again
// as it is then).
func (f *Flusher) handBack(changes []Change, requeue bool) {
	f.handover.Lock()
	defer f.handover.Unlock()
	if requeue {
		f.store.Requeue(changes)
	}
	f.taken.Add(-int64(len(changes)))
}

// stepped reports whether the wall clock's offset has moved by frameStep or
// more from the frame the disk was written in (Flusher.frame).
func (f *Flusher) stepped(offset time.Duration) bool {
	d := offset - f.frame
	return d >= frameStep || d <= -frameStep
}

// prepare sorts a batch by key (the backend writes keys in order faster),
// keeps one change of a key reported twice, and converts its TATs to
// wall-clock instants. A key is reported twice only as two deletions (a
// take reports a write once, and a deletion only of a key that is absent),
// so the sort need not be stable, nor the dedup choose.
func prepare(batch []Change, offset time.Duration) []Change {
	slices.SortFunc(batch, func(a, b Change) int { return strings.Compare(a.Key, b.Key) })
	out := batch[:0]
	for i, c := range batch {
		if i+1 < len(batch) && batch[i+1].Key == c.Key {
			continue
		}
		if c.TAT != 0 && offset != 0 {
			c.TAT += gcra.Instant(offset)
			if c.Kind != KindTAT {
				c.Value = string(shiftValue(c.Kind, []byte(c.Value), offset, nil)) // rare: only once the wall clock has stepped
			}
		}
		out = append(out, c)
	}
	return out
}

// Pending returns how many changes are not yet durable: recorded in the
// store, or taken by a flush and not yet synced.
func (f *Flusher) Pending() int {
	f.handover.Lock()
	defer f.handover.Unlock()
	return f.store.PendingChanges() + int(f.taken.Load())
}

// InFlight returns how many changes a flush has taken from the store and
// not yet synced: Pending without the store's own count, for a caller that
// holds the store's shard locks (INFO in a transaction), which Pending would
// wait for under handover while a flush waits for them. Its sum with the
// store's count may be off by the changes a flush is handing over.
func (f *Flusher) InFlight() int { return int(f.taken.Load()) }
