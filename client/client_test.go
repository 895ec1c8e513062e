package client_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/client"
)

// newLimiter is a Client over rdb, closed when the test ends.
// With a cache, on one node, it returns once the tracking connection is up:
// the tests' first refusals are cached. Its timeout is a second unless opt
// gives one: the tests of decisions and of the cache must not see the
// fallback answer because a busy machine was slow for 20 ms.
func newLimiter(t testing.TB, rdb redis.UniversalClient, opt client.Options) *client.Client {
	t.Helper()
	if opt.Timeout == 0 {
		opt.Timeout = time.Second
	}
	c := client.New(rdb, opt)
	t.Cleanup(func() { _ = c.Close() })
	if _, ok := rdb.(*redis.Client); ok && opt.CacheSize >= 0 {
		require.Eventually(t, func() bool { return client.Tracking(c) }, 10*time.Second, time.Millisecond)
	}
	return c
}

// cached waits until c's cache holds n keys.
func cached(t testing.TB, c *client.Client, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return c.Stats().Cached == n }, 10*time.Second, 100*time.Microsecond,
		"cached %d keys, want %d; %+v", c.Stats().Cached, n, c.Stats())
}

// A decision is CL.THROTTLE's, on the same key: the reply's five integers
// as a Decision, whatever the period's unit (a limit per 500 ms is the same
// rate in whole seconds), and a plain client's CL.THROTTLE on the key sees
// what the client did.
func TestDecisionsAreCLThrottles(t *testing.T) {
	rc := startRedcell(t)
	rdb := goRedis(t, rc.Addr)
	c := newLimiter(t, rdb, client.Options{CacheSize: -1})

	d, err := c.Allow(ctx(t), "user123", client.Limit{Burst: 15, Count: 30, Period: time.Minute})
	require.NoError(t, err)
	require.Equal(t, client.Decision{Allowed: true, Limit: 16, Remaining: 15, ResetAfter: 2 * time.Second}, d)

	limit := client.Limit{Burst: 4, Count: 1, Period: 10 * time.Second}
	for i := range 5 {
		d, err := c.Allow(ctx(t), "k", limit)
		require.NoError(t, err)
		require.Equal(t, client.Decision{Allowed: true, Limit: 5, Remaining: int64(4 - i), ResetAfter: time.Duration(10*(i+1)) * time.Second}, d, "call %d", i)
	}
	d, err = c.Allow(ctx(t), "k", limit)
	require.NoError(t, err)
	require.Equal(t, client.Decision{Limit: 5, RetryAfter: 10 * time.Second, ResetAfter: 50 * time.Second}, d)
	peek, err := rdb.Do(ctx(t), "CL.THROTTLE", "k", 4, 1, 10, 0).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 5, 0, -1, 50}, peek)

	d, err = c.AllowN(ctx(t), "k", limit, 6)
	require.NoError(t, err)
	require.Equal(t, client.Decision{Limit: 5, RetryAfter: -time.Second, ResetAfter: 50 * time.Second}, d, "more than a burst: never")

	// 1 call per 500 ms is CL.THROTTLE's 2 per second.
	d, err = c.Allow(ctx(t), "half", client.Limit{Burst: 0, Count: 1, Period: 500 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, client.Decision{Allowed: true, Limit: 1, ResetAfter: time.Second}, d)
	pttl, err := rdb.PTTL(ctx(t), "half").Result()
	require.NoError(t, err)
	require.InDelta(t, 500, pttl.Milliseconds(), 50)
}

