package protocol_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// The other limiters (docs/commands.md, "The other limiters"), as their users' clients
// send them.

// rueidis has a builder for Redis's GCRA command; redcell answers it,
// sub-second period and TOKENS included.
func TestGCRAWithRueidisBuilder(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Rueidis(t)
	gcra := func(tokens int64) []int64 {
		cmd := c.B().Gcra().Key("api:7").MaxBurst(9).TokensPerPeriod(5).Period(0.5)
		var built rueidis.Completed
		if tokens > 0 {
			built = cmd.Count(tokens).Build()
		} else {
			built = cmd.Build()
		}
		v, err := c.Do(harness.Ctx(t), built).AsIntSlice()
		require.NoError(t, err)
		return v
	}
	require.Equal(t, []int64{0, 10, 9, -1, 1}, gcra(0))
	require.Equal(t, []int64{0, 10, 0, -1, 1}, gcra(9))
	require.Equal(t, []int64{1, 10, 0, 1, 1}, gcra(0))
	ts.Clock.Advance(100 * time.Millisecond) // one emission interval
	require.Equal(t, []int64{0, 10, 0, -1, 1}, gcra(0))
	err := c.Do(harness.Ctx(t), c.B().Gcra().Key("api:7").MaxBurst(9).TokensPerPeriod(5).Period(0).Build()).Error()
	require.EqualError(t, err, "period must be > 0 and < 1e12", "rueidis drops the ERR prefix")
}

// CL.WINDOW and CL.RESERVE through go-redis: the exact log's edge, the
// fixed window, a queue that shapes; WRONGTYPE across kinds.
func TestWindowAndReserveWithGoRedis(t *testing.T) {
	ts := harness.StartServer(t)
	rdb := ts.GoRedis(t)
	do := func(args ...any) []int64 {
		t.Helper()
		v, err := rdb.Do(harness.Ctx(t), args...).Int64Slice()
		require.NoError(t, err, "%v", args)
		return v
	}
	require.Equal(t, []int64{0, 3, 2, -1, 60}, do("CL.WINDOW", "signup:ip:203.0.113.7", 3, 60))
	require.Equal(t, []int64{0, 3, 0, -1, 60}, do("CL.WINDOW", "signup:ip:203.0.113.7", 3, 60, 2))
	require.Equal(t, []int64{1, 3, 0, 60, 60}, do("CL.WINDOW", "signup:ip:203.0.113.7", 3, 60))
	ts.Clock.Advance(60 * time.Second)
	require.Equal(t, []int64{0, 3, 2, -1, 60}, do("CL.WINDOW", "signup:ip:203.0.113.7", 3, 60), "every entry left at once")
	require.Equal(t, "window", rdb.Type(harness.Ctx(t), "signup:ip:203.0.113.7").Val())

	require.Equal(t, []int64{0, 1000, 999, -1, 60}, do("CL.WINDOW", "hits:tenant:42", 1000, 60, "PRECISION", 1), "t0 is a minute's start")

	require.Equal(t, []int64{0, 1, 0, 0, 100}, do("CL.RESERVE", "webhook:acme", 0, 10, 1, 1, "MAXWAIT", 1000))
	require.Equal(t, []int64{0, 1, 0, 100, 200}, do("CL.RESERVE", "webhook:acme", 0, 10, 1, 1, "MAXWAIT", 1000))
	require.Equal(t, []int64{1, 1, 0, 200, 200}, do("CL.RESERVE", "webhook:acme", 0, 10, 1, 1, "MAXWAIT", 150))

	err := rdb.Do(harness.Ctx(t), "CL.THROTTLE", "hits:tenant:42", 1, 1, 1).Err()
	require.EqualError(t, err, "WRONGTYPE Operation against a key holding the wrong kind of value")
	err = rdb.Do(harness.Ctx(t), "CL.WINDOW", "webhook:acme", 1, 1).Err()
	require.EqualError(t, err, "WRONGTYPE Operation against a key holding the wrong kind of value")
}

