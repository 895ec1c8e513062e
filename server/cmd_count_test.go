package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit"
)

// CL.COUNT counts every hit in windows aligned to the epoch (t0 is a
// minute's start), over any limit, as envoyproxy/ratelimit's INCRBY does; 0
// reads; CL.WINDOW PRECISION 1 reads the same key; the next window starts
// from 0.
func TestCount(t *testing.T) {
	const s = time.Second
	e := func(text string) string { return "-" + text + "\r\n" }
	arr := func(count, ms int64) string { return fmt.Sprintf("*2\r\n:%d\r\n:%d\r\n", count, ms) }
	runSteps(t, Config{}, []testkit.Step{
		{At: 0, Args: []string{"CL.COUNT", "c", "60"}, Want: arr(1, 60000)},
		{At: 1 * s, Args: []string{"cl.count", "c", "60", "5"}, Want: arr(6, 59000)},
		{At: 1500 * time.Millisecond, Args: []string{"CL.COUNT", "c", "60", "0"}, Want: arr(6, 58500)},
		{At: 2 * s, Args: []string{"CL.WINDOW", "c", "4", "60", "0", "PRECISION", "1"}, Want: testkit.Ints(0, 4, 0, -1, 58)},
		{At: 2 * s, Args: []string{"TYPE", "c"}, Want: "+window\r\n"},
		{At: 2 * s, Args: []string{"PTTL", "c"}, Want: ":58000\r\n"},
		{At: 60 * s, Args: []string{"CL.COUNT", "c", "60", "2"}, Want: arr(2, 60000)},
		{At: 60 * s, Args: []string{"CL.COUNT", "c", "x"}, Want: e(errWindowNotInteger.text)},
		{At: 60 * s, Args: []string{"CL.COUNT", "c", "60", "x"}, Want: e(errQuantityNotInteger.text)},
		{At: 60 * s, Args: []string{"CL.COUNT", "c", "0"}, Want: e(errWindowPositive.text)},
		{At: 60 * s, Args: []string{"CL.COUNT", "c", "60", "-1"}, Want: e(errNegativeQuantity.text)},
		{At: 60 * s, Args: []string{"CL.THROTTLE", "c", "1", "1", "1"}, Want: e(errWrongType.text)},
		{At: 60 * s, Args: []string{"DEL", "c"}, Want: ":1\r\n"},
		{At: 60 * s, Args: []string{"CL.COUNT", "c", "60", "0"}, Want: arr(0, 60000)},
		{At: 60 * s, Args: []string{"EXISTS", "c"}, Want: ":0\r\n"},
	})
}
