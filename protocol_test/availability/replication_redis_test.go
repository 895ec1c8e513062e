package availability_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A real redis-server as a replica of redcell: it loads redcell's snapshot
// and applies its stream, so every key reads the same on both, and each
// expires on Redis when its TAT passes. Redis expires keys on the real
// clock, so redcell runs on it here.
func TestRedisServerReplicatesFromRedcell(t *testing.T) {
	m := startReplServer(t, time.Now)
	keys := keyNames("user:", 2000)
	m.throttleAll(t, keys, func(i int) int { return 1 + i%5 }) // TATs 1 to 5 hours ahead
	m.do(t, "CL.WINDOW", "win", 10, 60, 3)

	redisEnd := harness.StartRedisServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(m.Port))
	replica := redisEnd.GoRedis(t, func(o *redis.Options) { o.Protocol = 2 })
	c := context.Background()
	redisInfo := func(field string) string {
		s, err := replica.Info(c, "replication").Result()
		require.NoError(t, err)
		for _, line := range strings.Split(s, "\r\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				return v
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return redisInfo("master_link_status") == "up" }, 20*time.Second, 10*time.Millisecond,
		"redis-server's master_link_status:up; redcell's log:\n%s", m.log)
	require.Contains(t, m.log.String(), "streamed=true", "redis-server said capa eof: its snapshot came as Redis's diskless sync sends one")
	redisGets := func(keys []string) []string {
		cmds, err := replica.Pipelined(c, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Get(c, k)
			}
			return nil
		})
		if err != nil && err != redis.Nil {
			require.NoError(t, err)
		}
		out := make([]string, len(cmds))
		for i, cmd := range cmds {
			v, err := cmd.(*redis.StringCmd).Result()
			if err == redis.Nil {
				v = "(nil)"
			} else if err != nil {
				v = "error: " + err.Error()
			}
			out[i] = v
		}
		return out
	}
	want := m.gets(t, keys)
	requireSame(t, "GET on redis-server", keys, want, redisGets(keys))

	// PTTL on Redis is the time left to each TAT.
	pttls, err := replica.Pipelined(c, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.PTTL(c, k)
		}
		return nil
	})
	require.NoError(t, err)
	now := time.Now()
	for i, cmd := range pttls {
		tat, err := strconv.ParseInt(want[i], 10, 64)
		require.NoError(t, err)
		left := time.Unix(0, tat).Sub(now)
		got := cmd.(*redis.DurationCmd).Val()
		require.InDelta(t, left.Milliseconds(), got.Milliseconds(), float64(5*time.Second/time.Millisecond), "%s: PTTL %v, TAT in %v", keys[i], got, left)
	}
	// A window is an opaque string on Redis, expiring with the window.
	winTTL := m.do(t, "PTTL", "win").(int64)
	require.InDelta(t, winTTL, replica.PTTL(c, "win").Val().Milliseconds(), 5000)
	require.Equal(t, "string", replica.Type(c, "win").Val())

	// The stream: changed, new and deleted keys reach Redis.
	m.throttleAll(t, keys[:500], func(int) int { return 2 })
	late := keyNames("late:", 100)
	m.throttleAll(t, late, func(int) int { return 1 })
	require.Equal(t, int64(50), m.do(t, delArgs(keys[1000:1050])...))
	all := append(append([]string{}, keys...), late...)
	require.Equal(t, int64(1), m.do(t, "WAIT", 1, 10000), "redis-server acknowledges the stream")
	requireSame(t, "GET on redis-server after the stream", all, m.gets(t, all), redisGets(all))
	require.Equal(t, m.do(t, "DBSIZE"), replica.DBSize(c).Val())
	require.Regexp(t, `^ip=127\.0\.0\.1,port=`+strconv.Itoa(redisEnd.Port)+`,state=online,`, m.info(t, "slave0"))
}
