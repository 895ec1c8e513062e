package server

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// CL.RESERVE on a manual clock: MAXWAIT 0 decides as CL.THROTTLE, in
// milliseconds; a MAXWAIT queues calls behind the burst.
func TestReserve(t *testing.T) {
	runSteps(t, Config{}, []testkit.Step{
		{Args: []string{"CL.RESERVE", "r", "4", "1", "1"}, Want: testkit.Ints(0, 5, 4, 0, 1000)},
		{Args: []string{"CL.RESERVE", "r", "4", "1", "1", "3"}, Want: testkit.Ints(0, 5, 1, 0, 4000)},
		{Args: []string{"cl.reserve", "r", "4", "1", "1"}, Want: testkit.Ints(0, 5, 0, 0, 5000)},
		{Args: []string{"CL.RESERVE", "r", "4", "1", "1"}, Want: testkit.Ints(1, 5, 0, 1000, 5000)},
		{Args: []string{"CL.THROTTLE", "r", "4", "1", "1"}, Want: testkit.Ints(1, 5, 0, 1, 5)},
		// With a MAXWAIT, the sixth call is queued one emission interval on,
		// the seventh two; the eighth would wait past it.
		{Args: []string{"CL.RESERVE", "r", "4", "1", "1", "MAXWAIT", "2000"}, Want: testkit.Ints(0, 5, 0, 1000, 6000)},
		{Args: []string{"CL.RESERVE", "r", "4", "1", "1", "1", "maxwait", "2000"}, Want: testkit.Ints(0, 5, 0, 2000, 7000)},
		{Args: []string{"CL.RESERVE", "r", "4", "1", "1", "MAXWAIT", "2000"}, Want: testkit.Ints(1, 5, 0, 3000, 7000)},
		{At: 1500 * time.Millisecond, Args: []string{"CL.RESERVE", "r", "4", "1", "1", "MAXWAIT", "2000"}, Want: testkit.Ints(0, 5, 0, 1500, 6500)},
		// A peek tells the wait a call would have, and reserves nothing.
		{At: 1500 * time.Millisecond, Args: []string{"CL.RESERVE", "r", "4", "1", "1", "0", "MAXWAIT", "60000"}, Want: testkit.Ints(0, 5, 0, 1500, 6500)},
		{At: 1500 * time.Millisecond, Args: []string{"PTTL", "r"}, Want: ":6500\r\n"},
		// More than the limit is never allowed at once (-1, as CL.THROTTLE's
		// retry_after), but may be queued.
		{Args: []string{"CL.RESERVE", "x", "4", "1", "1", "6"}, Want: testkit.Ints(1, 5, 5, -1, 0)},
		{Args: []string{"EXISTS", "x"}, Want: ":0\r\n"},
		{Args: []string{"CL.RESERVE", "x", "4", "1", "1", "6", "MAXWAIT", "100000"}, Want: testkit.Ints(0, 5, 0, 1000, 6000)},
	})
}

// A burst of 100 calls at one instant, 10 a second and MAXWAIT 2 s: the
// waits are 0, 100, 200, ... 2000 ms, then every call is rejected with the
// wait it would need, and nothing it does moves the queue.
func TestReserveBurstOfAHundred(t *testing.T) {
	tc := newTestClient(t, Config{})
	for i := range 100 {
		got := tc.do("CL.RESERVE", "q", "0", "10", "1", "1", "MAXWAIT", "2000")
		want := testkit.Ints(1, 1, 0, 2100, 2100)
		if i <= 20 {
			want = testkit.Ints(0, 1, 0, int64(i)*100, int64(i+1)*100)
		}
		require.Equal(t, want, got, "call %d", i)
	}
	c := tc.srv.counters()
	require.Equal(t, [2]int64{21, 79}, c.decided[decideReserve])
}

