package storage

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/gcra"
)

var t0 = gcra.InstantOf(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))

func sec(n float64) gcra.Instant { return gcra.Instant(n * float64(time.Second)) }

func mustRate(t testing.TB, burst, count, period, quantity int64) gcra.Rate {
	t.Helper()
	r, err := gcra.NewRate(burst, count, period, quantity)
	require.NoError(t, err)
	return r
}

func TestThrottleStoresTATUntilItExpires(t *testing.T) {
	s := New(Config{Shards: 4})
	r := mustRate(t, 4, 1, 10, 1)
	res, err := s.Throttle([]byte("k"), r, t0)
	require.NoError(t, err)
	require.Equal(t, [5]int64{0, 5, 4, -1, 10}, res.Ints())

	tat, _, ok := s.Get([]byte("k"), t0)
	require.True(t, ok)
	require.Equal(t, t0+sec(10), tat)

	// Still there a nanosecond before its TAT, gone at it.
	_, _, ok = s.Get([]byte("k"), t0+sec(10)-1)
	require.True(t, ok)
	_, _, ok = s.Get([]byte("k"), t0+sec(10))
	require.False(t, ok)
	require.Equal(t, 0, s.Len(), "lazy expiry frees the key")
	require.Equal(t, int64(1), s.Expired())
}

func TestLimitedAndPeekCallsDoNotWrite(t *testing.T) {
	s := New(Config{Shards: 1, TrackChanges: true})
	r := mustRate(t, 0, 1, 60, 1)
	_, err := s.Throttle([]byte("k"), r, t0)
	require.NoError(t, err)
	require.Equal(t, []Change{{Key: "k", TAT: t0 + sec(60)}}, s.TakeChanges(nil))

	res, err := s.Throttle([]byte("k"), r, t0+sec(1))
	require.NoError(t, err)
	require.True(t, res.Limited)
	res, err = s.Throttle([]byte("peek"), mustRate(t, 0, 1, 60, 0), t0)
	require.NoError(t, err)
	require.False(t, res.Limited)
	require.Empty(t, s.TakeChanges(nil), "a limited call and a peek change nothing")
	require.Equal(t, 1, s.Len(), "a peek never creates a key")
	tat, _, _ := s.Get([]byte("k"), t0+sec(1))
	require.Equal(t, t0+sec(60), tat)
}

func TestDeleteResetsTheLimiter(t *testing.T) {
	s := New(Config{})
	r := mustRate(t, 0, 1, 60, 1)
	_, _ = s.Throttle([]byte("k"), r, t0)
	res, _ := s.Throttle([]byte("k"), r, t0)
	require.True(t, res.Limited)
	require.True(t, s.Delete([]byte("k"), t0))
	require.False(t, s.Delete([]byte("k"), t0), "second delete finds nothing")
	res, _ = s.Throttle([]byte("k"), r, t0)
	require.Equal(t, [5]int64{0, 1, 0, -1, 60}, res.Ints())
}

func TestExpireSomeIsBoundedAndFreesColdKeys(t *testing.T) {
	s := New(Config{Shards: 1})
	r := mustRate(t, 0, 1, 1, 1)
	for i := 0; i < 100; i++ {
		_, _ = s.Throttle(fmt.Appendf(nil, "cold%d", i), r, t0)
	}
	_, _ = s.Throttle([]byte("hot"), mustRate(t, 0, 1, 3600, 1), t0)
	require.Equal(t, 101, s.Len())

	later := t0 + sec(2)
	require.Equal(t, 0, s.ExpireSome(t0, 1000), "nothing is due yet")
	n := s.ExpireSome(later, 30)
	require.LessOrEqual(t, n, 30, "one pass examines at most 30 keys")
	total := n
	for i := 0; i < 10 && s.Len() > 1; i++ {
		total += s.ExpireSome(later, 30)
	}
	require.Equal(t, 100, total)
	require.Equal(t, 1, s.Len())
	require.Equal(t, int64(100), s.Expired())
	_, _, ok := s.Get([]byte("hot"), later)
	require.True(t, ok)
}

