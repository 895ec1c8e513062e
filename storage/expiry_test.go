package storage

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fillExpiring adds n keys that expire at t0+1s and live keys that do not,
// spread over s's shards.
func fillExpiring(tb testing.TB, s *Store, n, live int) {
	tb.Helper()
	short, long := mustRate(tb, 0, 1, 1, 1), mustRate(tb, 0, 1, 3600, 1)
	for i := range n {
		_, err := s.Throttle(fmt.Appendf(nil, "gone:%d", i), short, t0)
		require.NoError(tb, err)
	}
	for i := range live {
		_, err := s.Throttle(fmt.Appendf(nil, "live:%d", i), long, t0)
		require.NoError(tb, err)
	}
}

// batches is a tick's budget of b batches beyond the first round, as
// ExpireCycle asks it (over): a budget counted, not timed, so that the test
// does not depend on the host's speed.
func batches(b int) func() bool {
	n := 0
	return func() bool { n++; return n >= b }
}

// Keys that expire together are swept at the tick's budget, not at the
// fixed rate of one batch a shard a tick: 20,000 keys expired at once over
// 4 shards are gone in 6 ticks of 100 batches of 64 keys, where the fixed
// rate (ExpireSome, what RunExpiry ran before) needs 79 or more. Live keys
// stay.
func TestExpireCycleSweepsAtItsBudgetWhileManyExpire(t *testing.T) {
	const gone, live, batch = 20_000, 100, 64
	later := t0 + sec(2)

	fixed := New(Config{Shards: 4})
	fillExpiring(t, fixed, gone, live)
	ticks := 0
	for fixed.Len() > live {
		fixed.ExpireSome(later, batch)
		ticks++
	}
	require.GreaterOrEqual(t, ticks, gone/(4*batch), "the fixed rate: one batch a shard a tick")

	s := New(Config{Shards: 4})
	fillExpiring(t, s, gone, live)
	ticks = 0
	for s.Len() > live {
		s.ExpireCycle(later, batch, batches(100))
		ticks++
		require.LessOrEqual(t, ticks, 6, "20,000 keys at 100 batches of 64 a tick")
	}
	require.Equal(t, int64(gone), s.Expired())
	for i := range live {
		_, _, ok := s.Get(fmt.Appendf(nil, "live:%d", i), later)
		require.True(t, ok, "live:%d", i)
	}
}

// A table the sweep empties shrinks as it empties, a few times, not at
// every removal. The sweep walks the table in order, so the keys it has yet
// to reach are bunched in one part of the hash range, which no table half
// their number's size can hold within maxDist: the shrink's rehash grew
// back to the length it had, and every later removal tried again, a full
// rehash each. 30,000 keys swept in batches cost about 30,000 rehashes of
// the shard; they now cost a few dozen resizes.
func TestASweptTableDoesNotRetryAShrinkAtEveryRemoval(t *testing.T) {
	s := New(Config{Shards: 1})
	fillExpiring(t, s, 30_000, 10)
	sh := &s.shards[0]
	before := sh.t.resizes
	for s.Len() > 10 {
		s.ExpireSome(t0+sec(2), 500)
	}
	require.Less(t, sh.t.resizes-before, 50, "resizes while 30,000 keys were swept")
}

// When nothing expires, a tick examines one batch a shard and stops: no
// shard's batch is stale, so the budget is never asked about.
func TestExpireCycleIsLightWhenNothingExpires(t *testing.T) {
	s := New(Config{Shards: 4})
	fillExpiring(t, s, 0, 1000)
	asked := 0
	require.Zero(t, s.ExpireCycle(t0+sec(2), 64, func() bool { asked++; return false }))
	require.Zero(t, asked, "one round, no shard stale")
	require.Equal(t, 1000, s.Len())
}

// A stale shard is swept on while the others, fresh, are not looked at
// again in the same tick: 3,000 expired keys in a store with one shard's
// worth of them go in one tick of a generous budget.
func TestExpireCycleKeepsGoingOnStaleShardsOnly(t *testing.T) {
	s := New(Config{Shards: 8})
	fillExpiring(t, s, 3000, 3000)
	require.Equal(t, 3000, s.ExpireCycle(t0+sec(2), 32, func() bool { return false }), "every expired key, in one tick")
	require.Equal(t, 3000, s.Len())
}

// BenchmarkExpiryOfAMillionKeys runs RunExpiry's ticks at its defaults over
// a million keys that expire in the same second, and reports how long it
// takes to free them (seconds-to-free), the share of a core the ticks used
// (core-share), and the slowest decision on another key meanwhile
// (max-decision-ms), which waits at most for one batch's lock. Run it alone:
//
//	go test -run '^$' -bench ExpiryOfAMillionKeys -benchtime 1x ./storage
func BenchmarkExpiryOfAMillionKeys(b *testing.B) {
	for b.Loop() {
		s := New(Config{})
		fillExpiring(b, s, 1_000_000, 1000)
		now := t0 + sec(2)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var worst atomic.Int64
		wg.Go(func() {
			r := mustRate(b, 1000, 1, 3600, 1)
			for ctx.Err() == nil {
				start := time.Now()
				_, _ = s.Throttle([]byte("live:7"), r, now)
				if d := int64(time.Since(start)); d > worst.Load() {
					worst.Store(d)
				}
				time.Sleep(100 * time.Microsecond)
			}
		})
		// RunExpiry's loop, its time in ticks summed.
		tick := time.NewTicker(DefaultExpiryInterval)
		start := time.Now()
		var busy time.Duration
		ticks := 0
		for s.Len() > 1000 {
			<-tick.C
			t := time.Now()
			s.ExpireCycle(now, DefaultExpiryBatch, func() bool { return time.Since(t) >= DefaultExpiryBudget })
			busy += time.Since(t)
			ticks++
		}
		took := time.Since(start)
		tick.Stop()
		cancel()
		wg.Wait()
		b.ReportMetric(took.Seconds(), "seconds-to-free")
		b.ReportMetric(busy.Seconds()/took.Seconds(), "core-share")
		b.ReportMetric(float64(ticks), "ticks")
		b.ReportMetric(float64(worst.Load())/1e6, "max-decision-ms")
	}
}
