package storage

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

// logBuffer is a logger whose lines a test can count.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines counts the log lines at level.
func (l *logBuffer) lines(level string) int { return strings.Count(l.String(), "level="+level) }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

const reserve = 1 << 20

// faultStore opens a store on a faultFS of the given capacity, with a
// reserve of 1 MiB, a store of 4 shards tracking changes, and a flusher.
func faultStore(t *testing.T, capacity int64) (*faultFS, *PebbleBackend, *Store, *Flusher, *logBuffer) {
	t.Helper()
	fs := newFaultFS("/store", capacity)
	logs := &logBuffer{}
	s := New(Config{Shards: 4, TrackChanges: true})
	p, _, err := OpenPebble("/store", PebbleOptions{FS: fs, Reserve: reserve, StallTimeout: 200 * time.Millisecond, Logger: logs.logger()}, t0, s.Restore)
	require.NoError(t, err)
	f := NewFlusher(s, p, FlusherOptions{Now: fixedClock, Logger: logs.logger()})
	return fs, p, s, f, logs
}

// decide makes n keys named prefix:i live for an hour.
func decide(t *testing.T, s *Store, prefix string, n int) {
	t.Helper()
	r := mustRate(t, 0, 1, 3600, 1)
	for i := 0; i < n; i++ {
		_, err := s.Throttle(fmt.Appendf(nil, "%s:%d", prefix, i), r, t0)
		require.NoError(t, err)
	}
}

