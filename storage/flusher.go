package storage

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/window"
)

// DefaultFlushInterval is how often changed keys are written by default, as
// Redis's appendfsync everysec.
const DefaultFlushInterval = time.Second

// DefaultStaleGrace is how long after the start the keys found stale at load
// are deleted from disk (Flusher.CleanStale).
const DefaultStaleGrace = time.Hour

// CheckpointInterval is how often, in durable mode, what the commit log
// holds is applied to the backend (Flusher.checkpoint), or sooner once it
// holds checkpointChanges changes. Ten seconds, not one: a checkpoint's
// sort and Pebble write take a share of the cores that the loops' deciding
// and syncing wait for, and over ten seconds a key changed many times is
// written once. Unpipelined over 100,000 keys (bench/durable.sh), p99 was
// 0.72x of one-second checkpoints'. A crash replays up to that much log.
const CheckpointInterval = 10 * time.Second

// checkpointChanges bounds the changes logged and held for a checkpoint
// (about 70 bytes each, with their keys).
const checkpointChanges = 1 << 18

// frameStep is the least change of the wall clock's offset for which a flush
// writes every key again (Flusher.frame): a step, not the time between two
// clock reads.
const frameStep = time.Second

// maxRetryPause bounds the pause between flushes while they fail.
const maxRetryPause = 5 * time.Second

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

// Flusher writes a Store's changes to a Backend: every interval, on demand
// (SAVE, BGSAVE, shutdown) and, in durable mode, before replies are sent
// (Sync, with group commit). It is safe for concurrent use.
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

	lastSave     atomic.Int64 // unix seconds of the last successful flush
	lastDuration atomic.Int64 // nanoseconds
	lastCount    atomic.Int64
	flushes      atomic.Int64
	failures     atomic.Int64 // flushes that failed, ever
	failing      atomic.Int64 // consecutive failures, 0 when the last flush succeeded
	lastErr      atomic.Pointer[string]
	bg           sync.WaitGroup
	bgRunning    atomic.Bool

	// Group commit for durable mode: Sync waits for a flush that started
	// after its call; one flush serves every waiter that arrived before it.
	// A group commit runs while started > completed.
	gmu       sync.Mutex
	gcond     *sync.Cond
	started   uint64 // generation of the newest flush begun
	completed uint64 // generation of the newest flush finished
	lastErrG  error  // result of the flush that set completed
	stopped   error  // set when group commit stops: Sync fails at once
	// wake tells RunGroupCommit that a group commit failed.
	wake chan struct{}

	// With a commit log (FlusherOptions.Log), lmu is held to take changes
	// from the store and log them (logCommit), and to seal the log and
	// take what it holds (checkpoint), so that a change logged is always
	// newer than every change a checkpoint took before it. logged holds
	// the changes logged since the last seal, in log order: durable, and
	// not yet applied to the backend.
	lmu         sync.Mutex
	lbuf        []Change
	logged      []Change
	loggedSaved gcra.Instant
	// logFull tells RunGroupCommit that logged holds checkpointAt changes
	// (checkpointChanges; tests lower it).
	logFull      chan struct{}
	checkpointAt int
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
	f := &Flusher{store: store, backend: backend, opts: opts, wake: make(chan struct{}, 1),
		logFull: make(chan struct{}, 1), checkpointAt: checkpointChanges}
	f.gcond = sync.NewCond(&f.gmu)
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

// Flush writes every change made so far and syncs it. The changes go out in
// batches of at most flushBatch keys, shard by shard: each key's stored state
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
		// A shard may hold more than flushBatch changes: write them in
		// batches of flushBatch, and keep the rest for the next shard's.
		for err == nil && (len(f.buf) >= flushBatch || last && len(f.buf) > 0) {
			n := min(len(f.buf), flushBatch)
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

// handBack ends the taking of changes: they are no longer counted as
// taken, and with requeue they go back to the store, by key only (a failed
// batch may hold a key twice, its TATs converted: each key is taken again
// as it is then).
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
				c.Value = string(window.Shift([]byte(c.Value), offset, nil)) // rare: only once the wall clock has stepped
			}
		}
		out = append(out, c)
	}
	return out
}

