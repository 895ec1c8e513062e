package storage

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// indexBytesOf adds up the store's tables' index sizes as they are.
func indexBytesOf(s *Store) int64 {
	var n int64
	for i := range s.shards {
		s.shards[i].mu.Lock()
		n += int64(len(s.shards[i].t.slots)) * entrySize
		s.shards[i].mu.Unlock()
	}
	return n
}

// Prefetching is on only once the index outgrows the caches, and off again
// once it shrinks: the store keeps the size of its index as its tables grow
// and shrink.
func TestPrefetchingFollowsTheIndexSize(t *testing.T) {
	s := New(Config{Shards: 4})
	r := mustRate(t, 10, 1, 60, 1)
	require.False(t, s.Prefetching(), "empty")
	n := 0
	for ; !s.Prefetching(); n++ {
		_, err := s.Throttle(fmt.Appendf(nil, "key:%d", n), r, t0)
		require.NoError(t, err)
		require.Equal(t, indexBytesOf(s), s.indexBytes.Load(), "after %d keys", n+1)
		require.Less(t, n, 200_000, "never prefetching")
	}
	require.GreaterOrEqual(t, indexBytesOf(s), int64(prefetchMinIndex))
	// 1 MiB of slots, 70% to 87.5% full: some 23-29 thousand keys.
	require.Greater(t, n, 20_000)
	require.Less(t, n, 30_000)

	for i := range n - 1000 {
		require.True(t, s.Delete(fmt.Appendf(nil, "key:%d", i), t0))
	}
	require.Equal(t, indexBytesOf(s), s.indexBytes.Load(), "after deletions")
	require.False(t, s.Prefetching(), "1000 keys left: the index shrank below the threshold")
	s.Clear()
	require.Zero(t, s.indexBytes.Load())
}

// Prefetches read the index while other goroutines grow and shrink it,
// unmapping the arrays they replace: a prefetch reads no memory it may not
// (the race detector sees every read it makes) and survives a stale address
// (a real load there would fault). Decisions meanwhile are what they would
// be without prefetches.
func TestPrefetchWhileTheIndexIsResized(t *testing.T) {
	s := New(Config{Shards: 1})
	r := mustRate(t, 10, 1, 60, 1)
	keys := make([][]byte, 20_000) // 32768 slots: a mapped index (mmapThreshold)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%d", i)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, k := range keys {
				s.PrefetchIndex(k, -1)
				s.PrefetchEntry(k, -1)
			}
		}
	}()
	for range 5 {
		for _, k := range keys {
			res, err := s.Throttle(k, r, t0)
			require.NoError(t, err)
			require.Equal(t, int64(10), res.Remaining, "a new key's first decision")
		}
		for _, k := range keys {
			require.True(t, s.Delete(k, t0))
		}
		require.Zero(t, s.Len())
	}
	close(stop)
	wg.Wait()
}

// Prefetches take nothing and change nothing.
func TestPrefetchAllocatesNothing(t *testing.T) {
	s := New(Config{Shards: 1})
	r := mustRate(t, 10, 1, 60, 1)
	_, err := s.Throttle([]byte("k"), r, t0)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		s.PrefetchIndex([]byte("k"), -1)
		s.PrefetchEntry([]byte("k"), -1)
		s.PrefetchEntry([]byte("absent"), -1)
	})
	require.Zero(t, allocs)
	res, err := s.Throttle([]byte("k"), r, t0)
	require.NoError(t, err)
	require.Equal(t, int64(9), res.Remaining, "the key's second decision")
}
