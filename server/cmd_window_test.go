package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// CL.WINDOW's exact log at the window's edge, on a manual clock: the
// limit+1th call inside the window is limited, and allowed again exactly
// when the oldest entry leaves.
func TestWindowExactLog(t *testing.T) {
	const s = time.Second
	e := func(text string) string { return "-" + text + "\r\n" }
	tc := runSteps(t, Config{}, []testkit.Step{
		{Args: []string{"CL.WINDOW", "w", "3", "10"}, Want: testkit.Ints(0, 3, 2, -1, 10)},
		{At: 1 * s, Args: []string{"CL.WINDOW", "w", "3", "10"}, Want: testkit.Ints(0, 3, 1, -1, 10)},
		{At: 2 * s, Args: []string{"cl.window", "w", "3", "10", "1"}, Want: testkit.Ints(0, 3, 0, -1, 10)},
		{At: 3 * s, Args: []string{"CL.WINDOW", "w", "3", "10"}, Want: testkit.Ints(1, 3, 0, 7, 9)},
		{At: 9999 * time.Millisecond, Args: []string{"CL.WINDOW", "w", "3", "10"}, Want: testkit.Ints(1, 3, 0, 1, 3)},
		{At: 10 * s, Args: []string{"CL.WINDOW", "w", "3", "10"}, Want: testkit.Ints(0, 3, 0, -1, 10)},
		{At: 10 * s, Args: []string{"CL.WINDOW", "w", "3", "10"}, Want: testkit.Ints(1, 3, 0, 1, 10)},
		// At 11 s the entry of 1 s has left: 2 remain, so 2 more wait for
		// the one of 2 s; a peek tells; more than the limit never fits.
		{At: 11 * s, Args: []string{"CL.WINDOW", "w", "3", "10", "2"}, Want: testkit.Ints(1, 3, 1, 1, 9)},
		{At: 11 * s, Args: []string{"CL.WINDOW", "w", "3", "10", "0"}, Want: testkit.Ints(0, 3, 1, -1, 9)},
		{At: 11 * s, Args: []string{"CL.WINDOW", "w", "3", "10", "4"}, Want: testkit.Ints(1, 3, 1, -1, 9)},
		// The key is a window: it expires when its newest entry leaves.
		{At: 11 * s, Args: []string{"TYPE", "w"}, Want: "+window\r\n"},
		{At: 11 * s, Args: []string{"PTTL", "w"}, Want: ":9000\r\n"},
		{At: 11 * s, Args: []string{"OBJECT", "ENCODING", "w"}, Want: testkit.Bulk("window")},
		{At: 11 * s, Args: []string{"GET", "w"}, Want: e(errWrongType.text)},
		{At: 11 * s, Args: []string{"CL.THROTTLE", "w", "1", "1", "1"}, Want: e(errWrongType.text)},
		{At: 11 * s, Args: []string{"GCRA", "w", "1", "1", "1"}, Want: e(errWrongType.text)},
		{At: 11 * s, Args: []string{"CL.RESERVE", "w", "1", "1", "1"}, Want: e(errWrongType.text)},
		{At: 20 * s, Args: []string{"EXISTS", "w"}, Want: ":0\r\n"},
		// And the reverse: a TAT key is not a window; DEL frees the name.
		{At: 20 * s, Args: []string{"CL.THROTTLE", "w", "1", "1", "1"}, Want: testkit.Ints(0, 2, 1, -1, 1)},
		{At: 20 * s, Args: []string{"CL.WINDOW", "w", "3", "10"}, Want: e(errWrongType.text)},
		{At: 20 * s, Args: []string{"DEL", "w"}, Want: ":1\r\n"},
		{At: 20 * s, Args: []string{"CL.WINDOW", "w", "3", "10"}, Want: testkit.Ints(0, 3, 2, -1, 10)},
	})
	c := tc.srv.counters()
	require.Equal(t, [2]int64{6, 5}, c.decided[decideWindow], "CL.WINDOW allowed (the peek too), limited")
}