func TestScanVisitsEveryLiveKeyOnce(t *testing.T) {
	s := New(Config{Shards: 8})
	r := mustRate(t, 0, 1, 60, 1)
	want := make([]string, 0, 500)
	for i := 0; i < 500; i++ {
		k := fmt.Sprintf("key:%d", i)
		want = append(want, k)
		_, _ = s.Throttle([]byte(k), r, t0)
	}
	var got []string
	cursor, calls := uint64(0), 0
	for {
		cursor = s.Scan(cursor, 10, t0, func(k []byte, _ gcra.Instant) { got = append(got, string(k)) })
		calls++
		if cursor == 0 {
			break
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	require.Equal(t, want, got)
	require.Greater(t, calls, 40, "count bounds each call")
}

func TestTakeChangesRecordsPutsAndDeletesOncePerKey(t *testing.T) {
	s := New(Config{Shards: 2, TrackChanges: true})
	r := mustRate(t, 9, 1, 1, 1)
	for i := 0; i < 3; i++ {
		_, _ = s.Throttle([]byte("a"), r, t0)
	}
	_, _ = s.Throttle([]byte("b"), r, t0)
	s.Delete([]byte("b"), t0)
	_, _ = s.Throttle([]byte("c"), r, t0)
	s.Delete([]byte("c"), t0)
	_, _ = s.Throttle([]byte("c"), r, t0) // back again: its last state wins

	got := s.TakeChanges(nil)
	sort.Slice(got, func(i, j int) bool { return got[i].Key < got[j].Key })
	require.Equal(t, []Change{
		{Key: "a", TAT: t0 + sec(3)},
		{Key: "b"},
		{Key: "c", TAT: t0 + sec(1)},
	}, got)
	require.Empty(t, s.TakeChanges(nil))
}

func TestClearEmptiesEveryShard(t *testing.T) {
	s := New(Config{Shards: 4, TrackChanges: true})
	r := mustRate(t, 0, 1, 60, 1)
	for i := 0; i < 50; i++ {
		_, _ = s.Throttle(fmt.Appendf(nil, "k%d", i), r, t0)
	}
	s.TakeChanges(nil)
	s.Clear()
	require.Equal(t, 0, s.Len())
	require.Len(t, s.TakeChanges(nil), 50, "every cleared key is a deletion to persist")
}

// Concurrent decisions on one key must serialise: exactly limit are allowed.
func TestConcurrentDecisionsOnOneKeyNeverOverGrant(t *testing.T) {
	s := New(Config{})
	r := mustRate(t, 99, 1, 3600, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				res, err := s.Throttle([]byte("hot"), r, t0)
				if err == nil && !res.Limited {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 100, allowed)
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, Config{}.Validate())
	require.ErrorIs(t, Config{Shards: -1}.Validate(), ErrInvalidShards)
	require.ErrorIs(t, Config{Shards: MaxShards + 1}.Validate(), ErrInvalidShards)
	require.Equal(t, 8, New(Config{Shards: 5}).Shards(), "rounded up to a power of two")
}

func BenchmarkThrottleExistingKey(b *testing.B) {
	s := New(Config{})
	r := mustRate(b, 100, 10, 1, 1)
	key := []byte("user:12345")
	b.ReportAllocs()
	now := t0
	for i := 0; i < b.N; i++ {
		now += 1000
		_, _ = s.Throttle(key, r, now)
	}
}

// BenchmarkThrottleAllowedExistingKey is a decision that stores: an existing
// key allowed on every call (a million a second, called every 2 us), the
// path that reads and then writes the key's entry.
func BenchmarkThrottleAllowedExistingKey(b *testing.B) {
	s := New(Config{TrackChanges: true})
	r := mustRate(b, 100, 1000000, 1, 1)
	key := []byte("user:12345")
	b.ReportAllocs()
	now := t0
	for i := 0; i < b.N; i++ {
		now += 2000
		if res, _ := s.Throttle(key, r, now); res.Limited {
			b.Fatal("limited")
		}
	}
}

// BenchmarkThrottleParallel runs decisions on 10k existing keys from every
// goroutine; compare -cpu 1,2 to see how the stripes scale.
func BenchmarkThrottleParallel(b *testing.B) {
	s := New(Config{TrackChanges: true})
	r := mustRate(b, 100, 10, 1, 1)
	keys := make([][]byte, 10000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%d", i)
		_, _ = s.Throttle(keys[i], r, t0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var goroutines atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		// Each goroutine walks its own stretch of keys, as separate clients do.
		i := int(goroutines.Add(1)) * 4999
		for pb.Next() {
			i++
			_, _ = s.Throttle(keys[i%len(keys)], r, t0+gcra.Instant(i))
		}
	})
}

// The shards' tables grow at different moments (table.rung): keys spread
// evenly over the shards, and tables that grew together made every shard's
// resize, each moving its whole table under its lock, come within the same
// second of a fill. Filling, a resize has few others within 1% more keys.
func TestShardsTablesGrowAtDifferentMoments(t *testing.T) {
	s := New(Config{Shards: 32})
	r := mustRate(t, 100, 1, 3600, 1)
	const keys = 300_000
	last := make([]int, len(s.shards))
	var at []int // the key count at each late resize
	for i := range keys {
		key := fmt.Appendf(nil, "key:%d", i)
		_, err := s.Throttle(key, r, t0)
		require.NoError(t, err)
		k := s.shardIndex(key)
		if n := s.shards[k].t.resizes; n != last[k] {
			last[k] = n
			if len(s.shards[k].t.slots) >= staggerFrom {
				at = append(at, i)
			}
		}
	}
	require.Greater(t, len(at), 3*len(s.shards), "each shard resized several times")
	// For each late resize, the shards that resize within 1% more keys.
	together := 0
	for i := range at {
		j := i
		for j < len(at) && at[j] < at[i]+at[i]/100 {
			j++
		}
		together += j - i
	}
	mean := float64(together) / float64(len(at))
	require.Less(t, mean, 4.5, "shards resizing within 1%% more keys, on average (5.8-7.8 on one ladder, 2.6-3.2 staggered, over 40 seeds)")
}
