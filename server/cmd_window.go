package server

import (
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/window"
)

// windowFamily is CL.WINDOW, for the command table (newCommandTable).
func windowFamily() []*command {
	return []*command{limiterCommand("cl.window", -4, 7, 4, "generic", "0.1.0",
		"O(1) with PRECISION m, O(N) for the N entries of an exact log",
		"Allows at most limit actions in any window seconds: an exact sliding log, or sub-window counters with PRECISION.",
		cmdWindow)}
}

// CL.WINDOW key limit window [quantity] [PRECISION m]
//
// At most limit actions in any window seconds: an exact sliding log
// (PRECISION 0, the default) or m sub-window counters aligned to the epoch
// (PRECISION 1 is the fixed window). The key holds a window's state, so the
// GCRA family's commands on it are WRONGTYPE, and the reverse.
func cmdWindow(c *client, args [][]byte, now time.Time) {
	var v [2]int64 // limit, window
	if !c.intArgs(args[2:4], windowArgErrors, v[:]) {
		return
	}
	limit, seconds := v[0], v[1]
	quantity, precision, e := windowOptions(args[4:])
	if !e.none() {
		c.writeError(e)
		return
	}
	spec, err := window.NewSpec(limit, seconds, quantity, precision, c.srv.limits.WindowLogMax)
	if err != nil {
		c.writeError(windowError(err))
		return
	}
	var res window.Result
	if !c.decide(args[1], quantity, windowError, func(dry bool) (stored bool, err error) {
		res, stored, err = c.ks.Window(args[1], spec, gcra.InstantOf(now), dry)
		return stored, err
	}) {
		return
	}
	// The key was live when the window held something before this call.
	before := res.Limit - res.Remaining
	if !res.Limited {
		before -= quantity
	}
	c.srv.stats.countDecision(c.stripe, decideWindow, res.Limited, before > 0)
	c.writeInts(res.Ints())
}

// windowOptions parses what follows CL.WINDOW's window: an optional quantity
// (default 1), then an optional PRECISION m (default 0, the exact log). It
// returns the error of the first bad one.
func windowOptions(opts [][]byte) (quantity, precision int64, e replyError) {
	quantity, m, e := quantityThen(opts, "precision")
	if !e.none() || m == nil {
		return quantity, 0, e
	}
	precision, ok := parseInt(m)
	if !ok {
		return 0, 0, errPrecisionNotInteger
	}
	return quantity, precision, replyError{}
}

// quantityThen parses a limiter's optional quantity (default 1) and then an
// optional option named name with its value, which it returns unparsed (nil
// when absent), or the error of the first bad one.
func quantityThen(opts [][]byte, name string) (quantity int64, value []byte, e replyError) {
	quantity = 1
	if len(opts) > 0 && !equalFold(opts[0], name) {
		q, ok := parseInt(opts[0])
		if !ok {
			return 0, nil, errQuantityNotInteger
		}
		quantity, opts = q, opts[1:]
	}
	switch {
	case len(opts) == 0:
		return quantity, nil, replyError{}
	case len(opts) != 2 || !equalFold(opts[0], name):
		return 0, nil, errSyntax
	}
	return quantity, opts[1], replyError{}
}
