package storage

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/lease"
)

func fixedClock() time.Time { return t0.Time() }

func TestFlushWritesPutsAndDeletes(t *testing.T) {
	s := New(Config{Shards: 4, TrackChanges: true})
	b := newMemoryBackend()
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock})
	r := mustRate(t, 4, 1, 10, 1)
	for _, k := range []string{"a", "b", "c"} {
		_, err := s.Throttle([]byte(k), r, t0)
		require.NoError(t, err)
	}
	require.NoError(t, f.Flush())
	require.Equal(t, map[string]gcra.Instant{"a": t0 + sec(10), "b": t0 + sec(10), "c": t0 + sec(10)}, b.Snapshot())

	s.Delete([]byte("b"), t0)
	_, _ = s.Throttle([]byte("a"), r, t0)
	require.Equal(t, 2, s.PendingChanges())
	require.NoError(t, f.Flush())
	require.Equal(t, map[string]gcra.Instant{"a": t0 + sec(20), "c": t0 + sec(10)}, b.Snapshot())
	require.Equal(t, 0, s.PendingChanges())
	st := f.Stats()
	require.True(t, st.LastOK)
	require.Equal(t, int64(2), st.LastCount)
	require.Equal(t, int64(2), st.Flushes)
}

func TestFailedFlushKeepsChangesForTheNext(t *testing.T) {
	s := New(Config{Shards: 2, TrackChanges: true})
	b := newMemoryBackend()
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock})
	r := mustRate(t, 4, 1, 10, 1)
	_, _ = s.Throttle([]byte("a"), r, t0)
	b.Fail = errors.New("disk full")
	require.ErrorIs(t, f.Flush(), b.Fail)
	require.False(t, f.Stats().LastOK)
	require.Empty(t, b.Snapshot())

	_, _ = s.Throttle([]byte("b"), r, t0)
	b.Fail = nil
	require.NoError(t, f.Flush())
	require.Equal(t, map[string]gcra.Instant{"a": t0 + sec(10), "b": t0 + sec(10)}, b.Snapshot())
	require.True(t, f.Stats().LastOK)
}

func TestRestoreLoadsLiveKeysWithoutMarkingThemChanged(t *testing.T) {
	b := newMemoryBackend()
	b.Data["live"] = t0 + sec(5)
	b.Data["stale"] = t0 - 1
	s := New(Config{Shards: 2, TrackChanges: true})
	stats, err := b.Load(t0, s.Restore)
	require.NoError(t, err)
	require.Equal(t, LoadStats{Loaded: 1, Stale: 1}, stats)
	tat, _, ok := s.Get([]byte("live"), t0)
	require.True(t, ok)
	require.Equal(t, t0+sec(5), tat)
	require.Equal(t, 0, s.PendingChanges(), "loading writes nothing back")
	require.Equal(t, map[string]gcra.Instant{"live": t0 + sec(5), "stale": t0 - 1}, b.Snapshot(),
		"the load deletes nothing: a key that looks stale may only mean the clock started fast")
}

// CleanStale deletes, by the wall clock at its call, the keys whose TAT has
// passed, and nothing else: a key rewritten since with a live TAT stays.
func TestCleanStaleDeletesOnlyKeysStaleByTheWallClockNow(t *testing.T) {
	b := newMemoryBackend()
	b.Data["stale"] = t0 - 1
	b.Data["later"] = t0 + sec(30)
	b.Data["live"] = t0 + sec(3600)
	s := New(Config{Shards: 2, TrackChanges: true})
	wall := t0 + sec(60)
	f := NewFlusher(s, b, FlusherOptions{Now: func() time.Time { return wall.Time() }})
	f.CleanStale()
	require.Equal(t, map[string]gcra.Instant{"live": t0 + sec(3600)}, b.Snapshot())
}

// Changes count as pending until a sync has made them durable, not only
// until a flush has taken them: INFO's rdb_changes_since_last_save must not
// say 0 while they are not on disk (a test that waited for 0, then killed
// the server, lost keys 1 run in 20).
func TestPendingCountsChangesUntilTheyAreSynced(t *testing.T) {
	s := New(Config{Shards: 4, TrackChanges: true})
	r := mustRate(t, 0, 1, 60, 1)
	for _, k := range []string{"a", "b", "c"} {
		_, err := s.Throttle([]byte(k), r, t0)
		require.NoError(t, err)
	}
	b := &gateBackend{memoryBackend: newMemoryBackend(), entered: make(chan struct{}), release: make(chan struct{})}
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock})
	require.Equal(t, 3, f.Pending())
	done := make(chan error, 1)
	go func() { done <- f.Flush() }()
	<-b.entered // the flush has taken every change and is syncing
	require.Equal(t, 0, s.PendingChanges(), "the store has handed them over")
	require.Equal(t, 3, f.Pending(), "but they are not durable yet")
	close(b.release)
	require.NoError(t, <-done)
	require.Equal(t, 0, f.Pending())
}

