package server

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
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
	require.Contains(t, tc.do("INFO", "memory"), "redcell_top_memory:")
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
// 10,000 keys that are all limited, taken in turn: the sketch's worst case
// (package top), where every decision is limited on a key its shard's
// sketch is unlikely to hold, so each one looks for it and takes a slot.
func BenchmarkThrottleHandlerLimitedManyKeys(b *testing.B) {
	var now atomic.Int64
	now.Store(t0.UnixNano())
	tc := newTestClient(b, Config{Now: func() time.Time { return time.Unix(0, now.Add(1000)) }})
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%d", i)
		tc.do("CL.THROTTLE", string(keys[i]), "0", "1", "3600")
	}
	cmd := argv("CL.THROTTLE", "", "0", "1", "3600")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		cmd[1] = keys[i%len(keys)]
		i++
		tc.srv.handle(tc.conn, redconCommand(cmd))
		tc.conn.SetBuffer(nil)
	}
	require.True(b, strings.HasPrefix(tc.do("CL.THROTTLE", "user:1", "0", "1", "3600"), "*5\r\n:1\r\n"), "still limited")
}
