package storage

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/lease"
	"github.com/redcell/redcell/window"
)

// A decision that panics under its shard lock (here: an entry whose key
// points outside the arena, as a bug in the table could leave it) releases
// the lock as it unwinds, so that the server, which contains the panic to
// one connection, goes on deciding every other key of the shard, and this
// key again once the bug is gone. Each of the store's decisions is tried.
func TestPanicUnderTheShardLockReleasesIt(t *testing.T) {
	r, err := gcra.NewRate(4, 1, 1, 1)
	require.NoError(t, err)
	spec, err := window.NewSpec(5, 10, 1, 0, window.DefaultLogMax)
	require.NoError(t, err)
	cspec, err := window.NewCountSpec(10, 1)
	require.NoError(t, err)
	lspec, err := lease.NewSpec(2, 1000)
	require.NoError(t, err)
	now := gcra.Instant(1_000_000_000_000)
	decisions := map[string]func(s *Store, key []byte){
		"ThrottleSlot": func(s *Store, key []byte) { _, _ = s.ThrottleSlot(key, -1, r, now) },
		"Preview":      func(s *Store, key []byte) { _, _, _ = s.Preview(key, r, now) },
		"Reserve":      func(s *Store, key []byte) { _, _, _ = s.Reserve(key, r, now, 0, false) },
		"Window":       func(s *Store, key []byte) { _, _, _ = s.Window(key, spec, now, false) },
		"Count":        func(s *Store, key []byte) { _, _, _ = s.Count(key, cspec, now, false) },
		"Get":          func(s *Store, key []byte) { _, _, _ = s.Get(key, now) },
		"Delete":       func(s *Store, key []byte) { _ = s.Delete(key, now) },
		"Acquire":      func(s *Store, key []byte) { _, _, _ = s.Acquire(key, lspec, []byte("t"), now, false) },
		"Release":      func(s *Store, key []byte) { _, _ = s.Release(key, []byte("t"), now, false) },
		"Renew":        func(s *Store, key []byte) { _, _ = s.Renew(key, []byte("t"), time.Second, now, false) },
		"Leases":       func(s *Store, key []byte) { _, _ = s.Leases(key, now, nil) },
		"Scan": func(s *Store, _ []byte) {
			s.Scan(0, 100, now, func([]byte, gcra.Instant) {})
		},
	}
	for name, decide := range decisions {
		t.Run(name, func(t *testing.T) {
			s := New(Config{Shards: 1})
			key := []byte(strings.Repeat("k", 100)) // kept in the arena, not in its entry
			_, err := s.Throttle(key, r, now)
			require.NoError(t, err)
			sh := &s.shards[0]
			e := &sh.t.slots[sh.t.lookup(key)]
			off := e.keyOff()
			binary.LittleEndian.PutUint64(e.key[:8], 1<<40)

			require.Panics(t, func() { decide(s, key) })
			require.True(t, sh.mu.TryLock(), "the shard is still locked after the panic")
			sh.mu.Unlock()

			binary.LittleEndian.PutUint64(e.key[:8], off) // the bug gone
			res, err := s.Throttle(key, r, now)
			require.NoError(t, err)
			require.Equal(t, int64(3), res.Remaining, "the key kept its state: the second of five")
			res, err = s.Throttle([]byte("other"), r, now)
			require.NoError(t, err)
			require.Equal(t, int64(4), res.Remaining)
		})
	}
}

// panickyBackend is a memoryBackend whose Apply panics while panics is set,
// as a bug in the backend would.
type panickyBackend struct {
	*memoryBackend
	panics bool
}

func (p *panickyBackend) Apply(changes []Change, saved gcra.Instant, sync bool) error {
	if p.panics {
		panic("injected panic in Apply")
	}
	return p.memoryBackend.Apply(changes, saved, sync)
}

// A flush that panics loses no change: the changes it took go back to the
// store, and the next flush writes them. In durable mode the panic is the
// group commit's error, answered to the Sync waiting on it (which closes
// its connection unacknowledged), instead of ending the process.
func TestPanicInAFlushKeepsTheChanges(t *testing.T) {
	before := contain.Recovered()
	contain.Allow(2)
	r, err := gcra.NewRate(4, 1, 1, 1)
	require.NoError(t, err)
	now := gcra.Instant(1_000_000_000_000)
	s := New(Config{Shards: 2, TrackChanges: true})
	b := &panickyBackend{memoryBackend: newMemoryBackend(), panics: true}
	f := NewFlusher(s, b, FlusherOptions{Now: func() time.Time { return time.Unix(0, int64(now)) }})
	for _, k := range []string{"a", "b", "c"} {
		_, err := s.Throttle([]byte(k), r, now)
		require.NoError(t, err)
	}
	require.Error(t, f.flushContained(), "the background flush's panic is its error")
	err = f.Sync()
	var contained *contain.Error
	require.ErrorAs(t, err, &contained, "the group commit's panic is its error")
	require.Equal(t, 3, s.PendingChanges(), "every change kept")
	require.Equal(t, before+2, contain.Recovered())
	b.panics = false
	require.NoError(t, f.Flush())
	require.Len(t, b.Data, 3, "the next flush wrote them")
}

// A panic in the memory watch's eviction is recorded, the shard's lock is
// released, and the watch goes on ticking: the next tick, the bug gone,
// evicts.
func TestPanicInTheMemoryWatchIsContained(t *testing.T) {
	before, memoryBefore := contain.Recovered(), contain.ByWhere()["memory"]
	r, err := gcra.NewRate(4, 1, 1, 1)
	require.NoError(t, err)
	s := New(Config{Shards: 1, MaxMemory: 1, Eviction: VolatileTTL, TrackChanges: true})
	key := []byte(strings.Repeat("k", 100)) // kept in the arena, not in its entry
	_, err = s.Throttle(key, r, gcra.Instant(1_000_000_000_000))
	require.NoError(t, err)
	sh := &s.shards[0]
	e := &sh.t.slots[sh.t.lookup(key)]
	off := e.keyOff()
	binary.LittleEndian.PutUint64(e.key[:8], 1<<40)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.RunMemoryWatch(ctx, time.Millisecond, nil) }()
	// Every tick panics until the bug is gone: as many as ran meanwhile
	// are expected.
	require.Eventually(t, func() bool { return contain.Recovered() > before }, 10*time.Second, time.Millisecond)
	sh.mu.Lock()
	binary.LittleEndian.PutUint64(e.key[:8], off) // the bug gone
	sh.mu.Unlock()
	require.Eventually(t, func() bool { return s.Len() == 0 }, 10*time.Second, time.Millisecond, "the next tick evicted")
	cancel()
	<-done
	n := contain.Recovered() - before
	contain.Allow(int(n))
	require.Equal(t, n, contain.ByWhere()["memory"]-memoryBefore, "recorded where it happened")
}
