package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/clock"
	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/daemon"
	"github.com/redcell/redcell/internal/testkit"
)

// TestMain lets a test run this very binary as a redcell server child process
// (REDCELLTEST_CHILD=1, flags in REDCELLTEST_ARGS), so that it can be
// killed with SIGKILL like a crashing server.
//
// REDCELLTEST_WALL_SHIFT (a duration) shifts the child's wall clock, as a
// clock that runs fast or slow: its clock is anchored there.
func TestMain(m *testing.M) {
	if os.Getenv("REDCELLTEST_CHILD") == "1" {
		if shift, err := time.ParseDuration(os.Getenv("REDCELLTEST_WALL_SHIFT")); err == nil {
			newClock = func() *clock.Clock { return clock.WithWall(func() time.Time { return time.Now().Add(shift) }) }
		}
		os.Args = append([]string{"redcell"}, strings.Fields(os.Getenv("REDCELLTEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(testkit.Main(m))
}

// child is a redcell server in a child process: this test binary run as
// redcell (TestMain), on a free port, in the kit's harness.
type child struct{ *testkit.Process }

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	return startChildEnv(t, nil, args...)
}

// startChildEnv is startChild with env added to the child's environment.
func startChildEnv(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	return &child{testkit.Start(t, testkit.Self(), env, append([]string{"--port", "0"}, args...)...)}
}

func (c *child) client(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: c.Addr, Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func throttle(ctx context.Context, rdb *redis.Client, key string, args ...any) ([]int64, error) {
	return rdb.Do(ctx, append([]any{"CL.THROTTLE", key}, args...)...).Int64Slice()
}

// tats reads every key's stored TAT (GET).
func tats(t *testing.T, rdb *redis.Client, keys []string) map[string]string {
	t.Helper()
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		v, err := rdb.Get(context.Background(), k).Result()
		if err == redis.Nil {
			continue
		}
		require.NoError(t, err)
		out[k] = v
	}
	return out
}

func makeKeys(t *testing.T, rdb *redis.Client, n int) []string {
	ctx := context.Background()
	keys := make([]string, n)
	pipe := rdb.Pipeline()
	for i := range keys {
		keys[i] = fmt.Sprintf("user:%d", i)
		pipe.Do(ctx, "CL.THROTTLE", keys[i], 9, 1, 3600, 1+i%5)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	return keys
}

func TestCleanRestartKeepsEveryTATExactly(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			// A long interval: only the save on a clean stop can keep the keys.
			c := startChild(t, "--dir", dir, "--flush-interval", "1h")
			keys := makeKeys(t, c.client(t), 500)
			before := tats(t, c.client(t), keys)
			require.Len(t, before, 500)
			require.NoError(t, c.Stop(sig))
			require.Contains(t, c.Log(), `msg="saved state" keys=500`)

			c = startChild(t, "--dir", dir)
			require.Contains(t, c.Log(), "keys=500")
			require.Equal(t, before, tats(t, c.client(t), keys))
		})
	}
}

func TestShutdownCommandSavesAndNosaveDoesNot(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	c := startChild(t, "--dir", dir, "--flush-interval", "1h")
	rdb := c.client(t)
	keys := makeKeys(t, rdb, 10)
	before := tats(t, rdb, keys)
	_ = rdb.Do(ctx, "SHUTDOWN").Err() // the connection closes without a reply
	require.NoError(t, c.Wait())
	c = startChild(t, "--dir", dir, "--flush-interval", "1h")
	rdb = c.client(t)
	require.Equal(t, before, tats(t, rdb, keys))

	_, err := throttle(ctx, rdb, "after-nosave", 0, 1, 3600)
	require.NoError(t, err)
	_ = rdb.Do(ctx, "SHUTDOWN", "NOSAVE").Err()
	require.NoError(t, c.Wait())
	c = startChild(t, "--dir", dir, "--flush-interval", "1h")
	rdb = c.client(t)
	require.Equal(t, before, tats(t, rdb, keys), "what was saved before stays")
	n, err := rdb.Exists(ctx, "after-nosave").Result()
	require.NoError(t, err)
	require.Zero(t, n, "SHUTDOWN NOSAVE skipped the save")
}

func TestKillAfterFlushKeepsEveryFlushedKey(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, "--dir", dir, "--flush-interval", "50ms")
	rdb := c.client(t)
	keys := makeKeys(t, rdb, 2000)
	before := tats(t, rdb, keys)
	// Wait until a flush has taken every change, then crash.
	require.Eventually(t, func() bool {
		info, err := rdb.Info(context.Background(), "persistence").Result()
		return err == nil && strings.Contains(info, "rdb_changes_since_last_save:0\r\n") &&
			!strings.Contains(info, "redcell_flushes:0\r\n")
	}, 10*time.Second, 10*time.Millisecond)
	_ = c.Stop(syscall.SIGKILL) // a kill's exit status

	c = startChild(t, "--dir", dir)
	require.Equal(t, before, tats(t, c.client(t), keys))
}

func TestSaveThenKillKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	c := startChild(t, "--dir", dir, "--flush-interval", "1h")
	rdb := c.client(t)
	keys := makeKeys(t, rdb, 300)
	before := tats(t, rdb, keys)
	lastBefore, err := rdb.LastSave(ctx).Result()
	require.NoError(t, err)
	require.Equal(t, "OK", rdb.Save(ctx).Val())
	lastAfter, err := rdb.LastSave(ctx).Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, lastAfter, lastBefore)
	_ = c.Stop(syscall.SIGKILL) // a kill's exit status

	c = startChild(t, "--dir", dir)
	require.Equal(t, before, tats(t, c.client(t), keys))
}

// In durable mode (--flush-interval 0) every acknowledged decision survives a
// SIGKILL that lands in the middle of a load: with the connections served by
// an event loop (one sync a round for all of them) and each by a goroutine.
func TestDurableModeLosesNoAcknowledgedDecisionOnKill(t *testing.T) {
	for _, loops := range []string{"1", "0"} {
		t.Run("event loops "+loops, func(t *testing.T) { testDurableKill(t, "--event-loops", loops) })
	}
}

func testDurableKill(t *testing.T, args ...string) {
	dir := t.TempDir()
	c := startChild(t, append([]string{"--dir", dir, "--flush-interval", "0"}, args...)...)

	var acked sync.Map // key -> struct{}: allowed and acknowledged
	var count atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: c.Addr, Protocol: 2, MaxRetries: -1, PoolSize: 2})
			defer rdb.Close()
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("w%d:%d", w, i)
				// max_burst 0, one per hour: the first call is allowed and
				// must leave the key throttled for an hour.
				r, err := throttle(ctx, rdb, key, 0, 1, 3600)
				if err != nil {
					return // the server died under us: this call is unacknowledged
				}
				if r[0] == 0 {
					acked.Store(key, struct{}{})
					count.Add(1)
				}
			}
		}(w)
	}
	require.Eventually(t, func() bool { return count.Load() >= 1000 }, 60*time.Second, 5*time.Millisecond)
	_ = c.Stop(syscall.SIGKILL) // a kill's exit status
	cancel()
	wg.Wait()

	c = startChild(t, "--dir", dir)
	rdb := c.client(t)
	n := 0
	acked.Range(func(k, _ any) bool {
		r, err := throttle(context.Background(), rdb, k.(string), 0, 1, 3600, 0)
		require.NoError(t, err)
		require.Equal(t, int64(0), r[2], "key %s: acknowledged decision lost (remaining %d)", k, r[2])
		n++
		return true
	})
	require.GreaterOrEqual(t, n, 1000)
	t.Logf("%d acknowledged decisions, all present after SIGKILL", n)
}

func TestExpiredKeysAreNotLoadedBack(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	c := startChild(t, "--dir", dir, "--flush-interval", "1h")
	rdb := c.client(t)
	// One action a second: each key's TAT is 1s away.
	for i := 0; i < 20; i++ {
		_, err := throttle(ctx, rdb, fmt.Sprintf("short:%d", i), 0, 1, 1)
		require.NoError(t, err)
	}
	_, err := throttle(ctx, rdb, "long", 0, 1, 3600)
	require.NoError(t, err)
	deadline := time.Now().Add(time.Second)
	require.NoError(t, c.Stop(syscall.SIGTERM))
	require.Contains(t, c.Log(), `msg="saved state" keys=21`)
	require.Eventually(t, func() bool { return time.Now().After(deadline) }, 5*time.Second, 10*time.Millisecond)

	c = startChild(t, "--dir", dir)
	require.Contains(t, c.Log(), "keys=1 stale_kept=20", "not loaded, and left on disk for the clean-up an hour later")
	rdb = c.client(t)
	require.Equal(t, int64(1), rdb.DBSize(ctx).Val())
}