// finish records a flush's outcome, and logs when flushing starts to fail
// and when it succeeds again.
func (f *Flusher) finish(err error, written int, took time.Duration) {
	f.flushes.Add(1)
	f.lastDuration.Store(int64(took))
	if err == nil {
		f.lastSave.Store(f.opts.Now().Unix())
		f.lastCount.Store(int64(written))
		if n := f.failing.Swap(0); n > 0 {
			f.opts.Logger.Info("flush succeeded again; the changes kept meanwhile are on disk", "failed_flushes", n, "keys", written)
		}
		return
	}
	f.failures.Add(1)
	text := err.Error()
	prev := f.lastErr.Swap(&text)
	if n := f.failing.Add(1); n == 1 || prev == nil || kind(*prev) != kind(text) {
		f.opts.Logger.Error("flush failed; changes are kept in memory and written once a flush succeeds",
			"err", err, "pending", f.Pending(), "failed_flushes", n)
	}
}

// kind is the part of an error text that names what went wrong, without
// the figures that change from one failure to the next.
func kind(text string) string {
	for _, e := range []error{ErrDiskFull, ErrStalled, ErrBroken} {
		if strings.HasPrefix(text, e.Error()) {
			return e.Error()
		}
	}
	return text
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

// Failing reports whether the last flush failed: in durable mode, changes
// cannot be made durable now.
func (f *Flusher) Failing() bool { return f.failing.Load() > 0 }

// retryPause is how long Run waits before the next flush: the interval, or
// while flushes fail, twice that for each failure in a row, up to
// maxRetryPause (but never less than the interval).
func (f *Flusher) retryPause(interval time.Duration) time.Duration {
	n := f.failing.Load()
	if n == 0 {
		return interval
	}
	pause := interval
	for i := int64(1); i < n && pause < maxRetryPause; i++ {
		pause *= 2
	}
	return max(interval, min(pause, maxRetryPause))
}

// Run flushes every interval until ctx is done, pausing longer while
// flushes fail (retryPause). A zero interval returns at once.
func (f *Flusher) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	pause := time.NewTimer(interval)
	defer pause.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-pause.C:
			_ = f.flushContained()
			pause.Reset(f.retryPause(interval))
		}
	}
}

// flushContained is Flush for the background loops: a panic in it is
// recorded and returned as its error (contain.Run), so the loop retries as
// after a failed flush.
func (f *Flusher) flushContained() error {
	return contain.Run(f.opts.Logger, "flush", "flush", f.Flush)
}

// CleanStaleAfter calls CleanStale once grace has passed, unless ctx ends
// first.
func (f *Flusher) CleanStaleAfter(ctx context.Context, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
		f.CleanStale()
	}
}

// CleanStale deletes from disk every key whose TAT has passed by the wall
// clock now. The load leaves such keys on disk rather than delete them:
// a TAT that looks passed at the start may only mean that the wall clock
// started fast (a VM resumed, NTP not yet synced), and deleting would lose
// those limits for good. An hour later (DefaultStaleGrace) the clock has
// had time to be corrected; a key still stale then was truly expired. A
// key live in memory is written by the flushes with its new TAT, which is
// not stale, so it is never deleted here.
func (f *Flusher) CleanStale() {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.backend.DeleteStale(gcra.InstantOf(f.opts.Now()))
	if err != nil {
		f.opts.Logger.Warn("deleting stale keys from disk failed; they are tried again at the next start", "err", err)
		return
	}
	if n > 0 {
		f.opts.Logger.Info("deleted stale keys from disk", "keys", n)
	}
}

// BackgroundSave starts a flush in its own goroutine and reports false if one
// is already running. Wait waits for it.
func (f *Flusher) BackgroundSave() bool {
	if !f.bgRunning.CompareAndSwap(false, true) {
		return false
	}
	f.bg.Go(func() {
		defer f.bgRunning.Store(false)
		_ = f.Flush()
	})
	return true
}

// Wait waits until no BackgroundSave is running.
func (f *Flusher) Wait() { f.bg.Wait() }

