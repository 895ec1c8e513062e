package client_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/client"
)

// An application user (docs/security.md, "Users and permissions") runs the client
// with the least it needs: CL.THROTTLE and, for the refusal cache, GET and
// TIME on its keys and CLIENT TRACKING. Its refusals are cached as the
// default user's are; a key outside its pattern is the server's NOPERM, not
// a fallback's answer.
func TestAnApplicationUserDecidesAndCaches(t *testing.T) {
	rc := startRedcell(t)
	admin := goRedis(t, rc.Addr)
	require.NoError(t, admin.Do(ctx(t), "ACL", "SETUSER", "app", "on", ">s3cret", "~app:*",
		"+cl.throttle", "+get", "+time", "+client|tracking", "+ping").Err())
	rdb := goRedis(t, rc.Addr, func(o *redis.Options) { o.Username, o.Password = "app", "s3cret" })
	c := newLimiter(t, rdb, client.Options{})
	limit := client.Limit{Burst: 0, Count: 1, Period: time.Minute}

	d, err := c.Allow(ctx(t), "app:k", limit)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	d, err = c.Allow(ctx(t), "app:k", limit)
	require.NoError(t, err)
	require.False(t, d.Allowed || d.Local, "the server's refusal")
	cached(t, c, 1)
	d, err = c.Allow(ctx(t), "app:k", limit)
	require.NoError(t, err)
	require.True(t, !d.Allowed && d.Local, "refused from the cache")

	_, err = c.Allow(ctx(t), "other:k", limit)
	require.EqualError(t, err, "NOPERM No permissions to access a key")
	require.Zero(t, c.Stats().Fallbacks)
}

// A user allowed CL.THROTTLE alone still decides through the client, every
// call the server's: nothing is cached, nothing fails.
func TestAUserWithoutReadsDecidesWithoutTheCache(t *testing.T) {
	rc := startRedcell(t)
	admin := goRedis(t, rc.Addr)
	require.NoError(t, admin.Do(ctx(t), "ACL", "SETUSER", "app", "on", ">s3cret", "~app:*", "+cl.throttle", "+ping").Err())
	rdb := goRedis(t, rc.Addr, func(o *redis.Options) { o.Username, o.Password = "app", "s3cret" })
	c := client.New(rdb, client.Options{Timeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	limit := client.Limit{Burst: 0, Count: 1, Period: time.Minute}

	for i := range 5 {
		d, err := c.Allow(ctx(t), "app:k", limit)
		require.NoError(t, err)
		require.Equal(t, i == 0, d.Allowed, "call %d", i)
		require.False(t, d.Local, "call %d", i)
		time.Sleep(20 * time.Millisecond)
	}
	st := c.Stats()
	require.Zero(t, st.Cached)
	require.Zero(t, st.Fallbacks)
	require.EqualValues(t, 5, st.ServerCalls)
}
