package availability_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/client"
)

// redcell's Go client (package client) over go-redis's Sentinel failover
// client and its cluster client: its refusal cache follows the node a key
// lives on, through a failover and a slot moved, and its fallback answers
// while there is no master.

// limiterOver is a client.Client over rdb, closed when the test ends. Its
// timeout is a second, so that a busy machine's slow call is not taken for
// a node gone (a dead one refuses connections at once).
func limiterOver(t *testing.T, rdb redis.UniversalClient) *client.Client {
	t.Helper()
	c := client.New(rdb, client.Options{Timeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// oncePerHour allows one call an hour: refused from the second on.
var oncePerHour = client.Limit{Burst: 0, Count: 1, Period: time.Hour}

// refuseAndCache makes calls on key until one is refused by the server,
// and waits until c's cache holds the key's state (the tracking connection
// of its node read it): the next call is refused locally.
func refuseAndCache(t *testing.T, c *client.Client, key string) {
	t.Helper()
	require.Eventually(t, func() bool {
		d, err := c.Allow(harness.Ctx(t), key, oncePerHour)
		require.NoError(t, err)
		if d.Allowed {
			return false
		}
		d, err = c.Allow(harness.Ctx(t), key, oncePerHour)
		require.NoError(t, err)
		return !d.Allowed && d.Local
	}, 20*time.Second, time.Millisecond, "%s refused from the cache", key)
}

// Over Sentinel's failover client: the cache is kept by a tracking
// connection to the master (DEL drops a key), and dropped when the master
// is killed; while Sentinel has no master the fallback answers, without an
// error; once it has promoted a replica the client decides there, and
// caches there again.
func TestGoClientOverSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Sentinels through a failover; skipped with -short")
	}
	path := needSentinel(t)
	master := startRedcellNode(t, 0)
	master.requirePubSub(t)
	r1 := startRedcellNode(t, master.Port)
	ss := startSentinels(t, path, 3, master.Port)
	waitTopology(t, ss, master, r1)

	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sentinelMaster, SentinelAddrs: sentinelAddrs(ss)})
	t.Cleanup(func() { _ = fc.Close() })
	c := limiterOver(t, fc)

	refuseAndCache(t, c, "k")
	require.NoError(t, fc.Del(harness.Ctx(t), "k").Err())
	require.Eventually(t, func() bool { return c.Stats().Cached == 0 }, 10*time.Second, time.Millisecond, "DEL drops it")
	refuseAndCache(t, c, "k")

	// Decisions under way through the failover: none fails.
	var mu sync.Mutex
	var errs []error
	local, remote := 0, 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			d, err := c.Allow(context.Background(), "load", client.Limit{Burst: 1000, Count: 1000, Period: time.Second})
			mu.Lock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case d.Local:
				local++
			default:
				remote++
			}
			mu.Unlock()
			time.Sleep(time.Millisecond) // a steady load, not a flood
		}
	}()

	connects := c.Stats().TrackingConnects
	_ = master.Stop(syscall.SIGKILL) // its status: killed
	require.Eventually(t, func() bool { return c.Stats().Cached == 0 }, 10*time.Second, time.Millisecond,
		"the tracking connection lost: what it cached is dropped")
	var last lastErr
	require.Eventually(t, func() bool {
		addr, err := ss[0].masterAddr()
		if err == nil && addr != r1.Addr {
			err = fmt.Errorf("the master is %s", addr)
		}
		return last.set(err)
	}, sentinelDeadline, 50*time.Millisecond, "Sentinel promotes the replica: %v", &last)
	mu.Lock()
	remoteAtPromotion := remote
	mu.Unlock()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return remote > remoteAtPromotion+100
	}, 30*time.Second, time.Millisecond, "decided by the new master")
	close(stop)
	wg.Wait()
	require.Empty(t, errs, "no decision failed through the failover")
	require.Positive(t, local, "the fallback answered while there was no master")
	t.Logf("%d decisions by the fallback, %d by a master", local, remote)

	require.Eventually(t, func() bool { return c.Stats().TrackingConnects > connects }, 30*time.Second, time.Millisecond,
		"tracking again, on the new master")
	refuseAndCache(t, c, "k") // its state was replicated: refused there too
	require.NoError(t, fc.Del(harness.Ctx(t), "k").Err())
	require.Eventually(t, func() bool { return c.Stats().Cached == 0 }, 10*time.Second, time.Millisecond)
}

// Over the cluster client: keys on three nodes are cached, each by a
// tracking connection to its node; a slot moved away drops its keys (the
// old owner deletes them and says so), and the calls on them are decided,
// and cached, on the new owner, whose state came with the slot.
func TestGoClientOverCluster(t *testing.T) {
	nodes := startReshardCluster(t, 3)
	cc := goRedisCluster(t, addrsOf(nodes))
	c := limiterOver(t, cc)

	slots := []int{100, 6000, 12000} // one on each node
	byslot := keysOf(slots, 1)
	for _, s := range slots {
		refuseAndCache(t, c, byslot[s][0])
	}
	require.Equal(t, 3, c.Stats().Cached)
	require.EqualValues(t, 3, c.Stats().TrackingConnects, "one tracking connection a node")

	moved := byslot[6000][0]
	migrateByHand(t, nodes[1], nodes[2], nodes, []int{6000}, 1, func() {})
	require.Eventually(t, func() bool { return c.Stats().Cached == 2 }, 10*time.Second, time.Millisecond,
		"the key of the slot moved away is dropped")
	d, err := c.Allow(harness.Ctx(t), moved, oncePerHour)
	require.NoError(t, err)
	require.False(t, d.Allowed, "refused on its new owner: its state moved with it")
	refuseAndCache(t, c, moved)
	require.Equal(t, 3, c.Stats().Cached)

	require.NoError(t, cc.Del(harness.Ctx(t), moved).Err())
	require.Eventually(t, func() bool { return c.Stats().Cached == 2 }, 10*time.Second, time.Millisecond)
	d, err = c.Allow(harness.Ctx(t), moved, oncePerHour)
	require.NoError(t, err)
	require.True(t, d.Allowed && !d.Local)
}