// Limits and quantities the server would refuse are refused before
// anything is sent.
func TestInvalidLimitsAreRefusedHere(t *testing.T) {
	rc := startRedcell(t)
	rdb := goRedis(t, rc.Addr)
	c := newLimiter(t, rdb, client.Options{})
	for _, l := range []client.Limit{
		{Burst: -1, Count: 1, Period: time.Second},
		{Burst: 1, Count: 0, Period: time.Second},
		{Burst: 1, Count: 1, Period: 0},
		{Burst: 1, Count: 2, Period: 1},                        // half a nanosecond each
		{Burst: 1 << 62, Count: 1, Period: time.Hour},          // the burst's span overflows
		{Burst: 1, Count: 1 << 62, Period: time.Second},        // count*1e9 overflows
		{Burst: 1, Count: 1, Period: time.Duration(1<<63 - 1)}, // period*1e9 as the server counts it
	} {
		_, err := c.Allow(ctx(t), "k", l)
		require.ErrorIs(t, err, client.ErrInvalidLimit, "%+v", l)
	}
	_, err := c.AllowN(ctx(t), "k", client.Limit{Count: 1, Period: time.Second}, -1)
	require.ErrorIs(t, err, client.ErrInvalidLimit)
	require.Zero(t, throttleCalls(t, rdb))

	// The server's own refusals of a key are the caller's to see.
	require.NoError(t, rdb.Do(ctx(t), "CL.WINDOW", "w", 10, 60).Err())
	_, err = c.Allow(ctx(t), "w", client.Limit{Count: 1, Period: time.Second})
	require.ErrorContains(t, err, "WRONGTYPE")
}

// After the server refuses a key, the client refuses it itself, with no
// round trip, until the instant the server would allow it again, which it
// knows to the microsecond (CL.THROTTLE's reply says "1 second"): the
// first call after that instant goes to the server, and is allowed.
func TestRefusalsAreCachedUntilTheServerWouldAllow(t *testing.T) {
	rc := startRedcell(t)
	rdb := goRedis(t, rc.Addr)
	c := newLimiter(t, rdb, client.Options{})
	limit := client.Limit{Burst: 0, Count: 1, Period: 300 * time.Millisecond}

	before := time.Now()
	d, err := c.Allow(ctx(t), "k", limit)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	after := time.Now() // the server decided in between
	d, err = c.Allow(ctx(t), "k", limit)
	require.NoError(t, err)
	require.False(t, d.Allowed || d.Local)
	require.Equal(t, time.Second, d.RetryAfter, "the server's whole seconds")
	cached(t, c, 1)

	local, server := 0, 0
	for {
		d, err = c.Allow(ctx(t), "k", limit)
		require.NoError(t, err)
		if d.Allowed {
			break
		}
		if !d.Local {
			// The cache lets a call through a little before the instant
			// (its margins for the clocks): the server may still refuse
			// it, in the last moment only.
			require.GreaterOrEqual(t, time.Since(before), 298*time.Millisecond, "refused by the server")
			server++
			continue
		}
		require.Less(t, d.RetryAfter, 300*time.Millisecond)
		local++
	}
	allowed := time.Now()
	require.False(t, d.Local)
	require.GreaterOrEqual(t, allowed.Sub(before), 300*time.Millisecond, "not before the server would")
	// CL.THROTTLE's reply says "retry after 1 s"; the cache knows the
	// instant: allowed well within the second, a round trip or a busy
	// machine's scheduling after the period.
	require.Less(t, allowed.Sub(after), 350*time.Millisecond, "allowed as soon as the server would")
	t.Logf("%d local refusals, %d by the server at the end; allowed %v to %v after the first call (the limit's period is 300ms)",
		local, server, allowed.Sub(after), allowed.Sub(before))
}

// A key reset anywhere (DEL, FLUSHALL, a decision of another limit that
// moves it) leaves every client's cache within milliseconds, and the next
// call is the server's.
func TestResetsReachEveryCache(t *testing.T) {
	rc := startRedcell(t)
	other := goRedis(t, rc.Addr)
	a := newLimiter(t, goRedis(t, rc.Addr), client.Options{})
	b := newLimiter(t, goRedis(t, rc.Addr), client.Options{})
	limit := client.Limit{Burst: 0, Count: 1, Period: time.Hour}
	refuse := func(c *client.Client, key string) {
		for {
			d, err := c.Allow(ctx(t), key, limit)
			require.NoError(t, err)
			if !d.Allowed {
				return
			}
		}
	}
	for _, reset := range []struct {
		name string
		do   func(key string) error
	}{
		{"DEL", func(key string) error { return other.Del(ctx(t), key).Err() }},
		{"UNLINK", func(key string) error { return other.Unlink(ctx(t), key).Err() }},
		{"FLUSHALL", func(string) error { return other.FlushAll(ctx(t)).Err() }},
		{"a decision of another limit, allowed", func(key string) error {
			return other.Do(ctx(t), "CL.THROTTLE", key, 10000, 1, 1).Err() // its burst spans the hour the TAT is ahead
		}},
	} {
		key := "k:" + reset.name
		refuse(a, key)
		refuse(b, key)
		cached(t, a, 1)
		cached(t, b, 1)
		start := time.Now()
		require.NoError(t, reset.do(key))
		cached(t, a, 0)
		cached(t, b, 0)
		t.Logf("%s: both caches dropped the key %v after it", reset.name, time.Since(start))
		// Within 10 ms is TestInvalidationsArriveWithin10ms's to measure,
		// over many; one reset on two busy cores gets a scheduler's slack.
		require.Less(t, time.Since(start), 50*time.Millisecond)
		if reset.name != "a decision of another limit, allowed" {
			d, err := a.Allow(ctx(t), key, limit)
			require.NoError(t, err)
			require.True(t, d.Allowed && !d.Local, "%s: the key reset is allowed", reset.name)
		}
	}
}