// Calls arriving every 7 ms, faster than 10 a second: past the burst each
// is told to act exactly 100 ms after the one before it, the queue never
// holds more than max_burst + 1 + MAXWAIT/ei, and the calls that would wait
// longer than MAXWAIT are rejected.
func TestReserveShapesTheOutput(t *testing.T) {
	var now time.Time
	tc := newTestClient(t, Config{Now: func() time.Time { return now }})
	var acts []time.Duration // when each reserved call acts, from t0
	rejected := 0
	for i := range 300 {
		at := time.Duration(i) * 7 * time.Millisecond
		now = t0.Add(at)
		v := parseInts(t, tc.do("CL.RESERVE", "s", "4", "10", "1", "1", "MAXWAIT", "1000"))
		if v[0] == 1 {
			rejected++
			require.Greater(t, v[3], int64(1000), "call %d rejected with a wait within MAXWAIT", i)
			continue
		}
		act := at + time.Duration(v[3])*time.Millisecond
		queued := 0
		for _, a := range acts {
			if a > at {
				queued++
			}
		}
		require.LessOrEqual(t, queued+1, 5+10, "call %d: the queue holds at most max_burst+1+MAXWAIT/ei", i)
		acts = append(acts, act)
	}
	require.Equal(t, []time.Duration{0, 7, 14, 21, 28, 100}, msAll(acts[:6]), "the burst acts at once, the queue from ei*(max_burst+1) on")
	for k := 6; k < len(acts); k++ {
		require.Equal(t, 100*time.Millisecond, acts[k]-acts[k-1], "reserved call %d acts one emission interval after the one before", k)
	}
	// The burst of 5, then one act every 100 ms from 100 ms to 3000 ms: the
	// last call, at 2093 ms, is queued within its MAXWAIT of 1 s.
	require.Len(t, acts, 5+30)
	require.Equal(t, 3000*time.Millisecond, acts[len(acts)-1])
	require.Equal(t, 300-len(acts), rejected)
}

func msAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / time.Millisecond
	}
	return out
}

// parseInts reads a five-integer reply.
func parseInts(t *testing.T, reply string) [5]int64 {
	t.Helper()
	var v [5]int64
	lines := splitLines(reply)
	require.Len(t, lines, 6, "reply %q", reply)
	require.Equal(t, "*5", lines[0])
	for i := range v {
		n, err := strconv.ParseInt(lines[i+1][1:], 10, 64)
		require.NoError(t, err, "reply %q", reply)
		v[i] = n
	}
	return v
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i+1 < len(s) && !(s[i] == '\r' && s[i+1] == '\n') {
			i++
		}
		out = append(out, s[:i])
		s = s[min(i+2, len(s)):]
	}
	return out
}

func TestReserveErrors(t *testing.T) {
	e := func(text string) string { return "-" + text + "\r\n" }
	runSteps(t, Config{}, []testkit.Step{
		{Args: []string{"CL.RESERVE", "k", "1", "1"}, Want: e("ERR wrong number of arguments for 'cl.reserve' command")},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "1", "1", "MAXWAIT", "1", "x"}, Want: e("ERR wrong number of arguments for 'cl.reserve' command")},
		{Args: []string{"CL.RESERVE", "k", "x", "1", "1"}, Want: e(errBurstNotInteger.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "x", "1"}, Want: e(errCountNotInteger.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "x"}, Want: e(errPeriodNotInteger.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "1", "x"}, Want: e(errQuantityNotInteger.text)},
		{Args: []string{"CL.RESERVE", "k", "-1", "1", "1"}, Want: e(errNegativeBurst.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "0", "1"}, Want: e(errZeroRate.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "1", "-1"}, Want: e(errNegativeQuantity.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "1", "MAXWAIT"}, Want: e(errSyntax.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "1", "1", "MAXWAIT"}, Want: e(errSyntax.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "1", "MAXWAIT", "1", "2"}, Want: e(errSyntax.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "1", "1", "WAIT", "1"}, Want: e(errSyntax.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "1", "MAXWAIT", "x"}, Want: e(errMaxWaitNotInteger.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "1", "MAXWAIT", "-1"}, Want: e(errNegativeMaxWait.text)},
		{Args: []string{"CL.RESERVE", "k", "1", "1", "1", "MAXWAIT", "9223372036854775807"}, Want: e(errOutOfRange.text)},
		{Args: []string{"EXISTS", "k"}, Want: ":0\r\n"},
		{Args: []string{"CL.WINDOW", "w", "5", "60"}, Want: testkit.Ints(0, 5, 4, -1, 60)},
		{Args: []string{"CL.RESERVE", "w", "1", "1", "1"}, Want: e(errWrongType.text)},
	})
}
