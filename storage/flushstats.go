package storage

import (
	"strings"
	"sync/atomic"
	"time"
)

// flushRecord is what the flusher remembers of its flushes, for INFO
// (Stats), for the pause between retries (retryPause) and for its log lines
// (finish): one line when flushing starts to fail, one when it succeeds
// again, none for each retry.
type flushRecord struct {
	lastSave     atomic.Int64 // unix seconds of the last successful flush
	lastDuration atomic.Int64 // nanoseconds
	lastCount    atomic.Int64
	flushes      atomic.Int64
	failures     atomic.Int64 // flushes that failed, ever
	failing      atomic.Int64 // consecutive failures, 0 when the last flush succeeded
	lastErr      atomic.Pointer[string]
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

// Failing reports whether the last flush failed: in durable mode, changes
// cannot be made durable now.
func (f *Flusher) Failing() bool { return f.failing.Load() > 0 }

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