// gateBackend blocks a synced Apply until release is closed.
type gateBackend struct {
	*memoryBackend
	entered, release chan struct{}
}

func (g *gateBackend) Apply(changes []Change, saved gcra.Instant, sync bool) error {
	if sync {
		close(g.entered)
		<-g.release
	}
	return g.memoryBackend.Apply(changes, saved, sync)
}

// Flushes that keep failing keep each changed key once, with its latest
// state: retried 60 times over keys written again every round, the pending
// count stays the number of keys, and the flush that succeeds writes each
// key once.
func TestFailedFlushesKeepEachKeyOnce(t *testing.T) {
	const keys = 500
	s := New(Config{Shards: 8, TrackChanges: true})
	b := &batchBackend{memoryBackend: newMemoryBackend()}
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock})
	r := mustRate(t, 1000, 1, 1, 1)
	b.Fail = errors.New("disk full")
	for round := 0; round < 60; round++ {
		for i := 0; i < keys; i++ {
			_, err := s.Throttle(fmt.Appendf(nil, "k%d", i), r, t0)
			require.NoError(t, err)
		}
		if round%7 == 3 {
			s.Delete([]byte("k0"), t0)
		}
		require.Error(t, f.Flush())
		require.LessOrEqual(t, f.Pending(), keys+1, "round %d: each key pending once", round)
	}
	b.Fail, b.sizes = nil, nil
	require.NoError(t, f.Flush())
	written := 0
	for _, n := range b.sizes {
		written += n
	}
	require.Equal(t, keys, written, "each key written once")
	require.Equal(t, 0, f.Pending())
	for i := 0; i < keys; i++ {
		tat, _, _ := s.Get(fmt.Appendf(nil, "k%d", i), t0)
		require.Equal(t, tat, b.Snapshot()[fmt.Sprintf("k%d", i)], "k%d: the latest TAT", i)
	}
	st := f.Stats()
	require.Equal(t, int64(60), st.Failures)
	require.True(t, st.LastOK)
}

// A flush writes wall-clock instants: the store's TAT plus the wall
// offset at the flush.
func TestFlushWritesWallClockInstants(t *testing.T) {
	s := New(Config{Shards: 2, TrackChanges: true})
	b := newMemoryBackend()
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock, WallOffset: func() time.Duration { return -time.Hour }})
	_, err := s.Throttle([]byte("k"), mustRate(t, 0, 1, 60, 1), t0)
	require.NoError(t, err)
	require.NoError(t, f.Flush())
	require.Equal(t, map[string]gcra.Instant{"k": t0 + sec(60) - sec(3600)}, b.Snapshot(),
		"the wall clock stepped back an hour since the start: the saved TAT is an hour earlier too")
	tat, _, _ := s.Get([]byte("k"), t0)
	require.Equal(t, t0+sec(60), tat, "in memory the TAT is unchanged")
}

// Every write records the wall-clock instant of its save with the changes
// (OpenPebble's correction for a clock found behind it), and a flush that
// writes nothing records nothing: a start on a fast clock that decided
// nothing leaves the store's frame as it was.
func TestFlushRecordsTheInstantOfTheSave(t *testing.T) {
	s := New(Config{Shards: 2, TrackChanges: true})
	b := newMemoryBackend()
	wall := t0.Time()
	f := NewFlusher(s, b, FlusherOptions{Now: func() time.Time { return wall }})
	_, err := s.Throttle([]byte("k"), mustRate(t, 0, 1, 60, 1), t0)
	require.NoError(t, err)
	require.NoError(t, f.Flush())
	require.Equal(t, t0, b.Saved)
	wall = wall.Add(time.Hour)
	require.NoError(t, f.Flush())
	require.Equal(t, t0, b.Saved, "nothing written: the last save is still the one that wrote")
}