func TestCorruptStoreFailsStartWithAClearError(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, "--dir", dir)
	makeKeys(t, c.client(t), 5)
	require.NoError(t, c.Stop(syscall.SIGTERM))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "MANIFEST-") {
			require.NoError(t, os.WriteFile(dir+"/"+e.Name(), []byte("garbage"), 0o644))
		}
	}
	var stderr strings.Builder
	err = daemon.Run(context.Background(), config.Config{Bind: "127.0.0.1", Port: 0, Dir: dir, FlushInterval: time.Second},
		slog.New(slog.NewTextHandler(&stderr, nil)), daemon.Options{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "open store "+dir)

	// And the binary exits non-zero with the directory named.
	out, status := testkit.Self().Run(t, nil, "--port", "0", "--dir", dir)
	require.Equal(t, 1, status)
	require.Contains(t, out, "open store "+dir)
}

// Every kind of state comes back from disk as it was: a TAT written by
// CL.THROTTLE, GCRA and CL.RESERVE, an exact log and sub-window counters of
// CL.WINDOW, the leases of CL.ACQUIRE. Both after a clean stop (the final save) and after SIGKILL in
// durable mode (each change synced before its reply).
func TestEveryKindSurvivesARestart(t *testing.T) {
	for _, mode := range []struct {
		name string
		args []string
		sig  syscall.Signal
	}{
		{"SIGTERM", []string{"--flush-interval", "1h"}, syscall.SIGTERM},
		{"durable SIGKILL", []string{"--flush-interval", "0"}, syscall.SIGKILL},
	} {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			c := startChild(t, append([]string{"--dir", dir}, mode.args...)...)
			rdb := c.client(t)
			ctx := context.Background()
			do := func(args ...any) []int64 {
				t.Helper()
				r, err := rdb.Do(ctx, args...).Int64Slice()
				require.NoError(t, err, "%v", args)
				return r
			}
			// One-hour periods and windows: the replies do not move while
			// the test runs.
			do("CL.THROTTLE", "tat", 9, 1, 3600, 3)
			do("GCRA", "tat", 9, 1, 3600)
			do("CL.RESERVE", "tat", 9, 1, 3600, 2)
			do("CL.WINDOW", "log", 10, 3600, 4)
			do("CL.WINDOW", "log", 10, 3600, 2)
			do("CL.WINDOW", "counters", 10, 3600, 3, "PRECISION", 60)
			acquire := func(token string) int64 {
				t.Helper()
				r, err := rdb.Do(ctx, "CL.ACQUIRE", "leases", 2, 3600_000, "TOKEN", token).Slice()
				require.NoError(t, err)
				return r[0].(int64)
			}
			require.Equal(t, int64(0), acquire("a"))
			require.Equal(t, int64(0), acquire("b"))
			tat, err := rdb.Get(ctx, "tat").Result()
			require.NoError(t, err)
			if err := c.Stop(mode.sig); mode.sig == syscall.SIGTERM {
				require.NoError(t, err)
			}

			c = startChild(t, "--dir", dir)
			rdb = c.client(t)
			require.Contains(t, c.Log(), "keys=4")
			got, err := rdb.Get(ctx, "tat").Result()
			require.NoError(t, err)
			require.Equal(t, tat, got, "the TAT, to the nanosecond")
			require.Equal(t, int64(10-3-1-2), do("CL.THROTTLE", "tat", 9, 1, 3600, 0)[2])
			require.Equal(t, int64(10-4-2), do("CL.WINDOW", "log", 10, 3600, 0)[2])
			require.Equal(t, int64(10-3), do("CL.WINDOW", "counters", 10, 3600, 0, "PRECISION", 60)[2])
			// The leases held: both tokens, the limit full.
			held, err := rdb.Do(ctx, "CL.LEASES", "leases").Slice()
			require.NoError(t, err)
			require.Len(t, held, 2)
			require.Equal(t, "a", held[0].([]any)[0])
			require.Equal(t, "b", held[1].([]any)[0])
			require.Equal(t, int64(1), acquire("c"))
			for key, typ := range map[string]string{"tat": "string", "log": "window", "counters": "window", "leases": "leases"} {
				require.Equal(t, typ, rdb.Type(ctx, key).Val(), key)
			}
		})
	}
}
