package storage

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"redcell/gcra"
)

// DefaultFlushInterval is how often changed keys are written by default, as
// Redis's appendfsync everysec.
const DefaultFlushInterval = time.Second

// Flusher writes a Store's changes to a Backend: every interval, on demand
// (SAVE, BGSAVE, shutdown) and, in durable mode, before replies are sent
// (Sync, with group commit). It is safe for concurrent use.
//
// A flush is two-phase: each shard's lock is held only to copy its changed
// keys out (Store.TakeChanges); the backend write happens after, unlocked.
// Changes whose write failed are kept and written with the next flush.
type Flusher struct {
	store   *Store
	backend Backend
	now     func() time.Time

	mu       sync.Mutex // one flush at a time
	pending  []Change   // taken but not yet written: a failed flush's changes
	buf      []Change
	unsynced bool // batches were written without a sync since the last one

	lastSave     atomic.Int64 // unix seconds of the last successful flush
	lastOK       atomic.Bool
	lastDuration atomic.Int64 // nanoseconds
	lastCount    atomic.Int64
	flushes      atomic.Int64
	bgRunning    atomic.Bool

	// Group commit for durable mode: Sync waits for a flush that started
	// after its call; one flush serves every waiter that arrived before it.
	gmu       sync.Mutex
	gcond     *sync.Cond
	requested uint64 // highest generation some Sync waits for
	started   uint64 // generation of the newest flush begun
	completed uint64 // generation of the newest flush finished
	lastErr   error  // result of the flush that set completed
	stopped   error  // set when group commit stops: Sync fails at once
	wake      chan struct{}
}

// NewFlusher returns a Flusher from store to backend. now stamps LASTSAVE.
// The store must be tracking changes (Config.TrackChanges or StartTracking).
func NewFlusher(store *Store, backend Backend, now func() time.Time) *Flusher {
	f := &Flusher{store: store, backend: backend, now: now, wake: make(chan struct{}, 1)}
	f.gcond = sync.NewCond(&f.gmu)
	f.lastOK.Store(true)
	f.lastSave.Store(now().Unix())
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

// Flush writes every change made so far; sync makes it durable first. The
// changes go out in batches of at most flushBatch keys, shard by shard:
// each key's stored state is always one it had. Only the last batch is
// synced: syncing the log makes every batch written before it durable too.
// A failed batch is kept for the next flush and the shards not yet taken
// keep their changes.
func (f *Flusher) Flush(sync bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	start := time.Now()
	f.buf = append(f.buf[:0], f.pending...)
	clear(f.pending) // drop references to key strings
	f.pending = f.pending[:0]
	var err error
	written := 0
	shards := f.store.Shards()
shards:
	for i := 0; i < shards; i++ {
		f.buf = f.store.TakeShardChanges(i, f.buf)
		last := i == shards-1
		// A shard may hold more than flushBatch changes: write them in
		// batches of flushBatch, and keep the rest for the next shard's.
		for len(f.buf) >= flushBatch || last && len(f.buf) > 0 {
			n := min(len(f.buf), flushBatch)
			final := last && n == len(f.buf)
			if err = f.backend.Apply(f.buf[:n], sync && final); err != nil {
				f.pending = append(f.pending, f.buf...)
				break shards
			}
			f.unsynced = !sync || !final
			written += n
			m := copy(f.buf, f.buf[n:])
			clear(f.buf[m:]) // drop references to key strings
			f.buf = f.buf[:m]
		}
	}
	if err == nil && sync && f.unsynced {
		if err = f.backend.Sync(); err == nil {
			f.unsynced = false
		}
	}
	if err == nil {
		f.lastSave.Store(f.now().Unix())
		f.lastCount.Store(int64(written))
	}
	f.lastOK.Store(err == nil)
	f.lastDuration.Store(int64(time.Since(start)))
	f.flushes.Add(1)
	clear(f.buf)
	if cap(f.buf) > 2*flushBatch {
		f.buf = nil // do not pin an outsized buffer between bursts
	}
	return err
}

// Run flushes (with sync) every interval until ctx is done. A zero interval
// returns at once.
func (f *Flusher) Run(ctx context.Context, interval time.Duration, onError func(error)) {
	every(ctx, interval, func() {
		if err := f.Flush(true); err != nil && onError != nil {
			onError(err)
		}
	})
}

// BackgroundSave starts a flush in its own goroutine and reports false if one
// is already running.
func (f *Flusher) BackgroundSave(onError func(error)) bool {
	if !f.bgRunning.CompareAndSwap(false, true) {
		return false
	}
	go func() {
		defer f.bgRunning.Store(false)
		if err := f.Flush(true); err != nil && onError != nil {
			onError(err)
		}
	}()
	return true
}

// RunGroupCommit serves Sync until ctx is done: each pass takes every change
// made so far and syncs it once for all the callers waiting.
func (f *Flusher) RunGroupCommit(ctx context.Context) {
	for {
		f.gmu.Lock()
		idle := f.requested <= f.completed
		f.gmu.Unlock()
		if idle {
			select {
			case <-ctx.Done():
				f.failWaiters(ctx.Err())
				return
			case <-f.wake:
				continue
			}
		}
		f.gmu.Lock()
		f.started++
		gen := f.started
		f.gmu.Unlock()

		err := f.Flush(true)

		f.gmu.Lock()
		f.completed, f.lastErr = gen, err
		f.gcond.Broadcast()
		f.gmu.Unlock()
	}
}

// failWaiters releases every waiting Sync with err when group commit stops.
func (f *Flusher) failWaiters(err error) {
	f.gmu.Lock()
	f.completed, f.lastErr, f.stopped = f.requested, err, err
	f.gcond.Broadcast()
	f.gmu.Unlock()
}

// Sync blocks until every change made before the call is durable, sharing
// one backend sync with concurrent callers. RunGroupCommit must be running.
func (f *Flusher) Sync() error {
	f.gmu.Lock()
	defer f.gmu.Unlock()
	if f.stopped != nil {
		return f.stopped
	}
	target := f.started + 1 // a flush that begins after our changes
	if f.requested < target {
		f.requested = target
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
	for f.completed < target {
		f.gcond.Wait()
	}
	return f.lastErr
}

// FlushStats describes the flusher for INFO's Persistence section.
type FlushStats struct {
	LastSave         time.Time
	LastOK           bool
	LastDuration     time.Duration
	LastCount        int64
	Flushes          int64
	BackgroundSaving bool
}

// Stats returns the flusher's figures.
func (f *Flusher) Stats() FlushStats {
	return FlushStats{
		LastSave:         time.Unix(f.lastSave.Load(), 0),
		LastOK:           f.lastOK.Load(),
		LastDuration:     time.Duration(f.lastDuration.Load()),
		LastCount:        f.lastCount.Load(),
		Flushes:          f.flushes.Load(),
		BackgroundSaving: f.bgRunning.Load(),
	}
}

// LoadInto reads every live key from backend into store at now, as at
// start-up, and returns how many it loaded and how many stale ones it
// deleted from the backend. Loaded keys are not recorded as changes.
func LoadInto(store *Store, backend Backend, now gcra.Instant) (loaded, deleted int, err error) {
	return backend.Load(now, func(key []byte, tat gcra.Instant) {
		store.restoreUntracked(key, tat)
	})
}