// reopen closes p and opens its store again, returning the keys it holds.
func reopen(t *testing.T, fs *faultFS, p *PebbleBackend) map[string]gcra.Instant {
	t.Helper()
	require.NoError(t, p.Close())
	got := map[string]gcra.Instant{}
	p2, _, err := OpenPebble("/store", PebbleOptions{FS: fs, Reserve: reserve}, t0, func(k []byte, _ Kind, tat gcra.Instant, _ []byte) error {
		got[string(k)] = tat
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, p2.Close())
	return got
}

// A start without room for the reserve and as much again fails at once,
// saying how much is free and how much is needed, and writes nothing.
func TestOpenOnAFullDiskFailsAtOnce(t *testing.T) {
	fs := newFaultFS("/store", 3*reserve/2)
	_, _, err := OpenPebble("/store", PebbleOptions{FS: fs, Reserve: reserve}, t0, func([]byte, Kind, gcra.Instant, []byte) error { return nil })
	require.ErrorIs(t, err, ErrDiskFull)
	require.Contains(t, err.Error(), "open store /store: storage: disk full: 1.50M free at /store; redcell needs 2.00M free to start")
	names, _ := fs.List("/store")
	require.NotContains(t, names, reserveFile)
}

// A disk filled by another process after a good flush: the next flushes fail
// at once with ErrDiskFull, write nothing, keep every change, log once and
// report the disk as full; once space returns a flush writes everything.
func TestFullDiskFailsFlushesAndTheyResumeWhenSpaceReturns(t *testing.T) {
	fs, p, s, f, logs := faultStore(t, 32<<20)
	decide(t, s, "before", 1000)
	require.NoError(t, f.Flush())
	require.Equal(t, "ok", f.Stats().DiskState)

	fs.fill()
	decide(t, s, "during", 1000)
	for i := 0; i < 20; i++ {
		err := f.Flush()
		require.ErrorIs(t, err, ErrDiskFull)
	}
	require.Zero(t, fs.enospc.Load(), "no write was even tried")
	st := f.Stats()
	require.False(t, st.LastOK)
	require.Equal(t, "full", st.DiskState)
	require.Equal(t, int64(20), st.Failures)
	require.Contains(t, st.LastError, "storage: disk full")
	require.Equal(t, 1000, f.Pending(), "each change kept once")
	require.Equal(t, 1, logs.lines("ERROR"), "one line for 20 failed flushes:\n%s", logs)

	fs.other.Store(0)
	require.NoError(t, f.Flush())
	require.Equal(t, 0, f.Pending())
	st = f.Stats()
	require.True(t, st.LastOK)
	require.Equal(t, "ok", st.DiskState)
	require.Contains(t, logs.String(), "flush succeeded again; the changes kept meanwhile are on disk")
	require.Len(t, reopen(t, fs, p), 2000)
}

// A disk filled in the middle of a flush, while a write is under way: the
// reserve is released, the write completes, and the flush succeeds; the next
// flush fails at once until twice the reserve is free, then the reserve is
// made again and flushes resume. Nothing crashes, nothing is lost.
func TestDiskFilledDuringAWriteIsAbsorbedByTheReserve(t *testing.T) {
	fs, p, s, f, logs := faultStore(t, 32<<20)
	decide(t, s, "a", 2000)
	suffix := ".log"
	fs.fillOnWrite.Store(&suffix)
	require.NoError(t, f.Flush(), "the reserve made room for the write under way")
	require.NotZero(t, fs.enospc.Load(), "the write did hit a full disk")
	require.Contains(t, logs.String(), "disk full: released the store's reserve")
	require.Equal(t, "full", f.Stats().DiskState)

	decide(t, s, "b", 100)
	require.ErrorIs(t, f.Flush(), ErrDiskFull)
	require.Equal(t, 100, f.Pending())

	fs.other.Store(0)
	require.NoError(t, f.Flush())
	require.Equal(t, "ok", f.Stats().DiskState)
	names, _ := fs.List("/store")
	require.Contains(t, names, reserveFile, "the reserve is back")
	require.Len(t, reopen(t, fs, p), 2100)
}

// A disk that fails every sync (EIO): Pebble cannot go on (it would panic or
// call Fatalf, and exit). The store is marked broken instead: the flush fails
// with ErrBroken, as does every flush after it at once, the changes are kept,
// Close reports the store left open, and the process carries on.
func TestFailingDiskBreaksTheStoreWithoutStoppingTheProcess(t *testing.T) {
	fs, p, s, f, logs := faultStore(t, 32<<20)
	decide(t, s, "a", 100)
	require.NoError(t, f.Flush())

	fs.failSyncs.Store(true)
	decide(t, s, "b", 100)
	require.ErrorIs(t, f.Flush(), ErrBroken)
	require.Equal(t, "failed", f.Stats().DiskState)
	require.Contains(t, logs.String(), "the store failed; decisions go on in memory")
	decide(t, s, "c", 10)
	start := time.Now()
	require.ErrorIs(t, f.Flush(), ErrBroken)
	require.Less(t, time.Since(start), time.Second, "a broken store fails at once")
	require.GreaterOrEqual(t, f.Pending(), 110)
	err := p.Close()
	require.ErrorIs(t, err, ErrBroken)
	require.Contains(t, err.Error(), "store /store left open")
	// The store still serves decisions in memory.
	res, err := s.Throttle([]byte("d"), mustRate(t, 0, 1, 3600, 1), t0)
	require.NoError(t, err)
	require.False(t, res.Limited)
}

// A disk that stops answering: the write fails after the stall timeout with
// ErrStalled, the next ones at once, and once the disk answers writes resume
// with every change.
func TestStalledDiskFailsWritesAndTheyResume(t *testing.T) {
	fs, p, s, f, _ := faultStore(t, 32<<20)
	decide(t, s, "a", 100)
	require.NoError(t, f.Flush())

	stall := make(chan struct{})
	fs.stall.Store(&stall)
	decide(t, s, "b", 100)
	require.ErrorIs(t, f.Flush(), ErrStalled)
	require.Equal(t, "stalled", f.Stats().DiskState)
	start := time.Now()
	require.ErrorIs(t, f.Flush(), ErrStalled)
	require.Less(t, time.Since(start), 100*time.Millisecond, "no new write while one is stuck")
	require.Equal(t, 100, f.Pending())

	fs.stall.Store(nil)
	close(stall)
	require.Eventually(t, func() bool { return f.Flush() == nil }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "ok", f.Stats().DiskState)
	require.Equal(t, 0, f.Pending())
	require.Len(t, reopen(t, fs, p), 200)
}

// A second open of a store that is open says who holds it and what to do.
func TestOpenOfALockedStoreSaysAnotherProcessHoldsIt(t *testing.T) {
	dir := t.TempDir()
	p, _ := openPebble(t, dir)
	defer p.Close()
	_, _, err := OpenPebble(dir, noReserve, t0, func([]byte, Kind, gcra.Instant, []byte) error { return nil })
	require.ErrorIs(t, err, ErrLocked)
	require.Contains(t, err.Error(), "another process holds the lock on "+dir+"/LOCK; is another redcell running with --dir "+dir+"?")
}