// RunGroupCommit is Sync's companion until ctx is done: while flushes fail
// it retries them on its own, pausing as Run does, so that the server learns
// when the disk has room again even though, in durable mode, no new change
// arrives meanwhile (changes are refused); when ctx is done, every Sync
// waiting and every later one fails.
func (f *Flusher) RunGroupCommit(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	var checkpoints <-chan time.Time // with a commit log: apply it to the backend
	if f.opts.Log != nil {
		t := time.NewTicker(CheckpointInterval)
		defer t.Stop()
		checkpoints = t.C
	}
	for {
		select {
		case <-ctx.Done():
			f.failWaiters(ctx.Err())
			return
		case <-checkpoints:
			_ = f.flushContained()
		case <-f.logFull:
			_ = f.flushContained()
		case <-f.wake: // a group commit failed
			retry.Reset(f.retryPause(time.Second))
		case <-retry.C:
			if f.flushContained() != nil {
				retry.Reset(f.retryPause(time.Second))
			}
		}
	}
}

// failWaiters releases every waiting Sync with err when group commit stops.
func (f *Flusher) failWaiters(err error) {
	f.gmu.Lock()
	f.completed, f.lastErrG, f.stopped = f.started+1, err, err
	f.gcond.Broadcast()
	f.gmu.Unlock()
}

// ErrGroupCommitStopped is returned by Sync once RunGroupCommit has returned.
var ErrGroupCommitStopped = errors.New("storage: group commit stopped")

// Sync blocks until every change made before the call is durable, sharing
// one backend sync with concurrent callers (group commit): the caller that
// finds no group commit running runs one itself, for every change so far,
// and those that arrive meanwhile wait for it to end, then run the next as
// one. Why the caller runs it: handing each to a goroutine of the flusher's
// cost two more wake-ups per commit, on the path every durable reply waits
// on. RunGroupCommit must be running.
func (f *Flusher) Sync() error {
	f.gmu.Lock()
	defer f.gmu.Unlock()
	if f.stopped != nil {
		return f.stopped
	}
	target := f.started + 1 // a flush that begins after our changes
	for f.completed < target {
		if f.started > f.completed {
			f.gcond.Wait() // one runs: the next is ours, or shared with ours
			continue
		}
		f.started++
		gen := f.started
		f.gmu.Unlock()
		// A panic in the commit is its error (contain.Run): the waiters
		// are answered it, and gmu is taken again as after any commit.
		err := contain.Run(f.opts.Logger, "flush", "group commit", func() error {
			if f.opts.Log != nil {
				return f.logCommit()
			}
			return f.Flush()
		})
		f.gmu.Lock()
		if gen > f.completed { // not overtaken by failWaiters
			f.completed, f.lastErrG = gen, err
		}
		f.gcond.Broadcast()
		if err != nil {
			select {
			case f.wake <- struct{}{}: // RunGroupCommit retries on its own
			default:
			}
		}
	}
	return f.lastErrG
}

// FlushStats describe the flusher for INFO's Persistence section.
type FlushStats struct {
	LastSave         time.Time
	LastOK           bool
	LastDuration     time.Duration
	LastCount        int64
	Flushes          int64
	Failures         int64
	LastError        string // of the last failed flush, if the last flush failed
	BackgroundSaving bool
	// DiskState is ok, full, stalled or failed (see disk.state).
	DiskState string
}

// Stats returns the flusher's figures.
func (f *Flusher) Stats() FlushStats {
	st := FlushStats{
		LastSave:         time.Unix(f.lastSave.Load(), 0),
		LastOK:           f.failing.Load() == 0,
		LastDuration:     time.Duration(f.lastDuration.Load()),
		LastCount:        f.lastCount.Load(),
		Flushes:          f.flushes.Load(),
		Failures:         f.failures.Load(),
		BackgroundSaving: f.bgRunning.Load(),
		DiskState:        f.backend.DiskState(),
	}
	if !st.LastOK {
		if p := f.lastErr.Load(); p != nil {
			st.LastError = *p
		}
	}
	return st
}

// DiskState is the disk's condition: ok, full, stalled or failed.
func (p *PebbleBackend) DiskState() string { return p.disk.state() }

// logCommit is durable mode's group commit with a commit log: it takes every
// change made so far from the store and logs it (FlusherOptions.Log), where
// a checkpoint later applies it to the backend.
func (f *Flusher) logCommit() error {
	f.lmu.Lock()
	defer f.lmu.Unlock()
	return f.logCommitLocked()
}