// After the wall clock steps (the offset moves by a second or more), a flush
// writes every key again in the new frame, not only the changed ones: so the
// keys on disk and the saved instant agree, and a later start corrects them
// all alike. Offsets that move less write only what changed.
func TestFlushRewritesEveryKeyWhenTheWallClockSteps(t *testing.T) {
	s := New(Config{Shards: 4, TrackChanges: true})
	b := &batchBackend{memoryBackend: newMemoryBackend()}
	var offset time.Duration
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock, WallOffset: func() time.Duration { return offset }})
	r := mustRate(t, 0, 1, 600, 1)
	for i := range 10 {
		_, err := s.Throttle(fmt.Appendf(nil, "k%d", i), r, t0)
		require.NoError(t, err)
	}
	require.NoError(t, f.Flush())
	offset = 900 * time.Millisecond
	_, err := s.Throttle([]byte("k0"), mustRate(t, 1, 1, 600, 1), t0)
	require.NoError(t, err)
	before := b.keys()
	require.NoError(t, f.Flush())
	require.Equal(t, 1, b.keys()-before, "under a second: only the changed key")

	offset = -time.Hour
	before = b.keys()
	require.NoError(t, f.Flush())
	require.Equal(t, 10, b.keys()-before, "stepped back an hour: every key written again")
	for i := range 10 {
		want := t0 + sec(600) - sec(3600)
		if i == 0 {
			want += sec(600)
		}
		require.Equal(t, want, b.Snapshot()[fmt.Sprintf("k%d", i)], "k%d in the new frame", i)
	}
	before = b.keys()
	require.NoError(t, f.Flush())
	require.Equal(t, 0, b.keys()-before, "once")
}

func TestBackgroundSaveRunsOnce(t *testing.T) {
	s := New(Config{TrackChanges: true})
	b := newMemoryBackend()
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock})
	_, _ = s.Throttle([]byte("k"), mustRate(t, 0, 1, 60, 1), t0)
	require.True(t, f.BackgroundSave())
	f.Wait()
	require.False(t, f.Stats().BackgroundSaving)
	require.Equal(t, map[string]gcra.Instant{"k": t0 + sec(60)}, b.Snapshot())
}

// batchBackend records the size of every Apply and fails the one numbered
// failAt (1-based; 0 never).
type batchBackend struct {
	*memoryBackend
	sizes  []int
	bytes  []int // each batch's keys and values
	failAt int
}

func (b *batchBackend) Apply(changes []Change, saved gcra.Instant, sync bool) error {
	b.sizes = append(b.sizes, len(changes))
	n := 0
	for _, c := range changes {
		n += len(c.Key) + len(c.Value)
	}
	b.bytes = append(b.bytes, n)
	if len(b.sizes) == b.failAt {
		return errors.New("disk full")
	}
	return b.memoryBackend.Apply(changes, saved, sync)
}

// keys is how many changes were written in all.
func (b *batchBackend) keys() int {
	n := 0
	for _, size := range b.sizes {
		n += size
	}
	return n
}

func TestFlushWritesInBoundedBatchesAndResumesAfterAFailure(t *testing.T) {
	const n = 3*flushBatch + 100
	s := New(Config{Shards: 64, TrackChanges: true})
	r := mustRate(t, 0, 1, 3600, 1)
	for i := 0; i < n; i++ {
		_, err := s.Throttle(fmt.Appendf(nil, "k%d", i), r, t0)
		require.NoError(t, err)
	}
	b := &batchBackend{memoryBackend: newMemoryBackend(), failAt: 2}
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock})
	require.Error(t, f.Flush())
	require.Len(t, b.sizes, 2, "the flush stops at the failed batch")
	require.Less(t, len(b.Snapshot()), n)

	require.NoError(t, f.Flush())
	require.Len(t, b.Snapshot(), n, "the failed batch and the shards not yet taken are written next time")
	for _, size := range b.sizes {
		require.LessOrEqual(t, size, flushBatch, "a batch is at most flushBatch changes")
	}
	require.GreaterOrEqual(t, len(b.sizes), 4, "about n/flushBatch batches, plus the retry")
	require.Equal(t, 0, s.PendingChanges())
}

// syncBackend records whether each Apply synced, and counts Syncs; with
// failSynced a synced Apply fails without writing.
type syncBackend struct {
	*memoryBackend
	synced     []bool
	syncs      int
	failSynced bool
}

func (b *syncBackend) Apply(changes []Change, saved gcra.Instant, sync bool) error {
	b.synced = append(b.synced, sync)
	if sync && b.failSynced {
		return errors.New("sync failed")
	}
	return b.memoryBackend.Apply(changes, saved, sync)
}

func (b *syncBackend) Sync() error { b.syncs++; return nil }

