package server

import (
	"math"
	"time"

	"redcell/gcra"
)

// reserveFamily is CL.RESERVE, for the command table (commands.go).
func reserveFamily() []*command {
	return []*command{
		{name: "cl.reserve", arity: -5, maxArgs: 8, flags: []string{"write", "denyoom", "fast"}, acl: []string{"@write", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RW", "UPDATE"},
			group: "generic", since: "0.1.0", complexity: "O(1)",
			summary: "Reserves the next slot of a key's rate and returns how long to wait before acting, up to MAXWAIT milliseconds.",
			run:     cmdReserve},
	}
}

// CL.RESERVE key max_burst count period [quantity] [MAXWAIT milliseconds]
//
// The leaky bucket as a queue: CL.THROTTLE's arguments and TAT, but a call
// that comes too early reserves the next slot and is told how long to wait
// before acting, when that wait is at most MAXWAIT (default 0).
func cmdReserve(c *client, args [][]byte, now time.Time) {
	var v [3]int64 // max_burst, count, period
	if !c.keyFits(args[1]) || !c.intArgs(args[2:5], rateArgErrors, v[:]) {
		return
	}
	burst, count, period := v[0], v[1], v[2]
	quantity, maxWait, e := reserveOptions(args[5:])
	if !e.none() {
		c.writeError(e)
		return
	}
	rate, err := gcra.NewRate(burst, count, period, quantity)
	if err != nil {
		c.writeError(throttleError(err))
		return
	}
	refused := c.srv.writesRefused()
	res, stored, err := c.ks.Reserve(args[1], rate, gcra.InstantOf(now), maxWait, refused)
	if err != nil {
		c.writeError(throttleError(err))
		return
	}
	if stored {
		if refused {
			c.writeError(errMisconf)
			return
		}
		c.changed()
	}
	c.srv.stats.countDecision(c.stripe, decideReserve, res.Limited, keyWasLive(res.Limited, res.ResetAfter, rate.Increment))
	c.writeInts(res.Ints())
}

// reserveOptions parses what follows CL.RESERVE's period: an optional
// quantity (default 1), then an optional MAXWAIT milliseconds (default 0).
// It returns the error of the first bad one.
func reserveOptions(opts [][]byte) (quantity int64, maxWait time.Duration, e replyError) {
	quantity = 1
	if len(opts) > 0 && !equalFold(opts[0], "maxwait") {
		q, ok := parseInt(opts[0])
		if !ok {
			return 0, 0, errQuantityNotInteger
		}
		quantity, opts = q, opts[1:]
	}
	switch {
	case len(opts) == 0:
		return quantity, 0, replyError{}
	case len(opts) != 2 || !equalFold(opts[0], "maxwait"):
		return 0, 0, errSyntax
	}
	ms, ok := parseInt(opts[1])
	switch {
	case !ok:
		return 0, 0, errMaxWaitNotInteger
	case ms < 0:
		return 0, 0, errNegativeMaxWait
	case ms > math.MaxInt64/int64(time.Millisecond):
		return 0, 0, errOutOfRange
	}
	return quantity, time.Duration(ms) * time.Millisecond, replyError{}
}