// The cache never refuses what the server would allow: two clients decide
// at random on a few keys with a few limits and quantities, a third resets
// keys at random, and every refusal answered from a cache is checked
// against the server (a peek, CL.THROTTLE with quantity 0): either the
// server refuses the call too, or its RetryAfter had passed by the time of
// the peek.
func TestCacheNeverRefusesWhatTheServerAllows(t *testing.T) {
	rc := startRedcell(t)
	rdb := goRedis(t, rc.Addr)
	clients := []*client.Client{
		newLimiter(t, goRedis(t, rc.Addr), client.Options{}),
		newLimiter(t, goRedis(t, rc.Addr), client.Options{}),
	}
	keys := []string{"a", "b", "c", "{x}d"}
	limits := []client.Limit{
		{Burst: 0, Count: 1, Period: 20 * time.Millisecond},
		{Burst: 2, Count: 1, Period: 30 * time.Millisecond},
		{Burst: 4, Count: 5, Period: 100 * time.Millisecond},
		{Burst: 1, Count: 3, Period: time.Second},
	}
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	local, checked, resets := 0, 0, 0
	deadline := time.Now().Add(3 * time.Second)
	for step := 0; time.Now().Before(deadline); step++ {
		key := keys[rng.IntN(len(keys))]
		if rng.IntN(50) == 0 {
			require.NoError(t, rdb.Del(ctx(t), key).Err())
			resets++
			for _, c := range clients {
				// What the node sent before, the DEL's invalidation and
				// the replies of reads made before it, is handled.
				require.True(t, client.Sync(ctx(t), c))
				require.False(t, client.Cached(c, key))
			}
			continue
		}
		c := clients[rng.IntN(len(clients))]
		limit := limits[rng.IntN(len(limits))]
		n := int64(rng.IntN(3))
		d, err := c.AllowN(ctx(t), key, limit, n)
		require.NoError(t, err)
		at := time.Now()
		if !d.Local {
			continue
		}
		local++
		require.False(t, d.Allowed)
		peek, err := rdb.Do(ctx(t), "CL.THROTTLE", key, limit.Burst, clThrottleCount(limit), clThrottlePeriod(limit), 0).Int64Slice()
		require.NoError(t, err)
		// The server allows n calls now when n of them fit in what
		// remains, or, for a peek (n 0), when its own peek is allowed.
		if serverAllows := peek[2] >= n && peek[0] == 0; serverAllows && d.RetryAfter >= 0 {
			// The server would allow it now: only because the refusal's
			// own RetryAfter has passed since.
			require.LessOrEqual(t, d.RetryAfter, time.Since(at), "step %d: %s %+v n=%d refused locally for %v, the server allows", step, key, limit, n, d.RetryAfter)
		}
		checked++
	}
	t.Logf("%d local refusals checked, %d resets", checked, resets)
	require.Positive(t, local)
	for _, c := range clients {
		require.Zero(t, c.Stats().Fallbacks, "every local refusal was the cache's")
	}
}

// clThrottleCount and clThrottlePeriod are the count and period CL.THROTTLE
// is sent for l (its whole-second form).
func clThrottleCount(l client.Limit) int64  { c, _ := client.WholeSeconds(l); return c }
func clThrottlePeriod(l client.Limit) int64 { _, p := client.WholeSeconds(l); return p }
