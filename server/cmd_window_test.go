package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// CL.WINDOW's exact log at the window's edge, on a manual clock: the
// limit+1th call inside the window is limited, and allowed again exactly
// when the oldest entry leaves.
func TestWindowExactLog(t *testing.T) {
	const s = time.Second
	e := func(text string) string { return "-" + text + "\r\n" }
	tc := runSteps(t, Config{}, []step{
		{0, []string{"CL.WINDOW", "w", "3", "10"}, intsReply(0, 3, 2, -1, 10)},
		{1 * s, []string{"CL.WINDOW", "w", "3", "10"}, intsReply(0, 3, 1, -1, 10)},
		{2 * s, []string{"cl.window", "w", "3", "10", "1"}, intsReply(0, 3, 0, -1, 10)},
		{3 * s, []string{"CL.WINDOW", "w", "3", "10"}, intsReply(1, 3, 0, 7, 9)},
		{9999 * time.Millisecond, []string{"CL.WINDOW", "w", "3", "10"}, intsReply(1, 3, 0, 1, 3)},
		{10 * s, []string{"CL.WINDOW", "w", "3", "10"}, intsReply(0, 3, 0, -1, 10)},
		{10 * s, []string{"CL.WINDOW", "w", "3", "10"}, intsReply(1, 3, 0, 1, 10)},
		// At 11 s the entry of 1 s has left: 2 remain, so 2 more wait for
		// the one of 2 s; a peek tells; more than the limit never fits.
		{11 * s, []string{"CL.WINDOW", "w", "3", "10", "2"}, intsReply(1, 3, 1, 1, 9)},
		{11 * s, []string{"CL.WINDOW", "w", "3", "10", "0"}, intsReply(0, 3, 1, -1, 9)},
		{11 * s, []string{"CL.WINDOW", "w", "3", "10", "4"}, intsReply(1, 3, 1, -1, 9)},
		// The key is a window: it expires when its newest entry leaves.
		{11 * s, []string{"TYPE", "w"}, "+window\r\n"},
		{11 * s, []string{"PTTL", "w"}, ":9000\r\n"},
		{11 * s, []string{"OBJECT", "ENCODING", "w"}, bulkReply("window")},
		{11 * s, []string{"GET", "w"}, e(errWrongType.text)},
		{11 * s, []string{"CL.THROTTLE", "w", "1", "1", "1"}, e(errWrongType.text)},
		{11 * s, []string{"GCRA", "w", "1", "1", "1"}, e(errWrongType.text)},
		{11 * s, []string{"CL.RESERVE", "w", "1", "1", "1"}, e(errWrongType.text)},
		{20 * s, []string{"EXISTS", "w"}, ":0\r\n"},
		// And the reverse: a TAT key is not a window; DEL frees the name.
		{20 * s, []string{"CL.THROTTLE", "w", "1", "1", "1"}, intsReply(0, 2, 1, -1, 1)},
		{20 * s, []string{"CL.WINDOW", "w", "3", "10"}, e(errWrongType.text)},
		{20 * s, []string{"DEL", "w"}, ":1\r\n"},
		{20 * s, []string{"CL.WINDOW", "w", "3", "10"}, intsReply(0, 3, 2, -1, 10)},
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

	runSteps(t, Config{}, []step{
		{59 * time.Second, []string{"CL.WINDOW", "f", "2", "60", "PRECISION", "1"}, intsReply(0, 2, 1, -1, 1)},
		{59 * time.Second, []string{"CL.WINDOW", "f", "2", "60", "PRECISION", "1"}, intsReply(0, 2, 0, -1, 1)},
		{59 * time.Second, []string{"CL.WINDOW", "f", "2", "60", "PRECISION", "1"}, intsReply(1, 2, 0, 1, 1)},
		{60 * time.Second, []string{"CL.WINDOW", "f", "2", "60", "PRECISION", "1"}, intsReply(0, 2, 1, -1, 60)},
		{60 * time.Second, []string{"PTTL", "f"}, ":60000\r\n"},
		// Another precision on the same key starts afresh.
		{60 * time.Second, []string{"CL.WINDOW", "f", "2", "60", "PRECISION", "6"}, intsReply(0, 2, 1, -1, 60)},
	})
}

func TestWindowErrors(t *testing.T) {
	e := func(text string) string { return "-" + text + "\r\n" }
	runSteps(t, Config{Limits: Limits{WindowLogMax: 100}}, []step{
		{0, []string{"CL.WINDOW", "k", "1"}, e("ERR wrong number of arguments for 'cl.window' command")},
		{0, []string{"CL.WINDOW", "k", "1", "1", "1", "PRECISION", "1", "x"}, e("ERR wrong number of arguments for 'cl.window' command")},
		{0, []string{"CL.WINDOW", "k", "x", "1"}, e(errLimitNotInteger.text)},
		{0, []string{"CL.WINDOW", "k", "1", "1.5"}, e(errWindowNotInteger.text)},
		{0, []string{"CL.WINDOW", "k", "1", "1", "x"}, e(errQuantityNotInteger.text)},
		{0, []string{"CL.WINDOW", "k", "0", "1"}, e(errLimitPositive.text)},
		{0, []string{"CL.WINDOW", "k", "1", "0"}, e(errWindowPositive.text)},
		{0, []string{"CL.WINDOW", "k", "1", "1", "-1"}, e(errNegativeQuantity.text)},
		{0, []string{"CL.WINDOW", "k", "1", "1", "PRECISION"}, e(errSyntax.text)},
		{0, []string{"CL.WINDOW", "k", "1", "1", "1", "SIZE", "1"}, e(errSyntax.text)},
		{0, []string{"CL.WINDOW", "k", "1", "1", "PRECISION", "x"}, e(errPrecisionNotInteger.text)},
		{0, []string{"CL.WINDOW", "k", "1", "1", "PRECISION", "-1"}, e(errPrecisionRange.text)},
		{0, []string{"CL.WINDOW", "k", "1", "1", "PRECISION", "10001"}, e(errPrecisionRange.text)},
		{0, []string{"CL.WINDOW", "k", "1", "9223372036854775807"}, e(errOutOfRange.text)},
		{0, []string{"CL.WINDOW", "k", "101", "60"}, e("ERR limit too large for an exact window, use PRECISION")},
		{0, []string{"EXISTS", "k"}, ":0\r\n"},
		{0, []string{"CL.WINDOW", "k", "100", "60"}, intsReply(0, 100, 99, -1, 60)},
		{0, []string{"CL.WINDOW", "k2", "101", "60", "PRECISION", "60"}, intsReply(0, 101, 100, -1, 60)},
	})
}
