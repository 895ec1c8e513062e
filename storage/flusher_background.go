package storage

import (
	"context"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/contain"
)

// The flusher's background: the periodic flush (Run, retrying more slowly
// while flushes fail), BGSAVE's flush in a goroutine (BackgroundSave), and
// the deletion of stale keys an hour after the start (CleanStaleAfter).

// maxRetryPause bounds the pause between flushes while they fail.
const maxRetryPause = 5 * time.Second

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
