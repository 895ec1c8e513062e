package server

import (
	"fmt"
	"testing"
	"time"
)

// CL.COUNT counts every hit in windows aligned to the epoch (t0 is a
// minute's start), over any limit, as envoyproxy/ratelimit's INCRBY does; 0
// reads; CL.WINDOW PRECISION 1 reads the same key; the next window starts
// from 0.
func TestCount(t *testing.T) {
	const s = time.Second
	e := func(text string) string { return "-" + text + "\r\n" }
	arr := func(count, ms int64) string { return fmt.Sprintf("*2\r\n:%d\r\n:%d\r\n", count, ms) }
	runSteps(t, Config{}, []step{
		{0, []string{"CL.COUNT", "c", "60"}, arr(1, 60000)},
		{1 * s, []string{"cl.count", "c", "60", "5"}, arr(6, 59000)},
		{1500 * time.Millisecond, []string{"CL.COUNT", "c", "60", "0"}, arr(6, 58500)},
		{2 * s, []string{"CL.WINDOW", "c", "4", "60", "0", "PRECISION", "1"}, intsReply(0, 4, 0, -1, 58)},
		{2 * s, []string{"TYPE", "c"}, "+window\r\n"},
		{2 * s, []string{"PTTL", "c"}, ":58000\r\n"},
		{60 * s, []string{"CL.COUNT", "c", "60", "2"}, arr(2, 60000)},
		{60 * s, []string{"CL.COUNT", "c", "x"}, e(errWindowNotInteger.text)},
		{60 * s, []string{"CL.COUNT", "c", "60", "x"}, e(errQuantityNotInteger.text)},
		{60 * s, []string{"CL.COUNT", "c", "0"}, e(errWindowPositive.text)},
		{60 * s, []string{"CL.COUNT", "c", "60", "-1"}, e(errNegativeQuantity.text)},
		{60 * s, []string{"CL.THROTTLE", "c", "1", "1", "1"}, e(errWrongType.text)},
		{60 * s, []string{"DEL", "c"}, ":1\r\n"},
		{60 * s, []string{"CL.COUNT", "c", "60", "0"}, arr(0, 60000)},
		{60 * s, []string{"EXISTS", "c"}, ":0\r\n"},
	})
}
