package server

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// GCRA on a manual clock: Redis's own cases, sub-second and fractional
// periods, TOKENS above the burst.
func TestGCRA(t *testing.T) {
	const ms = time.Millisecond
	runSteps(t, Config{}, []step{
		// Redis's tests: the limit is max_burst+1, TOKENS spends several.
		{0, []string{"GCRA", "a", "10", "5", "60"}, intsReply(0, 11, 10, -1, 12)},
		{0, []string{"GCRA", "b", "5", "1", "60", "TOKENS", "3"}, intsReply(0, 6, 3, -1, 180)},
		{0, []string{"gcra", "b", "5", "1", "60", "tokens", "3"}, intsReply(0, 6, 0, -1, 360)},
		{0, []string{"GCRA", "b", "5", "1", "60"}, intsReply(1, 6, 0, 60, 360)},

		// period 0.5: two at once, then one every half second, and both
		// durations rounded up to a second.
		{0, []string{"GCRA", "h", "1", "1", "0.5"}, intsReply(0, 2, 1, -1, 1)},
		{0, []string{"GCRA", "h", "1", "1", "0.5"}, intsReply(0, 2, 0, -1, 1)},
		{0, []string{"GCRA", "h", "1", "1", "0.5"}, intsReply(1, 2, 0, 1, 1)},
		{499 * ms, []string{"GCRA", "h", "1", "1", "0.5"}, intsReply(1, 2, 0, 1, 1)},
		{500 * ms, []string{"GCRA", "h", "1", "1", "0.5"}, intsReply(0, 2, 0, -1, 1)},

		// 3 per 0.25 s: ei = 83333333.3 ns, rounded to 83333333 ns.
		{0, []string{"GCRA", "f", "2", "3", "0.25"}, intsReply(0, 3, 2, -1, 1)},
		{0, []string{"GCRA", "f", "2", "3", "0.25"}, intsReply(0, 3, 1, -1, 1)},
		{0, []string{"GCRA", "f", "2", "3", "0.25"}, intsReply(0, 3, 0, -1, 1)},
		{0, []string{"GCRA", "f", "2", "3", "0.25"}, intsReply(1, 3, 0, 1, 1)},
		{83333332, []string{"GCRA", "f", "2", "3", "0.25"}, intsReply(1, 3, 0, 1, 1)},
		{83333333, []string{"GCRA", "f", "2", "3", "0.25"}, intsReply(0, 3, 0, -1, 1)},

		// More TOKENS than the burst: limited, and never to be retried.
		{0, []string{"GCRA", "z", "1", "1", "1", "TOKENS", "3"}, intsReply(1, 2, 2, -1, 0)},
		{0, []string{"EXISTS", "z"}, ":0\r\n"},
	})
}

// GCRA and CL.THROTTLE keep one TAT: on one key they spend one budget, and
// give the same answer where their roundings agree.
func TestGCRAMixesWithThrottle(t *testing.T) {
	tc := runSteps(t, Config{}, []step{
		{0, []string{"CL.THROTTLE", "m", "4", "1", "1"}, intsReply(0, 5, 4, -1, 1)},
		{0, []string{"CL.THROTTLE", "m", "4", "1", "1"}, intsReply(0, 5, 3, -1, 2)},
		{0, []string{"GCRA", "m", "4", "1", "1"}, intsReply(0, 5, 2, -1, 3)},
		{0, []string{"CL.THROTTLE", "m", "4", "1", "1"}, intsReply(0, 5, 1, -1, 4)},
		{500 * time.Millisecond, []string{"GCRA", "m", "4", "1", "1", "TOKENS", "2"}, intsReply(1, 5, 1, 1, 4)},
		{500 * time.Millisecond, []string{"CL.THROTTLE", "m", "4", "1", "1", "2"}, intsReply(1, 5, 1, 1, 4)},
		{500 * time.Millisecond, []string{"GET", "m"}, bulkReply(strconv.FormatInt(t0.Add(4*time.Second).UnixNano(), 10))},
		{500 * time.Millisecond, []string{"TYPE", "m"}, "+string\r\n"},
		// A period CL.THROTTLE cannot say: 4 per 1.5 s on the same key.
		{2500 * time.Millisecond, []string{"GCRA", "m", "4", "4", "1.5"}, intsReply(0, 5, 0, -1, 2)},
	})
	c := tc.srv.counters()
	require.Equal(t, [2]int64{3, 1}, c.decided[decideThrottle], "CL.THROTTLE allowed, limited")
	require.Equal(t, [2]int64{2, 1}, c.decided[decideGCRA], "GCRA allowed, limited")
}