// logCommitLocked is logCommit, f.lmu held. The changes of a log write that
// fails go back to the store, as a failed flush's do.
func (f *Flusher) logCommitLocked() error {
	defer f.keepOnPanic(&f.lbuf)
	start := time.Now()
	offset := f.opts.WallOffset()
	saved := gcra.InstantOf(f.opts.Now())
	for i := range f.store.Shards() {
		f.lbuf = f.take(i, f.lbuf)
	}
	n := len(f.lbuf)
	var err error
	// With nothing to log, a commit while commits fail still writes (an
	// empty record): it is what tells whether the disk answers again.
	if n > 0 || f.failing.Load() > 0 {
		batch := prepare(f.lbuf, offset)
		if err = f.opts.Log.Log(batch, saved); err == nil {
			f.logged = append(f.logged, batch...)
			f.loggedSaved = saved
			if len(f.logged) >= f.checkpointAt {
				select {
				case f.logFull <- struct{}{}: // RunGroupCommit checkpoints early
				default:
				}
			}
		}
	}
	f.handBack(f.lbuf, err != nil) // logged, they are durable
	clear(f.lbuf)
	f.lbuf = f.lbuf[:0]
	if cap(f.lbuf) > 2*flushBatch {
		f.lbuf = nil
	}
	f.finish(err, n, time.Since(start))
	return err
}

// checkpoint is Flush with a commit log, f.mu held: it logs the changes made
// since the last group commit, seals the log, and applies every change
// logged up to the seal to the backend, synced, before it drops those log
// files. Deciding and group commits go on meanwhile: only the log's own
// steps hold f.lmu. When the wall clock has stepped (see Flusher.frame),
// every key is written again in the new frame, holding f.lmu throughout.
func (f *Flusher) checkpoint() error {
	f.lmu.Lock()
	locked := true
	defer func() {
		if locked {
			f.lmu.Unlock()
		}
	}()
	if err := f.logCommitLocked(); err != nil {
		return err
	}
	mark, err := f.opts.Log.Seal()
	if err != nil {
		return err
	}
	pend, saved := f.logged, f.loggedSaved
	f.logged = nil
	if !f.stepped(f.opts.WallOffset()) {
		f.lmu.Unlock()
		locked = false
	}
	pend, err = f.applyLogged(pend, saved)
	if err == nil && locked {
		err = f.flushLocked() // writes every key again, in the new frame
	}
	if err != nil {
		if !locked {
			f.lmu.Lock()
			locked = true
		}
		f.logged = append(pend, f.logged...) // still in the log, to apply next time
		f.opts.Logger.Warn("applying the commit log to the store failed; it is kept, and tried again at the next checkpoint", "err", err, "changes", len(pend))
		return err
	}
	clear(pend)
	if err := f.opts.Log.Drop(mark); err != nil {
		f.opts.Logger.Warn("removing applied commit log files failed; the next checkpoint tries again", "err", err)
	}
	return nil
}

// applyLogged writes changes taken from the commit log (oldest first) to the
// backend, the newest change of each key only, in key order, in batches of
// flushBatch, and syncs. It returns those newest changes (in changes'
// array), to keep if it fails.
//
// The newest of each key is found with a set of the keys seen, walking from
// the newest change back, and only those are sorted. A stable sort of every
// change took 9% of the server's CPU in durable mode (perf), and
// BenchmarkCheckpointApply 2.6x the time (281 against 107 ms).
func (f *Flusher) applyLogged(changes []Change, saved gcra.Instant) ([]Change, error) {
	if len(changes) == 0 {
		return changes, nil
	}
	seen := make(map[string]struct{}, len(changes))
	w := len(changes)
	for i := len(changes) - 1; i >= 0; i-- {
		if _, ok := seen[changes[i].Key]; ok {
			continue // a later change of the key was kept
		}
		seen[changes[i].Key] = struct{}{}
		w--
		changes[w] = changes[i]
	}
	clear(changes[:w]) // drop references to key strings
	out := changes[w:]
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Key, b.Key) })
	for rest := out; len(rest) > 0; {
		n := min(len(rest), flushBatch)
		if err := f.backend.Apply(rest[:n], saved, n == len(rest)); err != nil {
			return out, err
		}
		rest = rest[n:]
	}
	return out, nil
}
