package server

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// GCRA on a manual clock: Redis's own cases, sub-second and fractional
// periods, TOKENS above the burst.
func TestGCRA(t *testing.T) {
	const ms = time.Millisecond
	runSteps(t, Config{}, []testkit.Step{
		// Redis's tests: the limit is max_burst+1, TOKENS spends several.
		{Args: []string{"GCRA", "a", "10", "5", "60"}, Want: testkit.Ints(0, 11, 10, -1, 12)},
		{Args: []string{"GCRA", "b", "5", "1", "60", "TOKENS", "3"}, Want: testkit.Ints(0, 6, 3, -1, 180)},
		{Args: []string{"gcra", "b", "5", "1", "60", "tokens", "3"}, Want: testkit.Ints(0, 6, 0, -1, 360)},
		{Args: []string{"GCRA", "b", "5", "1", "60"}, Want: testkit.Ints(1, 6, 0, 60, 360)},

		// period 0.5: two at once, then one every half second, and both
		// durations rounded up to a second.
		{Args: []string{"GCRA", "h", "1", "1", "0.5"}, Want: testkit.Ints(0, 2, 1, -1, 1)},
		{Args: []string{"GCRA", "h", "1", "1", "0.5"}, Want: testkit.Ints(0, 2, 0, -1, 1)},
		{Args: []string{"GCRA", "h", "1", "1", "0.5"}, Want: testkit.Ints(1, 2, 0, 1, 1)},
		{At: 499 * ms, Args: []string{"GCRA", "h", "1", "1", "0.5"}, Want: testkit.Ints(1, 2, 0, 1, 1)},
		{At: 500 * ms, Args: []string{"GCRA", "h", "1", "1", "0.5"}, Want: testkit.Ints(0, 2, 0, -1, 1)},

		// 3 per 0.25 s: ei = 83333333.3 ns, rounded to 83333333 ns.
		{Args: []string{"GCRA", "f", "2", "3", "0.25"}, Want: testkit.Ints(0, 3, 2, -1, 1)},
		{Args: []string{"GCRA", "f", "2", "3", "0.25"}, Want: testkit.Ints(0, 3, 1, -1, 1)},
		{Args: []string{"GCRA", "f", "2", "3", "0.25"}, Want: testkit.Ints(0, 3, 0, -1, 1)},
		{Args: []string{"GCRA", "f", "2", "3", "0.25"}, Want: testkit.Ints(1, 3, 0, 1, 1)},
		{At: 83333332, Args: []string{"GCRA", "f", "2", "3", "0.25"}, Want: testkit.Ints(1, 3, 0, 1, 1)},
		{At: 83333333, Args: []string{"GCRA", "f", "2", "3", "0.25"}, Want: testkit.Ints(0, 3, 0, -1, 1)},

		// More TOKENS than the burst: limited, and never to be retried.
		{Args: []string{"GCRA", "z", "1", "1", "1", "TOKENS", "3"}, Want: testkit.Ints(1, 2, 2, -1, 0)},
		{Args: []string{"EXISTS", "z"}, Want: ":0\r\n"},
	})
}

// GCRA and CL.THROTTLE keep one TAT: on one key they spend one budget, and
// give the same answer where their roundings agree.
func TestGCRAMixesWithThrottle(t *testing.T) {
	tc := runSteps(t, Config{}, []testkit.Step{
		{Args: []string{"CL.THROTTLE", "m", "4", "1", "1"}, Want: testkit.Ints(0, 5, 4, -1, 1)},
		{Args: []string{"CL.THROTTLE", "m", "4", "1", "1"}, Want: testkit.Ints(0, 5, 3, -1, 2)},
		{Args: []string{"GCRA", "m", "4", "1", "1"}, Want: testkit.Ints(0, 5, 2, -1, 3)},
		{Args: []string{"CL.THROTTLE", "m", "4", "1", "1"}, Want: testkit.Ints(0, 5, 1, -1, 4)},
		{At: 500 * time.Millisecond, Args: []string{"GCRA", "m", "4", "1", "1", "TOKENS", "2"}, Want: testkit.Ints(1, 5, 1, 1, 4)},
		{At: 500 * time.Millisecond, Args: []string{"CL.THROTTLE", "m", "4", "1", "1", "2"}, Want: testkit.Ints(1, 5, 1, 1, 4)},
		{At: 500 * time.Millisecond, Args: []string{"GET", "m"}, Want: testkit.Bulk(strconv.FormatInt(t0.Add(4*time.Second).UnixNano(), 10))},
		{At: 500 * time.Millisecond, Args: []string{"TYPE", "m"}, Want: "+string\r\n"},
		// A period CL.THROTTLE cannot say: 4 per 1.5 s on the same key.
		{At: 2500 * time.Millisecond, Args: []string{"GCRA", "m", "4", "4", "1.5"}, Want: testkit.Ints(0, 5, 0, -1, 2)},
	})
	c := tc.srv.counters()
	require.Equal(t, [2]int64{3, 1}, c.decided[decideThrottle], "CL.THROTTLE allowed, limited")
	require.Equal(t, [2]int64{2, 1}, c.decided[decideGCRA], "GCRA allowed, limited")
}

