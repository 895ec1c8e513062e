package storage

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/redcell/redcell/gcra"
)

// benchKeys returns n keys shaped like redis-benchmark's key:__rand_int__.
func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
	}
	return keys
}

// BenchmarkThrottleKeys runs decisions on existing keys picked at random
// among n, from every goroutine (compare -cpu 1,2): the decision path, which
// must not allocate. With many keys the table no longer fits in cache.
func BenchmarkThrottleKeys(b *testing.B) {
	for _, n := range []int{1, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			s := New(Config{TrackChanges: true})
			r := mustRate(b, 100, 10, 1, 1)
			keys := benchKeys(n)
			for _, k := range keys {
				_, _ = s.Throttle(k, r, t0)
			}
			s.TakeChanges(nil)
			var seed atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seed.Add(1), 0))
				now := t0
				for pb.Next() {
					now += 1000
					_, _ = s.Throttle(keys[rng.IntN(len(keys))], r, now)
				}
			})
		})
	}
}

// BenchmarkThrottleNewKey creates a key per decision: the insert path,
// including index and arena growth.
func BenchmarkThrottleNewKey(b *testing.B) {
	s := New(Config{})
	r := mustRate(b, 100, 10, 1, 1)
	keys := benchKeys(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _ = s.Throttle(keys[i], r, t0)
	}
}

// BenchmarkExpire measures the sweeper: every key has expired.
func BenchmarkExpire(b *testing.B) {
	s := New(Config{TrackChanges: true})
	r := mustRate(b, 0, 1, 1, 1)
	for _, k := range benchKeys(b.N) {
		_, _ = s.Throttle(k, r, t0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for s.Len() > 0 {
		s.ExpireSome(t0+gcra.Instant(2e9), 1000)
	}
}
