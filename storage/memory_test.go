package storage

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Over the limit under noeviction, a decision that would create a key fails
// with ErrOOM and stores nothing; existing keys keep being decided, and a
// peek (which creates nothing) is answered.
func TestOverTheMemoryLimitNoEvictionRefusesNewKeysOnly(t *testing.T) {
	s := New(Config{Shards: 2, MaxMemory: 1})
	r := mustRate(t, 9, 1, 60, 1)
	_, err := s.Throttle([]byte("old"), r, t0)
	require.NoError(t, err)
	require.Greater(t, s.MeasureMemory(), int64(1))

	_, err = s.Throttle([]byte("new"), r, t0)
	require.ErrorIs(t, err, ErrOOM)
	require.Equal(t, 1, s.Len(), "nothing stored")
	res, err := s.Throttle([]byte("old"), r, t0)
	require.NoError(t, err)
	require.Equal(t, int64(8), res.Remaining, "an existing key is decided")
	res, err = s.Throttle([]byte("new"), mustRate(t, 9, 1, 60, 0), t0)
	require.NoError(t, err)
	require.Equal(t, int64(10), res.Remaining, "a peek creates nothing, and is answered")
	require.Zero(t, s.Evicted())
}

// The memory SetUncounted reports (a master's replication buffers) is
// measured but not counted toward the limit, as Redis's
// mem_not_counted_for_evict: a store over its limit only by it creates
// keys and evicts nothing.
func TestUncountedMemoryIsNotCountedTowardTheLimit(t *testing.T) {
	s := New(Config{Shards: 1, MaxMemory: 1, Eviction: VolatileTTL})
	r := mustRate(t, 9, 1, 60, 1)
	_, err := s.Throttle([]byte("old"), r, t0)
	require.NoError(t, err)
	used := s.MeasureMemory()
	require.Greater(t, used, int64(1))
	_, err = s.Throttle([]byte("new"), r, t0)
	require.NoError(t, err, "volatile-ttl: evicts old")
	require.Equal(t, int64(1), s.Evicted())

	// The measure is the process's Go heap (and the tables' mapped
	// memory), which other goroutines' garbage moves between two reads:
	// the uncounted bytes are those measured now and 64 MiB more, so that
	// only the uncounted bytes put the store over its limit however the
	// heap moves meanwhile. (Uncounted as exactly the bytes measured once,
	// the test failed one run in several of the package under -race with
	// another process busy: the heap had grown past them, and each new
	// key evicted one.)
	uncounted := used + 64<<20
	s.SetUncounted(func() int64 { return uncounted })
	require.Equal(t, uncounted, s.Uncounted())
	require.Greater(t, s.MeasureMemory(), int64(1), "measured whole")
	for i := range 10 {
		_, err = s.Throttle(fmt.Appendf(nil, "k%d", i), r, t0)
		require.NoError(t, err)
	}
	require.Equal(t, int64(1), s.Evicted(), "no eviction for the uncounted bytes")
	require.Equal(t, 11, s.Len(), "new and the ten")

	s = New(Config{Shards: 2, MaxMemory: 1})
	_, err = s.Throttle([]byte("old"), r, t0)
	require.NoError(t, err)
	s.SetUncounted(func() int64 { return 1 << 40 })
	s.MeasureMemory()
	_, err = s.Throttle([]byte("new"), r, t0)
	require.NoError(t, err, "noeviction: not over the limit once the uncounted bytes are left out")
}

// Under volatile-ttl a new key first evicts the key nearest its expiry (in
// a shard of no more than the samples, exactly the nearest), and the change
// is recorded for the flusher like any deletion.
func TestOverTheMemoryLimitVolatileTTLEvictsTheNearestExpiry(t *testing.T) {
	s := New(Config{Shards: 1, MaxMemory: 1, Eviction: VolatileTTL, TrackChanges: true})
	for i, period := range []int64{30, 10, 20} {
		_, err := s.Throttle(fmt.Appendf(nil, "k%d", i), mustRate(t, 0, 1, period, 1), t0)
		require.NoError(t, err)
	}
	_ = s.TakeChanges(nil)
	s.MeasureMemory()
	_, err := s.Throttle([]byte("new"), mustRate(t, 0, 1, 60, 1), t0)
	require.NoError(t, err)
	_, _, ok := s.Get([]byte("k1"), t0)
	require.False(t, ok, "k1 (10s left) was the nearest")
	for _, k := range []string{"k0", "k2", "new"} {
		_, _, ok := s.Get([]byte(k), t0)
		require.True(t, ok, k)
	}
	require.Equal(t, int64(1), s.Evicted())
	require.ElementsMatch(t, []Change{{Key: "k1"}, {Key: "new", TAT: t0 + sec(60)}}, s.TakeChanges(nil))
}

// A shard at its most keys refuses another with ErrFull instead of
// panicking, and keeps serving the ones it has.
func TestAFullShardRefusesAKeyWithoutPanicking(t *testing.T) {
	defer func(n int) { maxEntries = n }(maxEntries)
	maxEntries = 3
	s := New(Config{Shards: 1})
	r := mustRate(t, 0, 1, 60, 1)
	for i := 0; i < 3; i++ {
		_, err := s.Throttle(fmt.Appendf(nil, "k%d", i), r, t0)
		require.NoError(t, err)
	}
	_, err := s.Throttle([]byte("k3"), r, t0)
	require.ErrorIs(t, err, ErrFull)
	require.Equal(t, 3, s.Len())
	res, err := s.Throttle([]byte("k0"), r, t0)
	require.NoError(t, err)
	require.True(t, res.Limited, "k0 is still decided")
}