// A flush syncs once, however many batches it writes: its last batch, or,
// when it has nothing left to write after unsynced batches, a Sync.
func TestFlushSyncsOncePerFlush(t *testing.T) {
	const n = 3*flushBatch + 100
	s := New(Config{Shards: 64, TrackChanges: true})
	r := mustRate(t, 0, 1, 3600, 1)
	round := 0
	write := func() { // n new keys
		round++
		for i := 0; i < n; i++ {
			_, err := s.Throttle(fmt.Appendf(nil, "k%d-%d", round, i), r, t0)
			require.NoError(t, err)
		}
	}
	write()
	b := &syncBackend{memoryBackend: newMemoryBackend()}
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock})
	require.NoError(t, f.Flush())
	require.GreaterOrEqual(t, len(b.synced), 3)
	for i, synced := range b.synced {
		require.Equal(t, i == len(b.synced)-1, synced, "batch %d of %d", i+1, len(b.synced))
	}
	require.Zero(t, b.syncs)
	require.Len(t, b.Snapshot(), n)

	// A flush whose last, synced batch fails leaves its earlier batches
	// unsynced: the next flush writes the failed batch again, synced,
	// which syncs them too.
	b.synced, b.syncs, b.failSynced = nil, 0, true
	write()
	require.Error(t, f.Flush())
	require.Equal(t, true, b.synced[len(b.synced)-1])
	b.failSynced = false
	b.synced = nil
	require.NoError(t, f.Flush())
	require.Equal(t, []bool{true}, b.synced, "the failed batch again, synced")
	require.Zero(t, b.syncs)
	require.Equal(t, 0, f.Pending())
	require.Len(t, b.Snapshot(), 2*n)
}

// One shard's changes beyond flushBatch are split too: no batch is larger,
// and only the last one syncs.
func TestFlushSplitsAShardsChanges(t *testing.T) {
	const n = 2*flushBatch + flushBatch/2
	s := New(Config{Shards: 1, TrackChanges: true})
	r := mustRate(t, 0, 1, 3600, 1)
	for i := 0; i < n; i++ {
		_, err := s.Throttle(fmt.Appendf(nil, "k%d", i), r, t0)
		require.NoError(t, err)
	}
	b := &syncBackend{memoryBackend: newMemoryBackend()}
	require.NoError(t, NewFlusher(s, b, FlusherOptions{Now: fixedClock}).Flush())
	require.Equal(t, []bool{false, false, true}, b.synced)
	require.Len(t, b.Snapshot(), n)
	require.Zero(t, b.syncs)
}

// Batches are bounded by their bytes too, not only their keys: keys of
// 100 leases each (about 3 KB of state) go out in batches of at most
// flushBatchBytes, where flushBatch keys would have made a 5 MB one.
func TestFlushBatchesAreBoundedInBytes(t *testing.T) {
	const keys = 1600
	s := New(Config{Shards: 4, TrackChanges: true})
	spec, err := lease.NewSpec(100, 60000)
	require.NoError(t, err)
	for k := range keys {
		for i := range 100 {
			_, _, err := s.Acquire(fmt.Appendf(nil, "lease:%d", k), spec, fmt.Appendf(nil, "token-%020d", i), t0, false)
			require.NoError(t, err)
		}
	}
	b := &batchBackend{memoryBackend: newMemoryBackend()}
	require.NoError(t, NewFlusher(s, b, FlusherOptions{Now: fixedClock}).Flush())
	require.Len(t, b.Snapshot(), keys)
	total := 0
	for i, n := range b.bytes {
		require.LessOrEqual(t, n, flushBatchBytes, "batch %d of %d keys", i, b.sizes[i])
		require.Less(t, n, 1<<20, "under the 1 MiB a reused Pebble batch keeps its buffer at")
		total += n
	}
	require.Greater(t, total, 4<<20, "over 4 MB of states")
	require.GreaterOrEqual(t, len(b.bytes), total/(1<<20))
}

// Pending is exact while flushes fail: a failed flush hands its changes
// back to the store, and a reader meanwhile never sees them both handed
// back and still taken (INFO's rdb_changes_since_last_save read 3697 for
// 2000 changed keys in TestFullDiskNeverStopsDecisionsAndFlushesResume).
func TestPendingIsExactWhileFlushesFail(t *testing.T) {
	const keys = 2000
	s := New(Config{Shards: 4, TrackChanges: true})
	r := mustRate(t, 0, 1, 3600, 1)
	for i := range keys {
		_, err := s.Throttle(fmt.Appendf(nil, "k%d", i), r, t0)
		require.NoError(t, err)
	}
	b := &batchBackend{memoryBackend: newMemoryBackend()}
	b.Fail = errors.New("disk full")
	f := NewFlusher(s, b, FlusherOptions{Now: fixedClock})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				_ = f.Flush()
			}
		}
	}()
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		if n := f.Pending(); n != keys {
			close(stop)
			<-done
			t.Fatalf("Pending %d while flushes fail, want %d", n, keys)
		}
	}
	close(stop)
	<-done
}
