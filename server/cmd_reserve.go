package server

import (
	"math"
	"time"

	"github.com/redcell/redcell/gcra"
)

// reserveFamily is CL.RESERVE, for the command table (newCommandTable).
func reserveFamily() []*command {
	return []*command{limiterCommand("cl.reserve", -5, 8, 5, "generic", "0.1.0", "O(1)",
		"Reserves the next slot of a key's rate and returns how long to wait before acting, up to MAXWAIT milliseconds.",
		cmdReserve)}
}

// CL.RESERVE key max_burst count period [quantity] [MAXWAIT milliseconds]
//
// The leaky bucket as a queue: CL.THROTTLE's arguments and TAT, but a call
// that comes too early reserves the next slot and is told how long to wait
// before acting, when that wait is at most MAXWAIT (default 0).
func cmdReserve(c *client, args [][]byte, now time.Time) {
	var v [3]int64 // max_burst, count, period
	if !c.intArgs(args[2:5], rateArgErrors, v[:]) {
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
	var res gcra.Reservation
	if !c.decide(args[1], quantity, throttleError, func(dry bool) (stored bool, err error) {
		res, stored, err = c.ks.Reserve(args[1], rate, gcra.InstantOf(now), maxWait, dry)
		return stored, err
	}) {
		return
	}
	c.srv.stats.countDecision(c.stripe, decideReserve, res.Limited, keyWasLive(res.Limited, res.ResetAfter, rate.Increment))
	c.writeInts(res.Ints())
}

// reserveOptions parses what follows CL.RESERVE's period: an optional
// quantity (default 1), then an optional MAXWAIT milliseconds (default 0).
// It returns the error of the first bad one.
func reserveOptions(opts [][]byte) (quantity int64, maxWait time.Duration, e replyError) {
	quantity, v, e := quantityThen(opts, "maxwait")
	if !e.none() || v == nil {
		return quantity, 0, e
	}
	ms, ok := parseInt(v)
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
