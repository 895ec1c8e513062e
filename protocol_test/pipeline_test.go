package protocol_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// 10,000 CL.THROTTLE commands in one write on one connection: every reply
// comes back, in order, and exactly the burst is allowed.
func TestDeepPipelineRaw(t *testing.T) {
	const n = 10_000
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	cmd := testkit.Command("CL.THROTTLE", "k", "99", "100", "3600") // limit 100, one per 36 s
	payload := strings.Repeat(cmd, n)

	wrote := make(chan error, 1)
	go func() { // write while reading, so neither side's buffers fill up
		_, err := c.Conn.Write([]byte(payload))
		wrote <- err
	}()
	allowed := 0
	for i := 0; i < n; i++ {
		want := testkit.Ints(1, 100, 0, 36, 3600)
		if i < 100 {
			want = testkit.Ints(0, 100, int64(99-i), -1, int64(i+1)*36)
		}
		got := c.Read()
		if got != want {
			t.Fatalf("reply %d = %q want %q", i, got, want)
		}
		if i < 100 {
			allowed++
		}
	}
	require.NoError(t, <-wrote)
	require.Equal(t, 100, allowed)
	require.Equal(t, testkit.Simple("PONG"), c.Do("PING"), "the connection is in step after the pipeline")
}

// A long go-redis pipeline mixing every kind of reply.
func TestDeepPipelineGoRedisMixed(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := harness.StartServer(t)
			rdb := ts.GoRedis(t, func(o *redis.Options) { o.Protocol = proto })
			pipe := rdb.Pipeline()
			const rounds = 1000
			var throttles []*redis.Cmd
			var pings []*redis.StatusCmd
			var exists []*redis.IntCmd
			var errs []*redis.Cmd
			for i := 0; i < rounds; i++ {
				key := fmt.Sprintf("k%d", i%10)
				// limit 50 a minute: ei = 1.2 s, dvt = 60 s.
				throttles = append(throttles, pipe.Do(harness.Ctx(t), "CL.THROTTLE", key, 49, 50, 60))
				pings = append(pings, pipe.Ping(harness.Ctx(t)))
				exists = append(exists, pipe.Exists(harness.Ctx(t), key))
				errs = append(errs, pipe.Do(harness.Ctx(t), "CL.THROTTLE", key, -1, 50, 60))
			}
			_, err := pipe.Exec(harness.Ctx(t))
			require.EqualError(t, err, errNegativeBurst, "Exec reports the first error")
			for i := 0; i < rounds; i++ {
				nth := int64(i/10) + 1 // this call's number on its key
				// Allowed: the TAT is nth * 1.2 s ahead, in whole seconds
				// rounded up. Limited: the TAT is 60 s ahead and the next
				// slot opens in 1.2 s, reported as 2.
				want := []int64{1, 50, 0, 2, 60}
				if nth <= 50 {
					want = []int64{0, 50, 50 - nth, -1, (nth*1200 + 999) / 1000}
				}
				got, err := throttles[i].Int64Slice()
				require.NoError(t, err, "command %d", i)
				require.Equal(t, want, got, "CL.THROTTLE %d (call %d on its key)", i, nth)
				require.Equal(t, "PONG", pings[i].Val())
				require.Equal(t, int64(1), exists[i].Val())
				require.EqualError(t, errs[i].Err(), errNegativeBurst)
			}
		})
	}
}

// Many connections pipelining on one key at once never grant more than the
// burst, whatever the interleaving.
func TestConcurrentPipelinesOnOneKey(t *testing.T) {
	ts := harness.StartServer(t)
	const conns, each = 8, 100
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for g := 0; g < conns; g++ {
		rdb := ts.GoRedis(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			pipe := rdb.Pipeline()
			cmds := make([]*redis.Cmd, each)
			for i := range cmds {
				cmds[i] = pipe.Do(harness.Ctx(t), "CL.THROTTLE", "hot", 99, 100, 3600)
			}
			if _, err := pipe.Exec(harness.Ctx(t)); err != nil {
				t.Error(err)
				return
			}
			for _, c := range cmds {
				got, err := c.Int64Slice()
				if err != nil || len(got) != 5 {
					t.Errorf("reply %v, %v", got, err)
					return
				}
				if got[0] == 0 {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 100, allowed)
	rdb := ts.GoRedis(t)
	got, err := rdb.Do(harness.Ctx(t), "CL.THROTTLE", "hot", 99, 100, 3600, 0).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 100, 0, -1, 3600}, got, "the TAT is exactly 100 emission intervals ahead")
}