// The new commands have COMMAND metadata (key at 1, so cluster clients
// route them), INFO commandstats and latencystats, and errorstats count
// their WRONGTYPE.
func TestLimitersInCommandAndInfo(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	for _, name := range []string{"gcra", "cl.reserve", "cl.window"} {
		info := c.Do("COMMAND", "INFO", name)
		require.True(t, strings.HasPrefix(info, "*1\r\n*10\r\n$"+itoa(int64(len(name)))+"\r\n"+name+"\r\n"), "%s: %q", name, info)
		require.Contains(t, info, ":1\r\n:1\r\n:1\r\n", "%s: first key 1, last key 1, step 1", name)
	}
	require.Equal(t, "*1\r\n$1\r\nk\r\n", c.Do("COMMAND", "GETKEYS", "CL.WINDOW", "k", "1", "1"))
	require.Equal(t, "*1\r\n$1\r\nk\r\n", c.Do("COMMAND", "GETKEYS", "GCRA", "k", "1", "1", "0.5"))

	require.Equal(t, testkit.Ints(0, 2, 1, -1, 1), c.Do("GCRA", "g", "1", "1", "1"))
	require.Equal(t, testkit.Ints(0, 2, 1, 0, 1000), c.Do("CL.RESERVE", "r", "1", "1", "1"))
	require.Equal(t, testkit.Ints(0, 2, 1, -1, 1), c.Do("CL.WINDOW", "w", "2", "1"))
	require.Equal(t, testkit.Err("WRONGTYPE Operation against a key holding the wrong kind of value"), c.Do("GCRA", "w", "1", "1", "1"))

	everything := parseInfo(t, bulkBody(t, c.Do("INFO", "everything")))
	commandstats := sectionFields(everything, "Commandstats")
	require.Equal(t, "calls=2,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=1", commandstats["cmdstat_gcra"])
	require.Equal(t, "calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0", commandstats["cmdstat_cl.reserve"])
	require.Equal(t, "calls=1,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0", commandstats["cmdstat_cl.window"])
	latency := sectionFields(everything, "Latencystats")
	for _, name := range []string{"gcra", "cl.reserve", "cl.window"} {
		require.Contains(t, latency, "latency_percentiles_usec_"+name)
	}
	require.Equal(t, "count=1", sectionFields(everything, "Errorstats")["errorstat_WRONGTYPE"])
}

// The README's redis-cli sessions, on the manual clock at t0.
func TestLimitersWithRedisCLI(t *testing.T) {
	harness.RedisCLI(t)
	ts := harness.StartServer(t)
	for _, s := range []struct {
		stdin string
		want  [][5]int64
	}{
		{"GCRA api:7 9 5 0.5\nGCRA api:7 9 5 0.5 TOKENS 9\nGCRA api:7 9 5 0.5\n",
			[][5]int64{{0, 10, 9, -1, 1}, {0, 10, 0, -1, 1}, {1, 10, 0, 1, 1}}},
		{"CL.WINDOW signup:ip:203.0.113.7 3 60\nCL.WINDOW signup:ip:203.0.113.7 3 60 2\nCL.WINDOW signup:ip:203.0.113.7 3 60\n",
			[][5]int64{{0, 3, 2, -1, 60}, {0, 3, 0, -1, 60}, {1, 3, 0, 60, 60}}},
		{"CL.WINDOW hits:tenant:42 1000 60 PRECISION 1\n", [][5]int64{{0, 1000, 999, -1, 60}}},
		{"CL.RESERVE webhook:acme 0 10 1 1 MAXWAIT 1000\nCL.RESERVE webhook:acme 0 10 1 1 MAXWAIT 1000\nCL.RESERVE webhook:acme 0 10 1 1 MAXWAIT 150\n",
			[][5]int64{{0, 1, 0, 0, 100}, {0, 1, 0, 100, 200}, {1, 1, 0, 200, 200}}},
	} {
		var want strings.Builder
		for _, w := range s.want {
			want.WriteString(cliInts(w))
		}
		require.Equal(t, want.String(), harness.CLI(t, ts.Port, s.stdin), "%q", s.stdin)
	}
}
