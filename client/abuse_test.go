package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/client"
)

// abuse makes attempts calls on key, one every second/attempts for a
// second, through allow, and returns how many were allowed. It paces the
// attempts by the clock, spinning, not sleeping: a sleep would round them
// to the scheduler's tick.
func abuse(t *testing.T, attempts int, allow func(i int) bool) (allowed int, took time.Duration) {
	t.Helper()
	gap := time.Second / time.Duration(attempts)
	start := time.Now()
	for i := range attempts {
		for time.Since(start) < time.Duration(i)*gap {
		}
		if allow(i) {
			allowed++
		}
	}
	return allowed, time.Since(start)
}

// An abusive caller, 20,000 attempts in a second on one key limited to 10
// at once and 10 a second: through the client, the server sees a few dozen
// calls and allows exactly what it allows when every attempt reaches it
// (plain go-redis, side by side, on another key with the same limit): the
// GCRA count, the burst, then one each tenth of a second.
func TestAnAbusiveKeyIsAnsweredLocally(t *testing.T) {
	rc := startRedcell(t)
	admin := goRedis(t, rc.Addr)
	c := newLimiter(t, goRedis(t, rc.Addr), client.Options{})
	plain := goRedis(t, rc.Addr)
	limit := client.Limit{Burst: 9, Count: 10, Period: time.Second}
	const attempts = 20_000

	callsBefore, allowedBefore := throttleCalls(t, admin), infoField(t, admin, "stats", "throttle_allowed")
	viaClient, took := abuse(t, attempts, func(int) bool {
		d, err := c.Allow(context.Background(), "abuser", limit)
		require.NoError(t, err)
		return d.Allowed
	})
	calls := throttleCalls(t, admin) - callsBefore
	serverAllowed := infoField(t, admin, "stats", "throttle_allowed") - allowedBefore
	st := c.Stats()

	callsBefore = throttleCalls(t, admin)
	viaPlain, plainTook := abuse(t, attempts, func(int) bool {
		v, err := plain.Do(context.Background(), "CL.THROTTLE", "abuser:plain", 9, 10, 1).Int64Slice()
		require.NoError(t, err)
		return v[0] == 0
	})
	plainCalls := throttleCalls(t, admin) - callsBefore

	t.Logf("client: %d attempts in %v, %d allowed, %d CL.THROTTLE and %d reads of a TAT (%d round trips saved: %d cache hits)",
		attempts, took.Round(time.Millisecond), viaClient, calls, st.Reads, attempts-int(calls), st.CacheHits)
	t.Logf("plain go-redis: %d attempts in %v, %d allowed, %d CL.THROTTLE", attempts, plainTook.Round(time.Millisecond), viaPlain, plainCalls)
	require.Zero(t, st.Fallbacks)
	require.Equal(t, int64(viaClient), serverAllowed, "every allowed call is the server's")
	require.EqualValues(t, attempts, plainCalls)
	require.Less(t, calls, int64(4*viaClient+20), "a few server calls per call allowed, not one per attempt")
	// Both allow GCRA's count over their run (the plain one may take longer
	// than a second, on a busy machine): the burst and one per 100 ms.
	require.InDelta(t, 10+int(took/(100*time.Millisecond)), viaClient, 1, "the client allows what the server allows to every attempt")
	require.InDelta(t, 10+int(plainTook/(100*time.Millisecond)), viaPlain, 1)
}

// BenchmarkLocalRefusal is the cost of a refusal answered from the cache:
// no round trip, no allocation.
func BenchmarkLocalRefusal(b *testing.B) {
	rc := startRedcell(b)
	c := newLimiter(b, goRedis(b, rc.Addr), client.Options{})
	limit := client.Limit{Burst: 0, Count: 1, Period: time.Hour}
	ctx := context.Background()
	for client.Cached(c, "k") == false {
		_, err := c.Allow(ctx, "k", limit)
		require.NoError(b, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		d, _ := c.Allow(ctx, "k", limit)
		if !d.Local {
			b.Fatal("not local")
		}
	}
}

// BenchmarkLocalRefusalParallel is BenchmarkLocalRefusal from every core,
// on 64 keys.
func BenchmarkLocalRefusalParallel(b *testing.B) {
	rc := startRedcell(b)
	c := newLimiter(b, goRedis(b, rc.Addr), client.Options{})
	limit := client.Limit{Burst: 0, Count: 1, Period: time.Hour}
	ctx := context.Background()
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = "k" + string(rune('A'+i))
		for !client.Cached(c, keys[i]) {
			_, err := c.Allow(ctx, keys[i], limit)
			require.NoError(b, err)
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if d, _ := c.Allow(ctx, keys[i&63], limit); !d.Local {
				b.Error("not local")
			}
		}
	})
}

// BenchmarkRoundTrip is a decision the server makes, through the client,
// and BenchmarkRoundTripPlain the same CL.THROTTLE with go-redis alone: the
// client's cost over go-redis's.
func BenchmarkRoundTrip(b *testing.B) {
	rc := startRedcell(b)
	c := newLimiter(b, goRedis(b, rc.Addr), client.Options{})
	limit := client.Limit{Burst: 1 << 30, Count: 1 << 20, Period: time.Second} // never limited at this pace
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d, err := c.Allow(ctx, "k", limit); err != nil || !d.Allowed || d.Local {
			b.Fatal(d, err)
		}
	}
}

// BenchmarkRoundTripContextTimeout is BenchmarkRoundTrip over a go-redis
// client that bounds its calls by their context (ContextTimeoutEnabled):
// the call runs on the caller's goroutine.
func BenchmarkRoundTripContextTimeout(b *testing.B) {
	rc := startRedcell(b)
	c := newLimiter(b, goRedis(b, rc.Addr, func(o *redis.Options) { o.ContextTimeoutEnabled = true }), client.Options{})
	limit := client.Limit{Burst: 1 << 30, Count: 1 << 20, Period: time.Second}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d, err := c.Allow(ctx, "k", limit); err != nil || !d.Allowed || d.Local {
			b.Fatal(d, err)
		}
	}
}

func BenchmarkRoundTripPlain(b *testing.B) {
	rc := startRedcell(b)
	rdb := goRedis(b, rc.Addr)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := rdb.Do(ctx, "CL.THROTTLE", "k", 1<<30, 1<<20, 1).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