// GCRA's argument checks, in Redis's order and words; none spends a token.
func TestGCRAErrors(t *testing.T) {
	e := func(text string) string { return "-" + text + "\r\n" }
	runSteps(t, Config{}, []step{
		{0, []string{"GCRA", "k", "1", "1"}, e("ERR wrong number of arguments for 'gcra' command")},
		{0, []string{"GCRA", "k", "1", "1", "1", "TOKENS", "1", "x"}, e("ERR wrong number of arguments for 'gcra' command")},
		{0, []string{"GCRA", "k", "-1", "1", "1"}, e("ERR value is out of range, must be positive")},
		{0, []string{"GCRA", "k", "x", "1", "1"}, e("ERR value is out of range, must be positive")},
		{0, []string{"GCRA", "k", "1", "0", "1"}, e("ERR value is out of range, value must between 1 and 9223372036854775807")},
		{0, []string{"GCRA", "k", "1", "-1", "1"}, e("ERR value is out of range, value must between 1 and 9223372036854775807")},
		{0, []string{"GCRA", "k", "1", "x", "1"}, e("ERR value is not an integer or out of range")},
		{0, []string{"GCRA", "k", "1", "1", "0"}, e("ERR period must be > 0 and < 1e12")},
		{0, []string{"GCRA", "k", "1", "1", "-1"}, e("ERR period must be > 0 and < 1e12")},
		{0, []string{"GCRA", "k", "1", "1", "1e12"}, e("ERR period must be > 0 and < 1e12")},
		{0, []string{"GCRA", "k", "1", "1", "inf"}, e("ERR period must be > 0 and < 1e12")},
		{0, []string{"GCRA", "k", "1", "1", "nan"}, e("ERR value is not a valid float")},
		{0, []string{"GCRA", "k", "1", "1", "x"}, e("ERR value is not a valid float")},
		{0, []string{"GCRA", "k", "1", "1", "1e-400"}, e("ERR value is not a valid float")},
		{0, []string{"GCRA", "k", "1", "1", "1", "COUNT", "1"}, e("ERR syntax error")},
		{0, []string{"GCRA", "k", "1", "1", "1", "TOKENS"}, e("ERR Missing TOKENS value")},
		{0, []string{"GCRA", "k", "1", "1", "1", "TOKENS", "0"}, e("ERR value is out of range, value must between 1 and 9223372036854775807")},
		{0, []string{"GCRA", "k", "1", "1", "1", "TOKENS", "x"}, e("ERR value is not an integer or out of range")},
		// Redis's overflow cases.
		{0, []string{"GCRA", "k", "1", "1", "86400", "TOKENS", "200000000"}, e(errGCRAOverflowTokens.text)},
		{0, []string{"GCRA", "k", "200000000", "1", "86400"}, e(errGCRAOverflowBurst.text)},
		{0, []string{"GCRA", "k", "1", "1", "2147483647", "TOKENS", "2147483647"}, e(errGCRAOverflowTokens.text)},
		{0, []string{"EXISTS", "k"}, ":0\r\n"},
		// A window key: WRONGTYPE, before the overflow, as Redis checks.
		{0, []string{"CL.WINDOW", "w", "5", "60"}, intsReply(0, 5, 4, -1, 60)},
		{0, []string{"GCRA", "w", "1", "1", "1"}, e(errWrongType.text)},
		{0, []string{"GCRA", "w", "200000000", "1", "86400"}, e(errWrongType.text)},
		{0, []string{"GCRA", "k", "1", "1", "1"}, intsReply(0, 2, 1, -1, 1)},
	})
}
