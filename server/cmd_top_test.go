package server

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
	"github.com/redcell/redcell/storage"
	"github.com/redcell/redcell/top"
)

// topEntry is one of CL.TOP's entries on the wire.
func topEntry(key string, limited, allowed int64) string {
	return "*3\r\n" + testkit.Bulk(key) + testkit.Int(limited) + testkit.Int(allowed)
}

// CL.TOP over every limiter of the RESP front, on a manual clock: most
// limited first, allowed counted for the keys tracked, COUNT, and a key
// not limited for two generations gone.
func TestTopListsTheMostLimitedKeys(t *testing.T) {
	var now time.Time
	now = t0
	tc := newTestClient(t, Config{Now: func() time.Time { return now }})
	for range 5 {
		tc.do("CL.THROTTLE", "api:a", "0", "1", "3600") // 1 allowed, then limited
	}
	for range 3 {
		tc.do("CL.WINDOW", "win:b", "1", "60")
	}
	tc.do("CL.ACQUIRE", "db:c", "0", "1000")
	tc.do("CL.RESERVE", "q:d", "0", "1", "3600")
	tc.do("CL.RESERVE", "q:d", "0", "1", "3600")
	tc.do("CL.THROTTLE", "fine", "100", "1", "1")
	require.Equal(t, "*4\r\n"+topEntry("api:a", 4, 0)+topEntry("win:b", 2, 0)+topEntry("db:c", 1, 0)+topEntry("q:d", 1, 0),
		tc.do("CL.TOP"))
	require.Equal(t, "*1\r\n"+topEntry("api:a", 4, 0), tc.do("CL.TOP", "COUNT", "1"))
	require.Equal(t, "*0\r\n", tc.do("CL.TOP", "count", "0"))
	require.Equal(t, errReply(errNotInteger), tc.do("CL.TOP", "COUNT", "x"))
	require.Equal(t, errReply(errGCRABurst), tc.do("CL.TOP", "COUNT", "-1"))
	require.Equal(t, errReply(errSyntax), tc.do("CL.TOP", "LIMIT", "1"))

	// Reset, api:a is allowed: counted, as it is tracked.
	now = t0.Add(20 * time.Second)
	tc.do("DEL", "api:a")
	tc.do("CL.THROTTLE", "api:a", "0", "1", "1")
	require.Equal(t, topEntry("api:a", 4, 1), tc.do("CL.TOP", "COUNT", "1")[4:])

	now = t0.Add(2 * time.Minute)
	require.Equal(t, "*0\r\n", tc.do("CL.TOP"), "nothing limited for two generations")
	require.Contains(t, tc.do("INFO", "memory"), "\r\nredcell_top_memory:"+strconv.Itoa(storage.Config{}.EffectiveShards()*top.Size)+"\r\n",
		"a sketch a shard, fixed")
}

// CL.TOP is this node's view: a replica answers it (it is no write), and
// the decisions its master made, replicated as states, are not in it.
func TestTopOnAReplicaIsItsOwn(t *testing.T) {
	m, r := startReplNode(t), startReplNode(t)
	require.Equal(t, "OK", r.do(t, "REPLICAOF", "127.0.0.1", m.port))
	require.Eventually(t, func() bool { return r.info(t, "master_link_status") == "up" }, 10*time.Second, 10*time.Millisecond)
	for range 3 {
		m.do(t, "CL.THROTTLE", "k", 0, 1, 3600)
	}
	require.Eventually(t, func() bool { return sameKeys(t, m, r, []string{"k"}) == nil }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []any{[]any{"k", int64(2), int64(0)}}, m.do(t, "CL.TOP"))
	require.Equal(t, []any{}, r.do(t, "CL.TOP"))
}

// CL.TOP inside MULTI/EXEC beside a write, whose shard EXEC holds: answered
// (it read every shard while EXEC held one, and waited for ever: the
// sequence fuzzer's finding).
func TestTopInsideATransaction(t *testing.T) {
	tc := newTestClient(t, Config{})
	tc.do("CL.THROTTLE", "k", "0", "1", "3600")
	tc.do("CL.THROTTLE", "k", "0", "1", "3600")
	require.Equal(t, "+OK\r\n", tc.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", tc.do("DEL", "other"))
	require.Equal(t, "+QUEUED\r\n", tc.do("CL.TOP"))
	require.Equal(t, "*2\r\n:0\r\n*1\r\n"+topEntry("k", 1, 0), tc.do("EXEC"))
}

// BenchmarkThrottleHandlerLimitedManyKeys is BenchmarkThrottleHandler over
// 10,000 keys that are all limited, taken in turn: the sketches' worst case
// (package top), every decision limited on a key its shard's sketch does
// not hold.
func BenchmarkThrottleHandlerLimitedManyKeys(b *testing.B) { benchThrottleManyKeys(b, true) }

// BenchmarkThrottleHandlerAllowedManyKeys is the same keys all allowed,
// every shard's sketch full of other keys limited: what an allowed
// decision on a key not tracked pays.
func BenchmarkThrottleHandlerAllowedManyKeys(b *testing.B) { benchThrottleManyKeys(b, false) }

func benchThrottleManyKeys(b *testing.B, limited bool) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	tc := newTestClient(b, Config{Now: func() time.Time { return time.Unix(0, now.Add(1000)) }})
	for i := range 5000 { // the sketches full: 5,000 keys limited
		tc.do("CL.THROTTLE", "other:"+strconv.Itoa(i), "0", "1", "3600")
		tc.do("CL.THROTTLE", "other:"+strconv.Itoa(i), "0", "1", "3600")
	}
	burst, count, period, want := "0", "1", "3600", "*5\r\n:1\r\n" // one an hour, spent
	if !limited {
		burst, count, period, want = "1000000", "1000000", "1", "*5\r\n:0\r\n" // a million a second
	}
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%d", i)
		tc.do("CL.THROTTLE", string(keys[i]), burst, count, period)
	}
	cmd := argv("CL.THROTTLE", "", burst, count, period)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		cmd[1] = keys[i%len(keys)]
		i++
		tc.srv.handle(tc.conn, redconCommand(cmd))
		tc.conn.SetBuffer(nil)
	}
	require.True(b, strings.HasPrefix(tc.do("CL.THROTTLE", "user:1", burst, count, period), want))
}
