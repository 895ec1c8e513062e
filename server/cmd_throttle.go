package server

import (
	"time"

	"redcell/gcra"
)

// throttleFamily is CL.THROTTLE, for the command table (commands.go).
func throttleFamily() []*command {
	return []*command{
		{name: "cl.throttle", arity: -5, maxArgs: 6, flags: []string{"write", "denyoom", "fast"}, acl: []string{"@write", "@fast"},
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"RW", "UPDATE"},
			group: "generic", since: "0.1.0", complexity: "O(1)",
			summary: "Rate-limits a key by GCRA and returns limited, limit, remaining, retry_after and reset_after, as redis-cell does.",
			run:     cmdThrottle},
	}
}

// CL.THROTTLE key max_burst count period [quantity]
//
// The hot path: parse four integers without allocating, read the clock once
// (the dispatcher did), decide under one shard lock, reply with five integers.
func cmdThrottle(c *client, args [][]byte, now time.Time) {
	if len(args[1]) > c.srv.limits.MaxKeyLen {
		c.writeError(errKeyTooLong(len(args[1]), c.srv.limits.MaxKeyLen))
		return
	}
	burst, ok := parseInt(args[2])
	if !ok {
		c.writeError(errBurstNotInteger)
		return
	}
	count, ok := parseInt(args[3])
	if !ok {
		c.writeError(errCountNotInteger)
		return
	}
	period, ok := parseInt(args[4])
	if !ok {
		c.writeError(errPeriodNotInteger)
		return
	}
	quantity := int64(1)
	if len(args) == 6 {
		if quantity, ok = parseInt(args[5]); !ok {
			c.writeError(errQuantityNotInteger)
			return
		}
	}
	rate, err := gcra.NewRate(burst, count, period, quantity)
	if err != nil {
		c.writeError(throttleError(err))
		return
	}
	var res gcra.Result
	if c.srv.writesRefused() {
		// Durable mode with a failing disk: decide, but store nothing;
		// a decision that would store cannot be acknowledged.
		var store bool
		if res, store, err = c.ks.Preview(args[1], rate, gcra.InstantOf(now)); err == nil && store {
			c.writeError(errMisconf)
			return
		}
	} else {
		res, err = c.ks.Throttle(args[1], rate, gcra.InstantOf(now))
	}
	if err != nil {
		c.writeError(throttleError(err))
		return
	}
	c.srv.stats.countDecision(c.stripe, decideThrottle, res.Limited, keyWasLive(res.Limited, res.ResetAfter, rate.Increment))
	if !res.Limited && quantity > 0 {
		c.changed()
	}
	c.writeInts(res.Ints())
}
