package protocol_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// luaSequences are calls, each sequence on a fresh key: CL.THROTTLE key
// args... on redcell, EVALSHA of bench/gcra.lua on Redis. They are calls whose replies do not depend on sub-second timing:
// redcell's clock stands still, Redis's runs, and every emission interval is
// a whole number of seconds (period 3600), so the few milliseconds between
// the first and last call of a sequence on Redis cannot change an integer of
// any reply (each would need the sequence to take most of a second).
var luaSequences = []struct {
	name  string
	steps [][]string
}{
	{"fresh key, default quantity", [][]string{{"15", "30", "3600"}}},
	{"burst of 5 then limited", [][]string{
		{"4", "1", "3600"}, {"4", "1", "3600"}, {"4", "1", "3600"}, {"4", "1", "3600"},
		{"4", "1", "3600"}, {"4", "1", "3600"}, {"4", "1", "3600", "1"},
	}},
	{"ei of one second, quantities", [][]string{
		{"9", "3600", "3600", "3"}, {"9", "3600", "3600", "0"}, {"9", "3600", "3600", "6"},
		{"9", "3600", "3600", "2"}, {"9", "3600", "3600", "1"}, {"9", "3600", "3600", "0"},
	}},
	{"peek on a fresh key, then a call, then peeks", [][]string{
		{"2", "4", "3600", "0"}, {"2", "4", "3600", "0"}, {"2", "4", "3600", "1"}, {"2", "4", "3600", "0"},
	}},
	{"quantity above the limit on a fresh key", [][]string{{"4", "10", "3600", "6"}, {"4", "10", "3600", "100"}}},
	{"quantity above the limit on a used key", [][]string{
		{"4", "10", "3600", "2"}, {"4", "10", "3600", "6"}, {"4", "10", "3600", "5"}, {"4", "10", "3600", "3"},
	}},
	{"quantity exactly the limit", [][]string{{"3", "2", "3600", "4"}, {"3", "2", "3600", "1"}, {"3", "2", "3600", "0"}}},
	{"no burst", [][]string{{"0", "1", "3600"}, {"0", "1", "3600"}, {"0", "1", "3600", "0"}}},
	{"large burst", [][]string{{"999", "60", "3600", "500"}, {"999", "60", "3600", "499"}, {"999", "60", "3600", "2"}}},
	{"rate defined by count/period only", [][]string{{"5", "2", "7200"}, {"5", "1", "3600"}, {"5", "4", "14400", "2"}}},
}

// bench/gcra.lua, run by a real redis-server, answers as redcell does for
// replies that do not depend on sub-second timing, byte for byte; it
// validates its arguments with the same error texts, stores a string key
// holding the TAT in nanoseconds with an expiry, and a peek creates no key.
// Needs redis-server.
func TestBenchLuaPeerMatchesRedcell(t *testing.T) {
	script, err := os.ReadFile("../bench/gcra.lua")
	require.NoError(t, err)
	peer := harness.StartRedisServer(t).Raw(t)
	loaded := peer.Do("SCRIPT", "LOAD", string(script))
	require.True(t, strings.HasPrefix(loaded, "$40\r\n"), "SCRIPT LOAD: %q", loaded)
	sha := loaded[5:45]
	eval := func(key string, args ...string) string {
		return peer.Do(append([]string{"EVALSHA", sha, "1", key}, args...)...)
	}

	ts := harness.StartServer(t)
	rc := ts.Raw(t)

	for i, seq := range luaSequences {
		// A stalled machine could stretch a sequence on Redis by most of a
		// second and move a rounding: then it is run again on fresh keys,
		// so the comparison never depends on timing.
		var got, want []string
		for try := 0; ; try++ {
			key := fmt.Sprintf("seq%d.%d", i, try)
			got, want = nil, nil
			start := time.Now()
			for _, args := range seq.steps {
				got = append(got, eval(key, args...))
			}
			if time.Since(start) < 500*time.Millisecond {
				for _, args := range seq.steps {
					want = append(want, rc.Do(append([]string{"CL.THROTTLE", key}, args...)...))
				}
				break
			}
			require.Less(t, try, 3, "%s: every try took over 500ms on Redis", seq.name)
		}
		for j := range seq.steps {
			require.Equal(t, want[j], got[j], "%s, step %d: EVALSHA gcra.lua %v = %q, redcell %q",
				seq.name, j, seq.steps[j], got[j], want[j])
		}
	}

	// What the script stores: a string, the TAT in nanoseconds, expiring when
	// it passes (period 3600, one call: about an hour ahead).
	before := time.Now()
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 3600), eval("stored", "4", "1", "3600"))
	require.Equal(t, testkit.Simple("string"), peer.Do("TYPE", "stored"))
	value := peer.Do("GET", "stored")
	require.Regexp(t, `^\$19\r\n\d{16}000\r\n$`, value, "nanoseconds, from whole microseconds")
	tat, err := strconv.ParseInt(value[5:24], 10, 64)
	require.NoError(t, err)
	require.InDelta(t, before.Add(time.Hour).UnixNano(), tat, float64(5*time.Second), "TAT about an hour ahead")
	pttl, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(peer.Do("PTTL", "stored"), ":"), "\r\n"), 10, 64)
	require.NoError(t, err)
	require.InDelta(t, time.Hour.Milliseconds(), pttl, 5000, "the key expires with its TAT")
	// A peek never creates a key, on either side.
	require.Equal(t, testkit.Ints(0, 3, 3, -1, 0), eval("peeked", "2", "1", "3600", "0"))
	require.Equal(t, testkit.Ints(0, 3, 3, -1, 0), rc.Do("CL.THROTTLE", "peeked", "2", "1", "3600", "0"))
	require.Equal(t, testkit.Int(0), peer.Do("EXISTS", "peeked"))
	require.Equal(t, testkit.Int(0), rc.Do("EXISTS", "peeked"))

	// Invalid arguments get redcell's error texts.
	for _, args := range [][]string{
		{"x", "1", "1"},
		{"1", "x", "1"},
		{"1", "1", "1.5"},
		{"1", "1", "1", "+1"},
		{"-1", "1", "1"},
		{"1", "-1", "1"},
		{"1", "1", "-1"},
		{"1", "1", "1", "-1"},
		{"1", "0", "1"},
		{"1", "1", "0"},
		{"1", "1"},
		{"1", "1", "1", "1", "1"},
	} {
		require.Equal(t, rc.Do(append([]string{"CL.THROTTLE", "bad"}, args...)...), eval("bad", args...), "arguments %v", args)
	}
}