// PRECISION 1 is the fixed window: twice the limit across its edge within
// a second. PRECISION 6 counts the 10 s sub-window before the edge too.
func TestWindowPrecision(t *testing.T) {
	admitted := func(args ...string) int {
		var now time.Time
		tc := newTestClient(t, Config{Now: func() time.Time { return now }})
		n := 0
		for _, at := range []time.Duration{59 * time.Second, 60 * time.Second} {
			now = t0.Add(at) // t0 is at a minute's start
			for range 15 {
				if v := parseInts(t, tc.do(args...)); v[0] == 0 {
					n++
				}
			}
		}
		return n
	}
	require.Equal(t, 20, admitted("CL.WINDOW", "f", "10", "60", "PRECISION", "1"), "the fixed window's burst across its edge")
	require.Equal(t, 10, admitted("CL.WINDOW", "f", "10", "60", "precision", "6"), "six sub-windows")
	require.Equal(t, 10, admitted("CL.WINDOW", "f", "10", "60"), "the exact log")

	runSteps(t, Config{}, []testkit.Step{
		{At: 59 * time.Second, Args: []string{"CL.WINDOW", "f", "2", "60", "PRECISION", "1"}, Want: testkit.Ints(0, 2, 1, -1, 1)},
		{At: 59 * time.Second, Args: []string{"CL.WINDOW", "f", "2", "60", "PRECISION", "1"}, Want: testkit.Ints(0, 2, 0, -1, 1)},
		{At: 59 * time.Second, Args: []string{"CL.WINDOW", "f", "2", "60", "PRECISION", "1"}, Want: testkit.Ints(1, 2, 0, 1, 1)},
		{At: 60 * time.Second, Args: []string{"CL.WINDOW", "f", "2", "60", "PRECISION", "1"}, Want: testkit.Ints(0, 2, 1, -1, 60)},
		{At: 60 * time.Second, Args: []string{"PTTL", "f"}, Want: ":60000\r\n"},
		// Another precision on the same key starts afresh.
		{At: 60 * time.Second, Args: []string{"CL.WINDOW", "f", "2", "60", "PRECISION", "6"}, Want: testkit.Ints(0, 2, 1, -1, 60)},
	})
}

func TestWindowErrors(t *testing.T) {
	e := func(text string) string { return "-" + text + "\r\n" }
	runSteps(t, Config{Limits: Limits{WindowLogMax: 100}}, []testkit.Step{
		{Args: []string{"CL.WINDOW", "k", "1"}, Want: e("ERR wrong number of arguments for 'cl.window' command")},
		{Args: []string{"CL.WINDOW", "k", "1", "1", "1", "PRECISION", "1", "x"}, Want: e("ERR wrong number of arguments for 'cl.window' command")},
		{Args: []string{"CL.WINDOW", "k", "x", "1"}, Want: e(errLimitNotInteger.text)},
		{Args: []string{"CL.WINDOW", "k", "1", "1.5"}, Want: e(errWindowNotInteger.text)},
		{Args: []string{"CL.WINDOW", "k", "1", "1", "x"}, Want: e(errQuantityNotInteger.text)},
		{Args: []string{"CL.WINDOW", "k", "0", "1"}, Want: e(errLimitPositive.text)},
		{Args: []string{"CL.WINDOW", "k", "1", "0"}, Want: e(errWindowPositive.text)},
		{Args: []string{"CL.WINDOW", "k", "1", "1", "-1"}, Want: e(errNegativeQuantity.text)},
		{Args: []string{"CL.WINDOW", "k", "1", "1", "PRECISION"}, Want: e(errSyntax.text)},
		{Args: []string{"CL.WINDOW", "k", "1", "1", "1", "SIZE", "1"}, Want: e(errSyntax.text)},
		{Args: []string{"CL.WINDOW", "k", "1", "1", "PRECISION", "x"}, Want: e(errPrecisionNotInteger.text)},
		{Args: []string{"CL.WINDOW", "k", "1", "1", "PRECISION", "-1"}, Want: e(errPrecisionRange.text)},
		{Args: []string{"CL.WINDOW", "k", "1", "1", "PRECISION", "10001"}, Want: e(errPrecisionRange.text)},
		{Args: []string{"CL.WINDOW", "k", "1", "9223372036854775807"}, Want: e(errOutOfRange.text)},
		{Args: []string{"CL.WINDOW", "k", "101", "60"}, Want: e("ERR limit too large for an exact window, use PRECISION")},
		{Args: []string{"EXISTS", "k"}, Want: ":0\r\n"},
		{Args: []string{"CL.WINDOW", "k", "100", "60"}, Want: testkit.Ints(0, 100, 99, -1, 60)},
		{Args: []string{"CL.WINDOW", "k2", "101", "60", "PRECISION", "60"}, Want: testkit.Ints(0, 101, 100, -1, 60)},
	})
}