// GCRA's argument checks, in Redis's order and words; none spends a token.
func TestGCRAErrors(t *testing.T) {
	e := func(text string) string { return "-" + text + "\r\n" }
	runSteps(t, Config{}, []testkit.Step{
		{Args: []string{"GCRA", "k", "1", "1"}, Want: e("ERR wrong number of arguments for 'gcra' command")},
		{Args: []string{"GCRA", "k", "1", "1", "1", "TOKENS", "1", "x"}, Want: e("ERR wrong number of arguments for 'gcra' command")},
		{Args: []string{"GCRA", "k", "-1", "1", "1"}, Want: e("ERR value is out of range, must be positive")},
		{Args: []string{"GCRA", "k", "x", "1", "1"}, Want: e("ERR value is out of range, must be positive")},
		{Args: []string{"GCRA", "k", "1", "0", "1"}, Want: e("ERR value is out of range, value must between 1 and 9223372036854775807")},
		{Args: []string{"GCRA", "k", "1", "-1", "1"}, Want: e("ERR value is out of range, value must between 1 and 9223372036854775807")},
		{Args: []string{"GCRA", "k", "1", "x", "1"}, Want: e("ERR value is not an integer or out of range")},
		{Args: []string{"GCRA", "k", "1", "1", "0"}, Want: e("ERR period must be > 0 and < 1e12")},
		{Args: []string{"GCRA", "k", "1", "1", "-1"}, Want: e("ERR period must be > 0 and < 1e12")},
		{Args: []string{"GCRA", "k", "1", "1", "1e12"}, Want: e("ERR period must be > 0 and < 1e12")},
		{Args: []string{"GCRA", "k", "1", "1", "inf"}, Want: e("ERR period must be > 0 and < 1e12")},
		{Args: []string{"GCRA", "k", "1", "1", "nan"}, Want: e("ERR value is not a valid float")},
		{Args: []string{"GCRA", "k", "1", "1", "x"}, Want: e("ERR value is not a valid float")},
		{Args: []string{"GCRA", "k", "1", "1", "1e-400"}, Want: e("ERR value is not a valid float")},
		{Args: []string{"GCRA", "k", "1", "1", "1", "COUNT", "1"}, Want: e("ERR syntax error")},
		{Args: []string{"GCRA", "k", "1", "1", "1", "TOKENS"}, Want: e("ERR Missing TOKENS value")},
		{Args: []string{"GCRA", "k", "1", "1", "1", "TOKENS", "0"}, Want: e("ERR value is out of range, value must between 1 and 9223372036854775807")},
		{Args: []string{"GCRA", "k", "1", "1", "1", "TOKENS", "x"}, Want: e("ERR value is not an integer or out of range")},
		// Redis's overflow cases.
		{Args: []string{"GCRA", "k", "1", "1", "86400", "TOKENS", "200000000"}, Want: e(errGCRAOverflowTokens.text)},
		{Args: []string{"GCRA", "k", "200000000", "1", "86400"}, Want: e(errGCRAOverflowBurst.text)},
		{Args: []string{"GCRA", "k", "1", "1", "2147483647", "TOKENS", "2147483647"}, Want: e(errGCRAOverflowTokens.text)},
		{Args: []string{"EXISTS", "k"}, Want: ":0\r\n"},
		// A window key: WRONGTYPE, before the overflow, as Redis checks.
		{Args: []string{"CL.WINDOW", "w", "5", "60"}, Want: testkit.Ints(0, 5, 4, -1, 60)},
		{Args: []string{"GCRA", "w", "1", "1", "1"}, Want: e(errWrongType.text)},
		{Args: []string{"GCRA", "w", "200000000", "1", "86400"}, Want: e(errWrongType.text)},
		{Args: []string{"GCRA", "k", "1", "1", "1"}, Want: testkit.Ints(0, 2, 1, -1, 1)},
	})
}
